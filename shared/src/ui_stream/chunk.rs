//! The chunks of the UI Message Stream (`ai@6` `UIMessageChunk`), one per SSE `data:` line.
//!
//! Decisions:
//! - Every variant carries exactly the keys `ai@6.0.0` knows, in camelCase; optional keys are
//!   omitted when `None`. `ai@6.0.0` validates chunks with strict objects and rejects unknown
//!   keys, so keys that only later 6.0.x releases accept (`abort.reason`, `toolMetadata`,
//!   `inputEncoding`, `providerMetadata` on tool output chunks, …) are deliberately absent:
//!   this type cannot emit them.
//! - Reading is tolerant, for a Rust client of the stream: an unknown `type` becomes
//!   [`UiChunk::Unknown`] with the JSON kept verbatim, and unknown keys of a known type are
//!   ignored. A known type with a missing or mistyped required key is an error.
//! - Optional keys are never `null` (the client rejects `null` where a key is optional), and
//!   `input` / `output` are always written (the client requires the keys, even for `null`).
//!   A `providerMetadata` value must be an object of objects (`{"provider": {"key": …}}`);
//!   the type does not check that.
//! - `data-<name>` chunks have an open set of names, so they are one variant
//!   ([`UiChunk::Data`]) with the name beside the payload.
//! - **Two client majors.** `ai@7` reads every `ai@6` chunk and adds its own; `ai@6` throws on
//!   those. The v7-only ones this crate writes are the policy's automatic decisions: a
//!   `tool-approval-request` with `isAutomatic: true` and the `tool-approval-response` that
//!   follows it ([`UiChunk::is_v7_only`]). A server sends them only to a client that asked
//!   ([`AI_SDK_VERSION_HEADER`]) and drops them for the others ([`v6_frames`]); without them
//!   the stream is exactly what `ai@6.0.0` reads.

use std::borrow::Cow;

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::message::{DataFields, write_data};

/// Header naming the protocol on a UI Message Stream response (besides
/// `content-type: text/event-stream`).
pub const UI_MESSAGE_STREAM_HEADER: (&str, &str) = ("x-vercel-ai-ui-message-stream", "v1");

/// The SSE frame that ends a UI Message Stream.
pub const DONE_FRAME: &str = "data: [DONE]\n\n";

/// The `data:` of [`DONE_FRAME`], for writers that frame events themselves (with an `id:`).
pub const DONE_DATA: &str = "[DONE]";

/// The SSE comment a server may send to keep an idle stream open (ignored by clients).
pub const KEEP_ALIVE_FRAME: &str = ": keep-alive\n\n";

/// Request header by which a client says which AI SDK major reads the stream (`7`); without
/// it (or with `6`) the stream holds only what `ai@6.0.0` reads. It applies to the chat
/// `POST`, the stream's resume `GET` and the thread `GET`s:
/// `new DefaultChatTransport({ api, headers: { 'x-lmchatkit-ai-sdk': '7' } })`.
pub const AI_SDK_VERSION_HEADER: &str = "x-lmchatkit-ai-sdk";

/// Whether the value of [`AI_SDK_VERSION_HEADER`] asks for the v7 stream (a major of 7 or
/// more; anything unreadable is taken as 6, the stream every client reads).
///
/// ```
/// use lmchatkit_protocol::ui_stream::wants_v7;
/// assert!(wants_v7(Some("7")) && wants_v7(Some(" 8 ")));
/// assert!(!wants_v7(Some("6")) && !wants_v7(Some("seven")) && !wants_v7(None));
/// ```
pub fn wants_v7(header: Option<&str>) -> bool {
    header
        .and_then(|v| v.trim().parse::<u32>().ok())
        .is_some_and(|major| major >= 7)
}

/// Whether an `ai@6` client may read the chunk whose JSON is `data` (an SSE frame's `data:`):
/// `false` for the chunks [`UiChunk::is_v7_only`] names. Cheap for the common case: only a
/// chunk that mentions an approval is parsed.
///
/// ```
/// use lmchatkit_protocol::ui_stream::{v6_may_read, UiChunk};
/// assert!(v6_may_read(&UiChunk::text_delta("t1", "isAutomatic").to_json()));
/// assert!(v6_may_read(&UiChunk::tool_approval_request("ap1", "c1").to_json()));
/// let auto = UiChunk::automatic_approval("ap1", "c1", true, None);
/// assert!(auto.iter().all(|c| !v6_may_read(&c.to_json())));
/// ```
pub fn v6_may_read(data: &str) -> bool {
    if !data.contains(V7_ONLY_MARK) {
        return true;
    }
    serde_json::from_str::<UiChunk>(data).map_or(true, |c| !c.is_v7_only())
}

/// What every v7-only chunk's JSON holds (the type of both approval chunks).
const V7_ONLY_MARK: &str = "tool-approval-re";

