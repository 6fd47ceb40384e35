//! LLM backends.
