//! Saving a conversation while its run goes on, off the reply's path.
//!
//! A [`Saver`] takes [`Snapshot`]s of the conversation and a background task writes the latest
//! one to the history store: each write waits for the one before it, snapshots that arrive
//! meanwhile collapse into the newest, and the reply never waits on the database. When the run
//! ends the saver is dropped and the task still writes the last snapshot, so a reply is kept
//! even when every tab closed.
//!
//! Decisions:
//! - **Two kinds of snapshot**, one per protocol. An AI SDK thread is [`Snapshot::Whole`]: what
//!   the client sent plus the reply, as the AI SDK's own persistence pattern saves `messages`
//!   on finish (the client holds the conversation in that protocol). A native turn is
//!   [`Snapshot::Reply`]: our UI saves the conversation itself (with UI-only messages the
//!   request leaves out), so the service only puts the reply in its place (see
//!   [`place_reply`]) and keeps everything else as stored.
//! - The server owns this write: a stale revision (another tab saved meanwhile) is retried on
//!   top of the current revision rather than turned into a conflict copy. For whole snapshots
//!   the writer remembers the revision it saved last, so later saves never read the thread,
//!   and its first save is tried as a new thread before anything is read (a thread that
//!   exists answers with its stored copy, and the save goes on top of that).
//! - Title, persona and params of an existing conversation are kept; a new one is titled from
//!   its first user message.
//! - **A reply is placed on the conversation's tail**: the writer reads the last [`TAIL`]
//!   messages ([`HistoryStore::get_tail`]) and saves the reply with the messages before its
//!   place kept ([`StoredConversation::kept`]), so saving a reply costs the same in a
//!   conversation of 5,000 messages as in one of 10. Its place (the request's last message, or
//!   an earlier save of the reply, which always comes after that message) is among the last
//!   messages unless more than [`TAIL`] came after the request while the reply ran; then, and
//!   on a conflict, the writer reads the whole conversation as before.
//! - **A store that is away is waited for**: a save that fails with
//!   [`HistoryError::Busy`](crate::store::HistoryError::Busy) (the store unreachable, restarted
//!   or at capacity) is tried again with back-off (250 ms doubling to 5 s) for up to
//!   [`RECOVER_FOR`], taking the newest snapshot each time, so a reply that ends while
//!   PostgreSQL restarts is saved when it is back. The run's end waits for that at most
//!   `SAVE_WAIT` (`turn::run`) before it ends without its `saved` event; the writer goes on.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lmchatkit_protocol::{Message, Params, Role, ServerEventType, StoredConversation};
use tokio::sync::watch;

use crate::host::Principal;
use crate::live::events::EventBroadcaster;
use crate::store::{HistoryError, HistoryStore, SaveOutcome};

/// Where a conversation is saved, and what a new one starts with.
#[derive(Clone)]
pub(crate) struct Target {
    pub store: Arc<dyn HistoryStore>,
    pub events: Option<EventBroadcaster>,
    pub principal: Principal,
    pub thread: String,
    pub model: String,
    pub persona_id: String,
    pub params: Params,
}

/// What to save.
#[derive(Clone)]
pub(crate) enum Snapshot {
    /// The whole conversation: these messages, with the stored settings.
    Whole(Vec<Message>),
    /// One reply put in its place in the stored conversation; `request` is what the turn was
    /// asked with (the conversation when nothing is stored yet).
    Reply {
        request: Arc<Vec<Message>>,
        reply: Box<Message>,
    },
}

/// What the writer has done: the number of the last snapshot written (or given up on) and the
/// revision the last successful save left.
type Written = (u64, Option<u64>);

/// Hands snapshots to the background writer.
pub(crate) struct Saver {
    tx: watch::Sender<(u64, Option<Snapshot>)>,
    written: watch::Receiver<Written>,
    sent: AtomicU64,
}

