//! Wire types of the lmchatkit chat protocol, shared by the server (`lmchatkit`) and the
//! browser UI (`lmchatkit-web`). Serde only, so it builds for `wasm32-unknown-unknown` and native.
//!
//! Every JSON shape the service sends or accepts is defined here, once. The golden tests in
//! `tests/golden.rs` pin field names and the omitted-when-empty rules.
//!
//! ```
//! use lmchatkit_protocol::{Event, FinishReason};
//! let ev = Event::Done { finish_reason: Some(FinishReason::Stop), usage: None, cost_usd: None };
//! assert_eq!(serde_json::to_string(&ev).unwrap(), r#"{"type":"done","finish_reason":"stop"}"#);
//! ```

#![warn(missing_docs)]

mod app_rpc;
mod approval;
mod chat;
mod history;
mod input;
mod mcp;
mod menus;
mod requests;
mod role;
mod runs;
mod sign_in_signal;
mod stale_tool;
pub mod ui_stream;
mod user_mcp;

pub use app_rpc::{
    AppCall, AppCallError, AppProxyRequest, AppResult, CallToolParams, CallToolResult,
    ContentBlock, ListParams, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    McpResource, McpResourceTemplate, ReadResourceParams, ReadResourceResult, ResourceBody,
    ResourceContents, ResourceContentsMeta, ResourceDetails,
};
pub use approval::{ArgumentHint, ToolApprovals, ToolDecision, blocked_text};
pub use chat::{
    Approval, Content, ContentPart, Event, EventType, FileData, FinishReason, ImageUrl, InputAudio,
    Message, Role, ToolCall, Usage,
};
pub use history::{
    Branch, BranchSwitch, ConflictResponse, ConversationPatch, ConversationSummary,
    ConversationTotals, ConversationTree, SaveResponse, SearchHit, SearchResponse, ServerEvent,
    ServerEventType, StoredConversation, TreeNode,
};
pub use input::{
    CallProgress, INPUT_REQUEST_DATA, InputAction, InputAnswer, InputAnswers, InputKind,
    InputQuestion, InputRequestData, InputRequired, TOOL_PROGRESS_DATA, TOOL_TASK_DATA, TaskPoll,
    TaskState, ToolCallEvent, ToolProgressData, ToolTask, ToolTaskData,
};
pub use mcp::{
    Prompt, PromptArgument, PromptMessage, PromptResult, Resource, ResourceResult, Tool, ToolFile,
    ToolResult, UiCsp, UiPermissions, UiResourceMeta, UiToolMeta, Visibility,
};
pub use menus::{Model, Params, Persona, REASONING_EFFORT_PARAM, ReasoningEffort, SlashCommand};
pub use requests::{
    AppViewRequest, AppViewResponse, ChatRequest, ConfigResponse, ErrorBody, HistoryMode,
    McpServerStatus, PromptGetRequest, ResourceReadRequest, SetupProblem, ToolCallRequest,
    ToolCallSource, UploadResponse, UploadedFile,
};
pub use runs::{RUN_ID_HEADER, RUN_MESSAGE_HEADER, RunInfo, RunStatus};
pub use sign_in_signal::{SIGN_IN_CHANNEL, SignInSignal};
pub use stale_tool::{STALE_TOOL_MARKER, stale_tool_server, stale_tool_text};
pub use user_mcp::{
    AcceptTool, AcceptTools, AcceptedTool, ChangedTool, CredentialsState, OAuthStart, OAuthStatus,
    ReviewedTool, ToolReview, UserMcpServer, UserMcpServerCreate, UserMcpServerPatch,
    UserMcpTransport, UserToolApproval,
};

/// Name of the virtual tool the service injects when `skill://` resources exist.
pub const SKILL_TOOL_NAME: &str = "lmchatkit__get_skill";

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

pub(crate) fn is_true_default() -> bool {
    true
}
