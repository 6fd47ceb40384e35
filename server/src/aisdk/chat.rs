//! One request of `POST {prefix}/api/aisdk/chat`, from the body to the stream: [`plan`] checks
//! the body (thread id, model, effort, the approvals it answers) and prepares the turn
//! ([`crate::turn::prepare`]); [`run`] starts it on the path both protocols share
//! ([`crate::turn::run`]) with the AI SDK's loop driver (the server-side agent loop) and its
//! encoder ([`AiSdk`]: UI Message Stream chunks, and the thread they add up to).
//!
//! Decisions:
//! - **The last message says what the request is.** A user message starts a reply; the
//!   assistant's own message, with every approval it asked for answered, continues that reply
//!   (the same message id, so the client appends to it). Anything else is a 400.
//! - **An answered approval must be the one the server asked** (see [`super::approval_id`]) and,
//!   with server-side history, must not have an outcome in the stored thread already (a replay);
//!   otherwise 403 / 409 and nothing runs.
//! - **The model menu is the caller's** (the native route's): an unknown or unconfigured model
//!   is a 400 naming the menu or the reason; no model means the first configured one. A
//!   reasoning effort is sent (`reasoning_effort`) only to models that declare reasoning;
//!   others ignore it. The message metadata's `costUsd` is the model's list price applied to
//!   the message's usage (absent when the price is unknown).
//! - **The turn is a run** ([`crate::live::runs`]): its chunks go to the run's log, which every
//!   response about it tails. A client that leaves stops nothing; a stop request drops the loop
//!   (the upstream request and the running tool calls with it), and the reply so far is saved
//!   and marked stopped. Each run saves the thread itself (see [`crate::live::runs::saver`]), so
//!   the reply is kept even when every tab closed: the thread exists (with the user's message)
//!   before the first token, and is saved again at the end of a step that ran tools (more
//!   steps follow) and at the finish.

use lmchatkit_protocol::ui_stream::{
    AiSdkChatRequest, DONE_DATA, UiChunk, UiMessage, UiMessageBuilder, UiMessageMetadata, UiPart,
    UiRole, UiToolState, to_messages,
};
use lmchatkit_protocol::{
    ChatRequest, INPUT_REQUEST_DATA, InputAnswers, InputRequestData, Message, Params,
    REASONING_EFFORT_PARAM, Role, StoredConversation, ToolCall,
};
use serde_json::Value;

use super::approval_id::{ApprovalKey, Subject};
use super::translate::Translator;
use crate::access::input::{InputTickets, Subject as InputSubject};
use crate::agent::{Agent, AgentEvent, Answer, InputReply, Turn};
use crate::error::Failure;
use crate::host::RequestContext;
use crate::live::runs::saver::{Snapshot, Target};
use crate::live::runs::{Run, RunWriter};
use crate::models::Price;
use crate::store::validate_id;
use crate::turn::run::{Encoder, NewRun, Step};

/// What an AI SDK turn uses of the service; the route hands it over (`State::aisdk`).
pub(crate) struct Services<'a> {
    /// What every turn uses (the menu, personas, tools, history, runs).
    pub turn: crate::turn::Services<'a>,
    /// Signs the approval ids the client answers with, and verifies the answers.
    pub approval_key: &'a ApprovalKey,
    /// Checks the answers to requests for input.
    pub input_tickets: &'a InputTickets,
}

/// A checked request, ready to run.
pub(crate) struct Plan {
    turn: Turn,
    thread: String,
    model: String,
    price: Option<Price>,
    persona_id: String,
    /// The messages before the reply (the client's, without the continued assistant message),
    /// converted once: every save of the thread starts with them.
    base: Vec<Message>,
    /// The reply's id and, when continuing, the message so far.
    message_id: String,
    continued: Option<UiMessage>,
}

