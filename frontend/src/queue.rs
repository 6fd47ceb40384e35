//! Messages written while a reply streams: they wait in a queue under the composer and go, one
//! at a time, when the reply ends.
//!
//! Decisions (as in the chat UIs users compare us with):
//! - **What queues.** Send (Enter) while a reply streams, or while a tool call waits for the
//!   user's approval, queues the draft's text instead of doing nothing. Attachments do not queue
//!   (they stay in the composer for the next message).
//! - **When they go.** When a reply ends, the first queued message is sent as if typed then
//!   (commands included); its reply ending sends the next. **Stop keeps the queue and pauses
//!   it**: the user stopped the reply for a reason, so nothing is sent behind their back; Send
//!   with an empty draft sends the next queued message, and any message sent by hand resumes the
//!   queue.
//! - **Editing.** Each queued message can be removed, or taken back into the composer to edit
//!   (appended to what is there), and queued again with Enter.
//! - **Reload.** The queue is the conversation's and lives in the tab's sessionStorage
//!   (`lmchatkit:queue:<conversation id>`), so a reload keeps it; the reply, which runs on the
//!   server, carries on, and its end sends the queue as before. A queue found after a reload
//!   with no reply running waits for Send.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::actions::submit_text;
use crate::state::Store;
use crate::storage::{session_get, session_set};

/// sessionStorage key of a conversation's queue.
fn key(id: &str) -> String {
    format!("lmchatkit:queue:{id}")
}

/// The open conversation's id.
fn open_id(store: Store) -> Option<String> {
    store
        .chat
        .with_untracked(|c| c.as_ref().map(|c| c.id.get_untracked()))
}

/// Writes the open conversation's queue to sessionStorage (none when empty).
fn save(store: Store) {
    let Some(id) = open_id(store) else { return };
    let json = store
        .queue
        .with_untracked(|q| (!q.is_empty()).then(|| serde_json::to_string(q).ok()))
        .flatten();
    session_set(&key(&id), json.as_deref());
}

/// Whether Send should queue now: a reply streams or a call waits for the user.
pub fn should_queue(store: Store) -> bool {
    store.busy.get_untracked()
        || store
            .chat
            .with_untracked(|c| c.as_ref().is_some_and(|c| c.has_pending()))
}

/// Queues the draft's text (clearing the draft); whether anything was queued.
pub fn enqueue(store: Store) -> bool {
    let text = store.draft.get_untracked().trim().to_owned();
    if text.is_empty() || open_id(store).is_none() {
        return false;
    }
    store.queue.update(|q| q.push(text));
    store.draft.set(String::new());
    save(store);
    true
}

/// Removes queued message `i`.
pub fn remove(store: Store, i: usize) {
    store.queue.update(|q| {
        if i < q.len() {
            q.remove(i);
        }
    });
    save(store);
    store.focus();
}

/// Takes queued message `i` back into the composer (after the draft's own text).
pub fn edit(store: Store, i: usize) {
    let Some(text) = store
        .queue
        .try_update(|q| (i < q.len()).then(|| q.remove(i)))
        .flatten()
    else {
        return;
    };
    store.draft.update(|d| {
        if d.trim().is_empty() {
            *d = text;
        } else {
            d.push('\n');
            d.push_str(&text);
        }
    });
    save(store);
    store.focus();
}

/// Sends the first queued message if nothing runs; whether it went.
pub fn send_next(store: Store) -> bool {
    if should_queue(store) {
        return false;
    }
    let Some(text) = store.queue.with_untracked(|q| q.first().cloned()) else {
        return false;
    };
    if !submit_text(store, &text, Vec::new()) {
        return false;
    }
    store.queue.update(|q| {
        if q.first() == Some(&text) {
            q.remove(0);
        }
    });
    store.queue_paused.set(false);
    save(store);
    true
}

/// Stop was pressed: the queue stays, paused.
pub fn pause(store: Store) {
    if store.queue.with_untracked(|q| !q.is_empty()) {
        store.queue_paused.set(true);
    }
}

/// Keeps the queue with the open conversation (loaded from sessionStorage when another one
/// opens) and sends it as replies end. Installed by the transcript, which every open
/// conversation shows (so this code sits in its wasm chunk, not in the first paint's); its
/// effects live as long as that transcript.
pub fn install(store: Store) {
    Effect::new(move |shown: Option<Option<String>>| {
        let id = store.chat.with(|c| c.as_ref().map(|c| c.id.get()));
        if shown.as_ref() != Some(&id) {
            let queued: Vec<String> = id
                .as_deref()
                .and_then(|id| session_get(&key(id)))
                .and_then(|s| serde_json::from_str(&s).ok())
                .unwrap_or_default();
            store.queue.set(queued);
            store.queue_paused.set(false);
        }
        id
    });
    Effect::new(move |was_busy: Option<bool>| {
        let busy = store.busy.get();
        if was_busy == Some(true) && !busy && !store.queue_paused.get_untracked() {
            // After the turn's own end-of-turn work (this effect runs inside it).
            spawn_local(async move {
                send_next(store);
            });
        }
        busy
    });
}
