//! The agent loop's events as UI Message Stream chunks: a pure state machine, no I/O.
//!
//! Decisions:
//! - One assistant message per request, opened by `start` with its id (the id of the message
//!   being continued when the request answers approvals, so the client appends to it).
//! - Each model call is a `start-step` … `finish-step`; text and reasoning parts get ids unique
//!   in the message (`text-<n>`, `reasoning-<n>`), and an open part is closed before the next
//!   kind begins and at the step's end, so parts never interleave.
//! - A tool call is `tool-input-start` at its first streamed piece, a `tool-input-delta` per
//!   piece as the model writes the arguments (the client shows the input growing, state
//!   `input-streaming`), then `tool-input-available` with the complete input — or
//!   `tool-input-error` when the model's arguments were not JSON. A call whose model did not
//!   stream its arguments gets `tool-input-start` and one delta with the whole input. A call
//!   whose pieces started but that never completed (the upstream failed, or the run was
//!   stopped) ends in `tool-input-error` with the text that came, so neither the client nor
//!   the saved thread keep a call streaming forever; it never runs.
//!   Outputs are the tool's text; a failing tool is `tool-output-error`; images the tool
//!   returned follow as `file` parts (`data:` URLs).
//! - A call that waits for the user's input is a `data-input-request` part (its id the call's
//!   id, its payload [`InputRequestData`]) instead of an output; the finish reason is then
//!   `tool-calls`, as when approvals wait.
//! - A running call's progress reports (MCP `notifications/progress`) are a `data-tool-progress`
//!   part (its id the call's id, replaced at each report, payload [`ToolProgressData`]).
//! - A call that runs as a task reports its state as a `data-tool-task` part (its id the
//!   call's id, replaced at each change, payload [`ToolTaskData`]) before its output.
//! - The end is `message-metadata` (model, usage, time) then `finish`; an upstream failure is
//!   `error` before them, so the client sets `chat.error` and keeps the partial text, and the
//!   metadata says `failed` with the error, so the saved reply is marked cut off.
//! - The message's metadata names the run that writes it (`runId`), first in `start`, so a
//!   client can stop the run while it streams.
//! - The policy's own decisions (`allow`, `deny`) are `ai@7`'s automatic approvals: a
//!   `tool-approval-request` with `isAutomatic` and its `tool-approval-response`, before the
//!   call's output. The route sends them only to clients that ask for the v7 stream
//!   ([`lmchatkit_protocol::ui_stream::AI_SDK_VERSION_HEADER`]); the log holds them for all.
//! - A stopped run ([`Translator::stop`]) closes what is open (the part, the step), sends the
//!   metadata marked `stopped` (usage: what earlier requests reported; the cut call's usage is
//!   unknown) and `abort`, as the AI SDK's own server ends an aborted stream: no `finish`.

use lmchatkit_protocol::ui_stream::{
    UiChunk, UiDataChunk, UiFinishReason, UiMessageMetadata, UiUsage,
};
use lmchatkit_protocol::{
    FinishReason, INPUT_REQUEST_DATA, InputRequestData, TOOL_PROGRESS_DATA, TOOL_TASK_DATA,
    ToolCall, ToolProgressData, ToolTaskData, Usage,
};
use serde_json::Value;

use crate::agent::{AgentEvent, Finish};
use crate::models::{Price, TokenUsage};

/// Why a call whose input started streaming and never completed ends in `tool-input-error`.
const CUT_OFF: &str = "the reply was cut off before the call's arguments were complete";

/// Signs an approval request for a call (see [`super::approval_id`]).
pub(crate) type Sign = Box<dyn Fn(&ToolCall) -> String + Send + Sync>;

/// Which part is open.
enum Open {
    Text(String),
    Reasoning(String),
}

/// Turns [`AgentEvent`]s into chunks.
pub(crate) struct Translator {
    model: String,
    price: Option<Price>,
    sign: Sign,
    open: Option<Open>,
    parts: usize,
    /// Usage the message had before this request (a continued message), added to this one's.
    earlier: Option<UiUsage>,
    /// The run writing the message.
    run_id: Option<String>,
    /// A step is open (`start-step` sent, `finish-step` not yet).
    in_step: bool,
    /// The upstream's error, once the turn failed (the metadata says so at the end).
    failed: Option<String>,
    /// Calls whose `tool-input-start` went out and whose input did not yet end: id, tool name
    /// and the input text so far.
    streaming: Vec<(String, String, String)>,
    now_ms: fn() -> i64,
}

