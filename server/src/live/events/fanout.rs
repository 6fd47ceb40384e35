//! `/api/events` across instances (a shared engine): every instance publishes its events to
//! one log in the engine and reads them all back from it, so a save through instance B reaches
//! the tabs of the same principal on instance A. The logic is the same for both engines; what
//! each does its own way is [`EventLog`] (Redis in `redis`, PostgreSQL in
//! `postgres`).
//!
//! Decisions:
//! - **Ids from the engine, whole numbers**, unique and increasing across instances and
//!   contiguous in the log, so the SSE `id:` stays a plain number as in-process. A fresh
//!   counter starts at the wall clock (ms), as in-process ids do, so ids keep increasing when
//!   the engine lost its data.
//! - **A capped log** (about [`DEFAULT_STREAM_LEN`] events by default) holds what reconnecting
//!   tabs replay: `Last-Event-ID` replay reads the log from the id after it; when the log no
//!   longer starts at that id (trimmed), or the id is beyond the counter, the tab gets
//!   `resync`, as in-process. Unlike in-process, the replay budget is one log shared by every
//!   principal rather than a buffer per principal; it is larger by as much, and a burst of one
//!   user can at worst make another user's reconnecting tab `resync` (refetch its lists), never
//!   lose an event silently. Live delivery stays per subscriber: another user's burst never
//!   makes a tab lag.
//! - **One reader per instance**, waiting on the engine (a blocking read, or a notification)
//!   and handing each entry to this instance's subscribers with the usual per-subscriber
//!   queues and principal scoping. Catalog events go through the log too, so every instance's
//!   tabs hear them.
//! - **Publishing** is queued (bounded, [`QUEUE`] events) to one task per instance, so events
//!   of one instance keep their order and a sender never waits on the engine; this instance's
//!   own tabs get them back through the reader, like every other instance's.
//! - **Engine trouble never loses an event silently**: an event that could not be published, a
//!   full queue, or a gap the reader notices (it fell further behind than the log holds) makes
//!   every tab of the instance `resync`. The reader reconnects with a backoff and carries on
//!   from the last id it delivered. A subscriber that arrives before the reader has found the
//!   end of the log waits for it.
//! - **Stops with its broadcaster**: the reader and the publisher end when the last clone of
//!   the [`EventBroadcaster`](super::EventBroadcaster) is dropped.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use lmchatkit_protocol::{ServerEvent, ServerEventType};
use tokio::sync::{mpsc, watch};

use super::{Feed, State, now_ms};
use crate::host::Principal;
use crate::live::EngineError;

/// How many events the log keeps by default (for every principal together).
pub const DEFAULT_STREAM_LEN: usize = 10_000;

/// How many events wait to be published at most; past it, events are dropped and this
/// instance's tabs resync.
pub(super) const QUEUE: usize = 4096;

/// How many entries one read takes at most.
pub(super) const READ_COUNT: usize = 512;

/// How long one read waits before it asks again (and notices a stop).
pub(super) const BLOCK: Duration = Duration::from_secs(5);

/// The longest wait between reconnection attempts of the reader.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The scope field of an event for everyone.
const EVERYONE: &str = "*";

/// One entry of the log as stored: its id, its scope (`*` or `u:{principal}`), the event JSON.
pub(super) struct Entry {
    pub(super) id: u64,
    pub(super) scope: String,
    pub(super) event: String,
}

/// What an engine does for events.
#[async_trait]
pub(super) trait EventLog: Send + Sync + 'static {
    /// Appends an event with the next id (the counter starts at `now_ms` when missing), trimming
    /// the log to about `len` entries; its id.
    async fn publish(
        &self,
        now_ms: u64,
        len: usize,
        scope: &str,
        event: &str,
    ) -> Result<u64, EngineError>;
    /// The entries with ids in `from..=to`, at most `count`, in order.
    async fn range(&self, from: u64, to: u64, count: u64) -> Result<Vec<Entry>, EngineError>;
    /// The counter: the id of the newest event published (`None` when none ever was).
    async fn seq(&self) -> Result<Option<u64>, EngineError>;
    /// A reader for the instance's one reader task.
    async fn reader(&self) -> Result<Box<dyn EventReader>, EngineError>;
}

/// The reader's view of the log.
#[async_trait]
pub(super) trait EventReader: Send {
    /// The id of the last entry in the log (`None` when it is empty).
    async fn tail(&mut self) -> Result<Option<u64>, EngineError>;
    /// The entries after `pos` (at most [`READ_COUNT`]), waiting up to [`BLOCK`] for one.
    async fn after(&mut self, pos: u64) -> Result<Vec<Entry>, EngineError>;
}

/// One event on its way to the engine.
struct Outgoing {
    scope: String,
    event: String,
}

