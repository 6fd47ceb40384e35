//! One request of `POST {prefix}/api/aisdk/chat`, from the body to the stream: [`plan`] checks
//! the body (thread id, model, effort, the approvals it answers) and prepares the turn; [`run`]
//! runs it in a task that outlives nothing but the reply and its last save.
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
//! - **The turn is a run** ([`crate::runs`]): its chunks go to the run's log, which every
//!   response about it tails. A client that leaves stops nothing; a stop request drops the loop
//!   (the upstream request and the running tool calls with it), and the reply so far is saved
//!   and marked stopped. Each run saves the thread itself (see [`crate::runs::saver`]), so the reply
//!   is kept even when every tab closed.

use lmchatkit_protocol::ui_stream::{
    AiSdkChatRequest, DONE_DATA, UiChunk, UiMessage, UiMessageBuilder, UiMessageMetadata, UiPart,
    UiRole, UiToolState, to_messages,
};
use lmchatkit_protocol::{
    ChatRequest, Message, Params, REASONING_EFFORT_PARAM, Role, StoredConversation, ToolCall,
};
use serde_json::Value;
use tokio::sync::mpsc;

use std::sync::Arc;

use super::approval_id::{ApprovalKey, Subject};
use super::translate::Translator;
use crate::agent::{Agent, AgentEvent, Answer, Turn};
use crate::error::Failure;
use crate::events::EventBroadcaster;
use crate::history::{HistoryStore, validate_id};
use crate::host::RequestContext;
use crate::models::Price;
use crate::runs::saver::{Saver, Snapshot, Target};
use crate::runs::{Run, RunStatus, RunWriter, Runs};

