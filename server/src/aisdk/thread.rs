//! Saving a thread while its turn runs, off the reply's path.
//!
//! A [`Saver`] takes snapshots of the whole thread (what the client sent plus the reply so far)
//! and a background task writes the latest one to the history store: each write waits for the
//! one before it, snapshots that arrive meanwhile collapse into the newest, and the reply never
//! waits on the database. When the turn ends or the client leaves, the saver is dropped and the
//! task still writes the last snapshot, so a reply is kept even when every tab closed.
//!
//! Decisions:
//! - The thread becomes what the client sent plus the reply, as the AI SDK's own persistence
//!   pattern saves `messages` on finish: the client holds the conversation in this protocol.
//! - The server owns this write: a stale revision (another tab saved meanwhile) is retried on
//!   top of the current revision rather than turned into a conflict copy. The writer remembers
//!   the revision it saved last, so only its first save reads the thread.
//! - Saves come at the start (the user's message), after each step that ran tools (more steps
//!   follow) and at the end; the body ends after the last one is written.
//! - Title, persona and params of an existing conversation are kept; a new one is titled from
//!   its first user message.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lmchatkit_protocol::{Message, Role, ServerEventType, StoredConversation};
use tokio::sync::watch;

use crate::events::EventBroadcaster;
use crate::history::{HistoryStore, SaveOutcome};
use crate::host::Principal;

/// Where a thread is saved.
#[derive(Clone)]
pub(crate) struct Target {
    pub store: Arc<dyn HistoryStore>,
    pub events: Option<EventBroadcaster>,
    pub principal: Principal,
    pub thread: String,
    pub model: String,
    pub persona_id: String,
}

/// Hands thread snapshots to the background writer.
pub(crate) struct Saver {
    tx: watch::Sender<(u64, Option<Vec<Message>>)>,
    /// The number of the last snapshot written (or given up on).
    written: watch::Receiver<u64>,
    sent: AtomicU64,
}

impl Saver {
    /// Starts the writer for `target`.
    pub(crate) fn start(target: Target) -> Self {
        let (tx, mut rx) = watch::channel::<(u64, Option<Vec<Message>>)>((0, None));
        let (written_tx, written) = watch::channel(0u64);
        tokio::spawn(async move {
            // What the last save left stored (settings and revision, no messages): later saves
            // need not read the thread back.
            let mut known = None;
            // `changed` reports a value sent just before the sender was dropped, then the end.
            while rx.changed().await.is_ok() {
                let (n, snapshot) = rx.borrow_and_update().clone();
                if let Some(messages) = snapshot
                    && let Err(e) = save(&target, &mut known, messages).await
                {
                    tracing::warn!(thread = %target.thread, error = %e, "saving the thread failed");
                }
                written_tx.send_replace(n);
            }
        });
        Self {
            tx,
            written,
            sent: AtomicU64::new(0),
        }
    }

    /// Queues `messages` as the thread's newest state.
    pub(crate) fn save(&self, messages: Vec<Message>) {
        let n = self.sent.fetch_add(1, Ordering::SeqCst) + 1;
        self.tx.send_replace((n, Some(messages)));
    }

    /// Waits until the newest snapshot is written (so a reload right after the reply finds it).
    pub(crate) async fn flush(&self) {
        let want = self.sent.load(Ordering::SeqCst);
        let mut written = self.written.clone();
        if written.wait_for(|w| *w >= want).await.is_err() {
            tracing::warn!("the thread writer stopped before the last save");
        }
    }
}

/// Saves `messages` on top of `known` (what this writer saved last), else of what is stored.
async fn save(
    t: &Target,
    known: &mut Option<StoredConversation>,
    messages: Vec<Message>,
) -> Result<(), crate::history::HistoryError> {
    let mut current = match known.take() {
        Some(c) => Some(c),
        None => t.store.get(&t.principal, &t.thread).await?,
    };
    // Two tries: a save that races another writer goes on top of what that writer saved.
    for _ in 0..2 {
        let mut conversation = next_copy(t, current.take(), messages.clone());
        let kept = std::mem::take(&mut conversation.messages);
        let header = conversation.clone();
        conversation.messages = kept;
        match t.store.save(&t.principal, conversation).await? {
            SaveOutcome::Saved { revision } => {
                *known = Some(StoredConversation { revision, ..header });
                if let Some(events) = &t.events {
                    let saved = ServerEventType::ConversationSaved;
                    events.conversation(&t.principal, saved, &t.thread, Some(revision));
                }
                return Ok(());
            }
            SaveOutcome::Conflict(copy) => current = Some(*copy),
        }
    }
    tracing::warn!(thread = %t.thread, "the thread kept changing under the save; skipped");
    Ok(())
}

