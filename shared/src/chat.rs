//! Messages and the events of the chat stream (`POST {prefix}/api/chat`).

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::approval::ToolDecision;
use crate::mcp::UiToolMeta;
pub use crate::role::Role;

/// Message content: plain text, or an OpenAI content-part array (text, images, files, audio).
///
/// Always serialized (never omitted); `null` deserializes as empty text, as providers send
/// `content: null` beside tool calls.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// Plain text (a JSON string).
    Text(String),
    /// Content parts (a JSON array).
    Parts(Vec<ContentPart>),
}

impl Default for Content {
    fn default() -> Self {
        Content::Text(String::new())
    }
}

impl Content {
    /// The text of a `Text` content, or `None` for parts.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text(s) => Some(s),
            Content::Parts(_) => None,
        }
    }

    /// The text: the string itself, or the text parts joined with `separator` (images, audio and
    /// files are left out).
    ///
    /// ```
    /// use lmchatkit_protocol::{Content, ContentPart};
    /// let c = Content::Parts(vec![ContentPart::text("a"), ContentPart::image_url("data:,"), ContentPart::text("b")]);
    /// assert_eq!(c.joined_text("\n"), "a\nb");
    /// ```
    pub fn joined_text(&self, separator: &str) -> String {
        match self {
            Content::Text(t) => t.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    ContentPart::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join(separator),
        }
    }

    /// The title a conversation gets from its first message: the first line of the text (or of
    /// the first text part, else the first file's name), trimmed, at most 50 characters.
    ///
    /// ```
    /// use lmchatkit_protocol::Content;
    /// assert_eq!(Content::from("  Plan a trip\nto Oslo").title(), "Plan a trip");
    /// ```
    pub fn title(&self) -> String {
        let text = match self {
            Content::Text(t) => t.as_str(),
            Content::Parts(parts) => parts
                .iter()
                .find_map(|p| match p {
                    ContentPart::Text { text } => Some(text.as_str()),
                    ContentPart::File { file } => file.filename.as_deref(),
                    _ => None,
                })
                .unwrap_or_default(),
        };
        let line = text.lines().next().unwrap_or_default().trim();
        line.chars().take(50).collect()
    }

    /// True for empty text or an empty part list.
    pub fn is_empty(&self) -> bool {
        match self {
            Content::Text(s) => s.is_empty(),
            Content::Parts(p) => p.is_empty(),
        }
    }
}

