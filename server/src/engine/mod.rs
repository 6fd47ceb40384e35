//! Shared engines: what several instances of the service share besides the history store.
//!
//! One engine so far, `Redis` (feature `redis`): run logs, stops across instances and event
//! fan-out build on it. In-process stays the default: a service given no engine keeps its
//! runs and events in its own memory, as one instance needs.
//!
//! Decisions:
//! - **One handle, cheap to clone.** `Redis` holds the client (to open pub/sub subscriptions
//!   and dedicated connections for blocking reads) and one multiplexed, self-reconnecting
//!   `redis::aio::ConnectionManager` for every short command. A blocking
//!   read (`XREAD BLOCK`) never runs on the shared connection: it would hold up every other
//!   command behind it.
//! - **Every key and channel starts with the prefix** (default `lmchatkit:`), so several
//!   deployments (and tests) can share one Redis without meeting.
//! - **The URL's password never shows**: `Debug` and every error name the URL without its user
//!   info, query or fragment ([`crate::secrets::redact_url`]).

#[cfg(feature = "redis")]
mod redis_engine;

#[cfg(feature = "redis")]
pub use redis_engine::{DEFAULT_PREFIX, EngineError, Redis};
