//! The server-side agent loop: one engine that runs a turn to its end on the server — model
//! call → tool calls → a decision per call → the allowed calls run → their results go back to
//! the model → the next step — for protocols whose clients do not run tools themselves (the AI
//! SDK route is the first). It knows nothing of any wire format: it reports [`AgentEvent`]s as
//! a stream ([`Agent::events`], which runs the loop as it is read; [`outbox`] says how), and a
//! protocol translates them.
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
//! - **A call that asks for the user's input** (MCP elicitation, `input_required`) reports its
//!   request, with a ticket ([`crate::access::input`]), instead of an output; the step's
//!   other calls finish and the turn ends waiting for input, as for approvals. The next request
//!   carries the answers ([`InputReply`]) and the call is made again with them before the next
//!   model call; it may ask again.
//! - **A call that runs as a task** (MCP's tasks extension) is followed here, at the server's
//!   poll interval (within 100 ms and 5 s), its states reported as they change; the turn goes
//!   on with its result. A stopped run cancels the tasks it follows (`tasks/cancel`).
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

mod outbox;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use lmchatkit_protocol::blocked_text;
use lmchatkit_protocol::ui_stream::denied_text;
use lmchatkit_protocol::{
    Event, FinishReason, InputRequired, Message, ToolCall, ToolDecision as Decision, ToolResult,
    ToolTask, Usage,
};

use crate::access::approval::Approvals;
use crate::access::input::{InputTickets, Subject};
use crate::access::{self, Scope};
use crate::access::{Again, TaskGuard};
use crate::host::{CompleteRequest, Host, ProgressSink, RequestContext, ToolInput, ToolProgress};
pub(crate) use outbox::Events;
use outbox::Outbox;

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
    /// The call waits for the user's input (a form or a URL); it has no output yet. The
    /// request carries its ticket (see [`crate::access::input`]).
    InputRequested {
        call_id: String,
        request: InputRequired,
    },
    /// How far a running call is, as its server reports.
    ToolProgress {
        call_id: String,
        progress: ToolProgress,
    },
    /// The call runs as a task on its server: its state now (reported at each poll).
    TaskState { call_id: String, task: ToolTask },
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
    /// Calls wait for the user's input.
    AwaitingInput,
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

/// The user's answers to a call's request for input, carried by the next request and checked
/// by the protocol ([`crate::access::input::InputTickets::open`]): the call is made again
/// with them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InputReply {
    pub call: ToolCall,
    pub input: ToolInput,
}

/// One turn to run: the prepared request (system prompt, cleaned messages, the model's tools)
/// and the answers to settle first.
pub(crate) struct Turn {
    pub cx: RequestContext,
    pub request: CompleteRequest,
    pub answers: Vec<Answer>,
    pub inputs: Vec<InputReply>,
    /// The conversation (the AI SDK's thread): what requests for input are bound to.
    pub thread: String,
}

/// The engine: the host, the decision maker and the step cap. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Agent {
    pub host: Arc<dyn Host>,
    pub decide: Arc<dyn Decide>,
    pub max_steps: usize,
    /// Signs the tickets of calls that ask for the user's input.
    pub tickets: InputTickets,
}

impl Agent {
    /// Runs `turn` to its end as its events are read: the stream ends after the turn's
    /// `Finish`. Drop it to cancel.
    pub(crate) fn events(self, turn: Turn) -> Events {
        let outbox = Outbox::default();
        let out = outbox.clone();
        Events::new(outbox, async move { self.run(turn, &out).await })
    }