impl Saver {
    /// Starts the writer for `target`.
    pub(crate) fn start(target: Target) -> Self {
        let (tx, mut rx) = watch::channel::<(u64, Option<Snapshot>)>((0, None));
        let (written_tx, written) = watch::channel::<Written>((0, None));
        tokio::spawn(async move {
            // What the last whole save left stored (settings and revision, no messages): later
            // whole saves need not read the thread back.
            let mut known = None;
            let mut revision = None;
            // `changed` reports a value sent just before the sender was dropped, then the end.
            while rx.changed().await.is_ok() {
                let (mut n, snapshot) = rx.borrow_and_update().clone();
                let Some(mut snapshot) = snapshot else {
                    written_tx.send_replace((n, revision));
                    continue;
                };
                let deadline = tokio::time::Instant::now() + RECOVER_FOR;
                let mut pause = std::time::Duration::from_millis(250);
                loop {
                    match save(&target, &mut known, snapshot.clone()).await {
                        Ok(Some(r)) => revision = Some(r),
                        Ok(None) => {}
                        Err(e @ HistoryError::Busy(_))
                            if tokio::time::Instant::now() + pause < deadline =>
                        {
                            tracing::warn!(thread = %target.thread, error = %e, "saving the conversation failed; trying again");
                            tokio::time::sleep(pause).await;
                            pause = (pause * 2).min(std::time::Duration::from_secs(5));
                            // A newer snapshot (even one sent as the run ended) replaces it.
                            let (m, newer) = rx.borrow_and_update().clone();
                            if let (true, Some(newer)) = (m > n, newer) {
                                (n, snapshot) = (m, newer);
                            }
                            continue;
                        }
                        Err(e) => {
                            tracing::warn!(thread = %target.thread, error = %e, "saving the conversation failed")
                        }
                    }
                    break;
                }
                written_tx.send_replace((n, revision));
            }
        });
        Self {
            tx,
            written,
            sent: AtomicU64::new(0),
        }
    }

    /// Queues `snapshot` as the conversation's newest state.
    pub(crate) fn save(&self, snapshot: Snapshot) {
        let n = self.sent.fetch_add(1, Ordering::SeqCst) + 1;
        self.tx.send_replace((n, Some(snapshot)));
    }

    /// Waits until the newest snapshot is written (so a reload right after the reply finds
    /// it); the revision the writer's last successful save left.
    pub(crate) async fn flush(&self) -> Option<u64> {
        let want = self.sent.load(Ordering::SeqCst);
        let mut written = self.written.clone();
        match written.wait_for(|w| w.0 >= want).await {
            Ok(w) => w.1,
            Err(_) => {
                tracing::warn!("the conversation writer stopped before the last save");
                None
            }
        }
    }
}

/// How long a save is tried again while the store is away.
const RECOVER_FOR: std::time::Duration = std::time::Duration::from_secs(600);

/// How many of the conversation's last messages a reply's save reads to find its place.
pub(crate) const TAIL: usize = 64;

/// Saves `snapshot` on top of `known` (what this writer saved last, for whole snapshots), else
/// of what is stored; the revision saved (`None` when the conversation kept changing).
async fn save(
    t: &Target,
    known: &mut Option<StoredConversation>,
    snapshot: Snapshot,
) -> Result<Option<u64>, crate::store::HistoryError> {
    if let Snapshot::Reply { request, reply } = &snapshot
        && let Some(revision) = save_on_tail(t, request, reply).await?
    {
        return Ok(Some(revision));
    }
    let (mut current, tries) = match (&snapshot, known.take()) {
        (Snapshot::Whole(_), Some(c)) => (Some(c), 2),
        // A thread this writer has not saved yet is saved as new (base revision 0), unread: a
        // store creates it when absent and answers the stored copy when present (the
        // conformance suite pins both), which the next try builds on. A new thread, which
        // is what most AI SDK requests start, then costs no read.
        (Snapshot::Whole(_), None) => (None, 3),
        _ => (t.store.get(&t.principal, &t.thread).await?, 2),
    };
    // Two tries on what is stored: a save that races another writer goes on top of what that
    // writer saved.
    for _ in 0..tries {
        let mut conversation = match &snapshot {
            Snapshot::Whole(messages) => next_copy(t, current.take(), messages.clone()),
            Snapshot::Reply { request, reply } => {
                let stored = current.take();
                let messages = match &stored {
                    Some(c) => place_reply(&c.messages, request, (**reply).clone()),
                    None => place_reply(&[], request, (**reply).clone()),
                };
                next_copy(t, stored, messages)
            }
        };
        let kept = std::mem::take(&mut conversation.messages);
        let header = conversation.clone();
        conversation.messages = kept;
        match t.store.save(&t.principal, conversation).await? {
            SaveOutcome::Saved { revision } => {
                if matches!(snapshot, Snapshot::Whole(_)) {
                    *known = Some(StoredConversation { revision, ..header });
                }
                announce(t, revision);
                return Ok(Some(revision));
            }
            SaveOutcome::Conflict(copy) => current = Some(*copy),
        }
    }
    tracing::warn!(thread = %t.thread, "the conversation kept changing under the save; skipped");
    Ok(None)
}