impl Translator {
    /// A translator for a message by `model` at `price`; `earlier` is the usage a continued
    /// message already reported.
    pub(crate) fn new(
        model: impl Into<String>,
        price: Option<Price>,
        earlier: Option<UiUsage>,
        sign: Sign,
    ) -> Self {
        Self {
            model: model.into(),
            price,
            sign,
            open: None,
            parts: 0,
            earlier,
            run_id: None,
            in_step: false,
            failed: None,
            streaming: Vec::new(),
            now_ms: crate::store::now_ms,
        }
    }

    /// The same, naming the run that writes the message.
    #[cfg(test)]
    pub(crate) fn with_run(mut self, run_id: impl Into<String>) -> Self {
        self.set_run(run_id);
        self
    }

    /// Names the run that writes the message.
    pub(crate) fn set_run(&mut self, run_id: impl Into<String>) {
        self.run_id = Some(run_id.into());
    }

    /// The chunk that opens the message (with the run's id as metadata).
    pub(crate) fn start(&self, message_id: &str) -> UiChunk {
        UiChunk::Start {
            message_id: Some(message_id.to_owned()),
            message_metadata: self
                .run_id
                .as_ref()
                .map(|id| serde_json::json!({ "runId": id })),
        }
    }

    /// The chunks that end a message whose run was stopped, appended to `out`.
    pub(crate) fn stop(&mut self, out: &mut Vec<UiChunk>) {
        self.close(out);
        self.end_streaming(
            "the run was stopped before the call's arguments were complete",
            out,
        );
        if std::mem::take(&mut self.in_step) {
            out.push(UiChunk::finish_step());
        }
        out.push(UiChunk::message_metadata(self.metadata(None, true)));
        out.push(UiChunk::abort());
    }

