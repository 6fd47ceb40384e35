//! Short-lived tokens behind the view URLs. `POST /api/apps/view` issues one; the page it names
//! (`/apps/view/{token}` in default mode, `/apps/sandbox?t={token}` on the view's sandbox origin
//! in proxy mode) redeems it once, within [`TTL`]. A default-mode token is bound to the principal
//! that asked for it.
//!
//! Decisions:
//! - **Per principal.** Each principal holds at most [`PER_PRINCIPAL`] unredeemed tokens; a
//!   principal over its cap loses its own oldest token, never another's. So one user opening
//!   thousands of views cannot evict the views another user is loading.
//! - **A total bound** ([`TOTAL`]) keeps memory finite with many principals: when it is reached
//!   after dropping expired tokens, the principal holding the most tokens loses its oldest.
//! - A token is redeemed by its value alone (the sandbox origin sees no cookies); the ticket
//!   says whose it is, and the default-mode page checks that.
//! - **Across instances** the tokens live in the shared engine instead ([`Views`], the
//!   `redis` module for Redis, `postgres` for PostgreSQL), with the same
//!   rules, so a view URL issued through one instance loads from any, once.

#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(feature = "redis")]
pub(crate) mod redis;

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::Failure;

/// How long an issued view URL stays valid by default.
pub(crate) const TTL: Duration = Duration::from_secs(60);

/// At most this many unredeemed tokens per principal; its oldest go first.
pub(crate) const PER_PRINCIPAL: usize = 256;

/// At most this many unredeemed tokens in all.
const TOTAL: usize = 16 * 1024;

/// What a token opens.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct ViewTicket {
    /// The principal id that asked (checked in default mode).
    pub principal: String,
    /// The `Content-Security-Policy` header value.
    pub csp: String,
    /// The view's HTML (default mode; proxy mode sends it by `postMessage` instead).
    pub html: Option<String>,
    /// The host page's origin (proxy mode: the only parent the proxy talks to).
    pub host_origin: Option<String>,
    /// The view's own sandbox origin (proxy mode: the page is served on that host name only).
    pub sandbox_origin: Option<String>,
}

#[derive(Debug, Default)]
struct Store {
    tickets: HashMap<String, (Instant, ViewTicket)>,
    /// Each principal's tokens, oldest first (may name redeemed or expired ones until pruned).
    by_principal: HashMap<String, VecDeque<String>>,
}

impl Store {
    /// Drops the principal's redeemed and expired tokens from its queue.
    fn prune(&mut self, principal: &str, now: Instant, ttl: Duration) {
        let Some(q) = self.by_principal.get_mut(principal) else {
            return;
        };
        let tickets = &mut self.tickets;
        q.retain(|t| match tickets.get(t) {
            Some((at, _)) if now.duration_since(*at) < ttl => true,
            Some(_) => {
                tickets.remove(t);
                false
            }
            None => false,
        });
        if q.is_empty() {
            self.by_principal.remove(principal);
        }
    }

    /// Removes the oldest token of `principal`.
    fn evict_oldest(&mut self, principal: &str) {
        if let Some(q) = self.by_principal.get_mut(principal)
            && let Some(t) = q.pop_front()
        {
            self.tickets.remove(&t);
        }
    }
}

/// The issued, unredeemed tokens.
#[derive(Debug)]
pub(crate) struct ViewTokens {
    ttl: Duration,
    inner: Mutex<Store>,
}

impl Default for ViewTokens {
    fn default() -> Self {
        Self::new(TTL)
    }
}

