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
