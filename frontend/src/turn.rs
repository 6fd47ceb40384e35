//! One chat turn and the tool loop (reference §3.4, §9.7): post the messages, stream the reply
//! into the last bubble (`<think>` split out, Markdown rendered incrementally), record tool calls
//! (allowed by the policy or the user, blocked by the policy, or pending: see
//! [`crate::approvals`]), and once nothing is pending run the approved calls one after the
//! other, append their results (the deny or blocked message) and post the next turn. The reply's
//! events are written by [`crate::reply`]; Stop stops the turn's run on the server and keeps the
//! partial reply, marked stopped ([`crate::follow`], which also re-attaches a reloaded or second
//! tab to a reply still running).
//!
//! **The turn's code is a wasm chunk of its own** (`turn`: the turn loop, running approved
//! calls, the reply writer, the follow loop, Stop, `/compact` and the upload of attachments),
//! which a new chat's first paint does not load:
//! - it is fetched at the composer's first keystroke ([`prefetch`]), so by the time the user
//!   sends it has usually arrived; a send before then (a suggestion, an app's message, a decision
//!   on a restored approval, a reloaded conversation whose reply still runs) waits for it;
//! - **when it cannot be loaded**, nothing the user wrote is lost: a send keeps the user's message
//!   and shows the failed reply's error with Retry (as a failed turn does), a decision is put
//!   back to pending with a notice, `/compact` says it failed (the transcript is unchanged), an
//!   attached file is not uploaded and the notice bar says why, a reply still running is not
//!   followed (the conversation shows what was saved). Every later attempt fetches the chunk
//!   again.
//! - Without `--cfg lmchatkit_split` the code is linked in and the same path runs.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::{
    Approval, ChatRequest, Content, Event, HistoryMode, InputAnswer, InputAnswers, InputRequired,
    Message, TaskPoll, ToolCall, ToolCallRequest, ToolCallSource, ToolResult, ToolTask,
};
use serde_json::json;

use crate::api::ApiError;
use crate::commands::compact_request;
use crate::follow::{self, Kind};
use crate::history::{self, persist};
use crate::lazy::Loader;
use crate::reply::ReplyWriter;
use crate::results::CallKey;
use crate::state::{Chat, RefRead, Store, UiMessage, deny_message, now_ms};

/// Stops the streaming reply (this tab's turn, or a run it follows): see [`follow::stop`]. The
/// partial reply is kept, marked stopped. Only the chunk's code starts replies, so without it
/// there is none to stop.
pub fn stop() {
    if let Some(code) = CODE.with(Loader::here) {
        (code.stop)();
    }
}

/// Uploads `form`'s files (`POST /api/upload`) and adds them as attachments once the turn's
/// code is here; an upload that fails, or that the code could not be loaded for, is reported in
/// the notice bar.
pub fn upload(store: Store, form: web_sys::FormData) {
    spawn_local(async move {
        match code().await {
            Some(code) => (code.upload)(store, form).await,
            None => store
                .notice
                .set(Some(format!("Upload failed ({NOT_LOADED})"))),
        }
    });
}

/// The draft's `@` references are now `current`: the reads of those gone are forgotten and the
/// new ones are read (`POST /api/resources/read`) at once, so each chip can say whether its
/// resource can be read before the message goes; the results go to `store.ref_reads`. The turn
/// still reads them again when it sends (a resource may change). The work is the turn chunk's.
pub fn sync_refs(store: Store, current: Vec<String>) {
    spawn_local(async move {
        match code().await {
            Some(code) => (code.sync_refs)(store, current).await,
            None => store.notice.set(Some(format!(
                "The @ references could not be checked ({NOT_LOADED})"
            ))),
        }
    });
}