impl From<String> for Content {
    fn from(s: String) -> Self {
        Content::Text(s)
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Self {
        Content::Text(s.to_owned())
    }
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Content::Text(t) => s.serialize_str(t),
            Content::Parts(p) => p.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A visitor rather than `#[serde(untagged)]`: untagged buffers the value and tries each
        // shape in turn, which costs about 13 KB in the wasm UI and hides the error inside a
        // malformed part behind a generic one.
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("content: a string, an array of content parts, or null")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content::Text(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Content, E> {
                Ok(Content::Text(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Content, E> {
                Ok(Content::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<Content, E> {
                Ok(Content::default())
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Content, A::Error> {
                Vec::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(Content::Parts)
            }
        }
        d.deserialize_any(ContentVisitor)
    }
}

/// One part of an OpenAI content array.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Text: `{"type":"text","text":…}`.
    Text {
        /// The text.
        text: String,
    },
    /// An image: `{"type":"image_url","image_url":{…}}`.
    ImageUrl {
        /// Where the image is.
        image_url: ImageUrl,
    },
    /// Audio: `{"type":"input_audio","input_audio":{…}}`.
    InputAudio {
        /// The audio data and its format.
        input_audio: InputAudio,
    },
    /// A document: `{"type":"file","file":{…}}`.
    File {
        /// The file, inline or by id.
        file: FileData,
    },
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        ContentPart::Text { text: text.into() }
    }

    /// An image part from a URL (usually a `data:` URL).
    pub fn image_url(url: impl Into<String>) -> Self {
        ContentPart::ImageUrl {
            image_url: ImageUrl {
                url: url.into(),
                detail: None,
            },
        }
    }
}

impl<'de> Deserialize<'de> for ContentPart {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // One flat struct rather than the derive's `tag = "type"`: the derive buffers each part
        // in serde's generic value (the tag may come last) and reads it again per variant, which
        // cost 11 KB of the UI's main wasm (3.4 KB brotli). Each field is read once here, in any
        // order; the errors are the derive's (`unknown variant`, `missing field`).
        #[derive(Deserialize)]
        #[serde(rename_all = "snake_case")]
        enum Kind {
            Text,
            ImageUrl,
            InputAudio,
            File,
        }
        #[derive(Deserialize)]
        struct Flat {
            #[serde(rename = "type")]
            kind: Kind,
            text: Option<String>,
            image_url: Option<ImageUrl>,
            input_audio: Option<InputAudio>,
            file: Option<FileData>,
        }
        let f = Flat::deserialize(d)?;
        let missing = de::Error::missing_field;
        Ok(match f.kind {
            Kind::Text => ContentPart::Text {
                text: f.text.ok_or_else(|| missing("text"))?,
            },
            Kind::ImageUrl => ContentPart::ImageUrl {
                image_url: f.image_url.ok_or_else(|| missing("image_url"))?,
            },
            Kind::InputAudio => ContentPart::InputAudio {
                input_audio: f.input_audio.ok_or_else(|| missing("input_audio"))?,
            },
            Kind::File => ContentPart::File {
                file: f.file.ok_or_else(|| missing("file"))?,
            },
        })
    }
}

/// `image_url` of an image part.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ImageUrl {
    /// The image as an `https:` or `data:` URL.
    pub url: String,
    /// OpenAI detail level (`auto`, `low`, `high`); omitted when unset (the provider decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// `input_audio` of an audio part (base64 data).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InputAudio {
    /// The audio bytes, base64-encoded.
    pub data: String,
    /// The audio format, e.g. `wav` or `mp3`.
    pub format: String,
}

/// `file` of a file part (a PDF or other document as a data URL).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FileData {
    /// The original file name; omitted when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// The file as a base64 `data:` URL; omitted when the file is given by `file_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_data: Option<String>,
    /// A provider-side file id, instead of `file_data`; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
}

/// The user's decision on a tool call. UI-only: persisted with the conversation, stripped before
/// the host sees the messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    /// Waiting for the user's decision.
    Pending,
    /// Allowed; the call runs (or ran).
    Approved,
    /// Refused by the user; the tool is not called.
    Denied,
    /// Allowed, but the call failed.
    Error,
}

impl Approval {
    /// The approval a new call starts with: the policy's decision first (a deny is final and
    /// shows as `Error`, a call that never ran), then whether the user allows the tool here
    /// (this chat or always).
    ///
    /// ```
    /// use lmchatkit_protocol::{Approval, ToolDecision};
    /// assert_eq!(Approval::initial(Some(ToolDecision::Deny), true), Approval::Error);
    /// assert_eq!(Approval::initial(Some(ToolDecision::Ask), true), Approval::Approved);
    /// assert_eq!(Approval::initial(None, false), Approval::Pending);
    /// ```
    pub fn initial(decision: Option<crate::ToolDecision>, allowed_here: bool) -> Approval {
        use crate::ToolDecision;
        match decision {
            Some(ToolDecision::Deny) => Approval::Error,
            Some(ToolDecision::Allow) => Approval::Approved,
            Some(ToolDecision::Ask) | None if allowed_here => Approval::Approved,
            Some(ToolDecision::Ask) | None => Approval::Pending,
        }
    }
}

/// A tool call requested by the model. `arguments` is a JSON value (normally an object), not a
/// string; arguments a provider sent as invalid JSON are kept as a JSON string.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned call id; the tool message answering it carries it as `tool_call_id`.
    pub id: String,
    /// Name of the tool to call.
    pub name: String,
    /// The arguments, normally an object; `{}` when absent.
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// UI-only approval state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// UI-only: what the tool's input schema says of each argument, for the approval card
    /// ([`crate::ArgumentHint`]). The service sets them on a call the user is asked about and
    /// strips them, as `approval`, before the model sees the conversation; omitted when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<crate::ArgumentHint>,
    /// UI-only: the call waits for the user's input (a form or a URL the tool asked for, with
    /// its ticket), saved with the conversation so a reload asks again. The service strips it,
    /// as `approval`, before the model sees the conversation; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_request: Option<Box<crate::InputRequired>>,
    /// UI-only: the call runs as a task on its server (its state and ticket), saved with the
    /// conversation so a reload polls it again. Stripped, as `approval`, before the model sees
    /// the conversation; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Box<crate::ToolTask>>,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