    async fn run(&self, turn: Turn, out: &Outbox) {
        let Turn {
            cx,
            mut request,
            answers,
            inputs,
            thread,
        } = turn;
        let scope = Scope::model(cx.clone());
        let mut total: Option<Usage> = None;
        let calls = Calls {
            scope: &scope,
            thread: &thread,
            out,
        };

        // The user's answers: approved calls run (the policy may have changed since it asked: a
        // deny now still wins), declined ones are told to the model.
        // Calls answered with the user's input are made again with it (the policy is asked
        // again too: a deny now wins).
        if !answers.is_empty() || !inputs.is_empty() {
            let mut runs = Vec::new();
            let mut results = Vec::new();
            for a in answers {
                let decision = self.decide.decide(&scope, &a.call).await;
                if decision == Decision::Deny {
                    results.push(blocked(&a.call, out).await);
                } else if a.approved {
                    runs.push((a.call, None));
                } else {
                    emit(out, denied(&a.call)).await;
                    let text = denied_text(&a.call.name, a.reason.as_deref());
                    results.push(tool_message(&a.call, &ToolResult::error(text)));
                }
            }
            for r in inputs {
                if self.decide.decide(&scope, &r.call).await == Decision::Deny {
                    results.push(blocked(&r.call, out).await);
                } else {
                    runs.push((r.call, Some(Again::Input(r.input))));
                }
            }
            let ran = self.run_calls(&calls, runs).await;
            results.extend(ran.messages);
            if ran.waiting {
                return finish(out, Finish::AwaitingInput, total).await;
            }
            request.messages.extend(order(results, &request.messages));
        }

        for _ in 0..self.max_steps {
            emit(out, AgentEvent::StepStart).await;
            let step = self.model_step(&cx, &request, out).await;
            add_usage(&mut total, step.usage);
            emit(out, AgentEvent::StepEnd { usage: step.usage }).await;
            if let Some(error) = step.error {
                emit(out, AgentEvent::Error(error)).await;
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
                        emit(out, decided(call, true)).await;
                        runs.push((call.clone(), None));
                    }
                    Decision::Ask => asks.push(call.clone()),
                    Decision::Deny => {
                        emit(out, decided(call, false)).await;
                        results.push(blocked(call, out).await);
                    }
                }
            }
            let ran = self.run_calls(&calls, runs).await;
            results.extend(ran.messages);
            if !asks.is_empty() {
                for call in asks {
                    emit(out, AgentEvent::ApprovalRequested(call)).await;
                }
                return finish(out, Finish::AwaitingApproval, total).await;
            }
            if ran.waiting {
                return finish(out, Finish::AwaitingInput, total).await;
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
        out: &Outbox,
    ) -> Step {
        let mut step = Step::default();
        let mut events = self.host.complete(cx, request.clone());
        while let Some(ev) = events.next().await {
            match ev {
                Event::Delta { delta } => {
                    step.text.push_str(&delta);
                    emit(out, AgentEvent::Text(delta)).await;
                }
                Event::Reasoning { reasoning } => emit(out, AgentEvent::Reasoning(reasoning)).await,
                Event::ToolCallDelta {
                    id,
                    name,
                    arguments_delta: delta,
                    ..
                } => emit(out, AgentEvent::ToolInputDelta { id, name, delta }).await,
                Event::ToolCall { tool_call, .. } => {
                    let mut call = tool_call;
                    call.approval = None;
                    call.hints = Vec::new();
                    call.input_request = None;
                    call.task = None;
                    emit(out, AgentEvent::ToolInput(call.clone())).await;
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
        step
    }

    /// Runs `runs` concurrently (each with the user's input when it answers a request for
    /// it), reporting each result as it arrives; the tool messages come back in any order (see
    /// [`order`]). A call that asks for the user's input reports its request instead, and has
    /// no message: the turn then waits.
    async fn run_calls(&self, calls: &Calls<'_>, runs: Vec<(ToolCall, Option<Again>)>) -> Ran {
        let scope = calls.scope;
        let mut running: FuturesUnordered<_> = runs
            .into_iter()
            .map(|(call, again)| async move {
                let host = &*self.host;
                // The call's progress reports go out as they come (dropped when the outbox is
                // full: a later report says more).
                let sink = {
                    let (out, id) = (calls.out.clone(), call.id.clone());
                    ProgressSink(Arc::new(move |progress| {
                        out.try_push(AgentEvent::ToolProgress {
                            call_id: id.clone(),
                            progress,
                        });
                    }))
                };
                let scope = &scope.clone().with_extension(sink);
                let mut result =
                    match access::call_tool_with(host, scope, &call.name, &call.arguments, again)
                        .await
                    {
                        Ok(r) => r,
                        Err(e) => ToolResult::error(format!("tool {} was not run: {e}", call.name)),
                    };
                if let Some(task) = &result.task {
                    // Followed here, at the server's pace; a stopped run cancels it.
                    let mut guard = TaskGuard {
                        host: self.host.clone(),
                        scope: scope.clone(),
                        name: call.name.clone(),
                        task_id: Some(task.task_id.clone()),
                    };
                    let out = calls.out.clone();
                    let id = call.id.clone();
                    result = access::follow_task(
                        host,
                        scope,
                        &call.name,
                        &call.arguments,
                        result,
                        |t| {
                            out.try_push(AgentEvent::TaskState {
                                call_id: id.clone(),
                                task: t.clone(),
                            });
                        },
                    )
                    .await;
                    guard.disarm();
                }
                (call, result)
            })
            .collect();
        let mut ran = Ran::default();
        let principal = scope.principal();
        while let Some((call, result)) = running.next().await {
            let subject = Subject {
                principal: principal.id(),
                thread: calls.thread,
                call_id: &call.id,
                tool: &call.name,
                input: &call.arguments,
            };
            let mut result = self.tickets.issue(scope, &subject, result);
            if let Some(request) = result.input_required.take() {
                ran.waiting = true;
                emit(
                    calls.out,
                    AgentEvent::InputRequested {
                        call_id: call.id.clone(),
                        request: *request,
                    },
                )
                .await;
                continue;
            }
            ran.messages.push(report(calls.out, &call, result).await);
        }
        ran
    }
}

/// Where a step's calls run and report.
struct Calls<'a> {
    scope: &'a Scope,
    thread: &'a str,
    out: &'a Outbox,
}

/// What running a step's calls gave: the tool messages, and whether a call waits for input.
#[derive(Default)]
struct Ran {
    messages: Vec<Message>,
    waiting: bool,
}

#[derive(Default)]
struct Step {
    text: String,
    calls: Vec<ToolCall>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    error: Option<String>,
}

async fn emit(out: &Outbox, ev: AgentEvent) {
    out.push(ev).await
}

async fn finish(out: &Outbox, reason: Finish, usage: Option<Usage>) {
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

async fn blocked(call: &ToolCall, out: &Outbox) -> Message {
    report(out, call, ToolResult::error(blocked_text(&call.name))).await
}

/// Reports `call`'s result and returns the tool message that tells the model.
async fn report(out: &Outbox, call: &ToolCall, result: ToolResult) -> Message {
    let message = tool_message(call, &result);
    emit(
        out,
        AgentEvent::ToolOutput {
            call_id: call.id.clone(),
            result,
        },
    )
    .await;
    message
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