/// Saves `reply` in its place among the conversation's last [`TAIL`] messages, keeping the
/// ones before it; the revision saved, or `None` when the place is not among them, the
/// conversation is absent or the save met a conflict (the caller then reads it whole).
async fn save_on_tail(
    t: &Target,
    request: &[Message],
    reply: &Message,
) -> Result<Option<u64>, crate::store::HistoryError> {
    let Some((mut stored, before)) = t.store.get_tail(&t.principal, &t.thread, TAIL).await? else {
        return Ok(None);
    };
    let Some((keep, after)) = place_in(&stored.messages, request, reply) else {
        return Ok(None);
    };
    stored.messages.clear();
    let mut conversation = next_copy(t, Some(stored), after);
    conversation.kept = Some(before + keep as u64);
    match t.store.save(&t.principal, conversation).await? {
        SaveOutcome::Saved { revision } => {
            announce(t, revision);
            Ok(Some(revision))
        }
        SaveOutcome::Conflict(_) => Ok(None),
    }
}

/// What the saved reply of a run whose instance went away says it failed with.
#[cfg(shared_engine)]
pub(crate) const LOST: &str = "the instance running this reply went away";

/// Marks the saved reply `message_id` of `principal`'s conversation `thread` as cut off
/// ([`lmchatkit_protocol::ui_stream::mark_failed`]): its run was found running without its
/// instance, so nobody else will. Whether it was saved (a conversation or reply that is gone,
/// or one that kept changing, is left alone).
#[cfg(shared_engine)]
pub(crate) async fn mark_lost(
    store: &dyn HistoryStore,
    principal: &Principal,
    thread: &str,
    message_id: &str,
) -> Result<bool, crate::store::HistoryError> {
    for _ in 0..3 {
        let Some(mut c) = store.get(principal, thread).await? else {
            return Ok(false);
        };
        if !lmchatkit_protocol::ui_stream::mark_failed(&mut c.messages, message_id, LOST) {
            return Ok(false);
        }
        if let SaveOutcome::Saved { .. } = store.save(principal, c).await? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Tells the principal's tabs that the conversation was saved at `revision`.
fn announce(t: &Target, revision: u64) {
    if let Some(events) = &t.events {
        let saved = ServerEventType::ConversationSaved;
        events.conversation(&t.principal, saved, &t.thread, Some(revision));
    }
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
            params: t.params.clone(),
            messages,
            ..StoredConversation::default()
        },
    }
}

/// `stored` with `reply` in its place:
/// - where a message with the reply's id is (an earlier save of this reply), replaced;
/// - else after the request's last message (the one the reply answers, with the same id and
///   content: an edited one is not it): the assistant and tool
///   messages right after it are an earlier answer to it that this reply replaces
///   (regenerate, retry) and are dropped; what comes after those (a message another tab or
///   client appended meanwhile, or later turns an edit cut in the tab, which the tab's own
///   save then drops) is kept, and the reply goes at the end, so nothing is lost;
/// - else (the tab's own save has not landed) the request's messages then the reply.
pub(crate) fn place_reply(stored: &[Message], request: &[Message], reply: Message) -> Vec<Message> {
    match place_in(stored, request, &reply) {
        Some((keep, after)) => {
            let mut out = stored[..keep].to_vec();
            out.extend(after);
            out
        }
        None => {
            let mut out = request.to_vec();
            out.push(reply);
            out
        }
    }
}

