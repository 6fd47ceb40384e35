//! LLM backends: [`openai`], the OpenAI-compatible `/chat/completions` backend.

pub mod openai;

pub use openai::{OpenAiBackend, OpenAiConfig};
