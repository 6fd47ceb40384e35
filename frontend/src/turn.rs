//! One chat turn and the tool loop (reference §3.4, §9.7): post the messages, stream the reply
//! into the last bubble (`<think>` split out, Markdown rendered incrementally), record tool calls
//! (allowed by the policy or the user, blocked by the policy, or pending: see
//! [`crate::approvals`]), and once nothing is pending run the approved calls one after the
//! other, append their results (the deny or blocked message) and post the next turn. Stop aborts the
//! fetch and keeps the partial reply.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::{
    Approval, ChatRequest, Content, Event, Message, ToolCall, ToolCallRequest, ToolCallSource,
};

use crate::api::{Api, ApiError};
use crate::bench;
use crate::history::persist;
use crate::markdown::Incremental;
use crate::state::{Chat, Store, UiMessage, deny_message, now_ms};
use crate::think::{Piece, ThinkSplitter};

thread_local! {
    static ABORT: RefCell<Option<web_sys::AbortController>> = const { RefCell::new(None) };
    /// The streaming turn's run on the server, and the API to stop it with.
    static RUN: RefCell<Option<(Api, String)>> = const { RefCell::new(None) };
}

/// Stops the streaming turn: the server stops its run (the model call with it; closing the
/// connection alone would not), and this tab stops reading at once. The partial reply is kept.
pub fn stop() {
    if let Some((api, id)) = RUN.with(|r| r.borrow_mut().take()) {
        spawn_local(async move {
            if let Err(e) = api.stop_run(&id).await {
                leptos::logging::warn!("stopping run {id} failed: {e}");
            }
        });
    }
    ABORT.with(|a| {
        if let Some(c) = a.borrow_mut().take() {
            c.abort();
        }
    });
}

/// Sends a user message and starts the turn.
pub fn send(store: Store, chat: Chat, content: Content) {
    let mut m = Message::user(content);
    m.created_at = Some(now_ms());
    send_message(store, chat, m);
}

/// Appends a user message (the user's own, or an app's the user let through) and starts a turn.
pub fn send_message(store: Store, chat: Chat, m: Message) {
    if chat
        .messages
        .with_untracked(|ms| !ms.iter().any(|m| m.is_substantial()))
    {
        let title = m.content.title();
        if !title.is_empty() {
            chat.title.set(title);
        }
    }
    chat.push(UiMessage::new(m));
    persist(store, &chat);
    spawn_local(run(store, chat));
}

/// Appends an info card (never sent to the model).
pub fn info_card(store: Store, chat: &Chat, info: serde_json::Value) {
    let mut m = Message::assistant("");
    m.info = Some(info);
    m.created_at = Some(now_ms());
    chat.push(UiMessage::new(m));
    persist(store, chat);
}

/// Retries after a failed turn: drops the failed bubble and posts again.
pub fn retry(store: Store, chat: Chat, key: String) {
    chat.messages.update(|ms| ms.retain(|m| m.key != key));
    spawn_local(run(store, chat));
}

/// Regenerates the last reply: drops everything after the last user message and posts again.
pub fn regenerate(store: Store, chat: Chat) {
    truncate_after_last_user(&chat);
    spawn_local(run(store, chat));
}

/// Replaces a user message's text, drops everything after it and posts again.
pub fn edit_and_resend(store: Store, chat: Chat, key: String, text: String) {
    chat.messages.update(|ms| {
        if let Some(i) = ms.iter().position(|m| m.key == key) {
            ms.truncate(i + 1);
            // Edited, it is the user's own message, whoever wrote it first.
            ms[i].data.update(|d| {
                d.content = Content::Text(text);
                d.from_app = None;
            });
        }
    });
    spawn_local(run(store, chat));
}

fn truncate_after_last_user(chat: &Chat) {
    chat.messages.update(|ms| {
        if let Some(i) = ms.iter().rposition(|m| {
            m.data
                .with_untracked(|d| d.role == lmchatkit_protocol::Role::User)
        }) {
            ms.truncate(i + 1);
        }
    });
}