    /// The chunks for one event, appended to `out`.
    pub(crate) fn push(&mut self, ev: AgentEvent, out: &mut Vec<UiChunk>) {
        match ev {
            AgentEvent::StepStart => {
                self.in_step = true;
                out.push(UiChunk::start_step());
            }
            AgentEvent::Text(delta) => {
                let id = self.open_text(out);
                out.push(UiChunk::text_delta(id, delta));
            }
            AgentEvent::Reasoning(delta) => {
                let id = self.open_reasoning(out);
                out.push(UiChunk::reasoning_delta(id, delta));
            }
            AgentEvent::ToolInputDelta { id, name, delta } => {
                let at = match self.streaming.iter().position(|s| s.0 == id) {
                    Some(at) => at,
                    None => {
                        self.close(out);
                        out.push(UiChunk::tool_input_start(&id, &name));
                        self.streaming.push((id.clone(), name, String::new()));
                        self.streaming.len() - 1
                    }
                };
                if !delta.is_empty() {
                    self.streaming[at].2.push_str(&delta);
                    out.push(UiChunk::tool_input_delta(id, delta));
                }
            }
            AgentEvent::ToolInput(call) => {
                let at = self.streaming.iter().position(|s| s.0 == call.id);
                let streamed = at.is_some();
                match at {
                    // Its input streamed: it ends now.
                    Some(at) => {
                        self.streaming.remove(at);
                    }
                    None => {
                        self.close(out);
                        out.push(UiChunk::tool_input_start(&call.id, &call.name));
                    }
                }
                match call.arguments {
                    // Arguments that were not JSON are kept as a string by the translator of
                    // the upstream stream.
                    Value::String(raw) => out.push(UiChunk::ToolInputError {
                        tool_call_id: call.id,
                        tool_name: call.name,
                        input: Value::String(raw),
                        error_text: "the model's tool arguments are not valid JSON".into(),
                        provider_executed: None,
                        provider_metadata: None,
                        dynamic: Some(true),
                        title: None,
                    }),
                    input => {
                        if !streamed {
                            out.push(UiChunk::tool_input_delta(&call.id, input.to_string()));
                        }
                        out.push(UiChunk::tool_input_available(call.id, call.name, input));
                    }
                }
            }
            AgentEvent::ApprovalRequested(call) => {
                out.push(UiChunk::tool_approval_request((self.sign)(&call), call.id));
            }
            // `ai@7` only (the route drops them for other clients): the policy's decision as
            // an automatic approval, before the output.
            AgentEvent::Decided { call, approved } => {
                let reason = (!approved).then(|| "the operator's policy blocks this tool".into());
                out.extend(UiChunk::automatic_approval(
                    (self.sign)(&call),
                    call.id,
                    approved,
                    reason,
                ));
            }
            AgentEvent::ToolOutput { call_id, result } => {
                match result.is_error {
                    true => out.push(UiChunk::tool_output_error(call_id, result.content)),
                    false => out.push(UiChunk::tool_output_available(
                        call_id,
                        Value::String(result.content),
                    )),
                }
                // Images the tool returned follow its output as file parts.
                for f in &result.files {
                    out.push(UiChunk::file(f.data_url(), &f.media_type));
                }
            }
            AgentEvent::ToolDenied { call_id } => out.push(UiChunk::tool_output_denied(call_id)),
            AgentEvent::ToolProgress { call_id, progress } => {
                let data = ToolProgressData {
                    tool_call_id: call_id.clone(),
                    progress: progress.progress,
                    total: progress.total,
                    message: progress.message,
                };
                out.push(UiChunk::Data(UiDataChunk {
                    name: TOOL_PROGRESS_DATA.into(),
                    id: Some(call_id),
                    data: serde_json::to_value(data).unwrap_or(Value::Null),
                    transient: None,
                }));
            }
            AgentEvent::TaskState { call_id, task } => {
                let data = ToolTaskData {
                    tool_call_id: call_id.clone(),
                    status: task.status,
                    status_message: task.status_message,
                };
                out.push(UiChunk::Data(UiDataChunk {
                    name: TOOL_TASK_DATA.into(),
                    id: Some(call_id),
                    data: serde_json::to_value(data).unwrap_or(Value::Null),
                    transient: None,
                }));
            }
            AgentEvent::InputRequested { call_id, request } => {
                let data = InputRequestData {
                    tool_call_id: call_id.clone(),
                    questions: request.questions,
                    ticket: request.ticket.unwrap_or_default(),
                    expires_at_ms: request.expires_at_ms,
                    answers: None,
                };
                out.push(UiChunk::Data(UiDataChunk {
                    name: INPUT_REQUEST_DATA.into(),
                    id: Some(call_id),
                    data: serde_json::to_value(data).unwrap_or(Value::Null),
                    transient: None,
                }));
            }
            AgentEvent::StepEnd { .. } => {
                self.close(out);
                // The model call ended: a call it did not complete never will.
                self.end_streaming(CUT_OFF, out);
                self.in_step = false;
                out.push(UiChunk::finish_step());
            }
            AgentEvent::Error(error) => {
                self.close(out);
                self.end_streaming(CUT_OFF, out);
                self.failed = Some(error.clone());
                out.push(UiChunk::error(error));
            }
            AgentEvent::Finish { reason, usage } => {
                self.close(out);
                self.end_streaming(CUT_OFF, out);
                out.push(UiChunk::message_metadata(self.metadata(usage, false)));
                out.push(UiChunk::finish(finish_reason(reason)));
            }
        }
    }

    /// The message's metadata at its end: the model, the usage so far (this request's added to
    /// what the continued message had), its cost at the model's price, the time, the run and
    /// whether it was `stopped`.
    fn metadata(&self, usage: Option<Usage>, stopped: bool) -> Value {
        let mut total = self.earlier.as_ref().map(Usage::from).unwrap_or_default();
        if let Some(now) = usage {
            total.add(&now);
        }
        let u = UiUsage::from(&total);
        let meta = UiMessageMetadata {
            model: self.model.clone(),
            usage: u,
            cost_usd: self.price.map(|p| p.cost(&TokenUsage::from(&total))),
            created_at: (self.now_ms)(),
            run_id: self.run_id.clone(),
            stopped,
            failed: self.failed.clone(),
        };
        serde_json::to_value(meta).unwrap_or(Value::Null)
    }

    /// Ends each call whose input started streaming and never completed in `tool-input-error`
    /// (`why`), with the input text that came.
    fn end_streaming(&mut self, why: &str, out: &mut Vec<UiChunk>) {
        for (id, name, text) in self.streaming.drain(..) {
            out.push(UiChunk::ToolInputError {
                tool_call_id: id,
                tool_name: name,
                input: Value::String(text),
                error_text: why.to_owned(),
                provider_executed: None,
                provider_metadata: None,
                dynamic: Some(true),
                title: None,
            });
        }
    }

    fn next_id(&mut self, kind: &str) -> String {
        self.parts += 1;
        format!("{kind}-{}", self.parts)
    }

    fn open_text(&mut self, out: &mut Vec<UiChunk>) -> String {
        if let Some(Open::Text(id)) = &self.open {
            return id.clone();
        }
        self.close(out);
        let id = self.next_id("text");
        out.push(UiChunk::text_start(&id));
        self.open = Some(Open::Text(id.clone()));
        id
    }

