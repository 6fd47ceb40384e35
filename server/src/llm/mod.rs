//! LLM backends: [`openai`], the OpenAI-compatible `/chat/completions` backend, [`anthropic`],
//! Anthropic's native Messages API, and [`demo`], a built-in model for a first run with nothing
//! configured.

#[cfg(feature = "anthropic")]
pub mod anthropic;
pub mod demo;
#[cfg(feature = "openai")]
pub mod openai;

#[cfg(feature = "anthropic")]
pub use anthropic::{AnthropicBackend, AnthropicConfig};
pub use demo::DemoModel;
#[cfg(feature = "openai")]
pub use openai::{OpenAiBackend, OpenAiConfig};
