//! [`UiMessageBuilder`]: the assistant message a reply's chunks build, as an AI SDK client builds
//! it from the same chunks — for a Rust client reading the stream, and for the server, which
//! saves what the client shows. Pure; no I/O.
//!
//! Decisions: text and reasoning parts are found by their chunk id, tool parts by their call id
//! (a continued message already holds the parts its approvals answer); a part still streaming
//! when the reply is cut stays `streaming` (text) or `input-streaming` (tool), as the client
//! leaves it; an approval keeps its answer after the call's outcome arrives; `start` with a
//! `messageId` names the message, as in the client.
//!
//! ```
//! use lmchatkit_protocol::ui_stream::{UiChunk, UiMessageBuilder, UiPart};
//! let mut b = UiMessageBuilder::new("m1", None);
//! for line in ["data: {\"type\":\"start\",\"messageId\":\"m9\"}", "data: {\"type\":\"text-start\",\"id\":\"t\"}",
//!              "data: {\"type\":\"text-delta\",\"id\":\"t\",\"delta\":\"Hi\"}", "data: [DONE]"] {
//!     if let Some(Ok(chunk)) = line.strip_prefix("data: ").filter(|d| *d != "[DONE]").map(serde_json::from_str::<UiChunk>) {
//!         b.apply(&chunk);
//!     }
//! }
//! assert_eq!(b.message().id, "m9");
//! assert!(matches!(&b.message().parts[0], UiPart::Text { text, .. } if text == "Hi"));
//! ```

use std::collections::HashMap;

use serde_json::Value;

use super::chunk::UiChunk;
use super::message::{
    UiApproval, UiDataPart, UiMessage, UiPart, UiRole, UiTextState, UiToolPart, UiToolState,
};

/// Builds one assistant [`UiMessage`] from chunks.
#[derive(Debug, Clone)]
pub struct UiMessageBuilder {
    message: UiMessage,
    /// Text and reasoning parts by chunk id.
    spans: HashMap<String, usize>,
}

impl UiMessageBuilder {
    /// Continues `message` (a continued reply), or starts an empty one with `id`.
    pub fn new(id: &str, continued: Option<UiMessage>) -> Self {
        let message = continued.unwrap_or_else(|| UiMessage {
            id: id.to_owned(),
            role: UiRole::Assistant,
            metadata: None,
            parts: Vec::new(),
        });
        Self {
            message,
            spans: HashMap::new(),
        }
    }

    /// The message so far.
    pub fn message(&self) -> &UiMessage {
        &self.message
    }

