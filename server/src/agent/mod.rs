//! The server-side agent loop: one engine that runs a turn to its end on the server — model
//! call → tool calls → a decision per call → the allowed calls run → their results go back to
//! the model → the next step — for protocols whose clients do not run tools themselves (the AI
//! SDK route is the first). It knows nothing of any wire format: it reports [`AgentEvent`]s on
//! a channel, and a protocol translates them.
//!
//! Decisions:
//! - **Every call goes through the access layer**: the decision comes from the approval policy
//!   (operator rules, then the principal's stored "always"), and an allowed call runs through
//!   the same checks as a call from our own UI (visibility for the model, the skill tool
//!   included). A refusal there is the tool's error result, which the model sees.
//! - **Per call**: `deny` never runs; the call's result is an error saying the operator's policy
//!   blocks it (the model and the client see it; no approval was asked, so it is not a denial);
//!   `allow` runs at once; `ask` ends the turn with an approval request once the step's allowed
//!   calls have run. The user's answers come back with the next request ([`Answer`]) and are
//!   settled before the next model call.
//! - **Parallel calls run concurrently**; results are reported as they finish, and go back to
//!   the model in the order the model asked for them.
//! - **At most `max_steps` model calls per request** (default 10). A turn that still asks for
//!   tools after the last step ends with the finish reason `tool-calls`.
//! - **Cancellation is dropping**: the loop is a future; dropping it (the client went away)
//!   drops the upstream stream, which cancels the upstream request, and the running tool calls.
//! - **A call's arguments stream** as [`AgentEvent::ToolInputDelta`]s while the model writes them
//!   (for the client to show), before its [`AgentEvent::ToolInput`]: only the complete call is
//!   decided on and run, and a call the model call ended without completing never is.
//! - **Failures are events, not errors**: an upstream error ends the turn with
//!   [`AgentEvent::Error`] after what was streamed; a failing tool is an error result.

#[cfg(test)]
mod tests;

use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use lmchatkit_protocol::blocked_text;
use lmchatkit_protocol::ui_stream::denied_text;
use lmchatkit_protocol::{
    Event, FinishReason, Message, ToolCall, ToolDecision as Decision, ToolResult, Usage,
};
use tokio::sync::mpsc;

use crate::access::approval::Approvals;
use crate::access::{self, Scope};
use crate::host::{CompleteRequest, Host, RequestContext};

/// Default cap on model calls per request.
pub const DEFAULT_MAX_STEPS: usize = 10;

/// Decides each tool call (the access layer's approval policy).
#[async_trait::async_trait]
pub(crate) trait Decide: Send + Sync {
    async fn decide(&self, scope: &Scope, call: &ToolCall) -> Decision;
}

#[async_trait::async_trait]
impl Decide for Approvals {
    async fn decide(&self, scope: &Scope, call: &ToolCall) -> Decision {
        access::approval::decide(self, scope, &call.name, &call.arguments).await
    }
}

/// What the loop reports, in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AgentEvent {
    /// A model call starts.
    StepStart,
    /// Visible text from the model.
    Text(String),
    /// Reasoning text from the model.
    Reasoning(String),
    /// A piece of a call's arguments as the model streams them (JSON text to append to what
    /// came before for `id`); its [`AgentEvent::ToolInput`] follows with the same id, unless
    /// the model call fails first.
    ToolInputDelta {
        id: String,
        name: String,
        delta: String,
    },
    /// The model asked for this call (complete arguments).
    ToolInput(ToolCall),
    /// The call waits for the user's approval.
    ApprovalRequested(ToolCall),
    /// The operator's policy decided the call without asking anyone: `approved` (it runs; its
    /// output follows) or not (its blocked result follows).
    Decided { call: ToolCall, approved: bool },
    /// A call ran (or failed: `is_error`).
    ToolOutput { call_id: String, result: ToolResult },
    /// The user declined the call; it did not run. (A call the operator's policy denies is a
    /// [`AgentEvent::ToolOutput`] error: nobody was asked.)
    ToolDenied { call_id: String },
    /// The model call ended.
    StepEnd { usage: Option<Usage> },
    /// The turn ended; `usage` sums the steps that reported any.
    Finish {
        reason: Finish,
        usage: Option<Usage>,
    },
    /// The upstream failed; what was streamed stays valid. A [`AgentEvent::Finish`] follows.
    Error(String),
}

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    /// The model ended its answer (with the provider's reason).
    Model(Option<FinishReason>),
    /// Calls wait for the user's approval.
    AwaitingApproval,
    /// `max_steps` model calls were made and the model still asked for tools.
    MaxSteps,
    /// The upstream failed.
    Error,
}

