//! `/api/events` across instances (feature `redis`): every instance publishes its events to one
//! Redis stream and reads them all back from it, so a save through instance B reaches the tabs
//! of the same principal on instance A.
//!
//! Decisions:
//! - **Ids from Redis, whole numbers.** A Lua script `INCR`s the counter `{prefix}events:seq`
//!   and `XADD`s the event to the stream `{prefix}events:stream` with the explicit id `0-{n}`,
//!   in one step, so ids are unique and increasing across instances, contiguous in the stream,
//!   and the SSE `id:` stays a plain number as in-process. A fresh counter starts at the wall
//!   clock (ms), as in-process ids do, so ids keep increasing when Redis lost its data.
//! - **A capped stream** (`MAXLEN ~`, [`DEFAULT_STREAM_LEN`] events by default) holds what
//!   reconnecting tabs replay: `Last-Event-ID` replay is an `XRANGE` from the id after it; when
//!   the stream no longer starts at that id (trimmed), or the id is beyond the counter, the tab
//!   gets `resync`, as in-process. Unlike in-process, the replay budget is one stream shared by
//!   every principal rather than a buffer per principal; it is larger by as much, and a burst
//!   of one user can at worst make another user's reconnecting tab `resync` (refetch its
//!   lists), never lose an event silently. Live delivery stays per subscriber: another user's
//!   burst never makes a tab lag.
//! - **One reader per instance**: a task doing a blocking `XREAD` on a connection of its own
//!   (never the shared one), handing each entry to this instance's subscribers with the usual
//!   per-subscriber queues and principal scoping. Catalog events go through the stream too, so
//!   every instance's tabs hear them.
//! - **Publishing** is queued (bounded, [`QUEUE`] events) to one task per instance, so events
//!   of one instance keep their order and a sender never waits on Redis; this instance's own
//!   tabs get them back through the reader, like every other instance's.
//! - **Redis trouble never loses an event silently**: an event that could not be published, a
//!   full queue, or a gap the reader notices (it fell further behind than the stream holds)
//!   makes every tab of the instance `resync`. The reader reconnects with a backoff and
//!   carries on from the last id it delivered. A subscriber that arrives before the reader has
//!   found the end of the stream waits for it.
//! - **Stops with its broadcaster**: the reader and the publisher end when the last clone of
//!   the [`EventBroadcaster`](super::EventBroadcaster) is dropped.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lmchatkit_protocol::{ServerEvent, ServerEventType};
use redis::AsyncCommands;
use redis::streams::{StreamId, StreamRangeReply, StreamReadReply};
use tokio::sync::{mpsc, watch};

use super::{Feed, State, now_ms};
use crate::engine::{EngineError, Redis};
use crate::host::Principal;

/// How many events the stream keeps by default (for every principal together).
pub const DEFAULT_STREAM_LEN: usize = 10_000;

/// How many events wait to be published at most; past it, events are dropped and this
/// instance's tabs resync.
pub(super) const QUEUE: usize = 4096;

/// How long one `XREAD` blocks before it asks again (and notices a stop).
const BLOCK_MS: u64 = 5_000;

/// The longest wait between reconnection attempts of the reader.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// INCR the counter (started at the wall clock when missing) and XADD the event as `0-{n}`.
/// KEYS: counter, stream. ARGV: now (ms), stream length, scope, event JSON.
const PUBLISH: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SET', KEYS[1], ARGV[1])
end
local n = redis.call('INCR', KEYS[1])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], string.format('0-%d', n), 's', ARGV[3], 'e', ARGV[4])
return n
";

/// The scope field of an event for everyone.
const EVERYONE: &str = "*";

/// One event on its way to Redis.
struct Outgoing {
    scope: String,
    event: String,
}

/// The keys of the stream and its counter.
#[derive(Clone)]
struct Keys {
    seq: String,
    stream: String,
}

