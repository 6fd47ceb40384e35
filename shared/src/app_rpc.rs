//! The JSON-RPC an MCP App view sends to its own MCP server through `POST /api/app-proxy`.
//!
//! The UI's bridge parses a view's request into an [`AppCall`] (bad params never leave the
//! browser), sends it as an [`AppProxyRequest`], and the service answers with the matching
//! [`AppResult`] in MCP's result shape, which the bridge hands to the view as the JSON-RPC
//! result. Field names are MCP's (camelCase), not the snake_case of the service's own routes.
//!
//! ```
//! use lmchatkit_protocol::{AppCall, AppProxyRequest};
//! let call = AppCall::parse("resources/read", serde_json::json!({"uri": "ui://a/view"})).unwrap();
//! let req = AppProxyRequest::new("show", call);
//! assert_eq!(
//!     serde_json::to_string(&req).unwrap(),
//!     r#"{"method":"resources/read","params":{"uri":"ui://a/view"},"via":"show"}"#
//! );
//! ```

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::mcp::{Prompt, Resource, ResourceResult, ToolResult, UiResourceMeta};

const TOOLS_CALL: &str = "tools/call";
const RESOURCES_READ: &str = "resources/read";
const RESOURCES_LIST: &str = "resources/list";
const RESOURCE_TEMPLATES_LIST: &str = "resources/templates/list";
const PROMPTS_LIST: &str = "prompts/list";

/// Params of `tools/call`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CallToolParams {
    /// The tool, named as the view's server names it (the service adds its namespace).
    pub name: String,
    /// The arguments (an object); omitted when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
}

/// Params of `resources/read`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ReadResourceParams {
    /// URI of the resource to read.
    pub uri: String,
}

/// Params of the list methods: MCP's pagination cursor (the service answers with everything).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListParams {
    /// Where to continue a listing; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// A JSON-RPC call a view may send to its server; on the wire `{"method": ..., "params": ...}`.
/// `params` may be absent or `null` (read as `{}`); an unknown method fails to deserialize.
#[derive(Debug, Clone, PartialEq)]
pub enum AppCall {
    /// `tools/call`: calls a tool of the view's server that is visible to apps.
    CallTool(CallToolParams),
    /// `resources/read`: reads a resource of the view's server.
    ReadResource(ReadResourceParams),
    /// `resources/list`: the view's server's resources (not templates).
    ListResources(ListParams),
    /// `resources/templates/list`: the view's server's resource templates.
    ListResourceTemplates(ListParams),
    /// `prompts/list`: the view's server's prompts.
    ListPrompts(ListParams),
}

/// Why a view's call is not an [`AppCall`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AppCallError {
    /// The method is none of [`AppCall::METHODS`].
    UnknownMethod(String),
    /// The params do not fit the method.
    InvalidParams {
        /// The method called.
        method: String,
        /// What is wrong with its params.
        reason: String,
    },
}

impl fmt::Display for AppCallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownMethod(m) => write!(f, "method {m:?} is not allowed from a view"),
            Self::InvalidParams { method, reason } => {
                write!(f, "invalid params of {method}: {reason}")
            }
        }
    }
}

impl std::error::Error for AppCallError {}

impl AppCall {
    /// Every method a view may send to its server, in the order of the variants.
    pub const METHODS: [&'static str; 5] = [
        TOOLS_CALL,
        RESOURCES_READ,
        RESOURCES_LIST,
        RESOURCE_TEMPLATES_LIST,
        PROMPTS_LIST,
    ];

    /// A `tools/call` of `name` with these arguments.
    pub fn call_tool(name: impl Into<String>, arguments: Option<Map<String, Value>>) -> Self {
        Self::CallTool(CallToolParams {
            name: name.into(),
            arguments,
        })
    }

    /// A `resources/read` of `uri`.
    pub fn read_resource(uri: impl Into<String>) -> Self {
        Self::ReadResource(ReadResourceParams { uri: uri.into() })
    }

    /// The call from a JSON-RPC method and its params (`null` reads as `{}`).
    pub fn parse(method: &str, params: Value) -> Result<Self, AppCallError> {
        let params = match params {
            Value::Null => Value::Object(Map::new()),
            p => p,
        };
        let invalid = |e: serde_json::Error| AppCallError::InvalidParams {
            method: method.to_owned(),
            reason: e.to_string(),
        };
        Ok(match method {
            TOOLS_CALL => Self::CallTool(serde_json::from_value(params).map_err(invalid)?),
            RESOURCES_READ => Self::ReadResource(serde_json::from_value(params).map_err(invalid)?),
            RESOURCES_LIST => Self::ListResources(serde_json::from_value(params).map_err(invalid)?),
            RESOURCE_TEMPLATES_LIST => {
                Self::ListResourceTemplates(serde_json::from_value(params).map_err(invalid)?)
            }
            PROMPTS_LIST => Self::ListPrompts(serde_json::from_value(params).map_err(invalid)?),
            other => return Err(AppCallError::UnknownMethod(other.to_owned())),
        })
    }

