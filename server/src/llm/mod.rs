//! LLM backends: [`openai`], the OpenAI-compatible `/chat/completions` backend, [`anthropic`],
//! Anthropic's native Messages API, [`demo`], a built-in model for a first run with nothing
//! configured, and [`providers`], which routes `provider/model` ids over several named backends.

#[cfg(feature = "anthropic")]
pub mod anthropic;
pub mod demo;
#[cfg(feature = "openai")]
pub mod openai;
pub mod providers;

#[cfg(feature = "anthropic")]
pub use anthropic::{AnthropicBackend, AnthropicConfig};
pub use demo::DemoModel;
#[cfg(feature = "openai")]
pub use openai::{OpenAiBackend, OpenAiConfig};
pub use providers::{Providers, ProvidersError};

/// The subject of an LLM backend's [`SetupProblem`](lmchatkit_protocol::SetupProblem) when it
/// stands alone; [`Providers`] names its backends' problems `provider <name>` instead.
pub const UPSTREAM_SUBJECT: &str = "LLM upstream";

/// The most one tool call's arguments may grow to while a backend accumulates them from the
/// model's stream (1 MiB); the service takes no larger `arguments` back either
/// ([`crate::limits::DEFAULT_MAX_ARGUMENTS_BYTES`] is this).
pub const MAX_TOOL_ARGUMENTS_BYTES: usize = 1 << 20;
