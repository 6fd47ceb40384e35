//! Saving and loading conversations: server mode (`PUT` with the base `revision`; a 409 is
//! resolved by re-applying appended messages on the server copy, else by keeping both) or this
//! tab's sessionStorage. Saves of one chat are serialised: a change during a save marks the chat
//! dirty and saves again after.
//!
//! A server save sends only what changed at the end: the messages equal to those this tab last
//! saved or loaded are named by count (`kept`), so one more turn uploads that turn, not the
//! whole conversation (see [`kept_count`]).
//!
//! 409 resolution: when the stored copy still starts with the messages this tab last saved (by id)
//! and this tab only appended since, the appended messages are re-applied on top of the stored
//! copy and saved again; otherwise this tab's copy is saved as a new conversation titled
//! "… (conflict copy)", so neither side is lost.
//!
//! **The save's code is part of the transcript's wasm chunk** ([`crate::lazy`]), not of the
//! first load: a chat has something to save only once it shows messages, which is the
//! transcript's part, so the chunk is here (or on its way: it is fetched at the composer's
//! first keystroke) whenever a save starts. [`save`] waits for it; what moved with it (the
//! save loop, the `PUT` and its 409 merge, `Message`'s and `StoredConversation`'s
//! `Serialize`) took the main module from 235,860 to 227,318 B as brotli (749 to 724 KB raw,
//! after `wasm-opt`). The turn's own chunk is not needed: a message sent while that one
//! cannot be loaded is still saved. A save whose code cannot be loaded says so and tries
//! again until it is (see [`save`]).
//!
//! The sidebar's list in browser mode reads the summaries only, and a save or delete edits
//! the stored list as JSON values, so neither decodes messages (see [`crate::stored`]).

use std::future::Future;
use std::pin::Pin;

use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::{ConversationSummary, HistoryMode, Message, StoredConversation};

use crate::api::{ApiError, SaveOutcome};
use crate::lazy::Loader;
use crate::state::{Chat, Store, UiMessage, new_id};
use crate::storage::{session_get, session_set};

const SESSION_KEY: &str = "lmchatkit:conversations";
const CURRENT_KEY: &str = "lmchatkit:currentId";

/// Remembers which chat is open, for reload restore.
pub fn remember_current(id: Option<&str>) {
    session_set(CURRENT_KEY, id);
}

/// The chat that was open before a reload.
pub fn remembered_current() -> Option<String> {
    session_get(CURRENT_KEY)
}

/// Where this tab's history was kept when it last loaded `/api/config` (`"server"` or
/// `"browser"`), so a reload can fetch the remembered chat before the config comes back.
const MODE_KEY: &str = "lmchatkit:historyMode";

/// Remembers the history mode `/api/config` named, for the next reload's prefetch.
pub fn remember_mode(mode: HistoryMode) {
    let name = match mode {
        HistoryMode::Server => "server",
        HistoryMode::Browser => "browser",
    };
    session_set(MODE_KEY, Some(name));
}

/// What fetching a conversation from the service gave: it and the run writing it, if any.
pub type Fetched = Result<(StoredConversation, Option<String>), ApiError>;

/// Fetches the chat that was open before a reload, when this tab kept its history on the
/// service then: started together with `/api/config`, so a reload costs one round trip
/// before the conversation shows, not three (config, list, conversation).
pub async fn prefetch_remembered(store: Store) -> Option<(String, Fetched)> {
    let id = remembered_current()?;
    if session_get(MODE_KEY).as_deref() != Some("server") {
        return None;
    }
    let fetched = store.api().conversation_with_run(&id).await;
    Some((id, fetched))
}