/// Records what reading `uri` gave, unless its reference was removed meanwhile.
fn record_ref(store: Store, uri: String, read: RefRead) {
    store.ref_reads.update(|m| {
        if let Some(slot) = m.get_mut(&uri) {
            *slot = read;
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
/// The stored conversation keeps the earlier reply as another version.
pub fn regenerate(store: Store, chat: Chat) {
    truncate_after_last_user(&chat);
    spawn_local(run_then_versions(store, chat));
}

/// Runs a turn that makes a new version, then takes the stored versions.
async fn run_then_versions(store: Store, chat: Chat) {
    run(store, chat.clone()).await;
    history::save(store, chat.clone()).await;
    history::refresh_versions(store, chat).await;
}

/// Replaces a user message's text, drops everything after it and posts again. The stored
/// conversation keeps the earlier text, with what followed it, as another version.
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
    spawn_local(run_then_versions(store, chat));
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

/// A future the turn's chunk hands back.
type Turn = Pin<Box<dyn Future<Output = ()>>>;

/// The entries of the turn's chunk.
#[derive(Clone, Copy)]
pub(crate) struct TurnCode {
    run: fn(Store, Chat) -> Turn,
    resume: fn(Store, Chat, UiMessage) -> Turn,
    attach: fn(Store, Chat, String),
    compact: fn(Store, Chat) -> Turn,
    stop: fn(),
    upload: fn(Store, web_sys::FormData) -> Turn,
    sync_refs: fn(Store, Vec<String>) -> Turn,
}

/// Pointers to the turn's code (in the chunk when split).
fn linked() -> TurnCode {
    TurnCode {
        run: |store, chat| Box::pin(run_now(store, chat)),
        resume: |store, chat, ui| Box::pin(resume_now(store, chat, ui)),
        attach: follow::attach_now,
        compact: |store, chat| Box::pin(compact_now(store, chat)),
        stop: follow::stop,
        upload: |store, form| Box::pin(upload_now(store, form)),
        sync_refs: |store, current| Box::pin(sync_refs_now(store, current)),
    }
}

crate::lazy::code_point! {
    /// The chunk's one entry.
    turn: fn load_turn() -> TurnCode {
        linked()
    }
}

thread_local! {
    static CODE: Loader<TurnCode> = const { Loader::new() };
}

/// The turn's code, loaded unless it is here; `None` when it could not be loaded.
async fn code() -> Option<TurnCode> {
    Loader::ready(&CODE, load_turn).await.value()
}

/// Starts loading the turn's code (the composer's first keystroke) unless it was asked for.
pub fn prefetch() {
    if CODE.with(|l| l.not_asked()) {
        spawn_local(async {
            code().await;
        });
    }
}

/// What a reply says when the turn's code could not be loaded.
pub const NOT_LOADED: &str =
    "The chat's code could not be loaded (see the browser console). Retry to try again.";

/// Runs turns until the model stops asking for tools, a call waits for approval, or the user
/// stops. When the turn's code cannot be loaded, the reply is an error with Retry.
pub async fn run(store: Store, chat: Chat) {
    store.busy.set(true);
    // The save of what was just sent goes first (see `history::save_code_ready`).
    history::save_code_ready().await;
    match code().await {
        Some(code) => (code.run)(store, chat).await,
        None => {
            store.busy.set(false);
            let mut m = Message::assistant("");
            m.created_at = Some(now_ms());
            let ui = UiMessage::new(m);
            ui.error.set(Some(NOT_LOADED.to_owned()));
            chat.push(ui);
        }
    }
}

/// Follows run `run` into `chat` ([`follow::attach_now`]) once the turn's code is here; when it
/// cannot be loaded the conversation shows what was saved (the failure is in the console).
pub fn attach(store: Store, chat: Chat, run: String) {
    spawn_local(async move {
        if let Some(code) = code().await {
            (code.attach)(store, chat, run);
        }
    });
}

/// `/compact` ([`compact_now`]) once the turn's code is here.
pub async fn compact(store: Store, chat: Chat) {
    match code().await {
        Some(code) => (code.compact)(store, chat).await,
        None => compaction_failed(store, &chat),
    }
}

/// The upload (in the chunk).
async fn upload_now(store: Store, form: web_sys::FormData) {
    match store.api().upload(form).await {
        Ok(r) => store.attachments.update(|a| a.extend(r.files)),
        Err(e) => store.notice.set(Some(format!("Upload failed ({e})."))),
    }
}

/// [`sync_refs`] (in the chunk).
async fn sync_refs_now(store: Store, current: Vec<String>) {
    let mut fresh = Vec::new();
    store.ref_reads.update(|m| {
        m.retain(|u, _| current.contains(u));
        for uri in current {
            if !m.contains_key(&uri) {
                m.insert(uri.clone(), RefRead::Reading);
                fresh.push(uri);
            }
        }
    });
    for uri in fresh {
        let read = match store.api().read_resource(&uri).await {
            Ok(_) => RefRead::Read,
            Err(e) => RefRead::Failed(e.message()),
        };
        record_ref(store, uri, read);
    }
}

/// The turn loop (in the chunk). Its callers ([`run`], [`decide`]) have set `busy`.
async fn run_now(store: Store, chat: Chat) {
    // The reply is Markdown: its renderer loads while the request goes out.
    crate::markdown::engine::fetch();
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
        let waiting = execute(store, &chat, &ui).await;
        persist(store, &chat);
        if waiting {
            break; // resumed by `answer_input`
        }
    }
    store.busy.set(false);
    if !chat.has_pending() {
        store.focus();
    }
}

/// Streams one reply into a new bubble; `Some(bubble)` when it finished normally. With
/// server-side history the request names the conversation and the bubble's id, so the service
/// saves the reply as the run goes; its `saved` revision becomes the chat's base. A dropped
/// connection is resumed from the run's stream ([`follow::read_on`]).
async fn stream_one(store: Store, chat: &Chat) -> Option<UiMessage> {
    let mut m = Message::assistant("");
    m.created_at = Some(now_ms());
    let ui = UiMessage::new(m);
    chat.push(ui.clone());
    let mut req = ChatRequest::new(chat.model.get_untracked(), chat.wire_messages())
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
    if store.history_mode() == Some(HistoryMode::Server) {
        req = req.with_conversation(chat.id.get_untracked(), ui.key.clone());
    }
    let api = store.api();
    let (generation, signal) = follow::begin(api.clone(), Kind::Turn);
    follow::set_bubble(generation, &ui);
    let allowed_chat = chat.clone();
    let mut w = ReplyWriter::new(ui.clone(), move |name| {
        auto_allowed(store, &allowed_chat, name)
    });
    let mut run = None;
    let first = api
        .chat_stream(
            &req,
            signal.as_ref(),
            |id| {
                follow::set_run(generation, id.clone());
                run = Some(id);
            },
            |frame| w.frame(frame),
        )
        .await;
    let progressed = w.last_id() > 0;
    let res = match &run {
        Some(id) => follow::read_on(&api, id, &mut w, signal.as_ref(), first, progressed).await,
        None => first,
    };
    follow::end(generation);
    let ended = w.finish();
    if let Some(revision) = ended.saved {
        follow::take_base(chat, revision);
    }
    match res {
        Err(ApiError::Aborted) => None,
        Err(e) => {
            ui.error.set(Some(e.to_string()));
            None
        }
        Ok(()) if ended.failed.is_some() => {
            ui.error.set(ended.failed);
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
            match code().await {
                Some(code) => (code.resume)(store, chat, ui).await,
                None => {
                    // Nothing ran: the call waits for a decision again.
                    ui.data.update(|d| {
                        if let Some(c) = d.tool_calls.iter_mut().find(|c| c.id == call_id) {
                            c.approval = Some(Approval::Pending);
                        }
                    });
                    persist(store, &chat);
                    store.busy.set(false);
                    store.notice.set(Some(
                        "The chat's code could not be loaded (see the browser console). \
                         Decide again to try again."
                            .to_owned(),
                    ));
                }
            }
        });
    }
}

/// Runs the decided calls and the turns after them (in the chunk).
async fn resume_now(store: Store, chat: Chat, ui: UiMessage) {
    let waiting = execute(store, &chat, &ui).await;
    persist(store, &chat);
    if waiting {
        store.busy.set(false);
        return;
    }
    run_now(store, chat).await;
}

/// Runs the approved calls of `ui` in order and appends one tool message per call (the deny
/// message for denied ones). HTTP errors from `/api/tools/call` are tool errors. A call that
/// asks for the user's input gets its request instead of a message; `true` when one waits.
async fn execute(store: Store, chat: &Chat, ui: &UiMessage) -> bool {
    let calls = ui.data.with_untracked(|m| m.tool_calls.clone());
    let mut waiting = false;
    for call in calls {
        // Answered calls are those of this message only (ids repeat across replies).
        let key = (ui.key.clone(), call.id.clone());
        if chat.results.with_untracked(|r| r.contains_key(&key)) {
            continue; // already answered
        }
        if call.input_request.is_some() {
            waiting = true;
            continue; // answered by `answer_input`
        }
        if call.task.is_some() {
            waiting = true;
            follow_task(store, chat.clone(), ui.clone(), call.id.clone());
            continue; // its result comes from `follow_task`
        }
        let (text, is_error, extra) = match call.approval {
            Some(Approval::Denied) => (deny_message(&call.name), false, None),
            // An error without a result never ran: the operator's policy blocked it.
            Some(Approval::Error) => (lmchatkit_protocol::blocked_text(&call.name), true, None),
            Some(Approval::Approved) => {
                chat.running.update(|r| {
                    r.insert(key.clone());
                });
                let req = model_call(&call);
                let progress = chat.progress.clone();
                let at = key.clone();
                let res = store
                    .api()
                    .call_tool_streaming(&req, |p| {
                        progress.update(|m| {
                            m.insert(at.clone(), p);
                        })
                    })
                    .await;
                chat.progress.update(|m| {
                    m.remove(&key);
                });
                chat.running.update(|r| {
                    r.remove(&key);
                });
                match res {
                    Ok(mut r) => {
                        if let Some(task) = r.task.take() {
                            set_task(ui, &call.id, Some(task));
                            waiting = true;
                            follow_task(store, chat.clone(), ui.clone(), call.id.clone());
                            continue;
                        }
                        match r.input_required.take() {
                            Some(request) => {
                                set_input_request(ui, &call.id, Some(request));
                                waiting = true;
                                continue;
                            }
                            None => (r.content.clone(), r.is_error, Some(r)),
                        }
                    }
                    Err(e) => (format!("[error] {e}"), true, None),
                }
            }
            _ => continue,
        };
        record(chat, ui, &call, key, text, is_error, extra);
    }
    waiting
}

/// The model's `call` as the tab makes it (the user approved it, or the policy allows it).
fn model_call(call: &ToolCall) -> ToolCallRequest {
    ToolCallRequest {
        name: call.name.clone(),
        arguments: call.arguments.clone(),
        source: ToolCallSource::Model,
        via: None,
        call_id: Some(call.id.clone()),
        input: None,
        task: None,
    }
}

/// Sets (or clears) the request for input a call of `ui` waits on.
fn set_input_request(ui: &UiMessage, call_id: &str, request: Option<Box<InputRequired>>) {
    ui.data.update(|d| {
        if let Some(c) = d.tool_calls.iter_mut().find(|c| c.id == call_id) {
            c.input_request = request;
        }
    });
}

/// The user answered the request for input of a call of `ui`: the call is made again with the
/// answers (`/api/tools/call` with `input`). It may ask again (the card shows the new request);
/// otherwise its result is recorded and, once nothing else waits, the turn goes on.
pub fn answer_input(
    store: Store,
    chat: Chat,
    ui: UiMessage,
    call_id: String,
    answers: BTreeMap<String, InputAnswer>,
) {
    let Some(call) = ui
        .data
        .with_untracked(|d| d.tool_calls.iter().find(|c| c.id == call_id).cloned())
    else {
        return;
    };
    let Some(ticket) = call.input_request.as_ref().and_then(|r| r.ticket.clone()) else {
        return;
    };
    spawn_local(async move {
        store.busy.set(true);
        let key = (ui.key.clone(), call.id.clone());
        chat.running.update(|r| {
            r.insert(key.clone());
        });
        let req = ToolCallRequest {
            input: Some(InputAnswers { ticket, answers }),
            ..model_call(&call)
        };
        let res = store.api().call_tool(&req).await;
        chat.running.update(|r| {
            r.remove(&key);
        });
        let (text, is_error, extra) = match res {
            Ok(mut r) if r.task.is_some() => {
                // Answers to a task's question: the task goes on, polled as before.
                set_input_request(&ui, &call.id, r.input_required.take());
                set_task(&ui, &call.id, r.task.take());
                persist(store, &chat);
                store.busy.set(false);
                follow_task(store, chat, ui, call.id.clone());
                return;
            }
            Ok(mut r) => match r.input_required.take() {
                Some(request) => {
                    set_input_request(&ui, &call.id, Some(request));
                    persist(store, &chat);
                    store.busy.set(false);
                    return;
                }
                None => (r.content.clone(), r.is_error, Some(r)),
            },
            Err(e) => (format!("[error] {e}"), true, None),
        };
        set_input_request(&ui, &call.id, None);
        record(&chat, &ui, &call, key, text, is_error, extra);
        persist(store, &chat);
        go_on(store, chat, ui).await;
    });
}

/// Once no call of `ui` waits (for approval, input or a task), the turn goes on.
async fn go_on(store: Store, chat: Chat, ui: UiMessage) {
    let waits = ui.data.with_untracked(|d| {
        d.tool_calls.iter().any(|c| {
            c.approval == Some(Approval::Pending) || c.input_request.is_some() || c.task.is_some()
        })
    });
    if waits {
        store.busy.set(false);
        return;
    }
    store.busy.set(true);
    match code().await {
        Some(code) => (code.resume)(store, chat, ui).await,
        None => {
            store.busy.set(false);
            store.notice.set(Some(NOT_LOADED.to_owned()));
        }
    }
}

/// Sets (or clears) the task a call of `ui` runs as.
fn set_task(ui: &UiMessage, call_id: &str, task: Option<Box<ToolTask>>) {
    ui.data.update(|d| {
        if let Some(c) = d.tool_calls.iter_mut().find(|c| c.id == call_id) {
            c.task = task;
        }
    });
}

thread_local! {
    /// The calls whose task this tab polls (one poller each).
    static POLLING: std::cell::RefCell<std::collections::HashSet<CallKey>> =
        std::cell::RefCell::new(std::collections::HashSet::new());
    /// The calls whose task the user asked to cancel.
    static CANCEL: std::cell::RefCell<std::collections::HashSet<CallKey>> =
        std::cell::RefCell::new(std::collections::HashSet::new());
}

/// Cancels the task of a call of `ui` (at its next poll, which comes at once).
pub fn cancel_task(ui: &UiMessage, call_id: &str) {
    CANCEL.with(|c| c.borrow_mut().insert((ui.key.clone(), call_id.to_owned())));
}

/// Polls the task a call of `ui` runs as, at the server's interval (kept within 100 ms and
/// 5 s), until its result comes; then records it and the turn goes on. One poller per call in
/// this tab (a reload starts it again from the saved call). A poll lost on its way
/// ([`lost_on_the_way`]) says nothing of the task, so it is tried again, 0.5 s to 5 s later
/// while polls fail; only the task's own answer, or another error, ends the call.
pub fn follow_task(store: Store, chat: Chat, ui: UiMessage, call_id: String) {
    let key: CallKey = (ui.key.clone(), call_id.clone());
    if !POLLING.with(|p| p.borrow_mut().insert(key.clone())) {
        return;
    }
    spawn_local(async move {
        // The extra wait after a poll the network lost (doubling, 0.5 s to 5 s).
        let mut lost_ms = 0u32;
        loop {
            let Some(call) = ui
                .data
                .with_untracked(|d| d.tool_calls.iter().find(|c| c.id == call_id).cloned())
            else {
                break;
            };
            let Some(task) = call.task.clone() else { break };
            if call.input_request.is_some() && !CANCEL.with(|c| c.borrow().contains(&key)) {
                // The task asked the user: no polling until they answer (`answer_input`).
                crate::timer::sleep(300).await;
                continue;
            }
            let cancel = CANCEL.with(|c| c.borrow_mut().remove(&key));
            if !cancel {
                let wait = task.poll_interval_ms.unwrap_or(1000).clamp(100, 5000);
                crate::timer::sleep(wait as u32).await;
                if CANCEL.with(|c| c.borrow().contains(&key)) {
                    continue; // cancel at once
                }
            }
            let req = ToolCallRequest {
                task: Some(TaskPoll {
                    ticket: task.ticket.clone().unwrap_or_default(),
                    cancel,
                }),
                ..model_call(&call)
            };
            let (text, is_error, extra) = match store.api().call_tool(&req).await {
                Err(e) if !cancel && lost_on_the_way(&e) => {
                    // The task runs on at the server whatever became of this poll (a reload
                    // cuts it short, the network blinks, a proxy restarts): poll again, less
                    // often while it lasts. Only the task's own answer ends the call.
                    lost_ms = (lost_ms * 2).clamp(500, 5_000);
                    crate::timer::sleep(lost_ms).await;
                    continue;
                }
                Ok(mut r) => match r.task.take() {
                    Some(t) => {
                        lost_ms = 0;
                        set_task(&ui, &call.id, Some(t));
                        if let Some(request) = r.input_required.take() {
                            set_input_request(&ui, &call.id, Some(request));
                            persist(store, &chat);
                        }
                        continue;
                    }
                    None => (r.content.clone(), r.is_error, Some(r)),
                },
                Err(e) => (format!("[error] {e}"), true, None),
            };
            set_task(&ui, &call.id, None);
            set_input_request(&ui, &call.id, None);
            record(&chat, &ui, &call, key.clone(), text, is_error, extra);
            persist(store, &chat);
            POLLING.with(|p| p.borrow_mut().remove(&key));
            go_on(store, chat, ui).await;
            return;
        }
        POLLING.with(|p| p.borrow_mut().remove(&key));
    });
}

/// Whether a task's poll failed on its way rather than at the task: the request did not
/// complete (network), or a gateway in front of the service answered for it (502, 503, 504).
/// The task's state is unknown, not ended, so [`follow_task`] polls again.
fn lost_on_the_way(e: &ApiError) -> bool {
    matches!(
        e,
        ApiError::Network(_)
            | ApiError::Status {
                status: 502..=504,
                ..
            }
    )
}

/// Records `call`'s result: the tool message answering it, and the card's result.
fn record(
    chat: &Chat,
    ui: &UiMessage,
    call: &ToolCall,
    key: CallKey,
    text: String,
    is_error: bool,
    extra: Option<ToolResult>,
) {
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

/// Says that `/compact` failed (the transcript is unchanged).
pub fn compaction_failed(store: Store, chat: &Chat) {
    info_card(
        store,
        chat,
        json!({"title": "Compaction Failed", "items": []}),
    );
}

/// `/compact`: asks the model for a summary and replaces the transcript with it. In the turn's
/// chunk: the UI calls [`compact`].
pub(crate) async fn compact_now(store: Store, chat: Chat) {
    let msgs = chat.wire_messages();
    let Some(req) = compact_request(
        chat.model.get_untracked(),
        chat.persona_id.get_untracked(),
        chat.params.get_untracked(),
        &msgs,
    ) else {
        info_card(
            store,
            &chat,
            json!({"title": "Nothing to Compact", "items": []}),
        );
        return;
    };
    store.busy.set(true);
    let mut summary = String::new();
    let mut failed = false;
    let (mut call_usage, mut call_cost) = (None, None);
    let res = store
        .api()
        .chat_stream(
            &req,
            None,
            |_| {},
            |f| match serde_json::from_str::<Event>(&f.data) {
                Ok(Event::Delta { delta }) => summary.push_str(&delta),
                Ok(Event::Error { .. }) => failed = true,
                Ok(Event::Done {
                    usage, cost_usd, ..
                }) => (call_usage, call_cost) = (usage, cost_usd),
                _ => {}
            },
        )
        .await;
    store.busy.set(false);
    if res.is_err() || failed || summary.trim().is_empty() {
        compaction_failed(store, &chat);
        return;
    }
    let n = msgs.len();
    let mut m = Message::assistant(summary);
    m.created_at = Some(now_ms());
    let (usage, cost) = crate::spend::summary_spend(&msgs, call_usage, call_cost);
    (m.usage, m.cost_usd) = (Some(usage), cost);
    chat.messages.set(vec![UiMessage::new(m)]);
    info_card(
        store,
        &chat,
        json!({"title": format!("Conversation Compacted: {n} messages → summary"), "items": []}),
    );
    persist(store, &chat);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_poll_lost_on_the_network_or_at_a_gateway_is_polled_again_and_any_other_error_ends_the_call()
     {
        assert!(lost_on_the_way(&ApiError::Network(
            "TypeError: Failed to fetch".into()
        )));
        for status in [502, 503, 504] {
            let e = ApiError::Status {
                status,
                message: String::new(),
            };
            assert!(lost_on_the_way(&e), "{status}");
        }
        for status in [400, 403, 404, 409, 500] {
            let e = ApiError::Status {
                status,
                message: "no such task".into(),
            };
            assert!(!lost_on_the_way(&e), "{status}");
        }
        assert!(!lost_on_the_way(&ApiError::Decode("not JSON".into())));
        assert!(!lost_on_the_way(&ApiError::Aborted));
    }
}
