//! The event broadcaster behind `GET {prefix}/api/events`: conversation events for one
//! principal, catalog events (`tools_changed`, …) for everyone, every event numbered, and a
//! bounded replay buffer so a reconnecting tab (`Last-Event-ID`) misses nothing — or is told
//! to `resync` when it missed more than the buffer holds. A slow subscriber never blocks the
//! sender or other subscribers: it falls behind, and then gets `resync`.
//!
//! Decisions:
//! - **In-process by default** ([`EventBroadcaster::new`]): ids come from a counter started at
//!   the wall clock (ms), replay from per-principal buffers in this process's memory.
//! - **Across instances through a shared engine** ([`EventBroadcaster::over_engine`], Redis or
//!   PostgreSQL): every event goes through one capped log every instance reads, so a save
//!   through instance B reaches a tab of the same principal on instance A; ids, replay and
//!   `resync` come from the log (see the `fanout` module's decisions). Delivery to the
//!   subscribers of one instance is the same in both: a bounded queue per subscriber, scoped
//!   by principal.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use futures_util::{Stream, StreamExt};
use lmchatkit_protocol::{ServerEvent, ServerEventType};
use tokio::sync::mpsc;

use crate::host::Principal;

#[cfg(shared_engine)]
mod fanout;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;

#[cfg(shared_engine)]
pub use fanout::DEFAULT_STREAM_LEN;

/// How many principals keep a replay buffer; past it the one quiet the longest loses its
/// buffer (its tabs resync on their next reconnect).
const MAX_PRINCIPALS: usize = 4096;

#[derive(Debug, Clone)]
struct Stamped {
    id: u64,
    event: ServerEvent,
}

/// The replay buffer of one scope (everyone, or one principal).
#[derive(Default)]
struct Ring {
    events: VecDeque<Stamped>,
    /// The newest id pushed out of this buffer (0: none).
    evicted_up_to: u64,
}

impl Ring {
    fn push(&mut self, s: Stamped, capacity: usize) {
        if self.events.len() == capacity
            && let Some(old) = self.events.pop_front()
        {
            self.evicted_up_to = old.id;
        }
        self.events.push_back(s);
    }

    fn newest(&self) -> u64 {
        self.events.back().map_or(self.evicted_up_to, |s| s.id)
    }
}

/// One open subscription: its own bounded queue, so nobody else's events can push it behind.
struct Sub {
    principal: Principal,
    tx: mpsc::Sender<(u64, ServerEvent)>,
    lagged: Arc<AtomicBool>,
}

struct State {
    next_id: u64,
    capacity: usize,
    everyone: Ring,
    principals: HashMap<Principal, Ring>,
    /// The newest id held by a principal buffer that was dropped (see [`MAX_PRINCIPALS`]).
    forgotten_up_to: u64,
    subs: Vec<Sub>,
}

impl State {
    /// Hands `(id, event)` to every open subscription in `scope` (everyone when `None`). A
    /// full queue marks its subscriber lagged (it resyncs); a closed one is gone.
    fn deliver(&mut self, id: u64, scope: Option<&Principal>, event: &ServerEvent) {
        self.subs.retain(|sub| {
            if scope.is_some_and(|p| *p != sub.principal) {
                return !sub.tx.is_closed();
            }
            match sub.tx.try_send((id, event.clone())) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    sub.lagged.store(true, Ordering::Release);
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        });
    }

    /// Makes every open subscription resync (something may have been missed).
    #[cfg_attr(not(shared_engine), allow(dead_code))]
    fn lag_everyone(&mut self) {
        for sub in self.subs.drain(..) {
            sub.lagged.store(true, Ordering::Release);
        }
    }

    /// A live queue for `principal`, from the next event on.
    fn register_live(&mut self, principal: &Principal) -> Feed {
        let (tx, rx) = mpsc::channel(self.capacity);
        let lagged = Arc::new(AtomicBool::new(false));
        self.subs.push(Sub {
            principal: principal.clone(),
            tx,
            lagged: lagged.clone(),
        });
        Feed { rx, lagged }
    }
}