/// Conversation `id` of this tab's sessionStorage (browser mode), decoded by
/// [`crate::stored`]; `Ok(None)` when it is not there (or the storage does not parse).
pub async fn browser_find(id: &str) -> Result<Option<StoredConversation>, ApiError> {
    let Some(text) = session_get(SESSION_KEY) else {
        return Ok(None);
    };
    match crate::stored::all(&text).await {
        Ok(all) => Ok(all.into_iter().find(|c| c.id == id)),
        Err(crate::stored::Unreadable::Decode(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The list entries of this tab's sessionStorage: each stored conversation read as its
/// summary (the same fields, the messages skipped), so the list needs no message decoder.
fn browser_summaries() -> Vec<ConversationSummary> {
    session_get(SESSION_KEY)
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default()
}

/// The stored conversations of this tab's sessionStorage as JSON values: a save or delete
/// edits the list without decoding the messages.
fn browser_values() -> Vec<serde_json::Value> {
    session_get(SESSION_KEY)
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default()
}

fn browser_write(all: &[serde_json::Value]) {
    if let Ok(s) = serde_json::to_string(all) {
        session_set(SESSION_KEY, Some(&s));
    }
}

/// Whether stored value `v` is conversation `id`.
fn is_conversation(v: &serde_json::Value, id: &str) -> bool {
    v.get("id").and_then(serde_json::Value::as_str) == Some(id)
}

/// Refreshes the sidebar list.
pub async fn refresh_list(store: Store) {
    match store.history_mode() {
        Some(HistoryMode::Server) => match store.api().conversations().await {
            Ok(list) => show_list(store, list),
            Err(e) => store
                .notice
                .set(Some(format!("Could not load the conversations ({e})."))),
        },
        Some(HistoryMode::Browser) => show_list(store, browser_summaries()),
        None => {}
    }
}

/// Shows `list` in the sidebar, the latest first (one sort for both modes: each `sort_by_key`
/// is a copy of the sort in the wasm).
fn show_list(store: Store, mut list: Vec<ConversationSummary>) {
    list.sort_by_key(|c| std::cmp::Reverse(c.updated_at));
    store.conversations.set(list);
}

/// Saves the open chat (in the background).
pub fn persist(store: Store, chat: &Chat) {
    let chat = chat.clone();
    spawn_local(async move { save(store, chat).await });
}

/// A save the chunk hands back.
type Saving = Pin<Box<dyn Future<Output = ()>>>;

/// The code that saves (in the transcript's chunk when split).
#[derive(Clone, Copy)]
pub(crate) struct Saver {
    save: fn(Store, Chat) -> Saving,
}

crate::lazy::code_point! {
    /// The save's entry in the transcript's chunk.
    transcript: fn load_saver() -> Saver {
        Saver {
            save: |store, chat| Box::pin(save_now(store, chat)),
        }
    }
}

thread_local! {
    static SAVER: Loader<Saver> = const { Loader::new() };
}

/// Waits until the code that saves is here (loading it unless a load is under way), or could
/// not be loaded. A turn waits for it before its request goes ([`crate::turn::run`]): at a
/// tab's first send the user's message is then saved before the turn's request, as when the
/// save's code was in the main module (a reply's own save on the service, made first, would
/// turn the tab's first save into a 409).
pub async fn save_code_ready() {
    Loader::ready(&SAVER, load_saver).await;
}

/// Saves `chat` now (or marks it dirty when a save is in flight), once the code that saves is
/// here (see the module docs). While it cannot be loaded the notice bar says so and the save
/// tries again, every 1, 2, 4 … 15 s, until the code arrives: the messages stay in the tab.
pub async fn save(store: Store, chat: Chat) {
    if chat
        .messages
        .with_untracked(|m| !m.iter().any(|m| m.is_substantial()))
    {
        return; // nothing to keep yet
    }
    let mut delay = 1_000u32;
    loop {
        if let Some(code) = Loader::ready(&SAVER, load_saver).await.value() {
            return (code.save)(store, chat).await;
        }
        store.notice.set(Some(
            "Could not save the conversation (the code that saves conversations could not be \
             loaded, see the browser console); trying again."
                .to_owned(),
        ));
        crate::timer::sleep(delay).await;
        delay = (delay * 2).min(15_000);
    }
}

/// [`save`] (in the chunk).
async fn save_now(store: Store, chat: Chat) {
    if store.history_mode() == Some(HistoryMode::Browser) {
        let c = chat.to_stored();
        let Ok(value) = serde_json::to_value(&c) else {
            return;
        };
        let mut all = browser_values();
        all.retain(|x| !is_conversation(x, &c.id));
        all.push(value);
        browser_write(&all);
        refresh_list(store).await;
        return;
    }
    {
        let mut s = chat.sync.lock().unwrap();
        if s.saving {
            s.dirty = true;
            return;
        }
        s.saving = true;
    }
    loop {
        let mut conv = chat.to_stored();
        let ids: Vec<String> = conv.messages.iter().filter_map(|m| m.id.clone()).collect();
        let kept = chat
            .sync
            .lock()
            .map(|s| kept_count(s.stored_revision, &s.stored, &conv.messages))
            .unwrap_or(0);
        // Only what follows the kept messages goes out.
        let mut known = std::mem::take(&mut conv.messages);
        conv.messages = known.split_off(kept);
        conv.kept = (kept > 0).then_some(kept as u64);
        let outcome = store.api().save(&conv).await;
        let again = {
            let mut s = chat.sync.lock().unwrap();
            match &outcome {
                Ok(SaveOutcome::Saved(rev)) => {
                    // Revisions only grow: a save answered after the service's own save of a
                    // reply (whose `saved` revision the chat took as its base meanwhile) is
                    // older news for the base, but still what this tab knows stored.
                    if *rev >= s.revision {
                        s.revision = *rev;
                        s.base_ids = ids;
                    }
                    if *rev >= s.stored_revision {
                        known.append(&mut conv.messages);
                        s.stored = known;
                        s.stored_revision = *rev;
                    }
                }
                Ok(SaveOutcome::Conflict(_)) | Err(_) => {}
            }
            let again = s.dirty;
            s.dirty = false;
            again
        };
        match outcome {
            Ok(SaveOutcome::Saved(_)) => {}
            // Gone (deleted elsewhere) while this tab kept some of it: save it whole, which
            // creates it again, as a whole save would have.
            Ok(SaveOutcome::Conflict(c)) if c.conversation.revision == 0 => {
                let mut s = chat.sync.lock().unwrap();
                s.revision = 0;
                s.stored.clear();
                s.stored_revision = 0;
                continue;
            }
            Ok(SaveOutcome::Conflict(c)) => {
                resolve_conflict(store, &chat, c.conversation);
                continue;
            }
            Err(e) => store
                .notice
                .set(Some(format!("Could not save the conversation ({e})."))),
        }
        if !again {
            break;
        }
    }
    chat.sync.lock().unwrap().saving = false;
    refresh_list(store).await;
}

/// How many leading `messages` a save may leave out as kept ([`StoredConversation::kept`]):
/// those equal to the ones this tab last saved or loaded (`stored`, at `revision`), none for a
/// conversation not stored yet. Comparing here, in the tab, spares sending and the service
/// comparing the whole conversation on every save.
///
/// The service's own save of a reply (a newer revision the tab takes as its base) keeps the
/// messages before the reply as they were, so what the tab saved stays a valid prefix; an edit
/// in this tab shows as a difference and is sent. A save that keeps more than is stored (the
/// conversation changed under it some other way) is a 409, merged like any other. An edit of
/// an earlier message that another tab saved in the moment between this tab's save and the
/// service's save of its reply stays stored as that tab made it (a whole save would have put
/// this tab's older text back over it); this tab shows it after its next reload.
pub fn kept_count(revision: u64, stored: &[Message], messages: &[Message]) -> usize {
    if revision == 0 {
        return 0;
    }
    stored
        .iter()
        .zip(messages)
        .take_while(|(a, b)| a == b)
        .count()
}

/// How a 409 is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergePlan {
    /// Both sides only appended to the base: put these local messages (indices) after the
    /// stored copy's.
    Reapply(Vec<usize>),
    /// This tab edited history: keep its copy as a new conversation.
    ConflictCopy,
}

/// Decides how to merge after a 409, from message ids: `base` as of this tab's last save,
/// `local` now, `server` in the stored copy.
pub fn merge_plan(base: &[String], local: &[String], server: &[String]) -> MergePlan {
    if local.starts_with(base) && server.starts_with(base) {
        MergePlan::Reapply(
            (base.len()..local.len())
                .filter(|&i| !server.contains(&local[i]))
                .collect(),
        )
    } else {
        MergePlan::ConflictCopy
    }
}

/// Merges this tab's chat with the stored copy after a 409 (see the module docs).
fn resolve_conflict(store: Store, chat: &Chat, server: StoredConversation) {
    let base = chat.sync.lock().unwrap().base_ids.clone();
    // Compare what is saved (substantial messages); a bubble still streaming stays at the end.
    let all = chat.messages.get_untracked();
    let subs: Vec<&UiMessage> = all.iter().filter(|m| m.is_substantial()).collect();
    let tail: Vec<UiMessage> = all
        .iter()
        .rev()
        .take_while(|m| !m.is_substantial())
        .cloned()
        .collect();
    let local_ids: Vec<String> = subs.iter().map(|m| m.key.clone()).collect();
    let server_ids: Vec<String> = server
        .messages
        .iter()
        .filter_map(|m| m.id.clone())
        .collect();
    if let MergePlan::Reapply(keep) = merge_plan(&base, &local_ids, &server_ids) {
        let mut appended: Vec<UiMessage> = keep.iter().map(|&i| subs[i].clone()).collect();
        appended.extend(tail.into_iter().rev());
        let rebuilt = Chat::from_stored(server.clone());
        let mut merged = rebuilt.messages.get_untracked();
        merged.extend(appended);
        chat.messages.set(merged);
        chat.results
            .update(|r| r.extend(rebuilt.results.get_untracked()));
        // "Always allow" in this chat, from either side, is kept.
        chat.allowed
            .update(|a| a.extend(rebuilt.allowed.get_untracked()));
        chat.branches.set(rebuilt.branches.get_untracked());
        let mut s = chat.sync.lock().unwrap();
        s.revision = server.revision;
        s.base_ids = server_ids;
        s.stored = server.messages;
        s.stored_revision = server.revision;
    } else {
        // Keep both: this tab's copy becomes a new conversation.
        let title = format!("{} (conflict copy)", chat.title.get_untracked());
        chat.id.set(new_id("c-"));
        chat.title.set(title);
        let mut s = chat.sync.lock().unwrap();
        s.revision = 0;
        s.base_ids.clear();
        s.stored.clear();
        s.stored_revision = 0;
        remember_current(Some(&chat.id.get_untracked()));
        store.notice.set(Some(
            "This conversation changed in another tab; your copy was kept as a conflict copy."
                .into(),
        ));
    }
}

/// Re-reads the open chat after another tab saved it (skipped while this tab is busy or waits for
/// an approval; aborted if the local messages changed meanwhile): the chat now open and the run
/// the service names in it, if any. Following that run is the caller's
/// ([`crate::conversation::reload_current`]).
pub async fn reread_open(store: Store) -> Option<(Chat, Option<String>)> {
    let chat = store.chat.get_untracked()?;
    let id = chat.id.get_untracked();
    let before = chat.messages.with_untracked(|m| m.len());
    let Ok((conv, run)) = store.api().conversation_with_run(&id).await else {
        return None;
    };
    if store.busy.get_untracked() || chat.messages.with_untracked(|m| m.len()) != before {
        return None;
    }
    let newer = chat
        .sync
        .lock()
        .map(|s| conv.revision > s.revision)
        .unwrap_or(false);
    let chat = if newer {
        let chat = Chat::from_stored(conv);
        store.chat.set(Some(chat.clone()));
        chat
    } else {
        chat
    };
    Some((chat, run))
}

/// Shows another version of a message: the service makes the branch through `node` the
/// active one, and the chat is read again (a save of this tab in flight meanwhile gets a 409
/// and merges as any other).
pub async fn switch_version(store: Store, chat: Chat, node: u64) {
    let id = chat.id.get_untracked();
    let api = store.api();
    let read = match api.switch_branch(&id, node).await {
        Ok(_) => api.conversation(&id).await,
        Err(e) => Err(e),
    };
    match read {
        Ok(conv) => store.chat.set(Some(Chat::from_stored(conv))),
        Err(e) => store
            .notice
            .set(Some(format!("Could not show that version ({e})."))),
    }
}

/// Takes the stored versions of the chat's messages after a turn that made one (regenerate,
/// edit): read again, kept when the stored path is the chat's messages.
pub async fn refresh_versions(store: Store, chat: Chat) {
    if store.history_mode() != Some(HistoryMode::Server) {
        return;
    }
    let Ok(conv) = store.api().conversation(&chat.id.get_untracked()).await else {
        return;
    };
    let all = chat.messages.get_untracked();
    let shown: Vec<UiMessage> = all.into_iter().filter(|m| m.is_substantial()).collect();
    let same = shown.len() == conv.messages.len()
        && shown
            .iter()
            .zip(&conv.messages)
            .all(|(m, c)| c.id.as_deref() == Some(m.key.as_str()));
    if same {
        chat.branches
            .set(crate::state::branches_by_key(&shown, conv.branches));
    }
}

/// Deletes a conversation.
pub async fn delete(store: Store, id: String) {
    if store.history_mode() == Some(HistoryMode::Server) {
        if let Err(e) = store.api().delete(&id).await {
            store
                .notice
                .set(Some(format!("Could not delete the conversation ({e}).")));
            return;
        }
    } else {
        let mut all = browser_values();
        all.retain(|c| !is_conversation(c, &id));
        browser_write(&all);
    }
    if store
        .chat
        .with_untracked(|c| c.as_ref().is_some_and(|c| c.id.get_untracked() == id))
    {
        store.chat.set(None);
        remember_current(None);
    }
    refresh_list(store).await;
}

/// Imports conversations (a JSON array or one object), giving each a fresh id.
pub async fn import(store: Store, json: &str) -> Result<usize, String> {
    let list: Vec<StoredConversation> = serde_json::from_str::<Vec<StoredConversation>>(json)
        .or_else(|_| serde_json::from_str::<StoredConversation>(json).map(|c| vec![c]))
        .map_err(|e| format!("not a conversation export: {e}"))?;
    let n = list.len();
    let server = store.history_mode() == Some(HistoryMode::Server);
    for mut c in list {
        c.id = new_id("c-");
        c.revision = 0;
        c.kept = None;
        // Every branch, as exported: the service stores the tree as it was.
        if server && c.tree.is_some() {
            if let Err(e) = store.api().save(&c).await {
                return Err(format!(
                    "a conversation with its branches was refused ({e})"
                ));
            }
            continue;
        }
        c.tree = None;
        save(store, Chat::from_stored(c)).await;
    }
    refresh_list(store).await;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn appends_on_both_sides_are_reapplied() {
        let plan = merge_plan(
            &ids(&["a", "b"]),
            &ids(&["a", "b", "u", "r"]),
            &ids(&["a", "b", "x"]),
        );
        assert_eq!(plan, MergePlan::Reapply(vec![2, 3]));
        // A message the server already has is not duplicated.
        let plan = merge_plan(&ids(&["a"]), &ids(&["a", "u"]), &ids(&["a", "u", "x"]));
        assert_eq!(plan, MergePlan::Reapply(vec![]));
    }

    fn msgs(texts: &[&str]) -> Vec<Message> {
        texts
            .iter()
            .map(|t| Message::user(*t).with_id(*t))
            .collect()
    }

    #[test]
    fn a_save_keeps_the_messages_known_stored_unchanged() {
        let stored = msgs(&["a", "b", "c"]);
        // One more turn: everything stored is kept.
        assert_eq!(kept_count(4, &stored, &msgs(&["a", "b", "c", "d", "e"])), 3);
        // An edit keeps what comes before it.
        assert_eq!(kept_count(4, &stored, &msgs(&["a", "x", "c"])), 1);
        let mut edited = msgs(&["a", "b", "c"]);
        edited[2].thinking = Some("a detail changed".into());
        assert_eq!(kept_count(4, &stored, &edited), 2);
        // Fewer messages than stored (a reply regenerated from "b").
        assert_eq!(kept_count(4, &stored, &msgs(&["a", "b"])), 2);
        // Nothing is kept of a conversation not stored yet, or not known.
        assert_eq!(kept_count(0, &stored, &msgs(&["a", "b", "c", "d"])), 0);
        assert_eq!(kept_count(4, &[], &msgs(&["a"])), 0);
    }

    #[test]
    fn edits_keep_a_conflict_copy() {
        // This tab truncated (edit and resend) after its last save.
        assert_eq!(
            merge_plan(&ids(&["a", "b"]), &ids(&["a", "c"]), &ids(&["a", "b", "x"])),
            MergePlan::ConflictCopy
        );
        // The other side rewrote history.
        assert_eq!(
            merge_plan(&ids(&["a", "b"]), &ids(&["a", "b", "u"]), &ids(&["a", "z"])),
            MergePlan::ConflictCopy
        );
    }
}
