//! [`AiSdkExtra`]: what a [`crate::Message`] converted from a `UIMessage` keeps beyond its own
//! fields, so the conversion back gives the same `UIMessage` (see [`super::convert`]).
//!
//! Decisions: stored with the conversation in snake case, like the rest of [`crate::Message`];
//! the texts, tool inputs and tool outputs are not copied here but referenced (by length or by
//! call id), so the model-facing fields stay the only copy; parts our `Message` cannot
//! represent are kept verbatim in `UIMessage` JSON.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::message::{UiApproval, UiPart, UiTextState, UiToolState};
use crate::chat::Message;

/// The AI SDK side of one [`crate::Message`]: which `UIMessage` it belongs to and the layout
/// of its parts. Stored with the conversation, stripped before the host sees the messages.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AiSdkExtra {
    /// On a continuation message (a later step, or a tool result): the id of the `UIMessage` it
    /// belongs to. Omitted on the first message of a `UIMessage`, whose own `id` is that id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of: Option<String>,
    /// On the first message: the `UIMessage`'s `metadata`; omitted when it has none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub metadata: Option<Value>,
    /// The parts of this message (one step of an assistant message, or a whole user message),
    /// in order; omitted when empty (tool messages have none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<AiSdkPart>,
}

impl AiSdkExtra {
    /// The extra `m` carries ([`Message::aisdk`]), when it carries a valid one.
    pub fn of_message(m: &Message) -> Option<AiSdkExtra> {
        m.aisdk
            .as_ref()
            .and_then(|v| AiSdkExtra::deserialize(v).ok())
    }

    /// As stored in [`Message::aisdk`].
    pub fn into_value(self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// Marks the reply whose id is `id` among `messages` (the message with that id and the
/// continuations that name it) as cut off by a failure of its run, when no one else could:
/// its instance went away mid-reply. The parts the run left streaming are done, the AI SDK
/// metadata says `failed: why` (as [`super::UiMessageMetadata::failed`]) and so does the
/// reply's last assistant message ([`Message::failed`]). Whether there was such a reply.
///
/// ```
/// use lmchatkit_protocol::Message;
/// use lmchatkit_protocol::ui_stream::mark_failed;
///
/// let mut messages = vec![Message::user("hi").with_id("u1"), Message::assistant("Hel").with_id("r1")];
/// assert!(mark_failed(&mut messages, "r1", "its instance went away"));
/// assert_eq!(messages[1].failed.as_deref(), Some("its instance went away"));
/// assert!(!mark_failed(&mut messages, "r9", "no such reply"));
/// ```
pub fn mark_failed(messages: &mut [Message], id: &str, why: &str) -> bool {
    let mut last = None;
    for (i, m) in messages.iter_mut().enumerate() {
        let extra = AiSdkExtra::of_message(m);
        let first = m.id.as_deref() == Some(id);
        if !first && extra.as_ref().and_then(|e| e.of.as_deref()) != Some(id) {
            continue;
        }
        if m.role == crate::Role::Assistant {
            last = Some(i);
        }
        let Some(mut extra) = extra else { continue };
        for part in &mut extra.parts {
            if let AiSdkPart::Text { state, .. } | AiSdkPart::Reasoning { state, .. } = part
                && *state == Some(UiTextState::Streaming)
            {
                *state = Some(UiTextState::Done);
            }
        }
        if first {
            let mut meta = match extra.metadata.take() {
                Some(Value::Object(map)) => map,
                _ => Map::new(),
            };
            meta.insert("failed".into(), Value::String(why.to_owned()));
            extra.metadata = Some(Value::Object(meta));
        }
        m.aisdk = Some(extra.into_value());
    }
    let Some(i) = last else { return false };
    messages[i].failed = Some(why.to_owned());
    true
}

/// One part in an [`AiSdkExtra`] layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AiSdkPart {
    /// A text part. Its text is in the message's `content`: the whole text of a user message
    /// or its next text content part; for an assistant step, the next `len` bytes of the
    /// step's texts, concatenated.
    Text {
        /// Length of the text in bytes.
        len: usize,
        /// The part's `state`; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<UiTextState>,
        /// The part's `providerMetadata`; omitted when `None`.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "present"
        )]
        provider_metadata: Option<Value>,
    },
    /// A reasoning part: the next `len` bytes of the message's `thinking`.
    Reasoning {
        /// Length of the text in bytes.
        len: usize,
        /// The part's `state`; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<UiTextState>,
        /// The part's `providerMetadata`; omitted when `None`.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "present"
        )]
        provider_metadata: Option<Value>,
    },
    /// A file part of a user message; its URL is the next content part (an `image_url` or a
    /// `file`).
    File {
        /// The part's `mediaType`.
        media_type: String,
        /// The part's `filename`; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
        /// The part's `providerMetadata`; omitted when `None`.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "present"
        )]
        provider_metadata: Option<Value>,
    },
    /// A tool part: its call is the message's tool call with this id, its outcome the tool
    /// message answering it.
    Tool(Box<AiSdkTool>),
    /// A part `Message` cannot represent (`data-*`, `source-*`, `step-start` of a user
    /// message, an assistant's file, an unknown type…), verbatim.
    Part {
        /// The part as `UIMessage` JSON.
        part: UiPart,
    },
}

/// What a tool part keeps beyond its [`crate::ToolCall`] and its tool message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AiSdkTool {
    /// The call id ([`crate::ToolCall::id`]); the tool name is the call's name.
    pub tool_call_id: String,
    /// `true` for a `dynamic-tool` part, `false` for `tool-<name>`.
    pub dynamic: bool,
    /// The part's `state`.
    pub state: UiToolState,
    /// The part's `title`; omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The part's `approval` (its id and reason, which [`crate::Approval`] cannot hold);
    /// omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<UiApproval>,
    /// The part's `providerExecuted`; omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_executed: Option<bool>,
    /// The part's `callProviderMetadata`; omitted when `None`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub call_provider_metadata: Option<Value>,
    /// The part's `preliminary`; omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preliminary: Option<bool>,
    /// The part had no `input` (the call's arguments then read `{}`); omitted when `false`.
    #[serde(default, skip_serializing_if = "crate::is_false")]
    pub no_input: bool,
    /// How the tool message's text gives `output`; omitted when it does not (then `output`
    /// below is the part's output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_in_message: Option<OutputForm>,
    /// The part's `output` when the tool message does not carry it; omitted when `None`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub output: Option<Value>,
    /// The tool message's text is the part's `errorText`; omitted when `false`.
    #[serde(default, skip_serializing_if = "crate::is_false")]
    pub error_in_message: bool,
    /// The part's `errorText` when the tool message does not carry it; omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_text: Option<String>,
    /// The part's keys this crate does not know ([`UiToolPart::unknown`](super::UiToolPart::unknown)); omitted when empty.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub unknown: Map<String, Value>,
}

/// How a tool message's text encodes a tool part's `output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputForm {
    /// The output is a JSON string: the text itself.
    Text,
    /// The output is other JSON: the text is its serialization.
    Json,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}