impl ToolCall {
    /// A call with the given id, name and arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
            approval: None,
            hints: Vec::new(),
            input_request: None,
            task: None,
        }
    }
}

/// Token counts reported by the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the prompt; omitted when not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Tokens generated; omitted when not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Prompt plus generated tokens; omitted when not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Of the prompt tokens, those read from the provider's prompt cache (billed lower);
    /// omitted when not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_prompt_tokens: Option<u64>,
    /// Of the completion tokens, those spent on reasoning; omitted when not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// What the last model call held in its context window (its prompt plus what it generated),
    /// set when several calls were added up ([`add`](Self::add)); omitted otherwise, when
    /// [`context`](Self::context) derives it from this call's own counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
}

impl Usage {
    /// The tokens this reply used: the reported total, else prompt plus completion (`0` for what
    /// was not reported). Every count the UI shows (a reply's footer, a conversation's total) uses
    /// this rule.
    ///
    /// ```
    /// use lmchatkit_protocol::Usage;
    /// let u = Usage { prompt_tokens: Some(11), completion_tokens: Some(5), ..Usage::default() };
    /// assert_eq!(u.tokens(), 16);
    /// ```
    pub fn tokens(&self) -> u64 {
        self.total_tokens
            .unwrap_or(self.prompt_tokens.unwrap_or(0) + self.completion_tokens.unwrap_or(0))
    }

    /// Adds `other`'s counts (a turn's steps, a reply's turns); a count stays unreported until
    /// one of the two reports it.
    ///
    /// ```
    /// use lmchatkit_protocol::Usage;
    /// let mut u = Usage { prompt_tokens: Some(10), ..Usage::default() };
    /// u.add(&Usage { prompt_tokens: Some(5), reasoning_tokens: Some(2), ..Usage::default() });
    /// assert_eq!((u.prompt_tokens, u.reasoning_tokens, u.completion_tokens), (Some(15), Some(2), None));
    /// ```
    pub fn add(&mut self, other: &Usage) {
        if *self == Usage::default() {
            // Nothing added yet: a copy, so one call's usage reads the same after a sum.
            *self = *other;
            return;
        }
        self.context_tokens = other.context().or(self.context());
        let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        self.prompt_tokens = sum(self.prompt_tokens, other.prompt_tokens);
        self.completion_tokens = sum(self.completion_tokens, other.completion_tokens);
        self.total_tokens = sum(self.total_tokens, other.total_tokens);
        self.cached_prompt_tokens = sum(self.cached_prompt_tokens, other.cached_prompt_tokens);
        self.reasoning_tokens = sum(self.reasoning_tokens, other.reasoning_tokens);
    }

    /// How full the last model call's context window was: [`context_tokens`](Self::context_tokens)
    /// when set, else prompt plus completion; `None` when neither was reported. This is the
    /// numerator of the context gauge, and after [`add`](Self::add) it is the latest call's, not
    /// a sum.
    ///
    /// ```
    /// use lmchatkit_protocol::Usage;
    /// let step = |p, c| Usage { prompt_tokens: Some(p), completion_tokens: Some(c), ..Usage::default() };
    /// let mut u = step(100, 20);
    /// assert_eq!(u.context(), Some(120));
    /// u.add(&step(150, 30));
    /// assert_eq!((u.prompt_tokens, u.context()), (Some(250), Some(180)));
    /// assert_eq!(Usage::default().context(), None);
    /// ```
    pub fn context(&self) -> Option<u64> {
        self.context_tokens
            .or(match (self.prompt_tokens, self.completion_tokens) {
                (None, None) => None,
                (p, c) => Some(p.unwrap_or(0) + c.unwrap_or(0)),
            })
    }
}

