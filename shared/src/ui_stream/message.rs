//! `UIMessage`: the message list an AI SDK client sends and a thread returns.
//!
//! Decisions:
//! - Serde round-trips any valid `UIMessage` JSON exactly (field order aside): optional keys
//!   are omitted when `None`, and a key present with `null` (e.g. a tool's `input` or
//!   `output`) stays `null` rather than vanishing.
//! - Part types this crate does not know are kept verbatim as [`UiPart::Other`]; a known type
//!   with a missing or mistyped required key is an error (the route answers 400, as
//!   `validateUIMessages` would fail).
//! - Tool parts come in two spellings, `tool-<name>` (static tools) and `dynamic-tool` with a
//!   `toolName` key; [`UiToolPart`] holds both ([`UiToolPart::dynamic`]).

use serde::de::{self, Deserializer};
use serde::ser::{Error as _, SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who wrote a [`UiMessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UiRole {
    /// A system message.
    System,
    /// The person chatting.
    User,
    /// The model (with the tools it ran).
    Assistant,
}

/// An AI SDK `UIMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UiMessage {
    /// The message id.
    pub id: String,
    /// Who wrote it.
    pub role: UiRole,
    /// App-defined metadata (ours is a [`crate::ui_stream::UiMessageMetadata`]); omitted when
    /// `None`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub metadata: Option<Value>,
    /// The parts, in order.
    pub parts: Vec<UiPart>,
}

/// `state` of a text or reasoning part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UiTextState {
    /// Still streaming.
    Streaming,
    /// Complete.
    Done,
}

/// `state` of a tool part, in the order a call goes through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UiToolState {
    /// The input is still streaming (`input` is partial or absent).
    InputStreaming,
    /// The input is complete.
    InputAvailable,
    /// Waiting for the user's approval (`approval.id` set).
    ApprovalRequested,
    /// The user answered (`approval.approved` set); the call has not run yet.
    ApprovalResponded,
    /// The tool ran; `output` holds its result.
    OutputAvailable,
    /// The tool (or its input) failed; `errorText` says why.
    OutputError,
    /// The user declined; the tool did not run.
    OutputDenied,
}

/// `approval` of a tool part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UiApproval {
    /// The approval id (from `tool-approval-request`).
    pub id: String,
    /// The user's answer; omitted while none was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<bool>,
    /// The user's reason; omitted when none was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Keys this crate does not know (e.g. `isAutomatic` of later releases), kept verbatim;
    /// empty for approvals made here.
    #[serde(flatten)]
    pub unknown: Map<String, Value>,
}

impl UiApproval {
    /// An approval with an id and no answer yet.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            approved: None,
            reason: None,
            unknown: Map::new(),
        }
    }
}

/// A tool call part: `tool-<name>` or `dynamic-tool`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiToolPart {
    /// The tool's name (after `tool-`, or the `toolName` of a dynamic tool). Not a key of its
    /// own for static tools.
    #[serde(skip)]
    pub tool_name: String,
    /// `true` for a `dynamic-tool` part, `false` for `tool-<name>`.
    #[serde(skip)]
    pub dynamic: bool,
    /// The call id.
    pub tool_call_id: String,
    /// Where the call is.
    pub state: UiToolState,
    /// A title to show; omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The input (arguments); omitted when `None` (a JSON `null` is `Some(Null)`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub input: Option<Value>,
    /// The output; omitted when `None` (a JSON `null` is `Some(Null)`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub output: Option<Value>,
    /// Why the call failed; omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_text: Option<String>,
    /// The approval; omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<UiApproval>,
    /// The provider ran the tool itself; omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_executed: Option<bool>,
    /// Provider metadata of the call; omitted when `None`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub call_provider_metadata: Option<Value>,
    /// The output is preliminary; omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preliminary: Option<bool>,
    /// Keys this crate does not know (e.g. `toolMetadata`, `resultProviderMetadata` or
    /// `rawInput` of later releases), kept verbatim so a thread round-trips; empty for parts
    /// made here.
    #[serde(flatten)]
    pub unknown: Map<String, Value>,
}