/// Checks `body` and prepares its turn.
pub(crate) async fn plan(
    services: &Services<'_>,
    cx: &RequestContext,
    body: AiSdkChatRequest,
) -> Result<Plan, Failure> {
    if body.messages.is_empty() {
        return Err(Failure::Invalid("messages is required".into()));
    }
    let thread = body.thread_id().to_owned();
    validate_id(&thread).map_err(|_| Failure::Invalid(format!("invalid thread id {thread:?}")))?;
    let model =
        crate::turn::menu::resolve(&services.turn.inputs, cx, body.model.as_deref()).await?;
    let mut params = Params::new();
    if let Some(effort) = body.reasoning_effort {
        params.insert(REASONING_EFFORT_PARAM.into(), Value::from(effort.as_str()));
    }

    let mut base = body.messages;
    let Some(last) = base.last() else {
        return Err(Failure::Invalid("messages is required".into()));
    };
    let (message_id, continued, (answers, inputs)) = match last.role {
        UiRole::User => (new_message_id(), None, Default::default()),
        UiRole::Assistant => {
            let answers = answers(services, cx, &thread, last).await?;
            let continued = base.pop();
            let id = continued.as_ref().map(|m| m.id.clone()).unwrap_or_default();
            (id, continued, answers)
        }
        UiRole::System => {
            return Err(Failure::Invalid(
                "the last message must be the user's, or the assistant's answering approvals or \
                 requests for input"
                    .into(),
            ));
        }
    };

    let base = to_messages(&base);
    let mut all = base.clone();
    all.extend(to_messages(continued.as_slice()));
    let persona_id = body.persona_id.unwrap_or_default();
    let native = ChatRequest::new(model.id.clone(), all)
        .with_persona(persona_id.clone())
        .with_params(Some(params));
    let request = crate::turn::prepare(&services.turn.inputs, cx, native, &model).await;
    Ok(Plan {
        turn: Turn {
            cx: cx.clone(),
            request,
            answers,
            inputs,
            thread: thread.clone(),
        },
        thread,
        price: services.turn.inputs.catalog.price(&model.id),
        model: model.id,
        persona_id,
        base,
        message_id,
        continued,
    })
}

/// The user's answers in the continued message, each checked against the approval or the
/// request for input it answers.
async fn answers(
    services: &Services<'_>,
    cx: &RequestContext,
    thread: &str,
    message: &UiMessage,
) -> Result<(Vec<Answer>, Vec<InputReply>), Failure> {
    let principal = cx.principal();
    let stored = match services.turn.history {
        Some(h) => h.get(&principal, thread).await?,
        None => None,
    };
    let mut out = Vec::new();
    for part in &message.parts {
        let UiPart::Tool(t) = part else { continue };
        match t.state {
            UiToolState::ApprovalRequested => {
                return Err(Failure::Invalid(format!(
                    "the call {:?} still waits for an answer; answer every approval request",
                    t.tool_call_id
                )));
            }
            UiToolState::ApprovalResponded => {}
            _ => continue,
        }
        let (Some(approval), Some(approved)) =
            (&t.approval, t.approval.as_ref().and_then(|a| a.approved))
        else {
            return Err(Failure::Invalid(format!(
                "the call {:?} is answered without a decision",
                t.tool_call_id
            )));
        };
        let input = t.input.clone().unwrap_or(Value::Null);
        let subject = Subject {
            principal: principal.id(),
            thread,
            call_id: &t.tool_call_id,
            tool: &t.tool_name,
            input: &input,
        };
        if !services.approval_key.verify(&approval.id, &subject) {
            return Err(Failure::Denied(format!(
                "the approval {:?} does not match the call it answers (its tool, input, thread or \
                 user changed); nothing was run",
                approval.id
            )));
        }
        if stored
            .as_ref()
            .is_some_and(|c| has_outcome(c, &t.tool_call_id))
        {
            return Err(Failure::Conflict(format!(
                "the call {:?} was already answered; nothing was run",
                t.tool_call_id
            )));
        }
        out.push(Answer {
            call: ToolCall::new(t.tool_call_id.clone(), t.tool_name.clone(), input),
            approved,
            reason: approval.reason.clone(),
        });
    }
    let inputs = input_replies(services, cx, thread, message, stored.as_ref())?;
    if out.is_empty() && inputs.is_empty() {
        return Err(Failure::Invalid(
            "the last message is the assistant's but answers no approval or request for input"
                .into(),
        ));
    }
    Ok((out, inputs))
}

