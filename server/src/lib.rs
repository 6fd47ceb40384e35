//! # lmchatkit
//!
//! A chat UI and streaming chat protocol that any Rust HTTP server mounts as one
//! [`tower::Service`]. The host brings an LLM (any OpenAI-compatible endpoint, or its own
//! [`Host`]) and, optionally, MCP tools, prompts and resources; lmchatkit brings the protocol,
//! the embedded UI, personas, slash commands, history and cross-tab events.
//!
//! ```no_run
//! # #[cfg(feature = "openai")]
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use lmchatkit::{ChatService, Config, llm::openai::{OpenAiBackend, OpenAiConfig}};
//!
//! let host = OpenAiBackend::new(OpenAiConfig::new("http://127.0.0.1:11434/v1"));
//! let svc = ChatService::new(Config::builder(host).prefix("/chat").build()?);
//! // Mount `svc` under /chat in any tower-compatible server, e.g. axum:
//! // Router::new().nest_service("/chat", svc)
//! # let _ = svc; Ok(()) }
//! ```
//!
//! ## How a request flows
//!
//! [`ChatService`] finds the route in one route list, checks the principal and CSRF, and hands
//! the request to its handler. Whatever a handler lists, reads or calls goes through the
//! [`access`] layer, which computes the request's [`Scope`] (principal, role, reachable
//! sources), applies visibility and ownership, and only then asks the [`Host`] — with that
//! scope, so a host can answer per principal. [`Config`] is inert settings; the service builds
//! its live state from it.
//!
//! ## Cargo features
//!
//! The defaults are the library a host mounts.
//!
//! - `sqlite` (default): `store::SqliteStore`, SQLite history (bundled SQLite).
//! - `postgres`: `store::PostgresStore`, history, approvals and users' MCP servers in
//!   PostgreSQL (tokio-postgres with a bounded pool), for several instances sharing them; and
//!   `live::Postgres`, a shared engine of several instances over the same database (runs,
//!   stops, events and view tokens, without Redis).
//! - `openai` (default): `llm::openai`, the OpenAI-compatible upstream.
//! - `anthropic` (default): `llm::anthropic`, Anthropic's native Messages API (turns on
//!   `openai`, whose HTTP plumbing it shares).
//! - `watch` (default): persona and command directories are watched and reloaded on change.
//! - `mcp` (default): the MCP hub (stdio and Streamable HTTP clients) and `StandardHost`'s MCP side.
//! - `demo-mcp`: the built-in demo MCP server (`mcp::demo_server_config`), an in-process rmcp
//!   server.
//! - `clap-tools`: `clap_tools::ClapToolset`, a clap command tree as chat tools (in-process or
//!   a subprocess), a tool source of `StandardHost` and an MCP server over stdio (turns on
//!   `mcp`).
//! - `redis`: `live::Redis`, a shared engine of several instances (runs, stops, events and
//!   view tokens across instances through one Redis).
//! - `test-support`: `store::conformance`, the suites a store of your own should pass.
//! - `serve`: `connection::serve`, one accepted TCP connection served with hyper over HTTP/1.1
//!   or HTTP/2 with prior knowledge, as the app serves them; `runtime::builder`, the tokio
//!   runtime the app runs on.
//! - `logs`: `logs::LogFilter`, the app's log filter from a `RUST_LOG`-style spec (static,
//!   with no cost per span entered, unless the spec has span directives).
//! - `rustls` (default): TLS for the HTTP clients (upstreams, MCP servers) with rustls's
//!   aws-lc-rs provider.
//! - `rustls-ring`: the same with the ring provider, so `aws-lc-sys` is not built; see
//!   [`tls`]. With neither, the clients reach `http://` URLs only.
//!
//! The standalone app is a crate of its own, `lmchatkit-app` (`cargo install lmchatkit-app`
//! installs the `lmchatkit` binary); this crate never compiles it.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod access;
pub(crate) mod agent;
pub(crate) mod aisdk;
pub mod api;
pub(crate) mod apps;
pub(crate) mod bundle;
#[cfg(feature = "clap-tools")]
pub mod clap_tools;
pub mod config;
#[cfg(feature = "serve")]
pub mod connection;
pub mod error;
#[cfg(any(feature = "openai", feature = "mcp"))]
pub(crate) mod event_stream;
pub mod host;
pub mod limits;
pub mod live;
pub mod llm;
#[cfg(feature = "logs")]
pub mod logs;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod models;
pub(crate) mod page_policy;
pub mod presets;
mod routes;
#[cfg(feature = "serve")]
pub mod runtime;
pub mod secrets;
mod service;
mod sse;
pub mod standard_host;
mod state;
pub mod store;
pub mod tls;
mod turn;
#[cfg(feature = "mcp")]
pub mod user_mcp;

/// [`api`] under its name in 0.1.
#[doc(hidden)]
pub use api as http_util;
/// [`live`] (the shared engines) under its name in 0.1.
#[doc(hidden)]
pub use live as engine;
/// [`live::events`] under its path in 0.1.
#[doc(hidden)]
pub use live::events;
/// [`presets`] (personas and slash commands) under its name in 0.1.
#[doc(hidden)]
pub use presets as catalog;
/// [`store`] under its name in 0.1.
#[doc(hidden)]
pub use store as history;

pub use access::approval::ApprovalPolicy;
pub use access::input::DEFAULT_INPUT_TTL;
pub use access::{Scope, Sources};
pub use api::{ApiError, ResponseBody};
pub use async_trait::async_trait;
pub use config::{Config, ConfigBuilder, ConfigError};
pub use error::Failure;
pub use host::{
    CompleteRequest, EventStream, Host, HostError, Principal, ProgressSink, RequestContext,
    ToolInput, ToolProgress, ToolSource,
};
pub use live::events::EventBroadcaster;
pub use lmchatkit_protocol as protocol;
#[cfg(feature = "mcp")]
pub use mcp::{McpConfigFile, McpHub, McpServerConfig};
pub use service::ChatService;
pub use standard_host::StandardHost;
pub use store::ApprovalStore;

/// Whether this build embeds the UI (its wasm, JS and CSS), served at the mount point and
/// below `{prefix}/assets/`.
///
/// Always `true` for the crate from crates.io: its package carries the bundle, and a packaged
/// copy without one does not compile. A build from the repository before
/// `./scripts/build-ui.sh` answers `false` and serves a page saying the UI is not built; a host
/// can refuse to start, or log it:
///
/// ```
/// if !lmchatkit::ui_embedded() {
///     eprintln!("lmchatkit: no UI in this build; only the API is served");
/// }
/// ```
pub fn ui_embedded() -> bool {
    bundle::is_built()
}
