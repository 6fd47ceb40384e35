//! A server's listings (tools, prompts, resources) as a cache that a turn never waits on for
//! long: the last good listing is served while a fresh one is fetched in the background.
//!
//! Decisions:
//! - **Kept, not dropped.** A `list_changed` notification or a reconnect marks a listing
//!   *outdated*; it is not thrown away. A failed refresh keeps it too, so a server that went
//!   away still offers what it offered (its calls then fail as results naming the server).
//! - **Refreshes run in the background**, one at a time per listing kind and partition
//!   (below), started by a request that finds the listing outdated or missing, by a
//!   `list_changed` notification, and by [`McpHub::start`](super::McpHub::start). The
//!   `tools_changed` (…) event of a notification is sent when its refresh has ended, so a
//!   client that re-lists on the event sees the new listing.
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
//!
//! **`ttlMs` and `cacheScope`** (MCP 2026-07-28, SEP-2549), as rmcp 3.11 reads them (the
//! merged hint of every page: the earliest expiry, `private` if any page is):
//! - A listing with `ttlMs` is current for that long; the first use after it has passed finds
//!   it outdated and refreshes it as above (`0`: outdated at once, so each use refreshes it).
//!   `0` is also what rmcp's generated listings and the Python SDK send when the server's
//!   author set nothing: such a server is listed on every use (bounded by the wait, and not
//!   waited for once slow), as it asks; a server whose listing may be kept says how long.
//!   A listing without `ttlMs` (servers before 2026-07-28) stays current until a
//!   `list_changed` or a reconnect, as before. The wait still applies: an expired listing is
//!   served as the last one when the server does not answer in time.
//! - **`private` on a connection shared by every principal.** The hub's connection to an
//!   operator's server is one client for all principals, so the server cannot tell them
//!   apart, and the listing it marks private was made for *the request's* user. The hub
//!   takes the principal on whose behalf a listing was fetched as that user: a private
//!   listing is kept for that principal alone ([`Listings`]), and every other principal's
//!   first use fetches its own (through the same connection). It is never served to another
//!   principal, not even as a stale fallback, and a refresh that nobody asked for (a
//!   notification, [`McpHub::start`](super::McpHub::start)) keeps nothing of it: it only
//!   learns that the kind is private. A `public` listing (or one without `cacheScope`, the
//!   wire default and every older server) is one listing for everyone, as before. When the
//!   scope flips, the other side's listings go (a public answer drops the private copies, a
//!   private one the shared copy).
//! - At most [`MAX_PRIVATE_PARTITIONS`] principals' private listings are kept per server and
//!   kind; the oldest goes first (it is fetched again on its principal's next use).
//! - rmcp's own response cache is switched off on the hub's connections
//!   ([`super::conn`]): it keys private results by connection, not by principal, so it would
//!   hand one principal's private listing (or resource read) to the next.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::CacheScope;
use tokio::sync::watch;

use super::client::ResourceListing;
use super::conn::ListKind;
use crate::host::Principal;

/// Most principals whose private listings one server keeps, per listing kind.
pub(crate) const MAX_PRIVATE_PARTITIONS: usize = 256;

/// How long a listing request may wait for a refresh.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wait {
    /// A turn or a listing route: at most this long, and not at all for a slow server.
    Briefly(Duration),
    /// A call, prompt or read: the last listing, or until a refresh ends when there is none
    /// (not for a slow server).
    ForCall,
}

/// The server's cache hint for a fetched listing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Hint {
    /// How long it is current; `None`: until a change.
    pub ttl: Option<Duration>,
    /// It belongs to the principal it was fetched for.
    pub private: bool,
}

impl Hint {
    /// From rmcp's merged hint (`ttlMs`, `cacheScope`).
    pub fn new(ttl_ms: Option<u64>, scope: Option<CacheScope>) -> Self {
        Self {
            ttl: ttl_ms.map(Duration::from_millis),
            private: scope == Some(CacheScope::Private),
        }
    }

    /// Two hints of one listing (resources and templates): the earlier expiry, private if
    /// either is.
    pub fn and(self, other: Hint) -> Self {
        let ttl = match (self.ttl, other.ttl) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Self {
            ttl,
            private: self.private || other.private,
        }
    }
}

/// One cached listing: the last good value, whether it is still current, and until when.
pub(crate) struct Slot<T> {
    value: Option<Arc<T>>,
    current: bool,
    expires: Option<Instant>,
    /// When it was stored, in [`Listings`]' own count (the oldest private copy goes first).
    stored: u64,
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Self {
            value: None,
            current: false,
            expires: None,
            stored: 0,
        }
    }
}

impl<T> Slot<T> {
    /// The last value (current or not).
    pub fn value(&self) -> Option<Arc<T>> {
        self.value.clone()
    }

    /// The value when it is current (not outdated by a change, its `ttlMs` not passed).
    pub fn current(&self) -> Option<Arc<T>> {
        let fresh = self.current && self.expires.is_none_or(|at| Instant::now() < at);
        fresh.then(|| self.value.clone()).flatten()
    }