    fn open_reasoning(&mut self, out: &mut Vec<UiChunk>) -> String {
        if let Some(Open::Reasoning(id)) = &self.open {
            return id.clone();
        }
        self.close(out);
        let id = self.next_id("reasoning");
        out.push(UiChunk::reasoning_start(&id));
        self.open = Some(Open::Reasoning(id.clone()));
        id
    }

    fn close(&mut self, out: &mut Vec<UiChunk>) {
        match self.open.take() {
            Some(Open::Text(id)) => out.push(UiChunk::text_end(id)),
            Some(Open::Reasoning(id)) => out.push(UiChunk::reasoning_end(id)),
            None => {}
        }
    }
}

fn finish_reason(f: Finish) -> UiFinishReason {
    match f {
        Finish::Model(Some(FinishReason::Stop) | None) => UiFinishReason::Stop,
        Finish::Model(Some(FinishReason::Length)) => UiFinishReason::Length,
        Finish::Model(Some(FinishReason::ContentFilter)) => UiFinishReason::ContentFilter,
        Finish::Model(Some(FinishReason::Stopped)) => UiFinishReason::Other,
        Finish::Model(Some(FinishReason::ToolCalls))
        | Finish::AwaitingApproval
        | Finish::AwaitingInput
        | Finish::MaxSteps => UiFinishReason::ToolCalls,
        Finish::Error => UiFinishReason::Error,
    }
}

#[cfg(test)]
mod tests {
    use lmchatkit_protocol::ToolResult;
    use serde_json::json;

    use super::*;

    fn translator() -> Translator {
        let mut t = Translator::new(
            "m",
            None,
            None,
            Box::new(|c: &ToolCall| format!("ap_{}", c.id)),
        );
        t.now_ms = || 42;
        t
    }

    /// The `type` of each chunk.
    fn types_of(out: &[UiChunk]) -> Vec<Value> {
        out.iter()
            .map(|c| serde_json::to_value(c).unwrap()["type"].clone())
            .collect()
    }

    fn run(events: Vec<AgentEvent>) -> Vec<Value> {
        let mut t = translator();
        let mut out = vec![t.start("msg-1")];
        for ev in events {
            t.push(ev, &mut out);
        }
        out.iter()
            .map(|c| serde_json::to_value(c).unwrap())
            .collect()
    }