/// Where [`place_reply`] puts `reply` in `stored` (all of the conversation or its last
/// messages): how many of `stored` stay before it, and what follows those (the reply, with the
/// messages it does not replace); `None` when neither an earlier save of it nor the message it
/// answers is in `stored`.
fn place_in(
    stored: &[Message],
    request: &[Message],
    reply: &Message,
) -> Option<(usize, Vec<Message>)> {
    if let Some(j) = stored
        .iter()
        .position(|m| m.id.is_some() && m.id == reply.id)
    {
        let mut after = vec![reply.clone()];
        after.extend_from_slice(&stored[j + 1..]);
        return Some((j, after));
    }
    // The message the reply answers, as the request has it: an edit keeps a message's id
    // and changes its content, and a reply to the edit does not answer the stored text (the
    // store keeps the edit as a new version, `store::tree`).
    let last = request.last().filter(|m| m.id.is_some())?;
    let i = stored
        .iter()
        .position(|m| m.id == last.id && m.content == last.content)?;
    let rest = &stored[i + 1..];
    let replaced = rest
        .iter()
        .take_while(|m| matches!(m.role, Role::Assistant | Role::Tool) && m.info.is_none())
        .count();
    let mut after = rest[replaced..].to_vec();
    after.push(reply.clone());
    Some((i + 1, after))
}