    /// Applies one chunk.
    pub fn apply(&mut self, chunk: &UiChunk) {
        let parts = &mut self.message.parts;
        match chunk {
            UiChunk::StartStep {} => parts.push(UiPart::step_start()),
            UiChunk::TextStart { id, .. } => {
                let mut p = UiPart::text("");
                set_state(&mut p, UiTextState::Streaming);
                self.spans.insert(id.clone(), parts.len());
                parts.push(p);
            }
            UiChunk::ReasoningStart { id, .. } => {
                let mut p = UiPart::reasoning("");
                set_state(&mut p, UiTextState::Streaming);
                self.spans.insert(id.clone(), parts.len());
                parts.push(p);
            }
            UiChunk::TextDelta { id, delta, .. } | UiChunk::ReasoningDelta { id, delta, .. } => {
                if let Some(UiPart::Text { text, .. } | UiPart::Reasoning { text, .. }) =
                    self.spans.get(id).and_then(|&i| parts.get_mut(i))
                {
                    text.push_str(delta);
                }
            }
            UiChunk::TextEnd { id, .. } | UiChunk::ReasoningEnd { id, .. } => {
                if let Some(p) = self.spans.get(id).and_then(|&i| parts.get_mut(i)) {
                    set_state(p, UiTextState::Done);
                }
            }
            UiChunk::ToolInputStart {
                tool_call_id,
                tool_name,
                ..
            } => {
                let part =
                    UiToolPart::dynamic(tool_name, tool_call_id, UiToolState::InputStreaming);
                parts.push(UiPart::Tool(Box::new(part)));
            }
            UiChunk::ToolInputAvailable {
                tool_call_id,
                input,
                ..
            } => self.tool(tool_call_id, |t| {
                t.state = UiToolState::InputAvailable;
                t.input = Some(input.clone());
            }),
            UiChunk::ToolInputError {
                tool_call_id,
                input,
                error_text,
                ..
            } => self.tool(tool_call_id, |t| {
                t.state = UiToolState::OutputError;
                t.input = Some(input.clone());
                t.error_text = Some(error_text.clone());
            }),
            UiChunk::ToolApprovalRequest {
                approval_id,
                tool_call_id,
                is_automatic,
            } => self.tool(tool_call_id, |t| {
                t.state = UiToolState::ApprovalRequested;
                let mut approval = UiApproval::new(approval_id);
                if let Some(auto) = is_automatic {
                    approval
                        .unknown
                        .insert("isAutomatic".into(), Value::Bool(*auto));
                }
                t.approval = Some(approval);
            }),
            UiChunk::ToolApprovalResponse {
                approval_id,
                approved,
                reason,
            } => {
                let found = self.message.parts.iter_mut().rev().find_map(|p| match p {
                    UiPart::Tool(t)
                        if t.approval.as_ref().is_some_and(|a| &a.id == approval_id) =>
                    {
                        Some(t)
                    }
                    _ => None,
                });
                if let Some(t) = found
                    && let Some(a) = t.approval.as_mut()
                {
                    t.state = UiToolState::ApprovalResponded;
                    a.approved = Some(*approved);
                    a.reason = reason.clone();
                }
            }
            UiChunk::ToolOutputAvailable {
                tool_call_id,
                output,
                ..
            } => self.tool(tool_call_id, |t| {
                t.state = UiToolState::OutputAvailable;
                t.output = Some(output.clone());
            }),
            UiChunk::ToolOutputError {
                tool_call_id,
                error_text,
                ..
            } => self.tool(tool_call_id, |t| {
                t.state = UiToolState::OutputError;
                t.error_text = Some(error_text.clone());
            }),
            UiChunk::ToolOutputDenied { tool_call_id } => {
                self.tool(tool_call_id, |t| t.state = UiToolState::OutputDenied)
            }
            UiChunk::File {
                url, media_type, ..
            } => parts.push(UiPart::file(media_type, url)),
            UiChunk::MessageMetadata { message_metadata } => self.merge_metadata(message_metadata),
            UiChunk::Start {
                message_id,
                message_metadata,
            } => {
                if let Some(id) = message_id {
                    self.message.id.clone_from(id);
                }
                if let Some(m) = message_metadata {
                    self.merge_metadata(m);
                }
            }
            UiChunk::Finish {
                message_metadata: Some(m),
                ..
            } => self.merge_metadata(m),
            // As the client keeps them: a transient one is not stored; one with an id replaces
            // the part of the same name and id.
            UiChunk::Data(d) if d.transient != Some(true) => {
                let same = |p: &UiPart| {
                    matches!(p, UiPart::Data(have) if have.name == d.name
                        && d.id.is_some() && have.id == d.id)
                };
                let part = UiPart::Data(UiDataPart {
                    name: d.name.clone(),
                    id: d.id.clone(),
                    data: d.data.clone(),
                });
                match parts.iter_mut().find(|p| same(p)) {
                    Some(slot) => *slot = part,
                    None => parts.push(part),
                }
            }
            _ => {}
        }
    }

    fn tool(&mut self, call_id: &str, f: impl FnOnce(&mut UiToolPart)) {
        let found = self.message.parts.iter_mut().rev().find_map(|p| match p {
            UiPart::Tool(t) if t.tool_call_id == call_id => Some(t),
            _ => None,
        });
        if let Some(t) = found {
            f(t);
        }
    }

    /// Metadata merges key by key into what the message has, as the client merges it.
    fn merge_metadata(&mut self, m: &Value) {
        match (&mut self.message.metadata, m) {
            (Some(Value::Object(have)), Value::Object(new)) => {
                for (k, v) in new {
                    have.insert(k.clone(), v.clone());
                }
            }
            (slot, m) => *slot = Some(m.clone()),
        }
    }
}

