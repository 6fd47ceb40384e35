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
    pub error: String,
}

/// Body of `POST {prefix}/api/chat`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    pub model: String,
    #[serde(default)]
    pub persona_id: String,
    pub messages: Vec<Message>,
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
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
    #[serde(default)]
    pub source: ToolCallSource,
    /// For app calls: the tool whose view is calling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

/// Body of `POST {prefix}/api/prompts/get`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PromptGetRequest {
    pub name: String,
    #[serde(default)]
    pub args: BTreeMap<String, String>,
}

/// Body of `POST {prefix}/api/resources/read`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResourceReadRequest {
    pub uri: String,
    /// Read from the server that owns this tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

/// Body of `POST {prefix}/api/app-proxy`: a JSON-RPC call of a view, scoped to `via`'s server.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AppProxyRequest {
    pub method: String,
    #[serde(default)]
    pub params: Value,
    pub via: String,
}

/// Body of `POST {prefix}/api/apps/view`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AppViewRequest {
    pub via: String,
    pub uri: String,
}

/// Answer to `POST {prefix}/api/apps/view`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AppViewResponse {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<UiPermissions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
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
    pub name: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Answer to `GET {prefix}/api/config`. Never carries commands, secrets or tokens.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ConfigResponse {
    pub file_upload: bool,
    pub max_upload_bytes: u64,
    pub history: HistoryMode,
    pub events: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_origin: Option<String>,
    pub demo: bool,
    #[serde(default)]
    pub mcp: Vec<McpServerStatus>,
}

/// One uploaded file, returned as a data URL.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UploadedFile {
    pub name: String,
    pub mime_type: String,
    pub data_url: String,
    pub size: u64,
}

/// Answer to `POST {prefix}/api/upload`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UploadResponse {
    pub files: Vec<UploadedFile>,
}
