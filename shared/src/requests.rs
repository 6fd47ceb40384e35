//! Request and response bodies of the service's JSON routes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::chat::Message;
use crate::mcp::UiPermissions;
use crate::menus::Params;

/// Every error answer: `{"error": "..."}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What went wrong, for display.
    pub error: String,
}

/// Body of `POST {prefix}/api/chat`. It will grow (threads, reasoning effort), so it is
/// `#[non_exhaustive]`: build it with [`ChatRequest::new`] and the `with_*` methods.
///
/// ```
/// use lmchatkit_protocol::{ChatRequest, Message};
/// let req = ChatRequest::new("m", vec![Message::user("hi")]).with_persona("coder");
/// assert_eq!((req.model.as_str(), req.persona_id.as_str()), ("m", "coder"));
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
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
    /// The latest `ui/update-model-context` of a mounted MCP App view. The model gets it as an
    /// untrusted user-side message before the latest user message, never in the system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_context: Option<Value>,
    /// The app (its MCP server) that reported `model_context`, as the model is told; omitted
    /// when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_context_app: Option<String>,
    /// `true` offers the model no tools at all (a summary such as `/compact` must not call any);
    /// `false`, the default, is omitted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_tools: bool,
    /// The conversation this turn belongs to. With server-side history the service saves the
    /// reply into it as the turn runs (so it is kept when the tab goes away) and answers the
    /// revision in a `saved` event; omitted when unset (nothing is saved by the service).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// The id the reply gets in the conversation (the client's id of the bubble it streams
    /// into); the service makes one when unset. Omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_id: Option<String>,
}

impl ChatRequest {
    /// A request for `model` with these messages, no persona, params or model context.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        Self {
            model: model.into(),
            messages,
            ..Self::default()
        }
    }

    /// Saved by the service into conversation `id`, the reply as message `reply_id`.
    pub fn with_conversation(mut self, id: impl Into<String>, reply_id: impl Into<String>) -> Self {
        self.conversation_id = Some(id.into());
        self.reply_id = Some(reply_id.into());
        self
    }

    /// With this persona (`""` for none).
    pub fn with_persona(mut self, persona_id: impl Into<String>) -> Self {
        self.persona_id = persona_id.into();
        self
    }

    /// With these params (`None` or empty: the persona's and the provider's defaults).
    pub fn with_params(mut self, params: Option<Params>) -> Self {
        self.params = params.filter(|p| !p.is_empty());
        self
    }

    /// Offering the model no tools.
    pub fn without_tools(mut self) -> Self {
        self.no_tools = true;
        self
    }

    /// With a mounted view's model context.
    pub fn with_model_context(mut self, context: Option<Value>) -> Self {
        self.model_context = context;
        self
    }

    /// With the app that reported the model context.
    pub fn with_model_context_app(mut self, app: Option<String>) -> Self {
        self.model_context_app = app;
        self
    }
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
    /// The model's id of the call (native turns): what a request for the user's input is
    /// bound to. Omitted when the caller has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The user's answers to the call's request for input: the call is made again with them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<crate::InputAnswers>,
    /// Poll (or cancel) the call's task instead of calling again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<crate::TaskPoll>,
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
    /// The MCP server the view belongs to (how the UI names the app to the user and the model);
    /// omitted for a host with a single source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
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

/// State of one configured MCP server. It will grow (per-user servers), so it is
/// `#[non_exhaustive]`: build it with [`McpServerStatus::new`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct McpServerStatus {
    /// Server name, as configured.
    pub name: String,
    /// The server's state, as the host reports it.
    pub status: String,
    /// The last error, when the server failed; omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A mistake in how the service is set up that its operator should fix, found at start or since:
/// a provider whose base URL answers 404, a key the upstream refuses, an MCP server that does
/// not start. Carries no secret (URLs are shown without userinfo or query). Build it with
/// [`SetupProblem::new`].
///
/// ```
/// use lmchatkit_protocol::SetupProblem;
/// let p = SetupProblem::new("provider anthropic", "GET https://api.anthropic.com/models answered 404", "add /v1");
/// assert_eq!(p.subject, "provider anthropic");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SetupProblem {
    /// What is misconfigured: `provider <name>`, `MCP server <name>`.
    pub subject: String,
    /// What went wrong, as observed.
    pub problem: String,
    /// The likely fix, naming the setting to change.
    pub fix: String,
}

impl SetupProblem {
    /// A problem with `subject`, what was observed and the likely fix.
    pub fn new(
        subject: impl Into<String>,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self {
            subject: subject.into(),
            problem: problem.into(),
            fix: fix.into(),
        }
    }
}

impl std::fmt::Display for SetupProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} (fix: {})", self.subject, self.problem, self.fix)
    }
}

/// Answer to `GET {prefix}/api/config`. Never carries commands, secrets or tokens. It will grow,
/// so it is `#[non_exhaustive]`: start from [`ConfigResponse::new`] and the `with_*` methods.
///
/// ```
/// use lmchatkit_protocol::{ConfigResponse, HistoryMode};
/// let c = ConfigResponse::new(HistoryMode::Server).with_events(true).with_upload(true, 10);
/// assert!(c.events && c.file_upload && !c.demo);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
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
    /// Whether this user may add their own MCP servers (`{prefix}/api/mcp/servers`): the
    /// service has them on and the request is signed in (the anonymous user gets 401 there).
    #[serde(default)]
    pub user_mcp: bool,
    /// Set-up mistakes the operator should fix, each with its likely fix (shown to the same
    /// principals as `mcp`); omitted when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<SetupProblem>,
}

impl McpServerStatus {
    /// A server's state (`pending`, `connecting`, `connected`, `error`), with the last error.
    pub fn new(name: impl Into<String>, status: impl Into<String>, error: Option<String>) -> Self {
        Self {
            name: name.into(),
            status: status.into(),
            error,
        }
    }
}

impl ConfigResponse {
    /// History kept `history`; everything else off or empty.
    pub fn new(history: HistoryMode) -> Self {
        Self {
            history,
            ..Self::default()
        }
    }

    /// Uploads on or off, with the per-file cap.
    pub fn with_upload(mut self, on: bool, max_bytes: u64) -> Self {
        self.file_upload = on;
        self.max_upload_bytes = max_bytes;
        self
    }

    /// `/api/events` available or not.
    pub fn with_events(mut self, on: bool) -> Self {
        self.events = on;
        self
    }

    /// The sandbox origin of proxy-mode views.
    pub fn with_sandbox_origin(mut self, origin: Option<String>) -> Self {
        self.sandbox_origin = origin;
        self
    }

    /// Running on the built-in demo model.
    pub fn with_demo(mut self, on: bool) -> Self {
        self.demo = on;
        self
    }

    /// The MCP servers' states.
    pub fn with_mcp(mut self, mcp: Vec<McpServerStatus>) -> Self {
        self.mcp = mcp;
        self
    }

    /// Users' own MCP servers available to this user or not.
    pub fn with_user_mcp(mut self, on: bool) -> Self {
        self.user_mcp = on;
        self
    }

    /// The set-up problems the operator should see.
    pub fn with_problems(mut self, problems: Vec<SetupProblem>) -> Self {
        self.problems = problems;
        self
    }
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