    /// Stores a fetched value; `current` is false when a change raced with the fetch.
    pub fn set(&mut self, value: Arc<T>, current: bool, ttl: Option<Duration>) {
        let now = Instant::now();
        self.value = Some(value);
        self.current = current;
        self.expires = ttl.map(|t| now.checked_add(t).unwrap_or(now));
    }
}

/// One kind of listing of one server: the copy every principal shares (a public listing) and
/// the private copies, each for the principal it was fetched for.
pub(crate) struct Listings<T> {
    shared: Slot<T>,
    private: HashMap<Principal, Slot<T>>,
    /// The last answer was private: fetch per principal.
    is_private: bool,
    /// Private copies stored so far (their age order).
    stores: u64,
}

impl<T> Default for Listings<T> {
    fn default() -> Self {
        Self {
            shared: Slot::default(),
            private: HashMap::new(),
            is_private: false,
            stores: 0,
        }
    }
}

impl<T> Listings<T> {
    /// The current listing `who` may see: their private copy, else the shared one.
    pub fn current(&self, who: &Principal) -> Option<Arc<T>> {
        self.private
            .get(who)
            .and_then(Slot::current)
            .or_else(|| self.shared.current())
    }

    /// The last listing `who` may see, current or not (never another principal's).
    pub fn last(&self, who: &Principal) -> Option<Arc<T>> {
        self.private
            .get(who)
            .and_then(Slot::value)
            .or_else(|| self.shared.value())
    }

    /// Whose refresh a request of `who` needs: their own when the kind is private, else the
    /// shared one (`None`).
    pub fn partition(&self, who: &Principal) -> Option<Principal> {
        self.is_private.then(|| who.clone())
    }

    /// True when the last answer was private.
    pub fn is_private(&self) -> bool {
        self.is_private
    }

    /// Stores a listing fetched on behalf of `who` (nobody: a notification's or the start's
    /// refresh) with its hint.
    pub fn store(&mut self, who: Option<&Principal>, value: T, current: bool, hint: Hint) {
        if !hint.private {
            self.is_private = false;
            self.private.clear();
            self.shared.set(Arc::new(value), current, hint.ttl);
            return;
        }
        self.is_private = true;
        // The shared copy is no longer what the server says everyone sees.
        self.shared = Slot::default();
        let Some(who) = who else {
            return;
        };
        if !self.private.contains_key(who) && self.private.len() >= MAX_PRIVATE_PARTITIONS {
            let oldest = self
                .private
                .iter()
                .min_by_key(|(_, s)| s.stored)
                .map(|(p, _)| p.clone());
            if let Some(p) = oldest {
                self.private.remove(&p);
            }
        }
        self.stores += 1;
        let slot = self.private.entry(who.clone()).or_default();
        slot.set(Arc::new(value), current, hint.ttl);
        slot.stored = self.stores;
    }

    /// Marks every copy outdated (each is still served to its principal until refreshed).
    pub fn outdate(&mut self) {
        self.shared.current = false;
        for s in self.private.values_mut() {
            s.current = false;
        }
    }
}

/// The cached listings of one server.
#[derive(Default)]
pub(crate) struct Cache {
    pub tools: Listings<Vec<rmcp::model::Tool>>,
    pub prompts: Listings<Vec<rmcp::model::Prompt>>,
    pub resources: Listings<ResourceListing>,
}

impl Cache {
    /// Marks one listing outdated (it is still served until a refresh replaces it).
    pub fn outdate(&mut self, kind: ListKind) {
        match kind {
            ListKind::Tools => self.tools.outdate(),
            ListKind::Prompts => self.prompts.outdate(),
            ListKind::Resources => self.resources.outdate(),
        }
    }

    /// Marks every listing outdated.
    pub fn outdate_all(&mut self) {
        for kind in ListKind::ALL {
            self.outdate(kind);
        }
    }

    /// True when the kind's last answer was private.
    pub fn is_private(&self, kind: ListKind) -> bool {
        match kind {
            ListKind::Tools => self.tools.is_private(),
            ListKind::Prompts => self.prompts.is_private(),
            ListKind::Resources => self.resources.is_private(),
        }
    }
}

/// Which refresh: a listing kind and whose (`None`: the shared one).
type RefreshKey = (ListKind, Option<Principal>);

/// The background refreshes of one server's listings.
pub(crate) struct Refreshes {
    /// The running refreshes; a waiter's receiver ends when its sender is dropped.
    running: Mutex<HashMap<RefreshKey, watch::Sender<()>>>,
    /// Send the kind's change event when its running shared refresh ends.
    announce: [AtomicBool; 3],
    /// A request gave up waiting for this server, and no listing has succeeded since.
    slow: AtomicBool,
}

impl Default for Refreshes {
    fn default() -> Self {
        Self {
            running: Mutex::new(HashMap::new()),
            announce: Default::default(),
            slow: AtomicBool::new(false),
        }
    }
}