/// The Redis side of a broadcaster.
pub(super) struct Fanout {
    redis: Redis,
    keys: Keys,
    stream_len: usize,
    out: mpsc::Sender<Outgoing>,
    /// What the tasks take when they start (they start in the first Tokio context met).
    pending: Mutex<Option<Pending>>,
    /// True once the reader knows where the stream ends.
    ready: watch::Receiver<bool>,
    /// Dropped with the fanout: the reader then ends.
    _stop: watch::Sender<()>,
}

struct Pending {
    rx: mpsc::Receiver<Outgoing>,
    ready: watch::Sender<bool>,
    stop: watch::Receiver<()>,
}

/// What a `Last-Event-ID` finds in the stream.
enum Replay {
    /// What the client missed (its own and everyone's events).
    Events(VecDeque<(u64, ServerEvent)>),
    /// An id the stream has but this instance's reader has not delivered yet.
    Ahead,
    /// No longer (or never) in the stream: the client resyncs.
    Lost,
}

impl Fanout {
    pub(super) fn new(redis: Redis, stream_len: usize) -> Self {
        let (out, rx) = mpsc::channel(QUEUE);
        let (ready_tx, ready) = watch::channel(false);
        let (stop_tx, stop) = watch::channel(());
        Self {
            keys: Keys {
                seq: redis.key("events:seq"),
                stream: redis.key("events:stream"),
            },
            redis,
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
            self.redis.clone(),
            self.keys.clone(),
            self.stream_len,
            p.rx,
            local.clone(),
        ));
        rt.spawn(read(
            self.redis.clone(),
            self.keys.clone(),
            local.clone(),
            p.ready,
            p.stop,
        ));
    }

    /// Queues `event` for Redis.
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
            tracing::warn!("the event queue to Redis is full; this instance's tabs resync");
            lock(local).lag_everyone();
        }
    }

    /// Waits until the reader knows where the stream ends (at once after the start).
    pub(super) async fn ready(&self, local: &Arc<Mutex<State>>) {
        self.start(local);
        let mut ready = self.ready.clone();
        // An error means the reader ended (the broadcaster is going away): carry on.
        let _ = ready.wait_for(|r| *r).await;
    }

    /// A live queue registered where the reader stands, and that id; `None` until the reader
    /// knows where the stream ends.
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
    /// one), the replay for `last` from the stream, and the newest id the live queue must
    /// skip.
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
                tracing::warn!(error = %e, "reading the event stream for a replay failed; resync");
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
        let mut conn = self.redis.conn();
        if last > newest {
            let seq: Option<u64> = conn.get(&self.keys.seq).await?;
            return Ok(match seq {
                Some(s) if last <= s => Replay::Ahead,
                _ => Replay::Lost,
            });
        }
        let want = newest - last;
        // `MAXLEN ~` keeps a little more than asked, never this much.
        if want > 2 * self.stream_len as u64 + 1_000 {
            return Ok(Replay::Lost);
        }
        let reply: StreamRangeReply = redis::cmd("XRANGE")
            .arg(&self.keys.stream)
            .arg(format!("0-{}", last + 1))
            .arg(format!("0-{newest}"))
            .arg("COUNT")
            .arg(want)
            .query_async(&mut conn)
            .await?;
        // Ids are contiguous in the stream: it must start right after `last`.
        if reply.ids.first().and_then(|e| entry_id(&e.id)) != Some(last + 1) {
            return Ok(Replay::Lost);
        }
        let missed = reply
            .ids
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

/// `0-{n}` → `n`.
fn entry_id(id: &str) -> Option<u64> {
    match id.split_once('-') {
        Some(("0", n)) => n.parse().ok(),
        _ => None,
    }
}

/// An entry as `(id, scope, event)`; `None` for one this version cannot read (skipped).
fn decode(entry: &StreamId) -> Option<(u64, Option<Principal>, ServerEvent)> {
    let id = entry_id(&entry.id)?;
    let scope: String = entry.get("s")?;
    let event: String = entry.get("e")?;
    let scope = match scope.as_str() {
        EVERYONE => None,
        s => Some(Principal::new(s.strip_prefix("u:")?)),
    };
    match serde_json::from_str(&event) {
        Ok(event) => Some((id, scope, event)),
        Err(e) => {
            tracing::warn!(id, error = %e, "an event in the stream does not parse; skipped");
            None
        }
    }
}