impl ViewTokens {
    /// A store whose tokens last `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            inner: Mutex::default(),
        }
    }

    /// Issues a fresh token for `ticket`.
    pub fn issue(&self, ticket: ViewTicket) -> String {
        let token = fresh_token();
        let now = Instant::now();
        let who = ticket.principal.clone();
        let mut store = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        store.prune(&who, now, self.ttl);
        while store.by_principal.get(&who).map_or(0, VecDeque::len) >= PER_PRINCIPAL {
            store.evict_oldest(&who);
        }
        if store.tickets.len() >= TOTAL {
            let ttl = self.ttl;
            store
                .tickets
                .retain(|_, (at, _)| now.duration_since(*at) < ttl);
            let principals: Vec<String> = store.by_principal.keys().cloned().collect();
            for p in principals {
                store.prune(&p, now, ttl);
            }
            let largest = store
                .by_principal
                .iter()
                .max_by_key(|(_, q)| q.len())
                .map(|(p, _)| p.clone());
            if store.tickets.len() >= TOTAL
                && let Some(p) = largest
            {
                store.evict_oldest(&p);
            }
        }
        store.tickets.insert(token.clone(), (now, ticket));
        store
            .by_principal
            .entry(who)
            .or_default()
            .push_back(token.clone());
        token
    }

    /// Redeems `token` once, if `accept` agrees: `None` when unknown, used, expired or refused
    /// (a refused token stays valid for the one it was issued to).
    pub fn redeem(
        &self,
        token: &str,
        accept: impl FnOnce(&ViewTicket) -> bool,
    ) -> Option<ViewTicket> {
        let mut store = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (at, ticket) = store.tickets.get(token)?;
        if at.elapsed() >= self.ttl {
            store.tickets.remove(token);
            return None;
        }
        if !accept(ticket) {
            return None;
        }
        // The principal's queue forgets it on its next prune.
        store.tickets.remove(token).map(|(_, t)| t)
    }
}

/// Where the service keeps its view tokens: in this process, or in the shared engine for every
/// instance.
#[derive(Debug)]
pub(crate) enum Views {
    /// This process's memory.
    Local(ViewTokens),
    /// Redis, shared by every instance.
    #[cfg(feature = "redis")]
    Shared(redis::SharedViews),
    /// PostgreSQL, shared by every instance.
    #[cfg(feature = "postgres")]
    Postgres(postgres::PostgresViews),
}

impl Views {
    /// Issues a fresh token for `ticket`.
    pub(crate) async fn issue(&self, ticket: ViewTicket) -> Result<String, Failure> {
        match self {
            Self::Local(t) => Ok(t.issue(ticket)),
            #[cfg(feature = "redis")]
            Self::Shared(t) => t.issue(ticket).await,
            #[cfg(feature = "postgres")]
            Self::Postgres(t) => t.issue(ticket).await,
        }
    }

    /// Redeems `token` once, if `accept` agrees (see [`ViewTokens::redeem`]).
    pub(crate) async fn redeem(
        &self,
        token: &str,
        accept: impl FnOnce(&ViewTicket) -> bool,
    ) -> Result<Option<ViewTicket>, Failure> {
        match self {
            Self::Local(t) => Ok(t.redeem(token, accept)),
            #[cfg(feature = "redis")]
            Self::Shared(t) => t.redeem(token, accept).await,
            #[cfg(feature = "postgres")]
            Self::Postgres(t) => t.redeem(token, accept).await,
        }
    }
}

/// A ticket of `principal` for tests (of every store of view tokens).
#[cfg(test)]
pub(crate) fn ticket_of(principal: &str) -> ViewTicket {
    ViewTicket {
        principal: principal.into(),
        csp: "default-src 'none'".into(),
        html: Some("<p>".into()),
        host_origin: None,
        sandbox_origin: None,
    }
}

/// A token the shared engines could have issued: hex, 1 to 128 characters. Anything else is
/// refused before it reaches a query or a key.
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(crate) fn well_formed(token: &str) -> bool {
    !token.is_empty() && token.len() <= 128 && token.bytes().all(|b| b.is_ascii_hexdigit())
}

/// What every shared store of view tokens must do, run against each engine by its tests (the
/// in-process one has its own, synchronous tests below).
#[cfg(test)]
pub(crate) mod conformance {
    use std::time::Duration;

    use super::{PER_PRINCIPAL, Views, ticket_of};

    /// A token issued through `a` is redeemed once, through `b`, and only by its principal.
    pub(crate) async fn redeemed_once_by_any(a: &Views, b: &Views) {
        let t = a.issue(ticket_of("alice")).await.unwrap();
        assert_eq!(t.len(), 48);
        assert!(
            b.redeem(&t, |t| t.principal == "mallory")
                .await
                .unwrap()
                .is_none()
        );
        let got = b.redeem(&t, |t| t.principal == "alice").await.unwrap();
        assert_eq!(got.unwrap().html.as_deref(), Some("<p>"));
        assert!(a.redeem(&t, |_| true).await.unwrap().is_none());
        assert!(b.redeem(&t, |_| true).await.unwrap().is_none());
        assert!(a.redeem("../x", |_| true).await.unwrap().is_none());
    }

