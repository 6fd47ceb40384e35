//! # lmchatkit
//!
//! A chat UI and streaming chat protocol that any Rust HTTP server mounts as one
//! [`tower::Service`]. The host brings an LLM (any OpenAI-compatible endpoint, or its own
//! [`Host`]) and, optionally, MCP tools, prompts and resources; lmchatkit brings the protocol,
//! the embedded UI, personas, slash commands, history and cross-tab events.

pub(crate) mod bundle;
pub mod catalog;
pub mod history;
pub mod host;
#[cfg(feature = "openai")]
pub mod llm;

pub use async_trait::async_trait;
pub use host::{
    CompleteRequest, EventStream, Host, HostError, Principal, RequestContext, ToolSource,
};
pub use lmchatkit_protocol as protocol;
