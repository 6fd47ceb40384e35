//! The request body of `POST {prefix}/api/aisdk/chat` (what `DefaultChatTransport` sends).
//!
//! Decisions: unknown keys are ignored (apps add their own `body` fields); an unknown
//! `reasoningEffort` or `trigger` fails to deserialize, so the route answers 400 rather than
//! guessing; `trigger` defaults to `submit-message` for hand-written clients; our
//! `persona_id` is spelled as the native protocol spells it.

use serde::{Deserialize, Serialize};

use super::message::UiMessage;
pub use crate::ReasoningEffort;

/// Why the client posts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UiTrigger {
    /// A new user message (or an approval answer) ends the list.
    #[default]
    SubmitMessage,
    /// Regenerate the assistant message `messageId` (or the last one).
    RegenerateMessage,
}

/// Body of `POST {prefix}/api/aisdk/chat`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiSdkChatRequest {
    /// The client's chat id; the thread id unless `threadId` is given.
    pub id: String,
    /// The whole message list, oldest first.
    pub messages: Vec<UiMessage>,
    /// Why the client posts; `submit-message` when absent.
    #[serde(default)]
    pub trigger: UiTrigger,
    /// With `regenerate-message`: the assistant message to replace; omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The model id (`provider/model`, or a bare id when unambiguous); omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Reasoning effort; omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// The thread to append to, instead of `id`; omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// Our persona id (snake case, as in the native protocol); omitted when `None`.
    #[serde(
        default,
        rename = "persona_id",
        skip_serializing_if = "Option::is_none"
    )]
    pub persona_id: Option<String>,
}

impl AiSdkChatRequest {
    /// The thread this request writes to: `threadId` when given and not empty, else `id`.
    pub fn thread_id(&self) -> &str {
        self.thread_id
            .as_deref()
            .filter(|t| !t.is_empty())
            .unwrap_or(&self.id)
    }
}