fn auto_allowed(store: Store, chat: &Chat, name: &str) -> bool {
    store.auto_allow.with_untracked(|s| s.contains(name))
        || store.always.with_untracked(|s| s.contains(name))
        || chat.allowed.with_untracked(|s| s.contains(name))
}

/// Runs turns until the model stops asking for tools, a call waits for approval, or the user stops.
pub async fn run(store: Store, chat: Chat) {
    store.busy.set(true);
    loop {
        let outcome = stream_one(store, &chat).await;
        persist(store, &chat);
        let Some(ui) = outcome else { break };
        let calls = ui.data.with_untracked(|m| m.tool_calls.clone());
        if calls.is_empty() {
            break;
        }
        if calls.iter().any(|c| c.approval == Some(Approval::Pending)) {
            break; // resumed by `decide`
        }
        execute(store, &chat, &ui).await;
        persist(store, &chat);
    }
    store.busy.set(false);
    if !chat.has_pending() {
        store.focus();
    }
}

/// Streams one reply into a new bubble; `Some(bubble)` when it finished normally.
async fn stream_one(store: Store, chat: &Chat) -> Option<UiMessage> {
    let mut m = Message::assistant("");
    m.created_at = Some(now_ms());
    let ui = UiMessage::new(m);
    ui.streaming.set(true);
    chat.push(ui.clone());
    let req = ChatRequest::new(chat.model.get_untracked(), chat.wire_messages())
        .with_persona(chat.persona_id.get_untracked())
        .with_params(Some(chat.params.get_untracked()))
        .with_model_context(
            chat.model_context
                .with_untracked(|c| c.as_ref().map(|c| c.value.clone())),
        )
        .with_model_context_app(
            chat.model_context
                .with_untracked(|c| c.as_ref().map(|c| c.app.clone())),
        );
    let ctrl = web_sys::AbortController::new().ok();
    let signal = ctrl.as_ref().map(|c| c.signal());
    ABORT.with(|a| *a.borrow_mut() = ctrl);
    let mut splitter = ThinkSplitter::new();
    // The rendered HTML is updated at most once per animation frame, however many deltas came.
    let inc = Rc::new(RefCell::new(Incremental::new()));
    let scheduled = Rc::new(Cell::new(false));
    let mut failed = None;
    let apply = |pieces: Vec<Piece>| {
        for p in pieces {
            match p {
                Piece::Text(t) => {
                    inc.borrow_mut().push(&t);
                    ui.data.update(|d| {
                        if let Content::Text(s) = &mut d.content {
                            s.push_str(&t);
                        }
                    });
                    if !scheduled.replace(true) {
                        let (inc, scheduled, html) =
                            (inc.clone(), scheduled.clone(), ui.html.clone());
                        request_animation_frame(move || {
                            if scheduled.replace(false) {
                                let t0 = bench::now();
                                html.set(inc.borrow().html());
                                bench::record("frame", bench::now() - t0);
                            }
                        });
                    }
                }
                Piece::Think(t) => ui
                    .data
                    .update(|d| d.thinking.get_or_insert_default().push_str(&t)),
            }
        }
    };
    let res = store
        .api()
        .chat_stream(
            &req,
            signal.as_ref(),
            |id| RUN.with(|r| *r.borrow_mut() = Some((store.api(), id))),
            |frame| {
                let t0 = bench::now();
                let Ok(ev) = serde_json::from_str::<Event>(&frame.data) else {
                    return;
                };
                match ev {
                    Event::Delta { delta } => apply(splitter.push(&delta)),
                    Event::Reasoning { reasoning } => ui
                        .data
                        .update(|d| d.thinking.get_or_insert_default().push_str(&reasoning)),
                    Event::ToolCall {
                        tool_call,
                        decision,
                    } => {
                        let ToolCall {
                            id,
                            name,
                            arguments,
                            ..
                        } = tool_call;
                        let approval =
                            Approval::initial(decision, auto_allowed(store, chat, &name));
                        let mut call = ToolCall::new(id, name, arguments);
                        call.approval = Some(approval);
                        ui.data.update(|d| d.tool_calls.push(call));
                    }
                    // The cost is absent when the model's price is unknown: it stays unknown.
                    Event::Done {
                        usage, cost_usd, ..
                    } => ui.data.update(|d| {
                        d.usage = usage;
                        d.cost_usd = cost_usd;
                    }),
                    Event::Error { error } => failed = Some(error),
                    Event::Saved { .. } => {}
                }
                bench::record("delta", bench::now() - t0);
            },
        )
        .await;
    apply(splitter.finish());
    scheduled.set(false);
    ui.html.set(inc.borrow().html());
    ABORT.with(|a| a.borrow_mut().take());
    RUN.with(|r| r.borrow_mut().take());
    ui.streaming.set(false);
    match res {
        Err(ApiError::Aborted) => None,
        Err(e) => {
            ui.error.set(Some(e.to_string()));
            None
        }
        Ok(()) if failed.is_some() => {
            ui.error.set(failed);
            // Calls that came before the failure still count.
            ui.data
                .with_untracked(|d| !d.tool_calls.is_empty())
                .then_some(ui)
        }
        Ok(()) => Some(ui),
    }
}