/// A chat message. `content` is always present on the wire; the UI-only fields (`id`,
/// `thinking`, `info`, `created_at`, `usage`, `from_app`, `aisdk`) are omitted when empty and never
/// reach the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Client-assigned message id (UI-only); omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Who wrote the message.
    pub role: Role,
    /// The content; always serialized, and `null` or absent reads as empty text.
    #[serde(default)]
    pub content: Content,
    /// Reasoning text streamed before the answer (UI-only); omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// An info card (UI-only; messages carrying one are never sent to the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<Value>,
    /// Tool calls an assistant message asks for; omitted when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// On a tool message: the [`ToolCall::id`] it answers; omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// On a tool message: the name of the called tool; omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// On a tool message: the tool reported a failure; omitted when `false`.
    #[serde(default, skip_serializing_if = "crate::is_false")]
    pub is_error: bool,
    /// On a tool message: the tool's MCP `structuredContent` for an app view (stripped before the
    /// host sees the messages); omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// On a tool message: the called tool's `_meta.ui`, so a reloaded chat can mount its view again
    /// without re-running the tool (stripped before the host sees the messages); omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui: Option<UiToolMeta>,
    /// When the message was written, in milliseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
    /// Token usage of the turn that produced this (assistant) message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// What producing this (assistant) message cost in US dollars, from the model's list price
    /// as the server knew it; omitted (never `0`) when the price is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// On a user message: the MCP App (named by its server) that wrote it through `ui/message`,
    /// which the user let through. Its text is literal: the service expands no `@uri` or
    /// `/prompt` in it. Kept with the conversation, stripped before the host sees the messages;
    /// omitted when the user wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_app: Option<String>,
    /// For a message converted from an AI SDK `UIMessage`: the `UIMessage` it belongs to and
    /// everything of it this struct cannot hold (part order, `data-*` and `source-*` parts,
    /// provider metadata, approval ids…), so the conversion back is exact
    /// (see [`crate::ui_stream::convert`]). Stripped before the host sees the messages; omitted
    /// when unset (messages written by our UI).
    ///
    /// Kept as plain JSON ([`crate::ui_stream::AiSdkExtra::of_message`] reads it): our browser
    /// UI keeps it untouched when it saves the conversation, without carrying the AI SDK types
    /// in its bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aisdk: Option<Value>,
    /// On an assistant message: its run was stopped before the model finished, so it holds what
    /// was written until then. Omitted when `false`.
    #[serde(default, skip_serializing_if = "crate::is_false")]
    pub stopped: bool,
    /// On an assistant message: its run failed before the model finished (the upstream's
    /// error, as the `error` event said it), so it holds what was written until then. Omitted
    /// when `None`. The model is told, in its next turn, that the reply was cut off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