/// Fans events out to `/api/events` subscribers. Cheap to clone; clones share subscribers.
///
/// Each principal has its own replay buffer and each subscription its own queue, both of
/// `capacity` events: one user's saves neither push another's events out of replay nor make
/// another's tabs resync. Catalog events for everyone have a buffer of their own.
///
/// ```
/// use lmchatkit::{events::EventBroadcaster, Principal};
/// use lmchatkit::protocol::{ServerEvent, ServerEventType};
///
/// let events = EventBroadcaster::new();
/// events.broadcast(ServerEvent::new(ServerEventType::ToolsChanged));
/// events.broadcast_to(&Principal::new("alice"),
///     ServerEvent::conversation(ServerEventType::ConversationSaved, "c-1", Some(2)));
/// ```
#[derive(Clone)]
pub struct EventBroadcaster {
    state: Arc<Mutex<State>>,
    /// The shared engine's log events go through (`None`: in-process).
    #[cfg(shared_engine)]
    shared: Option<Arc<fanout::Fanout>>,
}

impl Default for EventBroadcaster {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for EventBroadcaster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBroadcaster").finish_non_exhaustive()
    }
}

impl EventBroadcaster {
    /// A broadcaster replaying up to 256 events per principal.
    pub fn new() -> Self {
        Self::with_capacity(256)
    }

