//! The benchmarks of issue 7: lmchatkit's `/api/chat` against a direct connection to a mock
//! OpenAI-compatible upstream, a bare hyper SSE echo (the practical limit of a relay), and the
//! peers people would pick instead (the Vercel AI SDK Node relay, the LiteLLM proxy), side by
//! side in one run; lmchatkit also on its AI SDK route (`/api/aisdk/chat`), which speaks the AI
//! SDK relay's own protocol ([`versus`]); plus 10,000 open streams and the SQLite history
//! store's costs; and the relay on SQLite + in-process runs against PostgreSQL + Redis
//! ([`engines`], `bench --engines-only` alone).
//!
//! The `bench` binary drives it (`scripts/bench.sh` for the full run, `bench --smoke` for the
//! CI smoke). Every server runs in its own process (this binary's `serve` subcommands, Node,
//! Python), so CPU seconds and peak RSS are per relay; the load generator ([`load`]) is the
//! binary's main process and talks to them over loopback only, with bounded request counts and
//! deadlines.

pub mod chart;
pub mod checks;
pub mod echo;
pub mod engines;
pub mod first_load;
pub mod first_reply;
pub mod history;
pub mod load;
pub mod markdown;
pub mod mock;
pub mod pipeline;
pub mod point;
pub mod procs;
pub mod relay;
pub mod report;
pub mod run;
pub mod sse;
pub mod stats;
pub mod sys;
pub mod ui_timing;
pub mod versus;
pub mod workload;
