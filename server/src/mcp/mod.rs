//! The MCP hub: lmchatkit as an MCP client (through the official Rust SDK, `rmcp`, pinned to
//! an exact version) of any number of servers — stdio child processes, Streamable HTTP
//! endpoints or in-process pipes. [`McpHub`] supplies the tool, prompt and resource side of a
//! [`Host`](crate::Host); [`StandardHost`](crate::standard_host::StandardHost) combines it
//! with an LLM host.
//!
//! Decisions written down here:
//! - **Connecting** is lazy (first use) or eager with [`McpHub::start`]; the handshake tries
//!   the 2026-07-28 `server/discover` lifecycle and falls back to `initialize` (2025-11-25),
//!   so both new and older servers work. The client advertises the MCP Apps extension
//!   (`io.modelcontextprotocol/ui`, `mimeTypes: ["text/html;profile=mcp-app"]`).
//! - **Listings** are cached per server and served from the cache; `list_changed` and a
//!   reconnect mark them outdated and a background refresh replaces them (the notification
//!   reaches `/api/events` as `tools_changed` / `prompts_changed` / `resources_changed` once
//!   the new listing is in). A turn waits for a missing or outdated listing at most
//!   [`McpHub::with_listing_wait`] (2 s by default), and never again for a server that made it
//!   wait that long until it lists again: a dead or hanging server does not hold up the first
//!   token. On 2026-07-28 connections the notifications come on a `subscriptions/listen`
//!   stream the hub opens for what the server advertises; on older ones, via the handler.
//!   A listing's `ttlMs` outdates it when it passes, and a `private` listing is kept for the
//!   principal it was fetched for alone (see `listing`'s docs for what `private` means on a
//!   connection every principal shares).
//! - **Icons** of servers, tools and prompts are loaded by the hub (`data:` decoded, http(s)
//!   fetched under [`McpHub::with_icon_policy`]) and served by the service from its own
//!   origin, never loaded by the browser from a server's host (see `icons` and
//!   [`IconImage`](crate::host::IconImage)).
//! - **Failures**: a tool's own error, a timeout (default 60 s) and a server that died during
//!   the call are all `is_error` results (naming the server), never transport errors to the
//!   model. A dead stdio server restarts on its next use; an HTTP session that expired (404)
//!   is re-initialised by the transport. Failed connects back off (0.5 s doubling to 30 s).
//! - **Secrets**: a stdio server starts from a cleared environment (the platform basics, the
//!   locale, its `inherit_env` names and its `env`; see [`McpTransport::Stdio`]); connection
//!   errors lose URL userinfo and queries before they are logged or shown in `/api/config`;
//!   a Streamable HTTP server's redirects are followed only within its origin, so its headers
//!   and token never reach another host (see [`crate::secrets`]).
//! - **OAuth**: a remote server the operator configures with OAuth
//!   ([`McpServerConfig::with_oauth`]) is signed in to once, by the operator, on a page of the
//!   service; the grant is sealed and refreshed by [`OperatorOAuth`] (see `oauth`'s docs).

mod client;
mod config;
mod conn;
pub(crate) mod convert;
#[cfg(feature = "demo-mcp")]
mod demo;
pub(crate) mod http_client;
mod hub;
mod icons;
mod listing;
pub(crate) mod oauth;
mod outbound;
mod problems;
mod prompts_resources;
mod skills;
pub(crate) mod sse_transport;
mod ui_meta;

pub use config::{
    InProcessConnector, McpConfigError, McpConfigFile, McpServerConfig, McpTransport, expand_env,
};
pub use conn::MCP_APP_MIME;
#[cfg(feature = "clap-tools")]
pub(crate) use conn::child_env;
#[cfg(feature = "demo-mcp")]
pub use demo::{
    DEMO_APP_ONLY_TOOL, DEMO_APP_TOOL, DEMO_SERVER_NAME, DEMO_VIEW_URI, demo_server_config,
};
pub use hub::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_LISTING_WAIT, DEFAULT_RESULT_CAP, DEFAULT_SEPARATOR, McpHub,
    ServerFilter,
};
pub use oauth::{
    CIMD_PATH, FileGrantStore, GrantStoreError, MemoryGrantStore, OPERATOR_CALLBACK_PATH,
    OPERATOR_PAGE_PATH, OperatorGrantStore, OperatorOAuth,
};
pub use outbound::{OutboundError, OutboundPolicy, refused_kind};

use crate::access::Scope;
pub use skills::{SKILL_INDEX_HEADER, append_skill_index, skill_index};

impl McpHub {
    /// Appends the skill index (every `skill://` resource with its name and description) to
    /// the system prompt; the ready-made augmenter of
    /// [`StandardHost`](crate::standard_host::StandardHost).
    pub async fn augment_system_prompt(&self, scope: &Scope, current: String) -> String {
        let resources = match self.list_resources(scope).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "listing resources for the skill index failed");
                Vec::new()
            }
        };
        append_skill_index(current, &resources)
    }
}
