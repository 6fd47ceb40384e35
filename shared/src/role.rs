//! Who wrote a message: used by the chat messages and by MCP prompt messages alike.

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The system prompt. Derived by the server per request; never stored, and dropped when the
    /// browser sends one.
    System,
    /// The person chatting.
    User,
    /// The model.
    Assistant,
    /// A tool result answering one of the assistant's tool calls.
    Tool,
}