/// `frames` (SSE frames of chunks, each ending with a blank line, several at once when a log
/// is replayed) without those an `ai@6` client may not read ([`v6_may_read`]); borrowed, with
/// nothing looked at closer, when no frame mentions an approval.
///
/// ```
/// use std::borrow::Cow;
/// use lmchatkit_protocol::ui_stream::{sse_frame, v6_frames, UiChunk};
/// let text = sse_frame(&UiChunk::text_delta("t1", "Hi"));
/// assert!(matches!(v6_frames(&text), Cow::Borrowed(_)));
/// let [auto, answer] = UiChunk::automatic_approval("ap1", "c1", true, None);
/// let replay = [sse_frame(&auto), text.clone(), sse_frame(&answer)].concat();
/// assert_eq!(v6_frames(&replay), text);
/// ```
pub fn v6_frames(frames: &str) -> Cow<'_, str> {
    if !frames.contains(V7_ONLY_MARK) {
        return Cow::Borrowed(frames);
    }
    frames
        .split_inclusive("\n\n")
        .filter(|frame| {
            frame
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .all(v6_may_read)
        })
        .collect()
}

/// One chunk as an SSE frame: `data: {json}\n\n`.
///
/// ```
/// use lmchatkit_protocol::ui_stream::{sse_frame, UiChunk};
/// assert_eq!(sse_frame(&UiChunk::text_delta("t1", "Hi")), "data: {\"type\":\"text-delta\",\"id\":\"t1\",\"delta\":\"Hi\"}\n\n");
/// ```
pub fn sse_frame(chunk: &UiChunk) -> String {
    format!("data: {}\n\n", chunk.to_json())
}

impl UiChunk {
    /// Whether only `ai@7` reads the chunk (an `ai@6` client throws on it): a
    /// `tool-approval-response`, or a `tool-approval-request` with `isAutomatic`.
    pub fn is_v7_only(&self) -> bool {
        matches!(
            self,
            UiChunk::ToolApprovalResponse { .. }
                | UiChunk::ToolApprovalRequest {
                    is_automatic: Some(_),
                    ..
                }
        )
    }

    /// The chunk as one line of JSON (an SSE frame's `data:`).
    pub fn to_json(&self) -> String {
        // Serializing these types cannot fail: every map key is a string and `Value` is valid
        // JSON.
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_owned())
    }
}

/// Why the model stopped, as the `finish` chunk reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UiFinishReason {
    /// The model finished its answer.
    Stop,
    /// The output token limit was reached.
    Length,
    /// A content filter stopped the answer.
    ContentFilter,
    /// The model asked for tool calls (the turn paused, e.g. for an approval).
    ToolCalls,
    /// The turn failed.
    Error,
    /// Any other reason.
    Other,
}

/// A `data-<name>` chunk: app data streamed beside the message.
#[derive(Debug, Clone, PartialEq)]
pub struct UiDataChunk {
    /// The name after `data-` in the chunk's `type`.
    pub name: String,
    /// Part id; a later chunk with the same id replaces the part. Omitted when `None`.
    pub id: Option<String>,
    /// The payload.
    pub data: Value,
    /// `true`: the client hands it to `onData` but does not store it in the message. Omitted
    /// when `None`.
    pub transient: Option<bool>,
}