/// The answered `data-input-request` parts of the continued message, each checked against its
/// ticket and the call it answers (the tool part of the same message: its name and input).
/// A request still unanswered is a 400, as an approval still waiting is.
fn input_replies(
    services: &Services<'_>,
    cx: &RequestContext,
    thread: &str,
    message: &UiMessage,
    stored: Option<&StoredConversation>,
) -> Result<Vec<InputReply>, Failure> {
    let principal = cx.principal();
    let scope = crate::access::Scope::user(cx.clone());
    let mut out = Vec::new();
    for part in &message.parts {
        let UiPart::Data(d) = part else { continue };
        if d.name != INPUT_REQUEST_DATA {
            continue;
        }
        let data: InputRequestData = serde_json::from_value(d.data.clone()).map_err(|e| {
            Failure::Invalid(format!(
                "a data-{INPUT_REQUEST_DATA} part is malformed: {e}"
            ))
        })?;
        let call_id = &data.tool_call_id;
        let Some(call) = message.parts.iter().find_map(|p| match p {
            UiPart::Tool(t) if &t.tool_call_id == call_id => Some(t),
            _ => None,
        }) else {
            return Err(Failure::Invalid(format!(
                "the request for input answers the call {call_id:?}, which the message does not hold"
            )));
        };
        if call.output.is_some() || call.error_text.is_some() {
            // Answered in an earlier request: the call has its result.
            continue;
        }
        let Some(answers) = data.answers else {
            return Err(Failure::Invalid(format!(
                "the call {call_id:?} still waits for the user's input; answer its request"
            )));
        };
        let input = call.input.clone().unwrap_or(Value::Null);
        let subject = InputSubject {
            principal: principal.id(),
            thread,
            call_id,
            tool: &call.tool_name,
            input: &input,
        };
        let opened = services.input_tickets.open(
            &scope,
            &subject,
            &InputAnswers {
                ticket: data.ticket,
                answers,
            },
        )?;
        if stored.is_some_and(|c| has_outcome(c, call_id)) {
            return Err(Failure::Conflict(format!(
                "the call {call_id:?} was already answered; nothing was run"
            )));
        }
        out.push(InputReply {
            call: ToolCall::new(call_id.clone(), call.tool_name.clone(), input),
            input: opened,
        });
    }
    Ok(out)
}

/// True when the stored thread holds a result for `call_id`.
fn has_outcome(c: &StoredConversation, call_id: &str) -> bool {
    c.messages
        .iter()
        .any(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(call_id))
}

fn new_message_id() -> String {
    format!("msg-{:016x}", rand::random::<u64>())
}