/// A new conversation's title: its first user message's title.
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
    use crate::store::{HistoryError, MemoryStore};

    fn target(store: Arc<dyn HistoryStore>) -> Target {
        Target {
            store,
            events: None,
            principal: Principal::new("alice"),
            thread: "t1".into(),
            model: "m".into(),
            persona_id: String::new(),
            params: Params::new(),
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
    async fn a_store_that_is_away_gets_the_newest_snapshot_once_it_is_back() {
        let counting = Arc::new(Counting::default());
        counting.away.store(true, Ordering::SeqCst);
        let store: Arc<dyn HistoryStore> = counting.clone();
        let saver = Saver::start(target(store.clone()));
        saver.save(Snapshot::Whole(vec![Message::user("a")]));
        tokio::time::sleep(Duration::from_millis(100)).await;
        saver.save(Snapshot::Whole(vec![
            Message::user("a"),
            Message::assistant("b"),
        ]));
        // The run ends (the saver dropped) while the store is still away.
        drop(saver);
        tokio::time::sleep(Duration::from_millis(600)).await;
        counting.away.store(false, Ordering::SeqCst);
        assert!(
            counting
                .inner
                .get(&Principal::new("alice"), "t1")
                .await
                .unwrap()
                .is_none(),
            "nothing could be saved while it was away"
        );
        for _ in 0..1000 {
            if let Some(c) = store.get(&Principal::new("alice"), "t1").await.unwrap()
                && c.messages.len() == 2
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the newest snapshot was never saved");
    }

    #[tokio::test]
    async fn the_last_snapshot_is_saved_after_the_saver_is_dropped() {
        let store: Arc<dyn HistoryStore> = Arc::new(MemoryStore::new());
        let saver = Saver::start(target(store.clone()));
        saver.save(Snapshot::Whole(vec![Message::user("Plan a trip\nto Oslo")]));
        saver.save(Snapshot::Whole(vec![
            Message::user("Plan a trip\nto Oslo"),
            Message::assistant("Sure"),
        ]));
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
        saver.save(Snapshot::Whole(vec![Message::user("a")]));
        saver.flush().await;
        // Another tab renames it: the writer's remembered revision is stale now.
        let patch = lmchatkit_protocol::ConversationPatch {
            title: "Renamed".into(),
            ..Default::default()
        };
        store.patch(&p, "t1", patch).await.unwrap();
        saver.save(Snapshot::Whole(vec![
            Message::user("a"),
            Message::assistant("b"),
        ]));
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
        saver.save(Snapshot::Whole(vec![
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
        ]));
        drop(saver);
        let c = eventually_saved(&store, 3).await;
        assert_eq!(c.title, "Renamed");
    }

    fn with_id(mut m: Message, id: &str) -> Message {
        m.id = Some(id.into());
        m
    }

    fn ids(messages: &[Message]) -> Vec<&str> {
        messages.iter().filter_map(|m| m.id.as_deref()).collect()
    }

    #[test]
    fn a_reply_goes_after_the_message_it_answers_and_replaces_its_earlier_save() {
        let card = with_id(Message::assistant(""), "card");
        let stored = vec![
            with_id(Message::user("a"), "u1"),
            card.clone(),
            with_id(Message::user("b"), "u2"),
        ];
        let request = vec![
            with_id(Message::user("a"), "u1"),
            with_id(Message::user("b"), "u2"),
        ];
        let placed = place_reply(&stored, &request, with_id(Message::assistant("x"), "r1"));
        // The info card the request left out stays where it was.
        assert_eq!(ids(&placed), ["u1", "card", "u2", "r1"]);
        let again = place_reply(&placed, &request, with_id(Message::assistant("xy"), "r1"));
        assert_eq!(ids(&again), ["u1", "card", "u2", "r1"]);
        assert_eq!(again[3].content.joined_text(""), "xy");
    }

    #[test]
    fn a_reply_replaces_the_earlier_answer_keeps_what_came_after_and_falls_back_to_the_request() {
        let stored = vec![
            with_id(Message::user("a"), "u1"),
            with_id(Message::assistant("old"), "r0"),
        ];
        // The user regenerated: the old answer goes (the store keeps it as a version).
        let request = vec![with_id(Message::user("a"), "u1")];
        let placed = place_reply(&stored, &request, with_id(Message::assistant("new"), "r1"));
        assert_eq!(ids(&placed), ["u1", "r1"]);
        // The user edited u1 and asked again: the reply follows the edit, not the stored text.
        let request = vec![with_id(Message::user("a2"), "u1")];
        let placed = place_reply(&stored, &request, with_id(Message::assistant("new"), "r1"));
        assert_eq!(ids(&placed), ["u1", "r1"]);
        assert_eq!(placed[0].content.joined_text(""), "a2");
        // Another client appended a message while the reply ran: it stays, the reply after it.
        let stored = vec![
            with_id(Message::user("a"), "u1"),
            with_id(Message::user("from elsewhere"), "x1"),
        ];
        let request = vec![with_id(Message::user("a"), "u1")];
        let placed = place_reply(&stored, &request, with_id(Message::assistant("new"), "r1"));
        assert_eq!(ids(&placed), ["u1", "x1", "r1"]);
        // Nothing of the request stored yet: the request, then the reply.
        let request = vec![
            with_id(Message::user("a"), "u1"),
            with_id(Message::user("b"), "u9"),
        ];
        let placed = place_reply(&stored, &request, with_id(Message::assistant("new"), "r1"));
        assert_eq!(ids(&placed), ["u1", "u9", "r1"]);
    }

    /// A memory store that counts whole reads, and answers every read and save
    /// [`HistoryError::Busy`] while `away` is set (a database restarting).
    #[derive(Default)]
    struct Counting {
        inner: MemoryStore,
        gets: AtomicU64,
        away: std::sync::atomic::AtomicBool,
    }

    impl Counting {
        fn here(&self) -> Result<(), HistoryError> {
            if self.away.load(Ordering::SeqCst) {
                return Err(HistoryError::Busy("restarting".into()));
            }
            Ok(())
        }
    }

    #[async_trait::async_trait]
    impl HistoryStore for Counting {
        async fn list(
            &self,
            p: &Principal,
        ) -> Result<Vec<lmchatkit_protocol::ConversationSummary>, HistoryError> {
            self.inner.list(p).await
        }
        async fn get(
            &self,
            p: &Principal,
            id: &str,
        ) -> Result<Option<StoredConversation>, HistoryError> {
            self.here()?;
            self.gets.fetch_add(1, Ordering::SeqCst);
            self.inner.get(p, id).await
        }
        async fn get_tail(
            &self,
            p: &Principal,
            id: &str,
            n: usize,
        ) -> Result<Option<(StoredConversation, u64)>, HistoryError> {
            self.here()?;
            self.inner.get_tail(p, id, n).await
        }
        async fn save(
            &self,
            p: &Principal,
            c: StoredConversation,
        ) -> Result<SaveOutcome, HistoryError> {
            self.here()?;
            self.inner.save(p, c).await
        }
        async fn patch(
            &self,
            p: &Principal,
            id: &str,
            patch: lmchatkit_protocol::ConversationPatch,
        ) -> Result<Option<u64>, HistoryError> {
            self.inner.patch(p, id, patch).await
        }
        async fn delete(&self, p: &Principal, id: &str) -> Result<bool, HistoryError> {
            self.inner.delete(p, id).await
        }
        async fn switch_branch(
            &self,
            p: &Principal,
            id: &str,
            node: u64,
        ) -> Result<Option<crate::store::BranchOutcome>, HistoryError> {
            self.inner.switch_branch(p, id, node).await
        }
        async fn delete_branch(
            &self,
            p: &Principal,
            id: &str,
            node: u64,
        ) -> Result<Option<crate::store::BranchOutcome>, HistoryError> {
            self.inner.delete_branch(p, id, node).await
        }
    }

    #[tokio::test]
    async fn a_reply_in_a_long_conversation_is_saved_from_its_tail_without_reading_the_rest() {
        let store = Arc::new(Counting::default());
        let p = Principal::new("alice");
        let history: Vec<Message> = (0..500)
            .map(|i| with_id(Message::user(format!("m{i}")), &format!("u{i}")))
            .collect();
        let existing = StoredConversation {
            id: "t1".into(),
            title: "Long".into(),
            messages: history.clone(),
            ..StoredConversation::default()
        };
        store.save(&p, existing).await.unwrap();
        let saver = Saver::start(target(store.clone()));
        let request = Arc::new(history);
        saver.save(Snapshot::Reply {
            request: request.clone(),
            reply: Box::new(with_id(Message::assistant("He"), "r1")),
        });
        assert_eq!(saver.flush().await, Some(2));
        saver.save(Snapshot::Reply {
            request: request.clone(),
            reply: Box::new(with_id(Message::assistant("Hello"), "r1")),
        });
        assert_eq!(saver.flush().await, Some(3));
        assert_eq!(store.gets.load(Ordering::SeqCst), 0, "no whole read");
        let c = store.get(&p, "t1").await.unwrap().unwrap();
        assert_eq!(c.messages.len(), 501);
        assert_eq!(c.messages[500].content.joined_text(""), "Hello");
        assert_eq!(c.title, "Long");

        // More than the tail came after the request meanwhile: the reply's place is further
        // back, found by reading the whole conversation, and it stays there.
        let mut grown = c.messages.clone();
        grown.extend(
            (0..TAIL + 10).map(|i| with_id(Message::user(format!("x{i}")), &format!("x{i}"))),
        );
        let moved = StoredConversation {
            messages: grown,
            ..c
        };
        store.save(&p, moved).await.unwrap();
        let gets = store.gets.load(Ordering::SeqCst);
        saver.save(Snapshot::Reply {
            request,
            reply: Box::new(with_id(Message::assistant("Hello there"), "r1")),
        });
        assert!(saver.flush().await.is_some());
        assert_eq!(
            store.gets.load(Ordering::SeqCst) - gets,
            1,
            "the writer read it whole"
        );
        let c = store.get(&p, "t1").await.unwrap().unwrap();
        assert_eq!(c.messages.len(), 501 + TAIL + 10);
        assert_eq!(c.messages[500].content.joined_text(""), "Hello there");
        assert_eq!(c.messages[500].id.as_deref(), Some("r1"));
    }

    #[tokio::test]
    async fn a_reply_snapshot_creates_the_conversation_and_reports_its_revision() {
        let store: Arc<dyn HistoryStore> = Arc::new(MemoryStore::new());
        let saver = Saver::start(target(store.clone()));
        let request = Arc::new(vec![with_id(Message::user("Hi there"), "u1")]);
        saver.save(Snapshot::Reply {
            request: request.clone(),
            reply: Box::new(with_id(Message::assistant("He"), "r1")),
        });
        assert_eq!(saver.flush().await, Some(1));
        saver.save(Snapshot::Reply {
            request,
            reply: Box::new(with_id(Message::assistant("Hello"), "r1")),
        });
        assert_eq!(saver.flush().await, Some(2));
        let c = store
            .get(&Principal::new("alice"), "t1")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(c.title, "Hi there");
        assert_eq!(ids(&c.messages), ["u1", "r1"]);
        assert_eq!(c.messages[1].content.joined_text(""), "Hello");
    }
}