/// The conversation to save: the stored one's settings (when there is one) with `messages`.
fn next_copy(
    t: &Target,
    stored: Option<StoredConversation>,
    messages: Vec<Message>,
) -> StoredConversation {
    match stored {
        Some(mut c) => {
            if c.model.is_empty() {
                c.model = t.model.clone();
            }
            c.messages = messages;
            c
        }
        None => StoredConversation {
            id: t.thread.clone(),
            title: title(&messages),
            persona_id: t.persona_id.clone(),
            model: t.model.clone(),
            messages,
            ..StoredConversation::default()
        },
    }
}

/// A new thread's title: its first user message's title.
fn title(messages: &[Message]) -> String {
    messages
        .iter()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.title())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "New conversation".to_owned())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::history::MemoryStore;

    fn target(store: Arc<dyn HistoryStore>) -> Target {
        Target {
            store,
            events: None,
            principal: Principal::new("alice"),
            thread: "t1".into(),
            model: "m".into(),
            persona_id: String::new(),
        }
    }

    async fn eventually_saved(store: &Arc<dyn HistoryStore>, n: usize) -> StoredConversation {
        for _ in 0..500 {
            if let Some(c) = store.get(&Principal::new("alice"), "t1").await.unwrap()
                && c.messages.len() == n
            {
                return c;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        panic!("the thread never reached {n} messages");
    }

    #[tokio::test]
    async fn the_last_snapshot_is_saved_after_the_saver_is_dropped() {
        let store: Arc<dyn HistoryStore> = Arc::new(MemoryStore::new());
        let saver = Saver::start(target(store.clone()));
        saver.save(vec![Message::user("Plan a trip\nto Oslo")]);
        saver.save(vec![
            Message::user("Plan a trip\nto Oslo"),
            Message::assistant("Sure"),
        ]);
        drop(saver);
        let c = eventually_saved(&store, 2).await;
        assert_eq!(c.title, "Plan a trip");
        assert_eq!(c.model, "m");
    }

    #[tokio::test]
    async fn a_save_after_another_writer_goes_on_top_of_what_it_saved() {
        let store: Arc<dyn HistoryStore> = Arc::new(MemoryStore::new());
        let p = Principal::new("alice");
        let saver = Saver::start(target(store.clone()));
        saver.save(vec![Message::user("a")]);
        saver.flush().await;
        // Another tab renames it: the writer's remembered revision is stale now.
        let patch = lmchatkit_protocol::ConversationPatch {
            title: "Renamed".into(),
            ..Default::default()
        };
        store.patch(&p, "t1", patch).await.unwrap();
        saver.save(vec![Message::user("a"), Message::assistant("b")]);
        saver.flush().await;
        let c = store.get(&p, "t1").await.unwrap().unwrap();
        assert_eq!(c.messages.len(), 2);
        assert_eq!(c.title, "Renamed");
    }

    #[tokio::test]
    async fn a_save_goes_on_top_of_a_conversation_changed_meanwhile_and_keeps_its_title() {
        let store: Arc<dyn HistoryStore> = Arc::new(MemoryStore::new());
        let p = Principal::new("alice");
        let existing = StoredConversation {
            id: "t1".into(),
            title: "Renamed".into(),
            messages: vec![Message::user("a")],
            ..StoredConversation::default()
        };
        store.save(&p, existing).await.unwrap();
        let saver = Saver::start(target(store.clone()));
        saver.save(vec![
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
        ]);
        drop(saver);
        let c = eventually_saved(&store, 3).await;
        assert_eq!(c.title, "Renamed");
    }
}