/// The publisher: one script call per event, in order.
async fn publish(
    redis: Redis,
    keys: Keys,
    stream_len: usize,
    mut rx: mpsc::Receiver<Outgoing>,
    local: Arc<Mutex<State>>,
) {
    let script = redis::Script::new(PUBLISH);
    let mut conn = redis.conn();
    while let Some(o) = rx.recv().await {
        let sent = script
            .key(&keys.seq)
            .key(&keys.stream)
            .arg(now_ms())
            .arg(stream_len)
            .arg(&o.scope)
            .arg(&o.event)
            .invoke_async::<u64>(&mut conn)
            .await;
        if let Err(e) = sent {
            tracing::warn!(error = %EngineError::from(e), "publishing an event to Redis failed; this instance's tabs resync");
            lock(&local).lag_everyone();
        }
    }
}

/// Where the reader stands.
struct Reader {
    redis: Redis,
    keys: Keys,
    local: Arc<Mutex<State>>,
    conn: Option<redis::aio::MultiplexedConnection>,
    /// The id of the last entry delivered (`None`: not known yet).
    pos: Option<u64>,
    /// False while `pos` is not an entry of the stream (it was empty), so the next entry
    /// cannot be checked for a gap.
    contiguous: bool,
    ready: watch::Sender<bool>,
}

/// The reader: finds the end of the stream, then follows it, until the broadcaster is gone.
async fn read(
    redis: Redis,
    keys: Keys,
    local: Arc<Mutex<State>>,
    ready: watch::Sender<bool>,
    mut stop: watch::Receiver<()>,
) {
    let mut r = Reader {
        redis,
        keys,
        local,
        conn: None,
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
                tracing::warn!(error = %e, "reading the event stream from Redis failed; retrying");
                r.conn = None;
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
        let conn = match &mut self.conn {
            Some(c) => c,
            None => self.conn.insert(self.redis.dedicated().await?),
        };
        let pos = match self.pos {
            Some(p) => p,
            None => {
                let tail: StreamRangeReply = redis::cmd("XREVRANGE")
                    .arg(&self.keys.stream)
                    .arg("+")
                    .arg("-")
                    .arg("COUNT")
                    .arg(1)
                    .query_async(conn)
                    .await?;
                let end = tail.ids.first().and_then(|e| entry_id(&e.id));
                self.contiguous = end.is_some();
                let p = end.unwrap_or(0);
                lock(&self.local).next_id = p + 1;
                self.pos = Some(p);
                self.ready.send_replace(true);
                p
            }
        };
        let reply: Option<StreamReadReply> = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(512)
            .arg("BLOCK")
            .arg(BLOCK_MS)
            .arg("STREAMS")
            .arg(&self.keys.stream)
            .arg(format!("0-{pos}"))
            .query_async(conn)
            .await?;
        let Some(reply) = reply else { return Ok(()) };
        let mut st = lock(&self.local);
        for entry in reply.keys.iter().flat_map(|k| k.ids.iter()) {
            let Some(id) = entry_id(&entry.id) else {
                continue;
            };
            let at = self.pos.unwrap_or(0);
            if id <= at {
                continue;
            }
            if self.contiguous && id != at + 1 {
                tracing::warn!(
                    from = at,
                    to = id,
                    "events were missed (trimmed from the stream); this instance's tabs resync"
                );
                st.lag_everyone();
            }
            self.contiguous = true;
            self.pos = Some(id);
            st.next_id = id + 1;
            if let Some((id, scope, event)) = decode(entry) {
                st.deliver(id, scope.as_ref(), &event);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_ids_are_whole_numbers_in_the_zero_millisecond_slot() {
        assert_eq!(entry_id("0-42"), Some(42));
        assert_eq!(entry_id("1-42"), None);
        assert_eq!(entry_id("0-x"), None);
        assert_eq!(entry_id("42"), None);
    }
}
