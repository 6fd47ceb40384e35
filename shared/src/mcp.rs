//! Tools, prompts and resources as the service exposes them, plus the MCP Apps `_meta.ui` types.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::role::Role;

/// Who may call a tool (MCP Apps `_meta.ui.visibility`). Empty means both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    /// The model may see and call it.
    Model,
    /// An MCP App view may call it.
    App,
}

/// A tool's `_meta.ui` (camelCase keys, unknown keys ignored). `visibility` is read from MCP but
/// never serialized, so the browser never sees it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiToolMeta {
    /// The `ui://` resource holding the tool's view; omitted when the tool has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_uri: Option<String>,
    /// Who may call the tool (empty: both); read from MCP, never serialized.
    #[serde(default, skip_serializing)]
    pub visibility: Vec<Visibility>,
}

/// A `ui://` resource's `_meta.ui` (camelCase keys, unknown keys ignored).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiResourceMeta {
    /// Domains the view may reach; omitted when unset (no external domains).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csp: Option<UiCsp>,
    /// Browser permissions the view asks for; omitted when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<UiPermissions>,
    /// Dedicated origin the view asks to run on; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Whether the host should draw a border around the view; omitted when unset (host decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
}

/// Domains an MCP App view may reach (`_meta.ui.csp`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiCsp {
    /// Origins the view may `fetch`/connect to (CSP `connect-src`); omitted when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect_domains: Vec<String>,
    /// Origins the view may load scripts, styles, images and fonts from; omitted when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_domains: Vec<String>,
    /// Origins the view may embed in frames (CSP `frame-src`); omitted when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frame_domains: Vec<String>,
    /// Origins allowed as the document base URI (CSP `base-uri`); omitted when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base_uri_domains: Vec<String>,
}

/// Browser permissions a view asks for; each present key is an empty object `{}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiPermissions {
    /// Camera access (`{}` when asked for); omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub camera: Option<Value>,
    /// Microphone access (`{}` when asked for); omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microphone: Option<Value>,
    /// Geolocation access (`{}` when asked for); omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geolocation: Option<Value>,
    /// Clipboard write access (`{}` when asked for, key `clipboardWrite`); omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clipboard_write: Option<Value>,
}

/// A tool the model (or an app view) may call. Server-side only: the browser never receives
/// tool lists, and `visibility` is never serialized.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Tool {
    /// Tool name, as the model calls it and `/api/tools/call` names it.
    pub name: String,
    /// What the tool does, for the model; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    /// MCP tool annotations (hints such as `readOnlyHint`), passed through; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// The tool's `_meta.ui`; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui: Option<UiToolMeta>,
    /// Who may call the tool (empty: both); never serialized.
    #[serde(skip)]
    pub visibility: Vec<Visibility>,
}

impl Tool {
    /// A tool with a name and nothing else.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, d: impl Into<String>) -> Self {
        self.description = Some(d.into());
        self
    }

    /// Sets the JSON schema of the arguments.
    pub fn with_input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    /// Sets who may call the tool.
    pub fn with_visibility(mut self, v: Vec<Visibility>) -> Self {
        self.visibility = v;
        self
    }

    /// True when `who` may call this tool (empty visibility allows both).
    pub fn visible_to(&self, who: Visibility) -> bool {
        self.visibility.is_empty() || self.visibility.contains(&who)
    }
}

/// The result of a tool call: model-facing text plus what a view needs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolResult {
    /// Text the model sees as the tool result.
    pub content: String,
    /// The tool reported a failure; omitted when `false`.
    #[serde(default, skip_serializing_if = "crate::is_false")]
    pub is_error: bool,
    /// The MCP `structuredContent`, for an app view; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The called tool's `_meta.ui` (only `resourceUri` is serialized).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui: Option<UiToolMeta>,
    /// Images the tool returned, for clients that show them (AI SDK apps get them as `file`
    /// parts); the model reads only their summary in `content`. Omitted when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ToolFile>,
    /// The call waits for the user's input (a form or a URL) and has no result yet: the
    /// client asks the user and calls again with the answers (see [`InputRequired`](crate::InputRequired)).
    /// `content` then only says so. Omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_required: Option<Box<crate::InputRequired>>,
    /// The call runs as a task on its server and has no result yet: the client polls it (see
    /// [`ToolTask`](crate::ToolTask)). `content` then only says so. Omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Box<crate::ToolTask>>,
}

/// A file (an image) a tool returned, base64-encoded.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolFile {
    /// Its media type, e.g. `image/png`.
    pub media_type: String,
    /// Its bytes, base64-encoded (as MCP carries them).
    pub data: String,
}

impl ToolFile {
    /// The file as a `data:` URL.
    ///
    /// ```
    /// let f = lmchatkit_protocol::ToolFile { media_type: "image/png".into(), data: "iVBO".into() };
    /// assert_eq!(f.data_url(), "data:image/png;base64,iVBO");
    /// ```
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.data)
    }
}

impl ToolResult {
    /// A successful text result.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }

    /// An error result the model sees (`is_error: true`).
    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
            ..Self::default()
        }
    }
}

/// An argument of an MCP prompt.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Argument name.
    pub name: String,
    /// What the argument means; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The prompt cannot run without it; omitted when `false`.
    #[serde(default, skip_serializing_if = "crate::is_false")]
    pub required: bool,
}

/// An MCP prompt, offered as a `/name` command.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Prompt {
    /// Prompt name, typed as `/name`.
    pub name: String,
    /// What the prompt does, shown in the command menu; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes; omitted when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
    /// It (or its server) has an icon, which the service serves at
    /// `{prefix}/api/icons/prompt/{name}` (the browser never loads it from elsewhere); omitted
    /// when `false`.
    #[serde(default, skip_serializing_if = "crate::is_false")]
    pub icon: bool,
}

/// One message of an expanded prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who the message is from (`user` or `assistant`).
    pub role: Role,
    /// The message text.
    pub content: String,
}

/// An expanded prompt.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PromptResult {
    /// What the expanded prompt does; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages that replace the `/name` message, in order.
    pub messages: Vec<PromptMessage>,
}

/// A resource (or, with `template`, a resource template whose `uri` keeps `{var}` placeholders).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Resource {
    /// Resource URI; for a template, with `{var}` placeholders.
    pub uri: String,
    /// `true` for a resource template; omitted when `false`.
    #[serde(default, skip_serializing_if = "crate::is_false")]
    pub template: bool,
    /// Display name; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the resource holds; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type of the content; omitted when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

impl Resource {
    /// A resource with a URI and nothing else.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            ..Self::default()
        }
    }
}

/// The content of a read resource: `text`, or a base64 `blob`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResourceResult {
    /// URI of the resource read.
    pub uri: String,
    /// Text content; omitted for binary content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Binary content, base64-encoded; omitted for text content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// MIME type of the content; omitted when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The resource's `_meta.ui` (for `ui://` views); omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui: Option<UiResourceMeta>,
}
