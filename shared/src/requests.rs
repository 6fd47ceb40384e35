//! Request and response bodies of the service's JSON routes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::Params;
use crate::chat::Message;
use crate::mcp::UiPermissions;

/// Every error answer: `{"error": "..."}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What went wrong, for display.
    pub error: String,
}

/// Body of `POST {prefix}/api/chat`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Model id to use; required (400 when blank).
    pub model: String,
    /// Persona whose system prompt and params apply; `""` (the default) for none.
    #[serde(default)]
    pub persona_id: String,
    /// The conversation so far, oldest first; required (400 when empty). System messages are
    /// dropped.
    pub messages: Vec<Message>,
    /// Model parameters; override the persona's key by key. Omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Params>,
    /// The latest `ui/update-model-context` of a mounted MCP App view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_context: Option<Value>,
}

/// Who asks for a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallSource {
    /// The model asked and the user approved.
    #[default]
    Model,
    /// An MCP App view asked.
    App,
}

/// Body of `POST {prefix}/api/tools/call`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// Name of the tool to call; required (400 when blank).
    pub name: String,
    /// The arguments, normally an object; absent or `null` is sent as `{}`.
    #[serde(default)]
    pub arguments: Value,
    /// Who asks (`"model"` by default).
    #[serde(default)]
    pub source: ToolCallSource,
    /// For app calls: the tool whose view is calling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

/// Body of `POST {prefix}/api/prompts/get`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PromptGetRequest {
    /// Name of the MCP prompt; required (400 when blank).
    pub name: String,
    /// Argument values by name; `{}` when absent.
    #[serde(default)]
    pub args: BTreeMap<String, String>,
}

/// Body of `POST {prefix}/api/resources/read`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResourceReadRequest {
    /// URI of the resource to read; required (400 when empty).
    pub uri: String,
    /// Read from the server that owns this tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

/// Body of `POST {prefix}/api/apps/view`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AppViewRequest {
    /// The tool whose view it is; the resource is read from that tool's server.
    pub via: String,
    /// The view's `ui://` resource URI.
    pub uri: String,
}

/// Answer to `POST {prefix}/api/apps/view`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AppViewResponse {
    /// Short-lived, principal-bound URL of the view page, served with the view's CSP.
    pub url: String,
    /// Browser permissions the view asks for (its `_meta.ui.permissions`); omitted when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<UiPermissions>,
    /// The view's `_meta.ui.prefersBorder`; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
    /// The iframe `allow` attribute built from `permissions` (e.g. `"camera; clipboard-write"`);
    /// omitted when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub allow: String,
    /// External origins the view's CSP lets it reach (to warn the user); omitted when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub external_domains: Vec<String>,
    /// Proxy mode: `url` is the sandbox proxy on the sandbox origin, and the UI sends it
    /// `html` in `ui/notifications/sandbox-resource-ready`; omitted when `false` (default mode).
    #[serde(default, skip_serializing_if = "crate::is_false")]
    pub proxy: bool,
    /// The view's HTML, in proxy mode only; omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
}

/// Where conversations are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HistoryMode {
    /// In the service's history store.
    Server,
    /// In the browser's sessionStorage.
    #[default]
    Browser,
}

/// State of one configured MCP server.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct McpServerStatus {
    /// Server name, as configured.
    pub name: String,
    /// The server's state, as the host reports it.
    pub status: String,
    /// The last error, when the server failed; omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Answer to `GET {prefix}/api/config`. Never carries commands, secrets or tokens.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ConfigResponse {
    /// Whether `POST {prefix}/api/upload` is on.
    pub file_upload: bool,
    /// Per-file upload cap in bytes.
    pub max_upload_bytes: u64,
    /// Where conversations are kept.
    pub history: HistoryMode,
    /// Whether `GET {prefix}/api/events` is available.
    pub events: bool,
    /// The origin MCP App views are served from in proxy mode; omitted in the default mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_origin: Option<String>,
    /// The service runs on the built-in demo model (the UI shows a banner).
    pub demo: bool,
    /// State of each configured MCP server; `[]` when absent.
    #[serde(default)]
    pub mcp: Vec<McpServerStatus>,
}

/// One uploaded file, returned as a data URL.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UploadedFile {
    /// The uploaded file's name.
    pub name: String,
    /// Its MIME type.
    pub mime_type: String,
    /// Its content as a `data:<mime>;base64,…` URL.
    pub data_url: String,
    /// Its size in bytes, before encoding.
    pub size: u64,
}

/// Answer to `POST {prefix}/api/upload`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UploadResponse {
    /// The uploaded files, in upload order.
    pub files: Vec<UploadedFile>,
}