    /// A broadcaster replaying up to `capacity` events per principal (and as many catalog
    /// events); also each subscriber's backlog.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            state: Self::local_state(capacity),
            #[cfg(shared_engine)]
            shared: None,
        }
    }

    /// A broadcaster whose events go through Redis, so every instance sharing `redis` (and
    /// its key prefix) delivers them to its subscribers (see [`over_engine`](Self::over_engine)).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), lmchatkit::live::EngineError> {
    /// let redis = lmchatkit::live::Redis::connect("redis://127.0.0.1:6379").await?;
    /// let events = lmchatkit::live::events::EventBroadcaster::over_redis(redis);
    /// # let _ = events; Ok(()) }
    /// ```
    #[cfg(feature = "redis")]
    pub fn over_redis(redis: crate::live::Redis) -> Self {
        Self::over_engine(redis)
    }

    /// Like [`over_redis`](Self::over_redis), with `capacity` events per subscriber's queue
    /// and a stream of about `stream_len` events (for every principal together).
    #[cfg(feature = "redis")]
    pub fn over_redis_with(redis: crate::live::Redis, capacity: usize, stream_len: usize) -> Self {
        Self::over_engine_with(redis, capacity, stream_len)
    }

    /// A broadcaster whose events go through a shared engine (Redis or PostgreSQL), so every
    /// instance sharing it delivers them to its subscribers: 256 events per subscriber's
    /// queue, a log of [`DEFAULT_STREAM_LEN`] events for replay. Its reader and publisher
    /// start at once within a Tokio runtime (else at its first use within one).
    #[cfg(shared_engine)]
    pub fn over_engine(engine: impl Into<crate::live::SharedEngine>) -> Self {
        Self::over_engine_with(engine, 256, DEFAULT_STREAM_LEN)
    }

    /// Like [`over_engine`](Self::over_engine), with `capacity` events per subscriber's queue
    /// and a log of about `stream_len` events (for every principal together).
    #[cfg(shared_engine)]
    pub fn over_engine_with(
        engine: impl Into<crate::live::SharedEngine>,
        capacity: usize,
        stream_len: usize,
    ) -> Self {
        use crate::live::SharedEngine;
        let log: Arc<dyn fanout::EventLog> = match engine.into() {
            #[cfg(feature = "redis")]
            SharedEngine::Redis(r) => Arc::new(redis::RedisEvents::new(r)),
            #[cfg(feature = "postgres")]
            SharedEngine::Postgres(p) => Arc::new(postgres::PostgresEvents::new(p)),
        };
        let state = Self::local_state(capacity);
        let fanout = Arc::new(fanout::Fanout::new(log, stream_len));
        fanout.start(&state);
        Self {
            state,
            shared: Some(fanout),
        }
    }

    /// True when events go through a shared engine ([`over_engine`](Self::over_engine)).
    pub fn is_shared(&self) -> bool {
        #[cfg(shared_engine)]
        if self.shared.is_some() {
            return true;
        }
        false
    }

    fn local_state(capacity: usize) -> Arc<Mutex<State>> {
        // Ids start at the wall clock (ms), so they keep increasing across restarts and a
        // Last-Event-ID from before a restart is recognised as unknown.
        Arc::new(Mutex::new(State {
            next_id: now_ms(),
            capacity: capacity.max(1),
            everyone: Ring::default(),
            principals: HashMap::new(),
            forgotten_up_to: 0,
            subs: Vec::new(),
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends a catalog event to every subscriber.
    pub fn broadcast(&self, event: ServerEvent) {
        self.send(None, event);
    }

    /// Sends an event to the subscribers of one principal.
    pub fn broadcast_to(&self, principal: &Principal, event: ServerEvent) {
        self.send(Some(principal), event);
    }

    fn send(&self, scope: Option<&Principal>, event: ServerEvent) {
        #[cfg(shared_engine)]
        if let Some(shared) = &self.shared {
            shared.publish(&self.state, scope, event);
            return;
        }
        let mut st = self.lock();
        let stamped = Stamped {
            id: st.next_id,
            event,
        };
        st.next_id += 1;
        let capacity = st.capacity;
        match scope {
            None => st.everyone.push(stamped.clone(), capacity),
            Some(p) => {
                if !st.principals.contains_key(p) && st.principals.len() >= MAX_PRINCIPALS {
                    forget_quietest(&mut st);
                }
                let ring = st.principals.entry(p.clone()).or_default();
                ring.push(stamped.clone(), capacity);
            }
        }
        // Delivered under the lock, so a subscriber's replay and its live feed never overlap
        // or gap.
        st.deliver(stamped.id, scope, &stamped.event);
    }

    /// Tells `principal`'s tabs that conversation `id` changed (saved, renamed or deleted).
    pub fn conversation(
        &self,
        principal: &Principal,
        kind: ServerEventType,
        id: &str,
        revision: Option<u64>,
    ) {
        self.broadcast_to(principal, ServerEvent::conversation(kind, id, revision));
    }

    /// How many subscriptions are open (one per `/api/events` stream of an open tab).
    ///
    /// ```
    /// let events = lmchatkit::live::events::EventBroadcaster::new();
    /// assert_eq!(events.subscribers(), 0);
    /// let sub = events.subscribe(lmchatkit::Principal::anonymous(), None);
    /// # let _ = &sub;
    /// ```
    pub fn subscribers(&self) -> usize {
        self.lock()
            .subs
            .iter()
            .filter(|s| !s.tx.is_closed())
            .count()
    }

    /// Subscribes `principal`. With `last_event_id`, first replays what it missed (or yields a
    /// `resync` when that is no longer in its buffers). Items are `(id, event)`.
    pub fn subscribe(
        &self,
        principal: Principal,
        last_event_id: Option<u64>,
    ) -> impl Stream<Item = (u64, ServerEvent)> + Send + 'static {
        let me = self.clone();
        // The live queue is registered at once (events sent from now on reach it); over
        // a shared engine, once the reader knows where the log ends (see [`ready`](Self::ready)),
        // and the replay is read from the stream when first polled.
        #[cfg(shared_engine)]
        if let Some(shared) = me.shared.clone() {
            let now = shared.register_if_ready(&me.state, &principal);
            let opened = async move {
                let (backlog, feed, floor) =
                    shared.open(&me.state, &principal, last_event_id, now).await;
                Following {
                    backlog,
                    feed,
                    floor,
                    principal,
                    me,
                }
            };
            return Self::follow(Box::pin(opened));
        }
        let (backlog, feed) = me.register(&principal, last_event_id);
        let now = Following {
            backlog,
            feed,
            floor: 0,
            principal,
            me,
        };
        Self::follow(Box::pin(std::future::ready(now)))
    }

    fn follow(
        opened: std::pin::Pin<Box<dyn std::future::Future<Output = Following> + Send>>,
    ) -> impl Stream<Item = (u64, ServerEvent)> + Send + 'static {
        futures_util::stream::once(opened).flat_map(|f| {
            futures_util::stream::unfold(f, |mut f| async move {
                let item = f.next().await?;
                Some((item, f))
            })
        })
    }

    /// Waits until a subscription registers at once: always in-process; over a shared engine,
    /// once its reader knows where the log ends (just after the start, or after the engine came
    /// back).
    pub async fn ready(&self) {
        #[cfg(shared_engine)]
        if let Some(shared) = &self.shared {
            shared.ready(&self.state).await;
        }
    }

    /// The replay for `last_event_id` and a live queue, taken together under the lock.
    fn register(
        &self,
        principal: &Principal,
        last_event_id: Option<u64>,
    ) -> (VecDeque<(u64, ServerEvent)>, Feed) {
        let mut st = self.lock();
        let newest = st.next_id - 1;
        let mut backlog = VecDeque::new();
        if let Some(last) = last_event_id.filter(|&l| l != newest) {
            let own = st.principals.get(principal);
            let lost = last > newest
                || st.everyone.evicted_up_to > last
                || own.map_or(st.forgotten_up_to > last, |r| r.evicted_up_to > last);
            if lost {
                backlog.push_back((newest, ServerEvent::new(ServerEventType::Resync)));
            } else {
                let mut missed: Vec<&Stamped> = st
                    .everyone
                    .events
                    .iter()
                    .chain(own.into_iter().flat_map(|r| r.events.iter()))
                    .filter(|s| s.id > last)
                    .collect();
                missed.sort_by_key(|s| s.id);
                backlog.extend(missed.into_iter().map(|s| (s.id, s.event.clone())));
            }
        }
        let feed = st.register_live(principal);
        (backlog, feed)
    }
}

/// One subscription as it is followed: the replay first, then the live queue.
struct Following {
    backlog: VecDeque<(u64, ServerEvent)>,
    feed: Feed,
    /// Live events up to this id were seen already (see [`EventBroadcaster::open`]).
    floor: u64,
    principal: Principal,
    me: EventBroadcaster,
}

impl Following {
    async fn next(&mut self) -> Option<(u64, ServerEvent)> {
        if let Some(item) = self.backlog.pop_front() {
            return Some(item);
        }
        loop {
            // It fell behind: what is still queued is superseded by a resync; carry on with a
            // fresh queue.
            if self.feed.lagged.load(Ordering::Acquire) {
                return Some(self.resync());
            }
            match self.feed.rx.recv().await {
                Some((id, _)) if id > 0 && id <= self.floor => continue,
                Some(item) => return Some(item),
                None if self.feed.lagged.load(Ordering::Acquire) => return Some(self.resync()),
                None => return None,
            }
        }
    }

    fn resync(&mut self) -> (u64, ServerEvent) {
        self.feed = self.me.lock().register_live(&self.principal);
        (0, ServerEvent::new(ServerEventType::Resync))
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(1)
}

/// A subscriber's end of its queue.
struct Feed {
    rx: mpsc::Receiver<(u64, ServerEvent)>,
    lagged: Arc<AtomicBool>,
}

/// Drops the buffer of the principal whose newest event is the oldest.
fn forget_quietest(st: &mut State) {
    let quietest = st
        .principals
        .iter()
        .min_by_key(|(_, r)| r.newest())
        .map(|(p, r)| (p.clone(), r.newest()));
    if let Some((p, newest)) = quietest {
        st.principals.remove(&p);
        st.forgotten_up_to = st.forgotten_up_to.max(newest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use std::time::Duration;

    fn saved(id: &str) -> ServerEvent {
        ServerEvent::conversation(ServerEventType::ConversationSaved, id, Some(1))
    }

    async fn next<S: Stream<Item = (u64, ServerEvent)> + Unpin>(
        s: &mut S,
    ) -> Option<(u64, ServerEvent)> {
        tokio::time::timeout(Duration::from_secs(2), s.next())
            .await
            .ok()
            .flatten()
    }

    #[tokio::test]
    async fn conversation_events_reach_only_their_principal() {
        let b = EventBroadcaster::new();
        let alice = Principal::new("alice");
        let mut a = Box::pin(b.subscribe(alice.clone(), None));
        let mut o = Box::pin(b.subscribe(Principal::new("bob"), None));
        b.broadcast_to(&alice, saved("c1"));
        b.broadcast(ServerEvent::new(ServerEventType::ToolsChanged));
        assert_eq!(next(&mut a).await.unwrap().1, saved("c1"));
        assert_eq!(
            next(&mut a).await.unwrap().1.kind,
            ServerEventType::ToolsChanged
        );
        assert_eq!(
            next(&mut o).await.unwrap().1.kind,
            ServerEventType::ToolsChanged
        );
    }

    #[tokio::test]
    async fn replays_missed_events_after_last_event_id() {
        let b = EventBroadcaster::new();
        let p = Principal::anonymous();
        let mut first = Box::pin(b.subscribe(p.clone(), None));
        b.broadcast_to(&p, saved("c1"));
        let (id1, _) = next(&mut first).await.unwrap();
        drop(first);
        b.broadcast_to(&p, saved("c2"));
        b.broadcast_to(&Principal::new("other"), saved("x"));
        b.broadcast_to(&p, saved("c3"));
        let mut again = Box::pin(b.subscribe(p.clone(), Some(id1)));
        let (id2, e2) = next(&mut again).await.unwrap();
        let (id3, e3) = next(&mut again).await.unwrap();
        assert_eq!((e2, e3), (saved("c2"), saved("c3")));
        assert!(id1 < id2 && id2 < id3);
        b.broadcast_to(&p, saved("c4"));
        assert_eq!(next(&mut again).await.unwrap().1, saved("c4"));
    }

    #[tokio::test]
    async fn too_old_or_unknown_last_event_id_gets_resync() {
        let b = EventBroadcaster::with_capacity(2);
        let p = Principal::anonymous();
        let mut s = Box::pin(b.subscribe(p.clone(), None));
        b.broadcast(saved("a"));
        let (first, _) = next(&mut s).await.unwrap();
        for i in 0..5 {
            b.broadcast(saved(&format!("b{i}")));
        }
        let mut old = Box::pin(b.subscribe(p.clone(), Some(first)));
        assert_eq!(
            next(&mut old).await.unwrap().1.kind,
            ServerEventType::Resync
        );
        let mut future = Box::pin(b.subscribe(p, Some(u64::MAX - 1)));
        assert_eq!(
            next(&mut future).await.unwrap().1.kind,
            ServerEventType::Resync
        );
    }

    /// One user's burst of saves used to push everyone's events out of the one shared buffer,
    /// so another user's reconnecting tab had to resync.
    #[tokio::test]
    async fn one_principals_burst_does_not_cost_another_its_replay() {
        let b = EventBroadcaster::with_capacity(4);
        let (alice, bob) = (Principal::new("alice"), Principal::new("bob"));
        let mut s = Box::pin(b.subscribe(bob.clone(), None));
        b.broadcast_to(&bob, saved("b1"));
        let (seen, _) = next(&mut s).await.unwrap();
        drop(s);
        b.broadcast_to(&bob, saved("b2"));
        for i in 0..50 {
            b.broadcast_to(&alice, saved(&format!("a{i}")));
        }
        let mut again = Box::pin(b.subscribe(bob.clone(), Some(seen)));
        assert_eq!(next(&mut again).await.unwrap().1, saved("b2"));
        b.broadcast_to(&bob, saved("b3"));
        assert_eq!(next(&mut again).await.unwrap().1, saved("b3"));
    }

    /// Nor does it push a slow tab of another user behind.
    #[tokio::test]
    async fn one_principals_burst_does_not_make_another_lag() {
        let b = EventBroadcaster::with_capacity(4);
        let (alice, bob) = (Principal::new("alice"), Principal::new("bob"));
        let mut bobs = Box::pin(b.subscribe(bob.clone(), None));
        for i in 0..50 {
            b.broadcast_to(&alice, saved(&format!("a{i}")));
        }
        b.broadcast_to(&bob, saved("b1"));
        assert_eq!(next(&mut bobs).await.unwrap().1, saved("b1"));
    }

    #[tokio::test]
    async fn replay_merges_catalog_and_own_events_in_order() {
        let b = EventBroadcaster::new();
        let p = Principal::new("p");
        let mut s = Box::pin(b.subscribe(p.clone(), None));
        b.broadcast_to(&p, saved("c0"));
        let (seen, _) = next(&mut s).await.unwrap();
        drop(s);
        b.broadcast_to(&p, saved("c1"));
        b.broadcast(ServerEvent::new(ServerEventType::ToolsChanged));
        b.broadcast_to(&p, saved("c2"));
        let mut again = Box::pin(b.subscribe(p, Some(seen)));
        let kinds: Vec<_> = [
            next(&mut again).await.unwrap().1,
            next(&mut again).await.unwrap().1,
            next(&mut again).await.unwrap().1,
        ]
        .into_iter()
        .map(|e| e.kind)
        .collect();
        assert_eq!(
            kinds,
            [
                ServerEventType::ConversationSaved,
                ServerEventType::ToolsChanged,
                ServerEventType::ConversationSaved
            ]
        );
    }

    #[tokio::test]
    async fn slow_subscriber_never_blocks_and_gets_resync() {
        let b = EventBroadcaster::with_capacity(4);
        let p = Principal::anonymous();
        let mut slow = Box::pin(b.subscribe(p.clone(), None));
        let mut fast = Box::pin(b.subscribe(p, None));
        for i in 0..50 {
            b.broadcast(saved(&format!("c{i}")));
            assert_eq!(next(&mut fast).await.unwrap().1, saved(&format!("c{i}")));
        }
        assert_eq!(
            next(&mut slow).await.unwrap().1.kind,
            ServerEventType::Resync
        );
    }
}
