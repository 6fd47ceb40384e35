//! LLM backends: [`openai`], the OpenAI-compatible `/chat/completions` backend, and [`demo`], a
//! built-in model for a first run with nothing configured.

pub mod demo;
#[cfg(feature = "openai")]
pub mod openai;

pub use demo::DemoModel;
#[cfg(feature = "openai")]
pub use openai::{OpenAiBackend, OpenAiConfig};