/// The user's answer to an approval request, carried by the next request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Answer {
    /// The call as the model asked for it (the protocol has checked it is the one it offered).
    pub call: ToolCall,
    /// Run it?
    pub approved: bool,
    /// Why, when the user said.
    pub reason: Option<String>,
}

/// One turn to run: the prepared request (system prompt, cleaned messages, the model's tools)
/// and the answers to settle first.
pub(crate) struct Turn {
    pub cx: RequestContext,
    pub request: CompleteRequest,
    pub answers: Vec<Answer>,
}

/// The engine: the host, the decision maker and the step cap. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Agent {
    pub host: Arc<dyn Host>,
    pub decide: Arc<dyn Decide>,
    pub max_steps: usize,
}

/// The loop stopped because nobody listens any more.
struct Gone;

impl Agent {
    /// Runs `turn` to its end, reporting on `out`. Returns early (without a `Finish`) when `out`
    /// is closed. Drop the future to cancel.
    pub(crate) async fn run(&self, turn: Turn, out: mpsc::Sender<AgentEvent>) {
        let _ = self.run_inner(turn, &out).await;
    }

    async fn run_inner(&self, turn: Turn, out: &mpsc::Sender<AgentEvent>) -> Result<(), Gone> {
        let Turn {
            cx,
            mut request,
            answers,
        } = turn;
        let scope = Scope::model(cx.clone());
        let mut total: Option<Usage> = None;

        // The user's answers: approved calls run (the policy may have changed since it asked: a
        // deny now still wins), declined ones are told to the model.
        if !answers.is_empty() {
            let mut runs = Vec::new();
            let mut results = Vec::new();
            for a in answers {
                let decision = self.decide.decide(&scope, &a.call).await;
                if decision == Decision::Deny {
                    results.push(blocked(&a.call, out).await?);
                } else if a.approved {
                    runs.push(a.call);
                } else {
                    emit(out, denied(&a.call)).await?;
                    let text = denied_text(&a.call.name, a.reason.as_deref());
                    results.push(tool_message(&a.call, &ToolResult::error(text)));
                }
            }
            results.extend(self.run_calls(&scope, &runs, out).await?);
            request.messages.extend(order(results, &request.messages));
        }

        for _ in 0..self.max_steps {
            emit(out, AgentEvent::StepStart).await?;
            let step = self.model_step(&cx, &request, out).await?;
            add_usage(&mut total, step.usage);
            emit(out, AgentEvent::StepEnd { usage: step.usage }).await?;
            if let Some(error) = step.error {
                emit(out, AgentEvent::Error(error)).await?;
                return finish(out, Finish::Error, total).await;
            }
            if step.calls.is_empty() {
                return finish(out, Finish::Model(step.finish), total).await;
            }
            request
                .messages
                .push(Message::assistant(step.text).with_tool_calls(step.calls.clone()));
            let mut runs = Vec::new();
            let mut asks = Vec::new();
            let mut results = Vec::new();
            for call in &step.calls {
                match self.decide.decide(&scope, call).await {
                    Decision::Allow => {
                        emit(out, decided(call, true)).await?;
                        runs.push(call.clone());
                    }
                    Decision::Ask => asks.push(call.clone()),
                    Decision::Deny => {
                        emit(out, decided(call, false)).await?;
                        results.push(blocked(call, out).await?);
                    }
                }
            }
            results.extend(self.run_calls(&scope, &runs, out).await?);
            if !asks.is_empty() {
                for call in asks {
                    emit(out, AgentEvent::ApprovalRequested(call)).await?;
                }
                return finish(out, Finish::AwaitingApproval, total).await;
            }
            request.messages.extend(order(results, &request.messages));
        }
        finish(out, Finish::MaxSteps, total).await
    }

