//! The event broadcaster behind `GET {prefix}/api/events`: conversation events for one
//! principal, catalog events (`tools_changed`, …) for everyone, every event numbered, and a
//! bounded replay buffer so a reconnecting tab (`Last-Event-ID`) misses nothing — or is told
//! to `resync` when it missed more than the buffer holds. A slow subscriber never blocks the
//! sender or other subscribers: it falls behind, and then gets `resync`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use futures_util::Stream;
use lmchatkit_protocol::{ServerEvent, ServerEventType};
use tokio::sync::broadcast;

use crate::host::Principal;

#[derive(Debug, Clone)]
struct Stamped {
    id: u64,
    /// `None`: for everyone.
    scope: Option<Principal>,
    event: ServerEvent,
}

struct State {
    next_id: u64,
    buffer: VecDeque<Stamped>,
    capacity: usize,
}

/// Fans events out to `/api/events` subscribers. Cheap to clone; clones share subscribers.
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
    tx: broadcast::Sender<Stamped>,
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
    /// A broadcaster replaying up to 256 events.
    pub fn new() -> Self {
        Self::with_capacity(256)
    }

    /// A broadcaster replaying up to `capacity` events (also each subscriber's backlog).
    pub fn with_capacity(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        // Ids start at the wall clock (ms), so they keep increasing across restarts and a
        // Last-Event-ID from before a restart is recognised as unknown.
        let start = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(1);
        let (tx, _) = broadcast::channel(capacity);
        Self {
            state: Arc::new(Mutex::new(State {
                next_id: start,
                buffer: VecDeque::new(),
                capacity,
            })),
            tx,
        }
    }

    /// Sends a catalog event to every subscriber.
    pub fn broadcast(&self, event: ServerEvent) {
        self.send(None, event);
    }

    /// Sends an event to the subscribers of one principal.
    pub fn broadcast_to(&self, principal: &Principal, event: ServerEvent) {
        self.send(Some(principal.clone()), event);
    }

    fn send(&self, scope: Option<Principal>, event: ServerEvent) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let stamped = Stamped {
            id: st.next_id,
            scope,
            event,
        };
        st.next_id += 1;
        if st.buffer.len() == st.capacity {
            st.buffer.pop_front();
        }
        st.buffer.push_back(stamped.clone());
        // Sent under the lock so a subscriber's replay and its live feed never overlap or gap.
        let _ = self.tx.send(stamped);
    }

    /// Subscribes `principal`. With `last_event_id`, first replays what it missed (or yields a
    /// `resync` when that is no longer in the buffer). Items are `(id, event)`.
    pub fn subscribe(
        &self,
        principal: Principal,
        last_event_id: Option<u64>,
    ) -> impl Stream<Item = (u64, ServerEvent)> + Send + 'static {
        let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let rx = self.tx.subscribe();
        let newest = st.next_id - 1;
        let mut backlog: VecDeque<(u64, ServerEvent)> = VecDeque::new();
        if let Some(last) = last_event_id.filter(|&l| l != newest) {
            let oldest = st.buffer.front().map(|s| s.id).unwrap_or(st.next_id);
            if last > newest || last + 1 < oldest {
                backlog.push_back((newest, ServerEvent::new(ServerEventType::Resync)));
            } else {
                backlog.extend(
                    st.buffer
                        .iter()
                        .filter(|s| s.id > last && visible(s, &principal))
                        .map(|s| (s.id, s.event.clone())),
                );
            }
        }
        drop(st);
        futures_util::stream::unfold(
            (backlog, rx, principal),
            |(mut backlog, mut rx, principal)| async move {
                if let Some(item) = backlog.pop_front() {
                    return Some((item, (backlog, rx, principal)));
                }
                loop {
                    match rx.recv().await {
                        Ok(s) if visible(&s, &principal) => {
                            return Some(((s.id, s.event), (backlog, rx, principal)));
                        }
                        Ok(_) => continue,
                        Err(broadcast::error::RecvError::Lagged(_)) => {
                            let resync = ServerEvent::new(ServerEventType::Resync);
                            // Skip ahead: everything still queued is superseded by the resync.
                            rx = rx.resubscribe();
                            return Some(((0, resync), (backlog, rx, principal)));
                        }
                        Err(broadcast::error::RecvError::Closed) => return None,
                    }
                }
            },
        )
    }
}

fn visible(s: &Stamped, principal: &Principal) -> bool {
    s.scope.as_ref().is_none_or(|p| p == principal)
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