    /// The JSON-RPC method.
    pub fn method(&self) -> &'static str {
        match self {
            Self::CallTool(_) => TOOLS_CALL,
            Self::ReadResource(_) => RESOURCES_READ,
            Self::ListResources(_) => RESOURCES_LIST,
            Self::ListResourceTemplates(_) => RESOURCE_TEMPLATES_LIST,
            Self::ListPrompts(_) => PROMPTS_LIST,
        }
    }

    /// Reads the service's answer to this call as its result type.
    pub fn read_result(&self, json: &str) -> Result<AppResult, serde_json::Error> {
        Ok(match self {
            Self::CallTool(_) => AppResult::CallTool(serde_json::from_str(json)?),
            Self::ReadResource(_) => AppResult::ReadResource(serde_json::from_str(json)?),
            Self::ListResources(_) => AppResult::ListResources(serde_json::from_str(json)?),
            Self::ListResourceTemplates(_) => {
                AppResult::ListResourceTemplates(serde_json::from_str(json)?)
            }
            Self::ListPrompts(_) => AppResult::ListPrompts(serde_json::from_str(json)?),
        })
    }

    fn params(&self) -> ParamsRef<'_> {
        match self {
            Self::CallTool(p) => ParamsRef::CallTool(p),
            Self::ReadResource(p) => ParamsRef::ReadResource(p),
            Self::ListResources(p) | Self::ListResourceTemplates(p) | Self::ListPrompts(p) => {
                ParamsRef::List(p)
            }
        }
    }
}

/// The params of a call, serialized as they are.
#[derive(Serialize)]
#[serde(untagged)]
enum ParamsRef<'a> {
    CallTool(&'a CallToolParams),
    ReadResource(&'a ReadResourceParams),
    List(&'a ListParams),
}

#[derive(Serialize)]
struct CallOut<'a> {
    method: &'static str,
    params: ParamsRef<'a>,
}

#[derive(Deserialize)]
struct CallIn {
    method: String,
    #[serde(default)]
    params: Value,
}

impl Serialize for AppCall {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        CallOut {
            method: self.method(),
            params: self.params(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for AppCall {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = CallIn::deserialize(d)?;
        Self::parse(&raw.method, raw.params).map_err(D::Error::custom)
    }
}

/// Body of `POST {prefix}/api/app-proxy`: a view's call, scoped to `via`'s server. On the wire
/// `{"method": ..., "params": ..., "via": ...}`; `via` is required, and a method other than
/// [`AppCall::METHODS`] fails to deserialize (the service answers 400).
#[derive(Debug, Clone, PartialEq)]
pub struct AppProxyRequest {
    /// The tool whose view is calling; scopes the call to that tool's server.
    pub via: String,
    /// The call.
    pub call: AppCall,
}

impl AppProxyRequest {
    /// `call` from the view of the tool `via`.
    pub fn new(via: impl Into<String>, call: AppCall) -> Self {
        Self {
            via: via.into(),
            call,
        }
    }
}

#[derive(Serialize)]
struct ProxyOut<'a> {
    method: &'static str,
    params: ParamsRef<'a>,
    via: &'a str,
}

#[derive(Deserialize)]
struct ProxyIn {
    method: String,
    #[serde(default)]
    params: Value,
    via: String,
}

impl Serialize for AppProxyRequest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ProxyOut {
            method: self.call.method(),
            params: self.call.params(),
            via: &self.via,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for AppProxyRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = ProxyIn::deserialize(d)?;
        let call = AppCall::parse(&raw.method, raw.params).map_err(D::Error::custom)?;
        Ok(Self { via: raw.via, call })
    }
}

/// A content block of a tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ContentBlock {
    /// `{"type": "text", "text": ...}`.
    Text {
        /// The text.
        text: String,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } => Some(text),
        }
    }
}

/// MCP's `CallToolResult`: the answer to `tools/call`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// The result's content blocks.
    pub content: Vec<ContentBlock>,
    /// The tool reported a failure; omitted when `false`.
    #[serde(default, skip_serializing_if = "crate::is_false")]
    pub is_error: bool,
    /// The tool's structured result; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
}

