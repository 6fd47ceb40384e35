//! A tool's questions to the user (MCP elicitation, 2026-07-28's "input required"), and the
//! user's answers.
//!
//! A tool call may answer, instead of a result, that it needs the user's input: a form to fill
//! in or a URL to open ([`InputRequired`] on a [`ToolResult`](crate::ToolResult)). The client
//! shows it on the call's card; the user accepts (with the form's values), declines or cancels,
//! and the call is made again with the answers ([`InputAnswers`]), through the same route
//! (native: `POST {prefix}/api/tools/call` with `input`) or in the next request (AI SDK: the
//! `data-input-request` part with its `answers` set). The ticket binds the answers to the
//! principal, the conversation, the call and its exact input: the service refuses answers whose
//! ticket does not match them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool call that waits for the user's input before it can give a result.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InputRequired {
    /// What the tool asks, in the server's order (usually one question).
    pub questions: Vec<InputQuestion>,
    /// The service's signed ticket for this request: sent back, unchanged, with the answers.
    /// Opaque to clients. Set by the service on what it sends; a host leaves it unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticket: Option<String>,
    /// When the request expires, in Unix milliseconds: answers sent later count as cancel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
    /// The MCP server's opaque `requestState`, between a host and the service only: never
    /// serialized (the ticket carries it, signed, to the client and back).
    #[serde(skip)]
    pub request_state: Option<String>,
}

/// One question of an [`InputRequired`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputQuestion {
    /// The server's key for this question; answers are keyed by it.
    pub key: String,
    /// What the server says to the user (shown as text, never as markup).
    pub message: String,
    /// A form or a URL.
    #[serde(flatten)]
    pub kind: InputKind,
}

/// What a question asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum InputKind {
    /// Values for a form: the MCP spec's restricted JSON Schema, an object whose properties are
    /// strings (with `format` `email`, `uri`, `date` or `date-time`), numbers, integers,
    /// booleans or enums (single or multiple choice), with `required`, titles, descriptions and
    /// defaults.
    Form {
        /// The requested schema, as the server sent it.
        schema: Value,
    },
    /// Consent to open a URL in a new tab (an out-of-band step: a sign-in, a payment).
    Url {
        /// The URL, whole.
        url: String,
        /// Its host, shown beside it so the user sees where it leads.
        host: String,
    },
}

/// The user's answer to one question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputAnswer {
    /// Accept, decline or cancel.
    pub action: InputAction,
    /// The form's values when accepted (a flat object); omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
}

impl InputAnswer {
    /// An answer without content.
    pub fn new(action: InputAction) -> Self {
        Self {
            action,
            content: None,
        }
    }

    /// An accepted form with its values.
    pub fn accept(content: Map<String, Value>) -> Self {
        Self {
            action: InputAction::Accept,
            content: Some(content),
        }
    }
}

/// What the user did with a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputAction {
    /// Gave the values (a form) or opened the URL.
    Accept,
    /// Said no: the tool goes on without it.
    Decline,
    /// Dismissed the question without choosing (or it expired).
    Cancel,
}

/// The user's answers to an [`InputRequired`], sent with the call made again.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InputAnswers {
    /// The request's [`InputRequired::ticket`], unchanged.
    pub ticket: String,
    /// An answer per question key. A question without an answer counts as cancel.
    pub answers: BTreeMap<String, InputAnswer>,
}

/// The name of the AI SDK data part that carries a tool's request for input
/// (`data-input-request`), one per waiting call, its id the call's id.
pub const INPUT_REQUEST_DATA: &str = "input-request";

/// The payload of a `data-input-request` part (AI SDK, camelCase). The client answers by setting
/// `answers` on the part (keeping the rest as it came) and sending the thread again (`useChat`'s
/// `sendMessage()` with no message): the server makes the call again with the answers.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequestData {
    /// The call that waits.
    pub tool_call_id: String,
    /// What the tool asks.
    pub questions: Vec<InputQuestion>,
    /// The ticket, sent back unchanged.
    pub ticket: String,
    /// When the request expires, in Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
    /// The user's answers by question key; absent until the user answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<BTreeMap<String, InputAnswer>>,
}

/// A tool call that runs as a task on its server (the MCP tasks extension): no result yet.
/// The client polls it (the call posted again with [`TaskPoll`]) at the interval the server
/// asks for, until the call's result comes; it may cancel it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolTask {
    /// Where the task is.
    pub status: TaskState,
    /// What the server says of it (shown as text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// How long to wait before asking again, in milliseconds, as the server asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
    /// The service's signed ticket for this task: sent back, unchanged, to poll or cancel it.
    /// Set by the service on what it sends; a host leaves it unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticket: Option<String>,
    /// The server's task id, between a host and the service only: never serialized (the
    /// ticket carries it).
    #[serde(skip)]
    pub task_id: String,
}

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Running.
    #[default]
    Working,
    /// Waiting for the user's input.
    InputRequired,
    /// Done (the result follows).
    Completed,
    /// Failed.
    Failed,
    /// Cancelled.
    Cancelled,
}

/// Asks about a call's task: its state (or result) now, or to cancel it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskPoll {
    /// The task's [`ToolTask::ticket`], unchanged.
    pub ticket: String,
    /// Cancel the task (then report it).
    #[serde(default, skip_serializing_if = "crate::is_false")]
    pub cancel: bool,
}

/// The name of the AI SDK data part that carries the state of a call running as a task
/// (`data-tool-task`), its id the call's id.
pub const TOOL_TASK_DATA: &str = "tool-task";

/// The payload of a `data-tool-task` part (AI SDK, camelCase): the state of a call that runs
/// as a task; the server polls it and the call's output follows when it is done.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolTaskData {
    /// The call.
    pub tool_call_id: String,
    /// Where its task is.
    pub status: TaskState,
    /// What the server says of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
}

/// How far a running tool call is (its server's progress reports), as the native route streams
/// it (`progress` events of `POST {prefix}/api/tools/call` asked for as `text/event-stream`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CallProgress {
    /// The progress so far.
    pub progress: f64,
    /// The total, when the server knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// What the server says (shown as text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The name of the AI SDK data part that carries a running call's progress
/// (`data-tool-progress`), its id the call's id.
pub const TOOL_PROGRESS_DATA: &str = "tool-progress";

/// The payload of a `data-tool-progress` part (AI SDK, camelCase), replaced as reports come.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolProgressData {
    /// The call.
    pub tool_call_id: String,
    /// The progress so far.
    pub progress: f64,
    /// The total, when the server knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// What the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One event of `POST {prefix}/api/tools/call` asked for as `text/event-stream`: the call's
/// progress reports as they come, then its result (or an error), which ends the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolCallEvent {
    /// How far the call is.
    Progress(CallProgress),
    /// The call's result, as the JSON answer would be.
    Result {
        /// The result.
        result: crate::ToolResult,
    },
    /// The call failed before it had a result (as the JSON answer's error).
    Error {
        /// What went wrong.
        error: String,
    },
}
