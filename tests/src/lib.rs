//! Shared pieces of the end-to-end tests (and, later, the benchmarks): a mock OpenAI-compatible
//! upstream that speaks the real wire format, and helpers to serve a `ChatService` on loopback.

pub mod aisdk;
pub mod app_binary;
pub mod bench;
pub mod browser;
pub mod engines;
pub mod installed;
pub mod mcp_server;
pub mod mock_anthropic;
pub mod mock_upstream;
pub mod mutable_mcp;
pub mod notes;
pub mod serve;
pub mod test_host;
