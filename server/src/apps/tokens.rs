//! Short-lived tokens behind the view URLs. `POST /api/apps/view` issues one; the page it names
//! (`/apps/view/{token}` in default mode, `/apps/sandbox?t={token}` in proxy mode) redeems it
//! once, within [`TTL`]. A default-mode token is bound to the principal that asked for it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::RngCore;

/// How long an issued view URL stays valid by default.
pub(crate) const TTL: Duration = Duration::from_secs(60);

/// At most this many unredeemed tokens are kept; the oldest go first.
const CAP: usize = 1024;

/// What a token opens.
#[derive(Debug, Clone)]
pub(crate) struct ViewTicket {
    /// The principal id that asked (checked in default mode).
    pub principal: String,
    /// The `Content-Security-Policy` header value.
    pub csp: String,
    /// The view's HTML (default mode; proxy mode sends it by `postMessage` instead).
    pub html: Option<String>,
    /// The host page's origin (proxy mode: the only parent the proxy talks to).
    pub host_origin: Option<String>,
}

/// The issued, unredeemed tokens.
#[derive(Debug)]
pub(crate) struct ViewTokens {
    ttl: Duration,
    inner: Mutex<HashMap<String, (Instant, ViewTicket)>>,
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
        let mut bytes = [0u8; 24];
        rand::rng().fill_bytes(&mut bytes);
        let token = hex::encode(bytes);
        let now = Instant::now();
        let mut map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, (at, _)| now.duration_since(*at) < self.ttl);
        if map.len() >= CAP
            && let Some(oldest) = map
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
        map.insert(token.clone(), (now, ticket));
        token
    }

    /// Redeems `token` once, if `accept` agrees: `None` when unknown, used, expired or refused
    /// (a refused token stays valid for the one it was issued to).
    pub fn redeem(
        &self,
        token: &str,
        accept: impl FnOnce(&ViewTicket) -> bool,
    ) -> Option<ViewTicket> {
        let mut map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (at, ticket) = map.get(token)?;
        if at.elapsed() >= self.ttl {
            map.remove(token);
            return None;
        }
        if !accept(ticket) {
            return None;
        }
        map.remove(token).map(|(_, t)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket() -> ViewTicket {
        ViewTicket {
            principal: "alice".into(),
            csp: "default-src 'none'".into(),
            html: Some("<p>".into()),
            host_origin: None,
        }
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
    fn the_store_is_capped() {
        let t = ViewTokens::default();
        let first = t.issue(ticket());
        for _ in 0..CAP {
            t.issue(ticket());
        }
        assert!(
            t.redeem(&first, |_| true).is_none(),
            "the oldest was dropped"
        );
        assert_eq!(t.inner.lock().unwrap().len(), CAP);
    }
}
