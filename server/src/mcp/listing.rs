//! A server's listings (tools, prompts, resources) as a cache that a turn never waits on for
//! long: the last good listing is served while a fresh one is fetched in the background.
//!
//! Decisions:
//! - **Kept, not dropped.** A `list_changed` notification or a reconnect marks a listing
//!   *outdated*; it is not thrown away. A failed refresh keeps it too, so a server that went
//!   away still offers what it offered (its calls then fail as results naming the server).
//! - **Refreshes run in the background**, one at a time per listing kind, started by a
//!   request that finds the listing outdated or missing, by a `list_changed` notification,
//!   and by [`McpHub::start`](super::McpHub::start). The `tools_changed` (…) event of a
//!   notification is sent when its refresh has ended, so a client that re-lists on the event
//!   sees the new listing.
//! - **How long a request waits** ([`Wait`]): assembling a turn or answering a listing route
//!   waits for a refresh at most the hub's listing wait (default
//!   [`DEFAULT_LISTING_WAIT`](super::DEFAULT_LISTING_WAIT)), and not at all for a server that
//!   already made a request wait that long and has not answered a listing since (it is
//!   *slow*). A server that failed to connect is in backoff, so its refresh ends at once. A
//!   dead or hanging server therefore delays a turn's first token at most once, by the wait,
//!   and a warm cache by nothing. Resolving a call, a prompt or a read takes the last listing
//!   (current or outdated) and waits for one only when none was ever had (a call needs the
//!   server anyway), except from a slow server, which offered nothing to call.
//! - **Races**: every change bumps the server's generation; a listing fetched across a change
//!   is stored as outdated and fetched again (up to three times per refresh).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use super::client::ResourceListing;
use super::conn::ListKind;

/// How long a listing request may wait for a refresh.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wait {
    /// A turn or a listing route: at most this long, and not at all for a slow server.
    Briefly(Duration),
    /// A call, prompt or read: the last listing, or until a refresh ends when there is none
    /// (not for a slow server).
    ForCall,
}

/// One cached listing: the last good value and whether it is still current.
pub(crate) struct Slot<T> {
    value: Option<Arc<T>>,
    current: bool,
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Self {
            value: None,
            current: false,
        }
    }
}

impl<T> Slot<T> {
    /// The last value (current or not).
    pub fn value(&self) -> Option<Arc<T>> {
        self.value.clone()
    }

    /// The value when it is current.
    pub fn current(&self) -> Option<Arc<T>> {
        self.current.then(|| self.value.clone()).flatten()
    }

    /// Stores a fetched value; `current` is false when a change raced with the fetch.
    pub fn set(&mut self, value: Arc<T>, current: bool) {
        self.value = Some(value);
        self.current = current;
    }
}

/// The cached listings of one server.
#[derive(Default)]
pub(crate) struct Cache {
    pub tools: Slot<Vec<rmcp::model::Tool>>,
    pub prompts: Slot<Vec<rmcp::model::Prompt>>,
    pub resources: Slot<ResourceListing>,
}

impl Cache {
    /// Marks one listing outdated (it is still served until a refresh replaces it).
    pub fn outdate(&mut self, kind: ListKind) {
        match kind {
            ListKind::Tools => self.tools.current = false,
            ListKind::Prompts => self.prompts.current = false,
            ListKind::Resources => self.resources.current = false,
        }
    }

    /// Marks every listing outdated.
    pub fn outdate_all(&mut self) {
        for kind in ListKind::ALL {
            self.outdate(kind);
        }
    }
}

/// The background refreshes of one server's listings.
pub(crate) struct Refreshes {
    running: [AtomicBool; 3],
    /// Bumped when a refresh of that kind ends (whatever its outcome).
    ended: [watch::Sender<u64>; 3],
    /// Send the kind's change event when its running refresh ends.
    announce: [AtomicBool; 3],
    /// A request gave up waiting for this server, and no listing has succeeded since.
    slow: AtomicBool,
}

impl Default for Refreshes {
    fn default() -> Self {
        Self {
            running: Default::default(),
            ended: std::array::from_fn(|_| watch::Sender::new(0)),
            announce: Default::default(),
            slow: AtomicBool::new(false),
        }
    }
}

impl Refreshes {
    /// Claims the kind's refresh; false when one is already running.
    pub fn claim(&self, kind: ListKind) -> bool {
        !self.running[kind as usize].swap(true, Ordering::SeqCst)
    }

    /// Ends the kind's refresh; true when its change event should now be sent.
    pub fn end(&self, kind: ListKind, succeeded: bool) -> bool {
        if succeeded {
            self.slow.store(false, Ordering::SeqCst);
        }
        self.running[kind as usize].store(false, Ordering::SeqCst);
        self.ended[kind as usize].send_modify(|n| *n = n.wrapping_add(1));
        self.announce[kind as usize].swap(false, Ordering::SeqCst)
    }

    /// Asks for the kind's change event when its refresh ends.
    pub fn announce_after(&self, kind: ListKind) {
        self.announce[kind as usize].store(true, Ordering::SeqCst);
    }

    /// Watches the end of the kind's refreshes (subscribe before looking at the cache).
    pub fn watch(&self, kind: ListKind) -> watch::Receiver<u64> {
        self.ended[kind as usize].subscribe()
    }

    pub fn is_slow(&self) -> bool {
        self.slow.load(Ordering::SeqCst)
    }

    pub fn mark_slow(&self) {
        self.slow.store(true, Ordering::SeqCst);
    }
}