    #[test]
    fn a_step_with_reasoning_text_and_a_call_becomes_closed_parts_in_order() {
        let call = ToolCall::new("c1", "srv__get", json!({"q": 1}));
        let chunks = run(vec![
            AgentEvent::StepStart,
            AgentEvent::Reasoning("hm".into()),
            AgentEvent::Text("Hi".into()),
            AgentEvent::Text("!".into()),
            AgentEvent::ToolInput(call.clone()),
            AgentEvent::ToolOutput {
                call_id: "c1".into(),
                result: ToolResult::text("42"),
            },
            AgentEvent::StepEnd { usage: None },
        ]);
        assert_eq!(
            chunks,
            vec![
                json!({"type": "start", "messageId": "msg-1"}),
                json!({"type": "start-step"}),
                json!({"type": "reasoning-start", "id": "reasoning-1"}),
                json!({"type": "reasoning-delta", "id": "reasoning-1", "delta": "hm"}),
                json!({"type": "reasoning-end", "id": "reasoning-1"}),
                json!({"type": "text-start", "id": "text-2"}),
                json!({"type": "text-delta", "id": "text-2", "delta": "Hi"}),
                json!({"type": "text-delta", "id": "text-2", "delta": "!"}),
                json!({"type": "text-end", "id": "text-2"}),
                json!({"type": "tool-input-start", "toolCallId": "c1", "toolName": "srv__get", "dynamic": true}),
                json!({"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "{\"q\":1}"}),
                json!({"type": "tool-input-available", "toolCallId": "c1", "toolName": "srv__get", "input": {"q": 1}, "dynamic": true}),
                json!({"type": "tool-output-available", "toolCallId": "c1", "output": "42", "dynamic": true}),
                json!({"type": "finish-step"}),
            ]
        );
    }

    #[test]
    fn a_streamed_calls_pieces_are_its_deltas_and_its_call_ends_the_input() {
        let piece = |delta: &str| AgentEvent::ToolInputDelta {
            id: "c1".into(),
            name: "srv__get".into(),
            delta: delta.into(),
        };
        let chunks = run(vec![
            AgentEvent::StepStart,
            AgentEvent::Text("Let me look.".into()),
            piece(""),
            piece("{\"q\":"),
            piece("1}"),
            AgentEvent::ToolInput(ToolCall::new("c1", "srv__get", json!({"q": 1}))),
        ]);
        assert_eq!(
            chunks[4..],
            [
                json!({"type": "text-end", "id": "text-1"}),
                json!({"type": "tool-input-start", "toolCallId": "c1", "toolName": "srv__get", "dynamic": true}),
                json!({"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "{\"q\":"}),
                json!({"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "1}"}),
                json!({"type": "tool-input-available", "toolCallId": "c1", "toolName": "srv__get", "input": {"q": 1}, "dynamic": true}),
            ]
        );
    }

    #[test]
    fn a_call_cut_off_or_stopped_while_its_input_streams_ends_in_an_input_error() {
        let piece = |id: &str, delta: &str| AgentEvent::ToolInputDelta {
            id: id.into(),
            name: "rm".into(),
            delta: delta.into(),
        };
        let chunks = run(vec![
            AgentEvent::StepStart,
            piece("c1", "{\"path\": \"/tm"),
            AgentEvent::StepEnd { usage: None },
            AgentEvent::Error("upstream died".into()),
        ]);
        let types: Vec<_> = chunks.iter().map(|c| c["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "start",
                "start-step",
                "tool-input-start",
                "tool-input-delta",
                "tool-input-error",
                "finish-step",
                "error"
            ]
        );
        assert_eq!(
            chunks[4],
            json!({"type": "tool-input-error", "toolCallId": "c1", "toolName": "rm",
                   "input": "{\"path\": \"/tm", "dynamic": true,
                   "errorText": "the reply was cut off before the call's arguments were complete"})
        );
        let mut t = translator();
        let mut out = Vec::new();
        t.push(AgentEvent::StepStart, &mut out);
        t.push(piece("c2", "{"), &mut out);
        out.clear();
        t.stop(&mut out);
        assert_eq!(
            types_of(&out),
            [
                json!("tool-input-error"),
                json!("finish-step"),
                json!("message-metadata"),
                json!("abort")
            ]
        );
    }

    #[test]
    fn approvals_denials_and_errors_map_to_their_chunks() {
        let call = ToolCall::new("c2", "rm", json!({}));
        let chunks = run(vec![
            AgentEvent::ApprovalRequested(call),
            AgentEvent::ToolDenied {
                call_id: "c3".into(),
            },
            AgentEvent::ToolOutput {
                call_id: "c4".into(),
                result: ToolResult::error("boom"),
            },
            AgentEvent::ToolInput(ToolCall::new("c5", "t", json!("{not json"))),
            AgentEvent::ToolOutput {
                call_id: "c6".into(),
                result: ToolResult {
                    files: vec![lmchatkit_protocol::ToolFile {
                        media_type: "image/png".into(),
                        data: "iVBO".into(),
                    }],
                    ..ToolResult::text("a chart")
                },
            },
        ]);
        assert_eq!(
            chunks[1..],
            [
                json!({"type": "tool-approval-request", "approvalId": "ap_c2", "toolCallId": "c2"}),
                json!({"type": "tool-output-denied", "toolCallId": "c3"}),
                json!({"type": "tool-output-error", "toolCallId": "c4", "errorText": "boom", "dynamic": true}),
                json!({"type": "tool-input-start", "toolCallId": "c5", "toolName": "t", "dynamic": true}),
                json!({"type": "tool-input-error", "toolCallId": "c5", "toolName": "t", "input": "{not json", "errorText": "the model's tool arguments are not valid JSON", "dynamic": true}),
                json!({"type": "tool-output-available", "toolCallId": "c6", "output": "a chart", "dynamic": true}),
                json!({"type": "file", "url": "data:image/png;base64,iVBO", "mediaType": "image/png"}),
            ]
        );
    }

    #[test]
    fn the_policys_own_decisions_are_automatic_approvals_signed_like_asked_ones() {
        let chunks = run(vec![
            AgentEvent::Decided {
                call: ToolCall::new("c1", "ls", json!({})),
                approved: true,
            },
            AgentEvent::Decided {
                call: ToolCall::new("c2", "rm", json!({})),
                approved: false,
            },
        ]);
        assert_eq!(
            chunks[1..],
            [
                json!({"type": "tool-approval-request", "approvalId": "ap_c1", "toolCallId": "c1", "isAutomatic": true}),
                json!({"type": "tool-approval-response", "approvalId": "ap_c1", "approved": true}),
                json!({"type": "tool-approval-request", "approvalId": "ap_c2", "toolCallId": "c2", "isAutomatic": true}),
                json!({"type": "tool-approval-response", "approvalId": "ap_c2", "approved": false, "reason": "the operator's policy blocks this tool"}),
            ]
        );
    }

    #[test]
    fn an_upstream_error_closes_the_text_then_reports_and_finishes_with_error() {
        let chunks = run(vec![
            AgentEvent::StepStart,
            AgentEvent::Text("par".into()),
            AgentEvent::StepEnd { usage: None },
            AgentEvent::Error("upstream died".into()),
            AgentEvent::Finish {
                reason: Finish::Error,
                usage: None,
            },
        ]);
        let types: Vec<_> = chunks.iter().map(|c| c["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "start",
                "start-step",
                "text-start",
                "text-delta",
                "text-end",
                "finish-step",
                "error",
                "message-metadata",
                "finish"
            ]
        );
        assert_eq!(chunks[6]["errorText"], "upstream died");
        // The saved reply is marked cut off, with the error.
        assert_eq!(
            chunks[7]["messageMetadata"]["failed"], "upstream died",
            "{}",
            chunks[7]
        );
        assert_eq!(
            chunks[8],
            json!({"type": "finish", "finishReason": "error"})
        );
    }

    #[test]
    fn the_metadata_adds_this_requests_usage_to_what_the_message_had_and_prices_it() {
        let mut t = Translator::new(
            "m",
            Some(Price::new(1.0, 2.0)),
            Some(UiUsage {
                input_tokens: 100,
                output_tokens: 10,
                ..UiUsage::default()
            }),
            Box::new(|_: &ToolCall| String::new()),
        );
        t.now_ms = || 7;
        let mut out = Vec::new();
        t.push(
            AgentEvent::Finish {
                reason: Finish::AwaitingApproval,
                usage: Some(Usage {
                    prompt_tokens: Some(5),
                    completion_tokens: Some(2),
                    total_tokens: Some(7),
                    reasoning_tokens: Some(1),
                    ..Default::default()
                }),
            },
            &mut out,
        );
        let values: Vec<Value> = out
            .iter()
            .map(|c| serde_json::to_value(c).unwrap())
            .collect();
        assert_eq!(
            values,
            vec![
                // 105 in at $1/M and 12 out at $2/M; the context is the last call's 5 + 2.
                json!({"type": "message-metadata", "messageMetadata": {"model": "m",
                       "usage": {"inputTokens": 105, "outputTokens": 12, "reasoningTokens": 1, "contextTokens": 7},
                       "costUsd": 0.000129, "createdAt": 7}}),
                json!({"type": "finish", "finishReason": "tool-calls"}),
            ]
        );
    }

    #[test]
    fn a_stopped_run_closes_its_part_and_step_and_ends_with_stopped_metadata_and_abort() {
        let mut t = translator().with_run("run-1");
        let mut out = vec![t.start("msg-1")];
        t.push(AgentEvent::StepStart, &mut out);
        t.push(AgentEvent::Text("par".into()), &mut out);
        t.stop(&mut out);
        let values: Vec<Value> = out
            .iter()
            .map(|c| serde_json::to_value(c).unwrap())
            .collect();
        assert_eq!(
            values,
            vec![
                json!({"type": "start", "messageId": "msg-1", "messageMetadata": {"runId": "run-1"}}),
                json!({"type": "start-step"}),
                json!({"type": "text-start", "id": "text-1"}),
                json!({"type": "text-delta", "id": "text-1", "delta": "par"}),
                json!({"type": "text-end", "id": "text-1"}),
                json!({"type": "finish-step"}),
                json!({"type": "message-metadata", "messageMetadata": {"model": "m",
                       "usage": {"inputTokens": 0, "outputTokens": 0}, "createdAt": 42,
                       "runId": "run-1", "stopped": true}}),
                json!({"type": "abort"}),
            ]
        );
        // Between steps nothing is open: no second `finish-step`.
        let mut t = translator();
        let mut out = Vec::new();
        t.push(AgentEvent::StepStart, &mut out);
        t.push(AgentEvent::StepEnd { usage: None }, &mut out);
        out.clear();
        t.stop(&mut out);
        assert_eq!(types_of(&out), [json!("message-metadata"), json!("abort")]);
    }
}