/// The user decided on a pending call; once none is pending, the turn resumes.
pub fn decide(store: Store, chat: Chat, ui: UiMessage, call_id: String, approval: Approval) {
    ui.data.update(|d| {
        if let Some(c) = d.tool_calls.iter_mut().find(|c| c.id == call_id) {
            c.approval = Some(approval);
        }
    });
    persist(store, &chat);
    let pending = ui.data.with_untracked(|d| {
        d.tool_calls
            .iter()
            .any(|c| c.approval == Some(Approval::Pending))
    });
    if !pending && !store.busy.get_untracked() {
        spawn_local(async move {
            store.busy.set(true);
            execute(store, &chat, &ui).await;
            persist(store, &chat);
            run(store, chat).await;
        });
    }
}

/// Runs the approved calls of `ui` in order and appends one tool message per call (the deny
/// message for denied ones). HTTP errors from `/api/tools/call` are tool errors.
async fn execute(store: Store, chat: &Chat, ui: &UiMessage) {
    let calls = ui.data.with_untracked(|m| m.tool_calls.clone());
    for call in calls {
        // Answered calls are those of this message only (ids repeat across replies).
        let key = (ui.key.clone(), call.id.clone());
        if chat.results.with_untracked(|r| r.contains_key(&key)) {
            continue; // already answered
        }
        let (text, is_error, extra) = match call.approval {
            Some(Approval::Denied) => (deny_message(&call.name), false, None),
            // An error without a result never ran: the operator's policy blocked it.
            Some(Approval::Error) => (lmchatkit_protocol::blocked_text(&call.name), true, None),
            Some(Approval::Approved) => {
                chat.running.update(|r| {
                    r.insert(key.clone());
                });
                let req = ToolCallRequest {
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                    source: ToolCallSource::Model,
                    via: None,
                };
                let res = store.api().call_tool(&req).await;
                chat.running.update(|r| {
                    r.remove(&key);
                });
                match res {
                    Ok(r) => (r.content.clone(), r.is_error, Some(r)),
                    Err(e) => (format!("[error] {e}"), true, None),
                }
            }
            _ => continue,
        };
        if is_error {
            ui.data.update(|d| {
                if let Some(c) = d.tool_calls.iter_mut().find(|c| c.id == call.id) {
                    c.approval = Some(Approval::Error);
                }
            });
        }
        let mut m = Message::tool(call.id.clone(), call.name.clone(), text.clone());
        m.is_error = is_error;
        m.created_at = Some(now_ms());
        if let Some(r) = extra {
            m.structured_content = r.structured_content;
            m.ui = r.ui;
        }
        chat.results.update(|r| {
            r.insert(key, (text, is_error));
        });
        chat.push(UiMessage::new(m));
    }
}