impl From<ToolResult> for CallToolResult {
    /// One text block with the tool's text, plus its error flag and structured content.
    fn from(r: ToolResult) -> Self {
        Self {
            content: vec![ContentBlock::text(r.content)],
            is_error: r.is_error,
            structured_content: r.structured_content,
        }
    }
}

/// The content of a read resource: `text`, or a base64 `blob` (flattened into
/// [`ResourceContents`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceBody {
    /// `"text": ...`.
    Text {
        /// The text.
        text: String,
    },
    /// `"blob": ...`.
    Blob {
        /// The content, base64-encoded.
        blob: String,
    },
}

/// The `_meta` of read resource contents.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResourceContentsMeta {
    /// The resource's `_meta.ui` (for `ui://` views); omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui: Option<UiResourceMeta>,
}

/// One entry of MCP's `ReadResourceResult.contents`:
/// `{uri, mimeType?, text | blob, _meta?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// URI of the resource read.
    pub uri: String,
    /// MIME type of the content; omitted when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text or blob.
    #[serde(flatten)]
    pub body: ResourceBody,
    /// The resource's `_meta`; omitted when unset.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResourceContentsMeta>,
}

impl From<ResourceResult> for ResourceContents {
    /// The text when there is one, else the blob, else an empty text.
    fn from(r: ResourceResult) -> Self {
        let body = match (r.text, r.blob) {
            (Some(text), _) => ResourceBody::Text { text },
            (None, Some(blob)) => ResourceBody::Blob { blob },
            (None, None) => ResourceBody::Text {
                text: String::new(),
            },
        };
        Self {
            uri: r.uri,
            mime_type: r.mime_type,
            body,
            meta: r.ui.map(|ui| ResourceContentsMeta { ui: Some(ui) }),
        }
    }
}

/// MCP's `ReadResourceResult`: the answer to `resources/read`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ReadResourceResult {
    /// The resource's contents (the service returns one).
    pub contents: Vec<ResourceContents>,
}

/// What MCP lists beside a resource's or a template's URI: `{name?, description?, mimeType?}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDetails {
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

impl From<&Resource> for ResourceDetails {
    fn from(r: &Resource) -> Self {
        Self {
            name: r.name.clone(),
            description: r.description.clone(),
            mime_type: r.mime_type.clone(),
        }
    }
}

/// A resource as MCP lists it: `{uri, name?, description?, mimeType?}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct McpResource {
    /// Resource URI.
    pub uri: String,
    /// Name, description and MIME type.
    #[serde(flatten)]
    pub details: ResourceDetails,
}

impl From<&Resource> for McpResource {
    fn from(r: &Resource) -> Self {
        Self {
            uri: r.uri.clone(),
            details: r.into(),
        }
    }
}

/// A resource template as MCP lists it: `{uriTemplate, name?, description?, mimeType?}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct McpResourceTemplate {
    /// URI with `{var}` placeholders.
    #[serde(rename = "uriTemplate")]
    pub uri_template: String,
    /// Name, description and MIME type.
    #[serde(flatten)]
    pub details: ResourceDetails,
}

impl From<&Resource> for McpResourceTemplate {
    fn from(r: &Resource) -> Self {
        Self {
            uri_template: r.uri.clone(),
            details: r.into(),
        }
    }
}

/// MCP's `ListResourcesResult`: the answer to `resources/list`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListResourcesResult {
    /// The resources.
    pub resources: Vec<McpResource>,
}

/// MCP's `ListResourceTemplatesResult`: the answer to `resources/templates/list`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// The resource templates (key `resourceTemplates`).
    pub resource_templates: Vec<McpResourceTemplate>,
}

/// MCP's `ListPromptsResult`: the answer to `prompts/list`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListPromptsResult {
    /// The prompts.
    pub prompts: Vec<Prompt>,
}

/// The answer to an [`AppCall`], one variant per call; serialized as the inner result alone.
/// Read it with [`AppCall::read_result`] (the JSON does not name the method).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AppResult {
    /// Answer to [`AppCall::CallTool`].
    CallTool(CallToolResult),
    /// Answer to [`AppCall::ReadResource`].
    ReadResource(ReadResourceResult),
    /// Answer to [`AppCall::ListResources`].
    ListResources(ListResourcesResult),
    /// Answer to [`AppCall::ListResourceTemplates`].
    ListResourceTemplates(ListResourceTemplatesResult),
    /// Answer to [`AppCall::ListPrompts`].
    ListPrompts(ListPromptsResult),
}