    /// One model call: streams text and reasoning out, collects the calls.
    async fn model_step(
        &self,
        cx: &RequestContext,
        request: &CompleteRequest,
        out: &mpsc::Sender<AgentEvent>,
    ) -> Result<Step, Gone> {
        let mut step = Step::default();
        let mut events = self.host.complete(cx, request.clone());
        while let Some(ev) = events.next().await {
            match ev {
                Event::Delta { delta } => {
                    step.text.push_str(&delta);
                    emit(out, AgentEvent::Text(delta)).await?;
                }
                Event::Reasoning { reasoning } => {
                    emit(out, AgentEvent::Reasoning(reasoning)).await?
                }
                Event::ToolCallDelta {
                    id,
                    name,
                    arguments_delta: delta,
                    ..
                } => emit(out, AgentEvent::ToolInputDelta { id, name, delta }).await?,
                Event::ToolCall { tool_call, .. } => {
                    let mut call = tool_call;
                    call.approval = None;
                    call.hints = Vec::new();
                    emit(out, AgentEvent::ToolInput(call.clone())).await?;
                    step.calls.push(call);
                }
                Event::Done {
                    finish_reason,
                    usage,
                    ..
                } => {
                    step.finish = finish_reason;
                    step.usage = usage;
                    break;
                }
                Event::Error { error } => {
                    step.error = Some(error);
                    break;
                }
                // The service's own event; a host has no business sending it.
                Event::Saved { .. } => {}
            }
        }
        Ok(step)
    }

    /// Runs `calls` concurrently, reporting each result as it arrives; the tool messages come
    /// back in any order (see [`order`]).
    async fn run_calls(
        &self,
        scope: &Scope,
        calls: &[ToolCall],
        out: &mpsc::Sender<AgentEvent>,
    ) -> Result<Vec<Message>, Gone> {
        let mut running: FuturesUnordered<_> = calls
            .iter()
            .map(|call| async move {
                let host = &*self.host;
                let result = match access::call_tool(host, scope, &call.name, &call.arguments).await
                {
                    Ok(r) => r,
                    Err(e) => ToolResult::error(format!("tool {} was not run: {e}", call.name)),
                };
                (call, result)
            })
            .collect();
        let mut messages = Vec::with_capacity(calls.len());
        while let Some((call, result)) = running.next().await {
            messages.push(report(out, call, result).await?);
        }
        Ok(messages)
    }
}

#[derive(Default)]
struct Step {
    text: String,
    calls: Vec<ToolCall>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    error: Option<String>,
}

async fn emit(out: &mpsc::Sender<AgentEvent>, ev: AgentEvent) -> Result<(), Gone> {
    out.send(ev).await.map_err(|_| Gone)
}

async fn finish(
    out: &mpsc::Sender<AgentEvent>,
    reason: Finish,
    usage: Option<Usage>,
) -> Result<(), Gone> {
    emit(out, AgentEvent::Finish { reason, usage }).await
}

/// A call the operator's policy denies: reported as the tool's error (the user was never
/// asked, so it is not a declined approval) and told to the model.
/// The policy's own decision on `call`.
fn decided(call: &ToolCall, approved: bool) -> AgentEvent {
    AgentEvent::Decided {
        call: call.clone(),
        approved,
    }
}

async fn blocked(call: &ToolCall, out: &mpsc::Sender<AgentEvent>) -> Result<Message, Gone> {
    report(out, call, ToolResult::error(blocked_text(&call.name))).await
}

/// Reports `call`'s result and returns the tool message that tells the model.
async fn report(
    out: &mpsc::Sender<AgentEvent>,
    call: &ToolCall,
    result: ToolResult,
) -> Result<Message, Gone> {
    let message = tool_message(call, &result);
    emit(
        out,
        AgentEvent::ToolOutput {
            call_id: call.id.clone(),
            result,
        },
    )
    .await?;
    Ok(message)
}

fn denied(call: &ToolCall) -> AgentEvent {
    AgentEvent::ToolDenied {
        call_id: call.id.clone(),
    }
}

/// The tool message answering `call` with `result`.
fn tool_message(call: &ToolCall, result: &ToolResult) -> Message {
    let mut m = Message::tool(call.id.clone(), call.name.clone(), result.content.clone());
    m.is_error = result.is_error;
    m
}

/// Tool messages in the order the latest assistant message asked for the calls (providers
/// expect each result right after its call, in order).
fn order(mut results: Vec<Message>, messages: &[Message]) -> Vec<Message> {
    let calls = messages
        .iter()
        .rev()
        .find(|m| !m.tool_calls.is_empty())
        .map(|m| m.tool_calls.as_slice())
        .unwrap_or_default();
    let position = |m: &Message| {
        calls
            .iter()
            .position(|c| Some(&c.id) == m.tool_call_id.as_ref())
            .unwrap_or(usize::MAX)
    };
    results.sort_by_key(position);
    results
}

/// Adds a step's usage to the turn's total (a field stays unreported until a step reports it).
fn add_usage(total: &mut Option<Usage>, step: Option<Usage>) {
    if let Some(step) = step {
        total.get_or_insert_with(Usage::default).add(&step);
    }
}
