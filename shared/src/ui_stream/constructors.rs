//! Constructors of [`UiChunk`] for the chunks a server emits most, with the optional keys unset
//! (tool chunks mark the call `dynamic`, as our MCP tools are).

use serde_json::Value;

use super::chunk::{UiChunk, UiDataChunk, UiFinishReason};

impl UiChunk {
    /// `start` with the assistant message's id. Send the id: without it the client invents one
    /// the server never stored; on a continuation (after approvals) it must be the id of the
    /// assistant message being continued.
    pub fn start(message_id: impl Into<String>) -> Self {
        UiChunk::Start {
            message_id: Some(message_id.into()),
            message_metadata: None,
        }
    }

    /// `start-step`.
    pub fn start_step() -> Self {
        UiChunk::StartStep {}
    }

    /// `finish-step`.
    pub fn finish_step() -> Self {
        UiChunk::FinishStep {}
    }

    /// `text-start`.
    pub fn text_start(id: impl Into<String>) -> Self {
        UiChunk::TextStart {
            id: id.into(),
            provider_metadata: None,
        }
    }

    /// `text-delta`.
    pub fn text_delta(id: impl Into<String>, delta: impl Into<String>) -> Self {
        UiChunk::TextDelta {
            id: id.into(),
            delta: delta.into(),
            provider_metadata: None,
        }
    }

    /// `text-end`.
    pub fn text_end(id: impl Into<String>) -> Self {
        UiChunk::TextEnd {
            id: id.into(),
            provider_metadata: None,
        }
    }

    /// `reasoning-start`.
    pub fn reasoning_start(id: impl Into<String>) -> Self {
        UiChunk::ReasoningStart {
            id: id.into(),
            provider_metadata: None,
        }
    }

    /// `reasoning-delta`.
    pub fn reasoning_delta(id: impl Into<String>, delta: impl Into<String>) -> Self {
        UiChunk::ReasoningDelta {
            id: id.into(),
            delta: delta.into(),
            provider_metadata: None,
        }
    }

    /// `reasoning-end`.
    pub fn reasoning_end(id: impl Into<String>) -> Self {
        UiChunk::ReasoningEnd {
            id: id.into(),
            provider_metadata: None,
        }
    }

    /// `tool-input-start` for a dynamic tool (our MCP tools), without a title.
    pub fn tool_input_start(tool_call_id: impl Into<String>, tool_name: impl Into<String>) -> Self {
        UiChunk::ToolInputStart {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            provider_executed: None,
            dynamic: Some(true),
            title: None,
        }
    }

    /// `tool-input-delta`.
    pub fn tool_input_delta(tool_call_id: impl Into<String>, delta: impl Into<String>) -> Self {
        UiChunk::ToolInputDelta {
            tool_call_id: tool_call_id.into(),
            input_text_delta: delta.into(),
        }
    }

    /// `tool-input-available` for a dynamic tool (our MCP tools).
    pub fn tool_input_available(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        input: Value,
    ) -> Self {
        UiChunk::ToolInputAvailable {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            input,
            provider_executed: None,
            provider_metadata: None,
            dynamic: Some(true),
            title: None,
        }
    }

    /// `tool-approval-request`.
    pub fn tool_approval_request(
        approval_id: impl Into<String>,
        tool_call_id: impl Into<String>,
    ) -> Self {
        UiChunk::ToolApprovalRequest {
            approval_id: approval_id.into(),
            tool_call_id: tool_call_id.into(),
            is_automatic: None,
        }
    }

    /// `ai@7` only: the policy's decision on a call, made without asking the user — a
    /// `tool-approval-request` with `isAutomatic: true` and its `tool-approval-response`.
    pub fn automatic_approval(
        approval_id: impl Into<String>,
        tool_call_id: impl Into<String>,
        approved: bool,
        reason: Option<String>,
    ) -> [Self; 2] {
        let approval_id = approval_id.into();
        [
            UiChunk::ToolApprovalRequest {
                approval_id: approval_id.clone(),
                tool_call_id: tool_call_id.into(),
                is_automatic: Some(true),
            },
            UiChunk::ToolApprovalResponse {
                approval_id,
                approved,
                reason,
            },
        ]
    }

    /// `tool-output-available` for a dynamic tool.
    pub fn tool_output_available(tool_call_id: impl Into<String>, output: Value) -> Self {
        UiChunk::ToolOutputAvailable {
            tool_call_id: tool_call_id.into(),
            output,
            provider_executed: None,
            dynamic: Some(true),
            preliminary: None,
        }
    }

    /// `tool-output-error` for a dynamic tool.
    pub fn tool_output_error(
        tool_call_id: impl Into<String>,
        error_text: impl Into<String>,
    ) -> Self {
        UiChunk::ToolOutputError {
            tool_call_id: tool_call_id.into(),
            error_text: error_text.into(),
            provider_executed: None,
            dynamic: Some(true),
        }
    }

    /// `tool-output-denied`.
    pub fn tool_output_denied(tool_call_id: impl Into<String>) -> Self {
        UiChunk::ToolOutputDenied {
            tool_call_id: tool_call_id.into(),
        }
    }

    /// `file` (e.g. an image a tool returned).
    pub fn file(url: impl Into<String>, media_type: impl Into<String>) -> Self {
        UiChunk::File {
            url: url.into(),
            media_type: media_type.into(),
            provider_metadata: None,
        }
    }

    /// `data-<name>` with a payload, neither id nor transient.
    pub fn data(name: impl Into<String>, data: Value) -> Self {
        UiChunk::Data(UiDataChunk {
            name: name.into(),
            id: None,
            data,
            transient: None,
        })
    }

    /// `message-metadata`.
    pub fn message_metadata(metadata: Value) -> Self {
        UiChunk::MessageMetadata {
            message_metadata: metadata,
        }
    }

    /// `finish` with a reason and no metadata.
    pub fn finish(reason: UiFinishReason) -> Self {
        UiChunk::Finish {
            finish_reason: Some(reason),
            message_metadata: None,
        }
    }

    /// `abort`.
    pub fn abort() -> Self {
        UiChunk::Abort {}
    }

    /// `error`.
    pub fn error(error_text: impl Into<String>) -> Self {
        UiChunk::Error {
            error_text: error_text.into(),
        }
    }
}