    /// A token of `v`, whose lifetime is 30 ms, is gone 80 ms later.
    pub(crate) async fn expire(v: &Views) {
        let t = v.issue(ticket_of("alice")).await.unwrap();
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert!(v.redeem(&t, |_| true).await.unwrap().is_none());
    }

    /// bob issuing one more than his cap loses his oldest token, and alice keeps hers. bob then
    /// holds `PER_PRINCIPAL - 1` (one redeemed): the caller checks the engine holds no more.
    pub(crate) async fn over_the_cap_loses_its_own_oldest(v: &Views) {
        let alices = v.issue(ticket_of("alice")).await.unwrap();
        let first = v.issue(ticket_of("bob")).await.unwrap();
        let second = v.issue(ticket_of("bob")).await.unwrap();
        for _ in 0..PER_PRINCIPAL - 1 {
            v.issue(ticket_of("bob")).await.unwrap();
        }
        assert!(
            v.redeem(&first, |_| true).await.unwrap().is_none(),
            "bob's oldest was dropped"
        );
        assert!(v.redeem(&second, |_| true).await.unwrap().is_some());
        assert!(v.redeem(&alices, |_| true).await.unwrap().is_some());
    }
}

/// A fresh token: 192 random bits in hex.
pub(crate) fn fresh_token() -> String {
    hex::encode(rand::random::<[u8; 24]>())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket() -> ViewTicket {
        ticket_of("alice")
    }

    #[test]
    fn a_token_is_redeemed_once() {
        let t = ViewTokens::default();
        let a = t.issue(ticket());
        let b = t.issue(ticket());
        assert_ne!(a, b);
        assert_eq!(a.len(), 48);
        assert!(t.redeem(&a, |t| t.principal == "mallory").is_none());
        assert_eq!(t.redeem(&a, |_| true).unwrap().principal, "alice");
        assert!(t.redeem(&a, |_| true).is_none());
        assert!(t.redeem("nope", |_| true).is_none());
        assert!(t.redeem(&b, |_| true).is_some());
    }

    #[test]
    fn tokens_expire() {
        let t = ViewTokens::new(Duration::from_millis(1));
        let a = t.issue(ticket());
        std::thread::sleep(Duration::from_millis(5));
        assert!(t.redeem(&a, |_| true).is_none());
    }

    #[test]
    fn a_principal_over_its_cap_loses_its_own_oldest_token() {
        let t = ViewTokens::default();
        let first = t.issue(ticket());
        for _ in 0..PER_PRINCIPAL {
            t.issue(ticket());
        }
        assert!(
            t.redeem(&first, |_| true).is_none(),
            "the oldest was dropped"
        );
        assert_eq!(t.inner.lock().unwrap().tickets.len(), PER_PRINCIPAL);
    }

    #[test]
    fn tokens_of_principal_a_survive_principal_b_creating_2000() {
        let t = ViewTokens::default();
        let alices: Vec<String> = (0..10).map(|_| t.issue(ticket_of("alice"))).collect();
        for _ in 0..2000 {
            t.issue(ticket_of("bob"));
        }
        for a in &alices {
            assert!(
                t.redeem(a, |t| t.principal == "alice").is_some(),
                "bob evicted one of alice's tokens"
            );
        }
        let store = t.inner.lock().unwrap();
        assert!(
            store.tickets.len() <= PER_PRINCIPAL,
            "bob kept within his cap"
        );
    }

    #[test]
    fn redeemed_tokens_do_not_count_against_the_cap() {
        let t = ViewTokens::default();
        for _ in 0..PER_PRINCIPAL {
            let tok = t.issue(ticket());
            assert!(t.redeem(&tok, |_| true).is_some());
        }
        let kept = t.issue(ticket());
        for _ in 0..PER_PRINCIPAL - 1 {
            t.issue(ticket());
        }
        assert!(t.redeem(&kept, |_| true).is_some());
    }
}