/// Starts `plan` as a run (a 409 while another one writes the thread) that holds `hold` until
/// it ends.
pub(crate) async fn run(
    services: &Services<'_>,
    plan: Plan,
    agent: Agent,
    hold: impl Send + 'static,
) -> Result<Run, Failure> {
    let Plan {
        turn,
        thread,
        model,
        price,
        persona_id,
        base,
        message_id,
        continued,
    } = plan;
    let principal = turn.cx.principal();
    let resume_base = continued
        .as_ref()
        .and_then(|m| serde_json::to_value(m).ok());
    let lost = [
        serde_json::to_string(&UiChunk::error(crate::turn::run::LOST)).unwrap_or_default(),
        DONE_DATA.to_owned(),
    ];
    let save = services.turn.history.cloned().map(|store| Target {
        store,
        events: services.turn.events.cloned(),
        principal: principal.clone(),
        thread: thread.clone(),
        model: model.clone(),
        persona_id,
        params: Params::new(),
    });
    let earlier = continued
        .as_ref()
        .and_then(|m| m.metadata.clone())
        .and_then(|m| serde_json::from_value::<UiMessageMetadata>(m).ok())
        .map(|m| m.usage);
    let key = services.approval_key.clone();
    let sign = {
        let (principal, thread) = (principal.id().to_owned(), thread.clone());
        Box::new(move |c: &ToolCall| {
            key.sign(&Subject {
                principal: &principal,
                thread: &thread,
                call_id: &c.id,
                tool: &c.name,
                input: &c.arguments,
            })
        })
    };
    let encoder = AiSdk {
        translator: Translator::new(model, price, earlier, sign),
        reply: UiMessageBuilder::new(&message_id, continued),
        message_id: message_id.clone(),
        base,
        saved: save.is_some(),
        step_ran_tools: false,
        chunks: Vec::new(),
    };
    let new = NewRun {
        owner: &principal,
        conversation: Some(&thread),
        message_id: &message_id,
        resume_base,
        lost: &lost,
        save,
    };
    crate::turn::run::start(services.turn.runs, new, agent.events(turn), encoder, hold).await
}

/// The AI SDK encoder: each agent event as UI Message Stream chunks, applied to the reply.
struct AiSdk {
    translator: Translator,
    reply: UiMessageBuilder,
    message_id: String,
    /// The messages before the reply, converted once: every save of the thread starts with
    /// them.
    base: Vec<Message>,
    /// Whether the thread is saved (server-side history is on).
    saved: bool,
    /// The step under way ran a tool (more steps follow: its end is saved).
    step_ran_tools: bool,
    /// The chunks of the event at hand (kept to reuse the buffer).
    chunks: Vec<UiChunk>,
}

impl AiSdk {
    fn emit(&mut self, log: &RunWriter) {
        for c in self.chunks.drain(..) {
            // The reply is built only to be saved: without history nothing reads it.
            if self.saved {
                self.reply.apply(&c);
            }
            log.append_json(&c);
        }
    }
}

impl Encoder for AiSdk {
    type Event = AgentEvent;

    fn start(&mut self, run_id: &str, log: &RunWriter) {
        self.translator.set_run(run_id);
        self.chunks.push(self.translator.start(&self.message_id));
        self.emit(log);
    }

    fn push(&mut self, ev: AgentEvent, log: &RunWriter) -> Step {
        match &ev {
            AgentEvent::StepStart => self.step_ran_tools = false,
            AgentEvent::ToolInput(_) => self.step_ran_tools = true,
            _ => {}
        }
        let settle = match &ev {
            AgentEvent::StepEnd { .. } => self.step_ran_tools,
            AgentEvent::Finish { .. } => true,
            _ => false,
        };
        self.translator.push(ev, &mut self.chunks);
        let output = self.chunks.iter().any(is_model_output);
        self.emit(log);
        Step {
            output,
            settle,
            end: false,
        }
    }

    fn stop(&mut self, log: &RunWriter) {
        self.translator.stop(&mut self.chunks);
        self.emit(log);
    }

    fn snapshot(&self) -> Option<Snapshot> {
        // Each save converts the reply alone.
        self.saved.then(|| {
            let mut all = self.base.clone();
            all.extend(to_messages(std::slice::from_ref(self.reply.message())));
            Snapshot::Whole(all)
        })
    }

    fn end(&mut self, _revision: Option<u64>, log: &RunWriter) {
        log.append(DONE_DATA);
    }
}

/// Whether `chunk` is the model's (text, reasoning, a tool call, an error, the end), not the
/// preamble the route writes before the upstream answers.
fn is_model_output(chunk: &UiChunk) -> bool {
    !matches!(
        chunk,
        UiChunk::Start { .. }
            | UiChunk::StartStep {}
            | UiChunk::MessageMetadata { .. }
            | UiChunk::Data(_)
    )
}