/// The shared side of a broadcaster.
pub(super) struct Fanout {
    log: Arc<dyn EventLog>,
    stream_len: usize,
    out: mpsc::Sender<Outgoing>,
    /// What the tasks take when they start (they start in the first Tokio context met).
    pending: Mutex<Option<Pending>>,
    /// True once the reader knows where the log ends.
    ready: watch::Receiver<bool>,
    /// Dropped with the fanout: the reader then ends.
    _stop: watch::Sender<()>,
}

struct Pending {
    rx: mpsc::Receiver<Outgoing>,
    ready: watch::Sender<bool>,
    stop: watch::Receiver<()>,
}

/// What a `Last-Event-ID` finds in the log.
enum Replay {
    /// What the client missed (its own and everyone's events).
    Events(VecDeque<(u64, ServerEvent)>),
    /// An id the log has but this instance's reader has not delivered yet.
    Ahead,
    /// No longer (or never) in the log: the client resyncs.
    Lost,
}

impl Fanout {
    pub(super) fn new(log: Arc<dyn EventLog>, stream_len: usize) -> Self {
        let (out, rx) = mpsc::channel(QUEUE);
        let (ready_tx, ready) = watch::channel(false);
        let (stop_tx, stop) = watch::channel(());
        Self {
            log,
            stream_len: stream_len.max(1),
            out,
            pending: Mutex::new(Some(Pending {
                rx,
                ready: ready_tx,
                stop,
            })),
            ready,
            _stop: stop_tx,
        }
    }

    /// Starts the publisher and the reader, once, when called within a Tokio runtime.
    pub(super) fn start(&self, local: &Arc<Mutex<State>>) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        if pending.is_none() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let Some(p) = pending.take() else { return };
        rt.spawn(publish(
            self.log.clone(),
            self.stream_len,
            p.rx,
            local.clone(),
        ));
        rt.spawn(read(self.log.clone(), local.clone(), p.ready, p.stop));
    }

    /// Queues `event` for the engine.
    pub(super) fn publish(
        &self,
        local: &Arc<Mutex<State>>,
        scope: Option<&Principal>,
        event: ServerEvent,
    ) {
        self.start(local);
        let Ok(event) = serde_json::to_string(&event) else {
            return;
        };
        let scope = match scope {
            None => EVERYONE.to_owned(),
            Some(p) => format!("u:{}", p.id()),
        };
        if self.out.try_send(Outgoing { scope, event }).is_err() {
            tracing::warn!(
                "the event queue to the shared engine is full; this instance's tabs resync"
            );
            lock(local).lag_everyone();
        }
    }

    /// Waits until the reader knows where the log ends (at once after the start).
    pub(super) async fn ready(&self, local: &Arc<Mutex<State>>) {
        self.start(local);
        let mut ready = self.ready.clone();
        // An error means the reader ended (the broadcaster is going away): carry on.
        let _ = ready.wait_for(|r| *r).await;
    }

    /// A live queue registered where the reader stands, and that id; `None` until the reader
    /// knows where the log ends.
    pub(super) fn register_if_ready(
        &self,
        local: &Arc<Mutex<State>>,
        principal: &Principal,
    ) -> Option<(Feed, u64)> {
        if !*self.ready.borrow() {
            return None;
        }
        let mut st = lock(local);
        Some((st.register_live(principal), st.next_id.saturating_sub(1)))
    }

    /// A subscription: a live queue registered where the reader stands (now when `now` has
    /// one), the replay for `last` from the log, and the newest id the live queue must skip.
    pub(super) async fn open(
        &self,
        local: &Arc<Mutex<State>>,
        principal: &Principal,
        last: Option<u64>,
        now: Option<(Feed, u64)>,
    ) -> (VecDeque<(u64, ServerEvent)>, Feed, u64) {
        let (feed, newest) = match now {
            Some(registered) => registered,
            None => {
                self.ready(local).await;
                let mut st = lock(local);
                (st.register_live(principal), st.next_id.saturating_sub(1))
            }
        };
        let Some(last) = last.filter(|&l| l != newest) else {
            return (VecDeque::new(), feed, 0);
        };
        let resync = || VecDeque::from([(newest, ServerEvent::new(ServerEventType::Resync))]);
        match self.replay(principal, last, newest).await {
            Ok(Replay::Events(missed)) => (missed, feed, 0),
            Ok(Replay::Ahead) => (VecDeque::new(), feed, last),
            Ok(Replay::Lost) => (resync(), feed, 0),
            Err(e) => {
                tracing::warn!(error = %e, "reading the event log for a replay failed; resync");
                (resync(), feed, 0)
            }
        }
    }

    /// What `principal` missed after `last`, up to `newest` (where the reader stands).
    async fn replay(
        &self,
        principal: &Principal,
        last: u64,
        newest: u64,
    ) -> Result<Replay, EngineError> {
        if last > newest {
            return Ok(match self.log.seq().await? {
                Some(s) if last <= s => Replay::Ahead,
                _ => Replay::Lost,
            });
        }
        let want = newest - last;
        // The log keeps a little more than asked, never this much.
        if want > 2 * self.stream_len as u64 + 1_000 {
            return Ok(Replay::Lost);
        }
        let entries = self.log.range(last + 1, newest, want).await?;
        // Ids are contiguous in the log: it must start right after `last`.
        if entries.first().map(|e| e.id) != Some(last + 1) {
            return Ok(Replay::Lost);
        }
        let missed = entries
            .iter()
            .filter_map(decode)
            .filter(|(_, scope, _)| scope.as_ref().is_none_or(|p| p == principal))
            .map(|(id, _, event)| (id, event))
            .collect();
        Ok(Replay::Events(missed))
    }
}