fn set_state(p: &mut UiPart, s: UiTextState) {
    if let UiPart::Text { state, .. } | UiPart::Reasoning { state, .. } = p {
        *state = Some(s);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn build(id: &str, continued: Option<UiMessage>, chunks: &[Value]) -> Value {
        let mut acc = UiMessageBuilder::new(id, continued);
        for c in chunks {
            acc.apply(&serde_json::from_value(c.clone()).unwrap());
        }
        serde_json::to_value(acc.message()).unwrap()
    }

    #[test]
    fn chunks_build_the_message_the_client_shows() {
        let msg = build(
            "m1",
            None,
            &[
                json!({"type": "start", "messageId": "m1"}),
                json!({"type": "start-step"}),
                json!({"type": "reasoning-start", "id": "r"}),
                json!({"type": "reasoning-delta", "id": "r", "delta": "hm"}),
                json!({"type": "reasoning-end", "id": "r"}),
                json!({"type": "text-start", "id": "t"}),
                json!({"type": "text-delta", "id": "t", "delta": "Hi"}),
                json!({"type": "text-end", "id": "t"}),
                json!({"type": "tool-input-start", "toolCallId": "c1", "toolName": "x", "dynamic": true}),
                json!({"type": "tool-input-available", "toolCallId": "c1", "toolName": "x", "input": {"a": 1}, "dynamic": true}),
                json!({"type": "tool-approval-request", "approvalId": "ap1", "toolCallId": "c1"}),
                json!({"type": "file", "url": "data:image/png;base64,iVBO", "mediaType": "image/png"}),
                json!({"type": "finish-step"}),
                json!({"type": "message-metadata", "messageMetadata": {"model": "m"}}),
                json!({"type": "finish", "finishReason": "tool-calls"}),
            ],
        );
        assert_eq!(
            msg,
            json!({"id": "m1", "role": "assistant", "metadata": {"model": "m"}, "parts": [
                {"type": "step-start"},
                {"type": "reasoning", "text": "hm", "state": "done"},
                {"type": "text", "text": "Hi", "state": "done"},
                {"type": "dynamic-tool", "toolName": "x", "toolCallId": "c1", "state": "approval-requested",
                 "input": {"a": 1}, "approval": {"id": "ap1"}},
                {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,iVBO"},
            ]})
        );
    }

    #[test]
    fn a_continued_message_gets_the_outcomes_of_its_answered_calls_and_keeps_the_answers() {
        let continued: UiMessage = serde_json::from_value(json!({"id": "m1", "role": "assistant", "parts": [
            {"type": "step-start"},
            {"type": "dynamic-tool", "toolName": "x", "toolCallId": "c1", "state": "approval-responded",
             "input": {}, "approval": {"id": "ap1", "approved": true}},
            {"type": "dynamic-tool", "toolName": "y", "toolCallId": "c2", "state": "approval-responded",
             "input": {}, "approval": {"id": "ap2", "approved": false, "reason": "no"}},
        ]}))
        .unwrap();
        let msg = build(
            "ignored",
            Some(continued),
            &[
                json!({"type": "tool-output-available", "toolCallId": "c1", "output": "ok", "dynamic": true}),
                json!({"type": "tool-output-denied", "toolCallId": "c2"}),
                json!({"type": "start-step"}),
                json!({"type": "text-start", "id": "t"}),
                json!({"type": "text-delta", "id": "t", "delta": "cut"}),
            ],
        );
        assert_eq!(msg["id"], "m1");
        assert_eq!(msg["parts"][1]["state"], "output-available");
        assert_eq!(msg["parts"][1]["output"], "ok");
        assert_eq!(msg["parts"][1]["approval"]["approved"], true);
        assert_eq!(msg["parts"][2]["state"], "output-denied");
        assert_eq!(msg["parts"][2]["approval"]["reason"], "no");
        assert_eq!(
            msg["parts"][4],
            json!({"type": "text", "text": "cut", "state": "streaming"})
        );
    }
}