impl Message {
    /// A message with a role and content, every other field empty.
    pub fn new(role: Role, content: impl Into<Content>) -> Self {
        Self {
            id: None,
            role,
            content: content.into(),
            thinking: None,
            info: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
            is_error: false,
            structured_content: None,
            ui: None,
            created_at: None,
            usage: None,
            cost_usd: None,
            from_app: None,
            aisdk: None,
            stopped: false,
            failed: None,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<Content>) -> Self {
        Self::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<Content>) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<Content>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// A tool-result message answering `tool_call_id`.
    pub fn tool(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        content: impl Into<Content>,
    ) -> Self {
        let mut m = Self::new(Role::Tool, content);
        m.tool_call_id = Some(tool_call_id.into());
        m.tool_name = Some(tool_name.into());
        m
    }

    /// Sets the id.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets the tool calls.
    pub fn with_tool_calls(mut self, calls: Vec<ToolCall>) -> Self {
        self.tool_calls = calls;
        self
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model finished its answer (`"stop"`).
    Stop,
    /// The model asked for tool calls (`"tool_calls"`).
    ToolCalls,
    /// The output token limit was reached (`"length"`).
    Length,
    /// The provider's content filter stopped the answer (`"content_filter"`).
    ContentFilter,
    /// The run was stopped (`POST {prefix}/api/runs/{id}/stop`) before the model finished; what
    /// came before is kept (`"stopped"`). Sent by the service, never read from a provider.
    Stopped,
}

/// One event of the chat stream, sent as an SSE `data:` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// Visible text.
    Delta {
        /// Text to append to the answer.
        delta: String,
    },
    /// Reasoning ("thinking") text.
    Reasoning {
        /// Reasoning text to append.
        reasoning: String,
    },
    /// A piece of a tool call's arguments, as the model streams them: the JSON text
    /// `arguments_delta` appended to what came before for the same `id` gives the arguments so
    /// far (incomplete
    /// JSON until the end). The complete call follows as [`Event::ToolCall`] with the same id,
    /// which stays the event to act on (and the only one saved); a reply cut off before it
    /// drops the call. Optional: a host may send only the `tool_call`, and clients that do not
    /// know this event ignore it.
    ToolCallDelta {
        /// The call's id, the same as the [`ToolCall::id`] of the `tool_call` that completes it.
        id: String,
        /// The tool's name (on every piece, so each one stands alone).
        name: String,
        /// JSON text to append to the call's arguments so far. (Not `delta`: a client that reads
        /// `delta` without looking at `type` must never take arguments for the answer's text.)
        arguments_delta: String,
        /// On the first piece of a call to a tool with an MCP App view: the tool's `_meta.ui`
        /// (its `resourceUri`), so the UI can open the view while the arguments stream. Set by
        /// the service; omitted otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ui: Option<UiToolMeta>,
    },
    /// A complete tool call.
    ToolCall {
        /// The call, with its complete arguments.
        tool_call: ToolCall,
        /// What the operator's approval policy says about this call, as the service decided it
        /// for the caller (`allow`: run it without asking; `ask`: ask the user; `deny`: do not
        /// call it, answer with an error result). Omitted when not decided (a host's own
        /// stream read directly): the client then asks.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decision: Option<ToolDecision>,
    },
    /// The turn ended.
    Done {
        /// Why the model stopped; omitted when the provider did not say.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish_reason: Option<FinishReason>,
        /// Token counts of the turn; omitted when not reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// What the turn cost in US dollars (the model's list price applied to `usage`); omitted
        /// when the price or the usage is unknown.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// The turn failed; what was streamed before stays valid.
    Error {
        /// What went wrong, for display.
        error: String,
    },
    /// The service saved the reply into the request's conversation (after `done` or `error`,
    /// before the stream ends): the conversation's revision now. A tab that saves the
    /// conversation itself takes it as its base, so its next save is not a conflict. Sent by
    /// the service; a host's own `saved` events are dropped.
    Saved {
        /// The conversation's revision after the save.
        revision: u64,
    },
}

/// The kind of an [`Event`], without its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    /// [`Event::Delta`].
    Delta,
    /// [`Event::Reasoning`].
    Reasoning,
    /// [`Event::ToolCallDelta`].
    ToolCallDelta,
    /// [`Event::ToolCall`].
    ToolCall,
    /// [`Event::Done`].
    Done,
    /// [`Event::Error`].
    Error,
    /// [`Event::Saved`].
    Saved,
}

impl Event {
    /// A text delta.
    pub fn delta(s: impl Into<String>) -> Self {
        Event::Delta { delta: s.into() }
    }

    /// A reasoning delta.
    pub fn reasoning(s: impl Into<String>) -> Self {
        Event::Reasoning {
            reasoning: s.into(),
        }
    }

    /// An error event.
    pub fn error(s: impl Into<String>) -> Self {
        Event::Error { error: s.into() }
    }

    /// A piece of the arguments of call `id` to tool `name`, without a view.
    ///
    /// ```
    /// use lmchatkit_protocol::Event;
    /// let ev = Event::tool_call_delta("call_1", "search", "{\"q\":");
    /// assert_eq!(serde_json::to_string(&ev).unwrap(),
    ///     r#"{"type":"tool_call_delta","id":"call_1","name":"search","arguments_delta":"{\"q\":"}"#);
    /// ```
    pub fn tool_call_delta(
        id: impl Into<String>,
        name: impl Into<String>,
        delta: impl Into<String>,
    ) -> Self {
        Event::ToolCallDelta {
            id: id.into(),
            name: name.into(),
            arguments_delta: delta.into(),
            ui: None,
        }
    }

    /// A tool call event, without a decision.
    pub fn tool_call(tool_call: ToolCall) -> Self {
        Event::ToolCall {
            tool_call,
            decision: None,
        }
    }

    /// A done event.
    pub fn done(finish_reason: FinishReason, usage: Option<Usage>) -> Self {
        Event::Done {
            finish_reason: Some(finish_reason),
            usage,
            cost_usd: None,
        }
    }

    /// The event's kind.
    pub fn kind(&self) -> EventType {
        match self {
            Event::Delta { .. } => EventType::Delta,
            Event::Reasoning { .. } => EventType::Reasoning,
            Event::ToolCallDelta { .. } => EventType::ToolCallDelta,
            Event::ToolCall { .. } => EventType::ToolCall,
            Event::Done { .. } => EventType::Done,
            Event::Error { .. } => EventType::Error,
            Event::Saved { .. } => EventType::Saved,
        }
    }
}