impl UiToolPart {
    /// A dynamic tool part (what our MCP tools are) with only the required keys.
    pub fn dynamic(
        tool_name: impl Into<String>,
        tool_call_id: impl Into<String>,
        state: UiToolState,
    ) -> Self {
        Self {
            tool_name: tool_name.into(),
            dynamic: true,
            tool_call_id: tool_call_id.into(),
            state,
            title: None,
            input: None,
            output: None,
            error_text: None,
            approval: None,
            provider_executed: None,
            call_provider_metadata: None,
            preliminary: None,
            unknown: Map::new(),
        }
    }
}

/// A `data-<name>` part.
#[derive(Debug, Clone, PartialEq)]
pub struct UiDataPart {
    /// The name after `data-` in the part's `type`.
    pub name: String,
    /// The part id; omitted when `None`.
    pub id: Option<String>,
    /// The payload.
    pub data: Value,
}

/// One part of a [`UiMessage`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    remote = "Self",
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum UiPart {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Streaming or done; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<UiTextState>,
        /// Provider metadata; omitted when `None`.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "present"
        )]
        provider_metadata: Option<Value>,
    },
    /// Reasoning text.
    Reasoning {
        /// The text.
        text: String,
        /// Streaming or done; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<UiTextState>,
        /// Provider metadata; omitted when `None`.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "present"
        )]
        provider_metadata: Option<Value>,
    },
    /// A file (an upload, or an image a tool returned).
    File {
        /// The media type.
        media_type: String,
        /// The file name; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
        /// The file's URL (often a `data:` URL).
        url: String,
        /// Provider metadata; omitted when `None`.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "present"
        )]
        provider_metadata: Option<Value>,
    },
    /// The start of a step (one model call) in an assistant message.
    StepStart {},
    /// A cited source, by URL.
    SourceUrl {
        /// The source id.
        source_id: String,
        /// The URL.
        url: String,
        /// A title; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// Provider metadata; omitted when `None`.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "present"
        )]
        provider_metadata: Option<Value>,
    },
    /// A cited source, a document.
    SourceDocument {
        /// The source id.
        source_id: String,
        /// The media type.
        media_type: String,
        /// The title.
        title: String,
        /// The file name; omitted when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
        /// Provider metadata; omitted when `None`.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "present"
        )]
        provider_metadata: Option<Value>,
    },
    /// A `data-<name>` part.
    #[serde(skip)]
    Data(UiDataPart),
    /// A `tool-<name>` or `dynamic-tool` part (boxed: it is the largest part by far).
    #[serde(skip)]
    Tool(Box<UiToolPart>),
    /// A part of a type this crate does not know, kept verbatim.
    #[serde(skip)]
    Other(Value),
}

impl UiMessage {
    /// The message as an `ai@6` client may read it, and would have built it from the stream
    /// it was sent: parts of types this crate does not know (`ai@7`'s `custom`,
    /// `reasoning-file`, `steering-message`, … — `ai@6`'s `validateUIMessages` rejects them)
    /// are left out, the policy's automatic approvals (`isAutomatic`: chunks an `ai@6` client
    /// never gets) too, and other approvals lose the keys `ai@6` does not have.
    ///
    /// ```
    /// use lmchatkit_protocol::ui_stream::UiMessage;
    /// let m: UiMessage = serde_json::from_value(serde_json::json!({
    ///     "id": "m1", "role": "user",
    ///     "parts": [{"type": "text", "text": "hi"}, {"type": "custom", "kind": "x.note"}]
    /// })).unwrap();
    /// let v6 = serde_json::to_value(m.for_v6()).unwrap();
    /// assert_eq!(v6["parts"], serde_json::json!([{"type": "text", "text": "hi"}]));
    /// ```
    pub fn for_v6(mut self) -> Self {
        self.parts.retain(|p| !matches!(p, UiPart::Other(_)));
        for part in &mut self.parts {
            if let UiPart::Tool(t) = part {
                let automatic = t
                    .approval
                    .as_ref()
                    .is_some_and(|a| a.unknown.get("isAutomatic") == Some(&Value::Bool(true)));
                if automatic {
                    t.approval = None;
                } else if let Some(a) = t.approval.as_mut() {
                    a.unknown.clear();
                }
            }
        }
        self
    }
}