/// One chunk of the UI Message Stream. Serializes with `type` plus the documented keys only;
/// see the module docs for what reading accepts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    remote = "Self",
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum UiChunk {
    /// Starts the assistant message.
    Start {
        /// Id of the assistant message; omitted when `None` (the client makes one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        /// Message metadata; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_metadata: Option<Value>,
    },
    /// Starts one model call (a step).
    StartStep {},
    /// Starts a text part.
    TextStart {
        /// Id of the text part, repeated by its deltas and its end.
        id: String,
        /// Provider metadata; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// Text to append to a text part.
    TextDelta {
        /// Id of the text part.
        id: String,
        /// The text to append.
        delta: String,
        /// Provider metadata; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// Ends a text part.
    TextEnd {
        /// Id of the text part.
        id: String,
        /// Provider metadata; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// Starts a reasoning part.
    ReasoningStart {
        /// Id of the reasoning part.
        id: String,
        /// Provider metadata; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// Reasoning text to append.
    ReasoningDelta {
        /// Id of the reasoning part.
        id: String,
        /// The text to append.
        delta: String,
        /// Provider metadata; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// Ends a reasoning part.
    ReasoningEnd {
        /// Id of the reasoning part.
        id: String,
        /// Provider metadata; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// The model started a tool call whose input streams next.
    ToolInputStart {
        /// The call id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The provider ran the tool itself; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_executed: Option<bool>,
        /// A dynamic tool (a `dynamic-tool` part, e.g. an MCP tool); omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
        /// A title to show for the call; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// A piece of a tool call's input JSON text.
    ToolInputDelta {
        /// The call id.
        tool_call_id: String,
        /// JSON text to append to the input.
        input_text_delta: String,
    },
    /// A tool call's input is complete.
    ToolInputAvailable {
        /// The call id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The input (arguments).
        #[serde(default)]
        input: Value,
        /// The provider ran the tool itself; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_executed: Option<bool>,
        /// Provider metadata; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
        /// A dynamic tool; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
        /// A title to show for the call; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// A tool call's input could not be parsed or validated.
    ToolInputError {
        /// The call id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The input as received.
        #[serde(default)]
        input: Value,
        /// What was wrong.
        error_text: String,
        /// The provider ran the tool itself; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_executed: Option<bool>,
        /// Provider metadata; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
        /// A dynamic tool; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
        /// A title to show for the call; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// The call waits for the user's approval (the step ends after this), or, with
    /// `is_automatic`, the policy decided it without asking (a
    /// [`UiChunk::ToolApprovalResponse`] follows).
    ToolApprovalRequest {
        /// The approval id the client answers with `addToolApprovalResponse`.
        approval_id: String,
        /// The call id.
        tool_call_id: String,
        /// `ai@7` only: the policy decided without the user; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_automatic: Option<bool>,
    },
    /// `ai@7` only: the answer to an approval request (here: the policy's automatic one).
    ToolApprovalResponse {
        /// The approval id of the request it answers.
        approval_id: String,
        /// Whether the call may run.
        approved: bool,
        /// Why; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The tool's result.
    ToolOutputAvailable {
        /// The call id.
        tool_call_id: String,
        /// The output.
        #[serde(default)]
        output: Value,
        /// The provider ran the tool itself; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_executed: Option<bool>,
        /// A dynamic tool; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
        /// A preliminary output that a later one replaces; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preliminary: Option<bool>,
    },
    /// The tool failed.
    ToolOutputError {
        /// The call id.
        tool_call_id: String,
        /// What went wrong.
        error_text: String,
        /// The provider ran the tool itself; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_executed: Option<bool>,
        /// A dynamic tool; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
    },
    /// The user declined the call; it did not run.
    ToolOutputDenied {
        /// The call id.
        tool_call_id: String,
    },
    /// A source the answer cites, by URL.
    SourceUrl {
        /// The source id.
        source_id: String,
        /// The URL.
        url: String,
        /// A title; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// Provider metadata; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// A source the answer cites, a document.
    SourceDocument {
        /// The source id.
        source_id: String,
        /// The document's media type.
        media_type: String,
        /// The document's title.
        title: String,
        /// The file name; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
        /// Provider metadata; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// A file (e.g. an image a tool returned), by URL (often a `data:` URL).
    File {
        /// The file's URL.
        url: String,
        /// The file's media type.
        media_type: String,
        /// Provider metadata; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// A `data-<name>` chunk.
    #[serde(skip)]
    Data(UiDataChunk),
    /// Sets or merges the message's metadata.
    MessageMetadata {
        /// The metadata.
        message_metadata: Value,
    },
    /// Ends one model call.
    FinishStep {},
    /// Ends the message.
    Finish {
        /// Why the model stopped; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish_reason: Option<UiFinishReason>,
        /// Message metadata; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_metadata: Option<Value>,
    },
    /// The turn was aborted (the client stopped it or the upstream went away).
    Abort {},
    /// The turn failed; the client sets `chat.error`.
    Error {
        /// What went wrong, for display.
        error_text: String,
    },
    /// A chunk of a type this crate does not know, kept verbatim (reading only; writing one
    /// writes the value as it is).
    #[serde(skip)]
    Unknown(Value),
}

/// The `type` of every variant the derive handles (all but `Data` and `Unknown`).
const KNOWN_TYPES: &[&str] = &[
    "start",
    "start-step",
    "text-start",
    "text-delta",
    "text-end",
    "reasoning-start",
    "reasoning-delta",
    "reasoning-end",
    "tool-input-start",
    "tool-input-delta",
    "tool-input-available",
    "tool-input-error",
    "tool-approval-request",
    "tool-approval-response",
    "tool-output-available",
    "tool-output-error",
    "tool-output-denied",
    "source-url",
    "source-document",
    "file",
    "message-metadata",
    "finish-step",
    "finish",
    "abort",
    "error",
];

impl Serialize for UiChunk {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            UiChunk::Data(d) => write_data(s, &d.name, d.id.as_deref(), &d.data, d.transient),
            UiChunk::Unknown(v) => v.serialize(s),
            known => UiChunk::serialize(known, s),
        }
    }
}

impl<'de> Deserialize<'de> for UiChunk {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let Some(ty) = value.get("type").and_then(Value::as_str) else {
            return Err(de::Error::missing_field("type"));
        };
        if let Some(name) = ty.strip_prefix("data-") {
            let name = name.to_owned();
            let f = DataFields::deserialize(value).map_err(de::Error::custom)?;
            return Ok(UiChunk::Data(UiDataChunk {
                name,
                id: f.id,
                data: f.data,
                transient: f.transient,
            }));
        }
        if !KNOWN_TYPES.contains(&ty) {
            return Ok(UiChunk::Unknown(value));
        }
        UiChunk::deserialize(value).map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_type_is_one_the_derive_reads() {
        for ty in KNOWN_TYPES {
            let v = serde_json::json!({"type": ty});
            // Either it parses (no required keys) or fails on a missing key, never on the type.
            if let Err(e) = serde_json::from_value::<UiChunk>(v) {
                assert!(e.to_string().contains("missing field"), "{ty}: {e}");
            }
        }
    }
}