/// What an AI SDK turn uses of the service; the route hands it over (`State::aisdk`).
pub(crate) struct Services<'a> {
    /// What preparing the turn reads (the menu, personas, tools, the system prompt).
    pub turn: crate::turn::Inputs<'a>,
    /// Server-side history, when on: the thread is saved there as the run goes.
    pub history: Option<&'a Arc<dyn HistoryStore>>,
    /// Where the thread's changes are announced to the principal's other tabs.
    pub events: Option<&'a EventBroadcaster>,
    /// The registry the run starts in.
    pub runs: &'a Runs,
    /// Signs the approval ids the client answers with, and verifies the answers.
    pub approval_key: &'a ApprovalKey,
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
    let model = crate::turn::menu::resolve(&services.turn, cx, body.model.as_deref()).await?;
    let mut params = Params::new();
    if let Some(effort) = body.reasoning_effort {
        params.insert(REASONING_EFFORT_PARAM.into(), Value::from(effort.as_str()));
    }

    let mut base = body.messages;
    let Some(last) = base.last() else {
        return Err(Failure::Invalid("messages is required".into()));
    };
    let (message_id, continued, answers) = match last.role {
        UiRole::User => (new_message_id(), None, Vec::new()),
        UiRole::Assistant => {
            let answers = answers(services, cx, &thread, last).await?;
            let continued = base.pop();
            let id = continued.as_ref().map(|m| m.id.clone()).unwrap_or_default();
            (id, continued, answers)
        }
        UiRole::System => {
            return Err(Failure::Invalid(
                "the last message must be the user's, or the assistant's answering approvals"
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
    let request = crate::turn::prepare(&services.turn, cx, native, &model).await;
    Ok(Plan {
        turn: Turn {
            cx: cx.clone(),
            request,
            answers,
        },
        thread,
        price: services.turn.catalog.price(&model.id),
        model: model.id,
        persona_id,
        base,
        message_id,
        continued,
    })
}

/// The user's answers in the continued message, each checked against the approval it answers.
async fn answers(
    services: &Services<'_>,
    cx: &RequestContext,
    thread: &str,
    message: &UiMessage,
) -> Result<Vec<Answer>, Failure> {
    let principal = cx.principal();
    let stored = match services.history {
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
    if out.is_empty() {
        return Err(Failure::Invalid(
            "the last message is the assistant's but answers no approval".into(),
        ));
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

/// Starts `plan` as a run (a 409 while another one writes the thread) and runs it in a task
/// that holds `hold` until the run ends. The run goes on when its client leaves; only a stop
/// ends it early, and the reply so far is saved either way.
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
    let writer = services
        .runs
        .start(&principal, Some(&thread), &message_id, resume_base, &lost)
        .await?;
    let run = writer.run();
    let checkpoint_every = services.runs.checkpoint_every();
    let saver = services.history.cloned().map(|store| {
        Saver::start(Target {
            store,
            events: services.events.cloned(),
            principal: principal.clone(),
            thread: thread.clone(),
            model: model.clone(),
            persona_id,
            params: Params::new(),
        })
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
    let mut translator = Translator::new(model, price, earlier, sign).with_run(writer.id());
    let mut acc = UiMessageBuilder::new(&message_id, continued);
    let task = async move {
        let _hold = hold;
        // Each save converts the reply alone.
        let save = |acc: &UiMessageBuilder| {
            if let Some(s) = &saver {
                let mut all = base.clone();
                all.extend(to_messages(std::slice::from_ref(acc.message())));
                s.save(Snapshot::Whole(all));
            }
        };
        // The thread exists (with the user's message) before the first token.
        save(&acc);
        let (events, mut rx_events) = mpsc::channel(64);
        let work = async {
            emit(&writer, &mut acc, &translator.start(&message_id));
            let pump = async {
                let mut chunks = Vec::new();
                // Saved at the end of a step that ran tools (more steps follow) and at the end
                // (and now and then with a shared engine, see `Runs::checkpoint_every`).
                let mut step_ran_tools = false;
                let mut checkpoint = crate::turn::run::Checkpoint::new(checkpoint_every);
                // `start` went out at once; the first token must not wait for the burst
                // behind it (see `RunWriter::flush_now`).
                let mut flushed = false;
                while let Some(ev) = rx_events.recv().await {
                    match &ev {
                        AgentEvent::StepStart => step_ran_tools = false,
                        AgentEvent::ToolInput(_) => step_ran_tools = true,
                        _ => {}
                    }
                    let settle = match &ev {
                        AgentEvent::StepEnd { .. } => step_ran_tools,
                        AgentEvent::Finish { .. } => true,
                        _ => false,
                    };
                    translator.push(ev, &mut chunks);
                    let first_token = !flushed && chunks.iter().any(is_model_output);
                    for c in chunks.drain(..) {
                        emit(&writer, &mut acc, &c);
                    }
                    if first_token {
                        writer.flush_now();
                        flushed = true;
                    }
                    if settle || checkpoint.due() {
                        save(&acc);
                    }
                }
            };
            futures_util::future::join(agent.run(turn, events), pump).await;
        };
        // A stop drops the loop: the upstream request and the running tool calls with it.
        let status = tokio::select! {
            _ = work => RunStatus::Finished,
            _ = writer.stopped() => RunStatus::Stopped,
        };
        if status == RunStatus::Stopped {
            tracing::debug!(thread = %thread, run = %writer.id(), "the run was stopped");
            let mut chunks = Vec::new();
            translator.stop(&mut chunks);
            for c in &chunks {
                emit(&writer, &mut acc, c);
            }
        }
        // Done or stopped: the reply as far as it got. A reload right after the reply must
        // find it: the log ends after the write.
        save(&acc);
        if let Some(s) = &saver {
            s.flush().await;
        }
        writer.append(DONE_DATA);
        writer.finish(status).await;
    };
    // Its first token goes out with the response's head (see `runs::launch`).
    crate::runs::launch(&run, task).await;
    Ok(run)
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

/// Applies `chunk` to the reply and appends it to the run's log.
fn emit(writer: &RunWriter, acc: &mut UiMessageBuilder, chunk: &UiChunk) {
    acc.apply(chunk);
    writer.append_json(chunk);
}