impl UiPart {
    /// A text part with no state.
    pub fn text(text: impl Into<String>) -> Self {
        UiPart::Text {
            text: text.into(),
            state: None,
            provider_metadata: None,
        }
    }

    /// A reasoning part with no state.
    pub fn reasoning(text: impl Into<String>) -> Self {
        UiPart::Reasoning {
            text: text.into(),
            state: None,
            provider_metadata: None,
        }
    }

    /// A `step-start` part.
    pub fn step_start() -> Self {
        UiPart::StepStart {}
    }

    /// A file part without a file name.
    pub fn file(media_type: impl Into<String>, url: impl Into<String>) -> Self {
        UiPart::File {
            media_type: media_type.into(),
            filename: None,
            url: url.into(),
            provider_metadata: None,
        }
    }
}

const KNOWN_PARTS: &[&str] = &[
    "text",
    "reasoning",
    "file",
    "step-start",
    "source-url",
    "source-document",
];

impl Serialize for UiPart {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            UiPart::Data(d) => write_data(s, &d.name, d.id.as_deref(), &d.data, None),
            UiPart::Tool(t) => {
                let Value::Object(fields) = serde_json::to_value(&**t).map_err(S::Error::custom)?
                else {
                    return Err(S::Error::custom("a tool part serializes as an object"));
                };
                let mut map = s.serialize_map(None)?;
                if t.dynamic {
                    map.serialize_entry("type", "dynamic-tool")?;
                    map.serialize_entry("toolName", &t.tool_name)?;
                } else {
                    map.serialize_entry("type", &format!("tool-{}", t.tool_name))?;
                }
                for (k, v) in &fields {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
            UiPart::Other(v) => v.serialize(s),
            known => UiPart::serialize(known, s),
        }
    }
}

impl<'de> Deserialize<'de> for UiPart {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut value = Value::deserialize(d)?;
        let Some(ty) = value.get("type").and_then(Value::as_str) else {
            return Err(de::Error::missing_field("type"));
        };
        if let Some(name) = ty.strip_prefix("data-") {
            let name = name.to_owned();
            let f = DataFields::deserialize(value).map_err(de::Error::custom)?;
            return Ok(UiPart::Data(UiDataPart {
                name,
                id: f.id,
                data: f.data,
            }));
        }
        let tool = if ty == "dynamic-tool" {
            Some(None)
        } else {
            ty.strip_prefix("tool-").map(|n| Some(n.to_owned()))
        };
        if let Some(static_name) = tool {
            let map: &mut Map<String, Value> = value
                .as_object_mut()
                .ok_or_else(|| de::Error::custom("a part is an object"))?;
            map.remove("type");
            let (tool_name, dynamic) = match static_name {
                Some(n) => (n, false),
                None => match map.remove("toolName") {
                    Some(Value::String(n)) => (n, true),
                    _ => return Err(de::Error::missing_field("toolName")),
                },
            };
            let mut part = UiToolPart::deserialize(value).map_err(de::Error::custom)?;
            part.tool_name = tool_name;
            part.dynamic = dynamic;
            return Ok(UiPart::Tool(Box::new(part)));
        }
        if !KNOWN_PARTS.contains(&ty) {
            return Ok(UiPart::Other(value));
        }
        UiPart::deserialize(value).map_err(de::Error::custom)
    }
}

/// The keys of a `data-<name>` part or chunk besides `type` (`transient` only on chunks).
#[derive(Deserialize)]
pub(super) struct DataFields {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub data: Value,
    #[serde(default)]
    pub transient: Option<bool>,
}

/// Writes a `data-<name>` part or chunk; `id` and `transient` are omitted when `None`.
pub(super) fn write_data<S: Serializer>(
    s: S,
    name: &str,
    id: Option<&str>,
    data: &Value,
    transient: Option<bool>,
) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(None)?;
    map.serialize_entry("type", &format!("data-{name}"))?;
    if let Some(id) = id {
        map.serialize_entry("id", id)?;
    }
    map.serialize_entry("data", data)?;
    if let Some(t) = transient {
        map.serialize_entry("transient", &t)?;
    }
    map.end()
}

/// Reads an optional field so that a present `null` is `Some(Value::Null)`, not `None`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}