fn lock(local: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    local.lock().unwrap_or_else(|p| p.into_inner())
}

/// An entry as `(id, scope, event)`; `None` for one this version cannot read (skipped).
fn decode(entry: &Entry) -> Option<(u64, Option<Principal>, ServerEvent)> {
    let scope = match entry.scope.as_str() {
        EVERYONE => None,
        s => Some(Principal::new(s.strip_prefix("u:")?)),
    };
    match serde_json::from_str(&entry.event) {
        Ok(event) => Some((entry.id, scope, event)),
        Err(e) => {
            tracing::warn!(id = entry.id, error = %e, "an event in the log does not parse; skipped");
            None
        }
    }
}

/// The publisher: one engine call per event, in order.
async fn publish(
    log: Arc<dyn EventLog>,
    stream_len: usize,
    mut rx: mpsc::Receiver<Outgoing>,
    local: Arc<Mutex<State>>,
) {
    while let Some(o) = rx.recv().await {
        if let Err(e) = log.publish(now_ms(), stream_len, &o.scope, &o.event).await {
            tracing::warn!(error = %e, "publishing an event to the shared engine failed; this instance's tabs resync");
            lock(&local).lag_everyone();
        }
    }
}

/// Where the reader stands.
struct Reader {
    log: Arc<dyn EventLog>,
    local: Arc<Mutex<State>>,
    reader: Option<Box<dyn EventReader>>,
    /// The id of the last entry delivered (`None`: not known yet).
    pos: Option<u64>,
    /// False while `pos` is not an entry of the log (it was empty), so the next entry cannot
    /// be checked for a gap.
    contiguous: bool,
    ready: watch::Sender<bool>,
}

/// The reader: finds the end of the log, then follows it, until the broadcaster is gone.
async fn read(
    log: Arc<dyn EventLog>,
    local: Arc<Mutex<State>>,
    ready: watch::Sender<bool>,
    mut stop: watch::Receiver<()>,
) {
    let mut r = Reader {
        log,
        local,
        reader: None,
        pos: None,
        contiguous: false,
        ready,
    };
    let mut backoff = Duration::from_millis(100);
    loop {
        let step = tokio::select! {
            _ = stop.changed() => return,
            step = r.step() => step,
        };
        match step {
            Ok(()) => backoff = Duration::from_millis(100),
            Err(e) => {
                tracing::warn!(error = %e, "reading the event log from the shared engine failed; retrying");
                r.reader = None;
                tokio::select! {
                    _ = stop.changed() => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

impl Reader {
    async fn step(&mut self) -> Result<(), EngineError> {
        let reader = match &mut self.reader {
            Some(r) => r,
            None => self.reader.insert(self.log.reader().await?),
        };
        let pos = match self.pos {
            Some(p) => p,
            None => {
                let end = reader.tail().await?;
                self.contiguous = end.is_some();
                let p = end.unwrap_or(0);
                lock(&self.local).next_id = p + 1;
                self.pos = Some(p);
                self.ready.send_replace(true);
                p
            }
        };
        let entries = reader.after(pos).await?;
        let mut st = lock(&self.local);
        for entry in &entries {
            let at = self.pos.unwrap_or(0);
            if entry.id <= at {
                continue;
            }
            if self.contiguous && entry.id != at + 1 {
                tracing::warn!(
                    from = at,
                    to = entry.id,
                    "events were missed (trimmed from the log); this instance's tabs resync"
                );
                st.lag_everyone();
            }
            self.contiguous = true;
            self.pos = Some(entry.id);
            st.next_id = entry.id + 1;
            if let Some((id, scope, event)) = decode(entry) {
                st.deliver(id, scope.as_ref(), &event);
            }
        }
        Ok(())
    }
}