/// A claim on a refresh: `Claimed` when the caller must run it, `Running` when one is.
pub(crate) enum Claim {
    Claimed(watch::Receiver<()>),
    Running(watch::Receiver<()>),
}

impl Refreshes {
    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<RefreshKey, watch::Sender<()>>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Claims the refresh of `kind` for `whose` (`None`: the shared listing).
    pub fn claim(&self, kind: ListKind, whose: Option<&Principal>) -> Claim {
        let mut running = self.running();
        let key = (kind, whose.cloned());
        if let Some(tx) = running.get(&key) {
            return Claim::Running(tx.subscribe());
        }
        let (tx, rx) = watch::channel(());
        running.insert(key, tx);
        Claim::Claimed(rx)
    }

    /// Ends a refresh (waking its waiters); true when its change event should now be sent.
    pub fn end(&self, kind: ListKind, whose: Option<&Principal>, succeeded: bool) -> bool {
        if succeeded {
            self.slow.store(false, Ordering::SeqCst);
        }
        self.running().remove(&(kind, whose.cloned()));
        whose.is_none() && self.announce[kind as usize].swap(false, Ordering::SeqCst)
    }

    /// Asks for the kind's change event when its shared refresh ends.
    pub fn announce_after(&self, kind: ListKind) {
        self.announce[kind as usize].store(true, Ordering::SeqCst);
    }

    pub fn is_slow(&self) -> bool {
        self.slow.load(Ordering::SeqCst)
    }

    pub fn mark_slow(&self) {
        self.slow.store(true, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn private(ttl_ms: Option<u64>) -> Hint {
        Hint::new(ttl_ms, Some(CacheScope::Private))
    }

    #[test]
    fn a_private_listing_is_kept_for_its_principal_only() {
        let (ada, bob) = (Principal::new("ada"), Principal::new("bob"));
        let mut l = Listings::<&str>::default();
        l.store(Some(&ada), "ada's", true, private(None));
        assert_eq!(l.current(&ada).as_deref(), Some(&"ada's"));
        assert_eq!(l.current(&bob), None);
        assert_eq!(l.last(&bob), None, "not even as a stale fallback");
        assert_eq!(l.partition(&bob), Some(bob.clone()));
        l.outdate();
        assert_eq!(l.current(&ada), None);
        assert_eq!(l.last(&ada).as_deref(), Some(&"ada's"));
    }

    #[test]
    fn a_private_listing_fetched_for_nobody_is_not_kept() {
        let mut l = Listings::<&str>::default();
        l.store(None, "shared", true, Hint::default());
        l.store(None, "whose?", true, private(None));
        assert!(l.is_private());
        assert_eq!(l.last(&Principal::anonymous()), None);
    }

    #[test]
    fn a_public_answer_drops_the_private_copies() {
        let ada = Principal::new("ada");
        let mut l = Listings::<&str>::default();
        l.store(Some(&ada), "ada's", true, private(None));
        l.store(Some(&ada), "everyone's", true, Hint::default());
        assert!(!l.is_private());
        assert_eq!(
            l.current(&Principal::new("bob")).as_deref(),
            Some(&"everyone's")
        );
        assert_eq!(l.current(&ada).as_deref(), Some(&"everyone's"));
    }

    #[test]
    fn a_listing_is_outdated_once_its_ttl_has_passed() {
        let who = Principal::anonymous();
        let mut l = Listings::<&str>::default();
        l.store(None, "now", true, Hint::new(Some(0), None));
        assert_eq!(l.current(&who), None, "ttlMs 0 is outdated at once");
        assert_eq!(l.last(&who).as_deref(), Some(&"now"));
        l.store(None, "later", true, Hint::new(Some(60_000), None));
        assert_eq!(l.current(&who).as_deref(), Some(&"later"));
        l.store(
            None,
            "forever",
            true,
            Hint::new(None, Some(CacheScope::Public)),
        );
        assert_eq!(l.current(&who).as_deref(), Some(&"forever"));
    }

    #[test]
    fn private_copies_are_bounded_oldest_first() {
        let mut l = Listings::<usize>::default();
        for i in 0..=MAX_PRIVATE_PARTITIONS {
            l.store(Some(&Principal::new(i.to_string())), i, true, private(None));
        }
        assert_eq!(l.private.len(), MAX_PRIVATE_PARTITIONS);
        assert_eq!(l.last(&Principal::new("0")), None);
        assert!(
            l.last(&Principal::new(MAX_PRIVATE_PARTITIONS.to_string()))
                .is_some()
        );
    }

    #[test]
    fn merged_hints_take_the_earlier_expiry_and_privacy() {
        let a = Hint::new(Some(500), Some(CacheScope::Public));
        let b = Hint::new(Some(100), Some(CacheScope::Private));
        assert_eq!(
            a.and(b),
            Hint {
                ttl: Some(Duration::from_millis(100)),
                private: true
            }
        );
        assert_eq!(a.and(Hint::default()).ttl, Some(Duration::from_millis(500)));
    }
}
