//! Keeps what earlier turns resolved (`@uri` contents, expanded `/prompt`s), so a long
//! conversation does not re-read every resource and re-run every prompt on each turn, and the
//! model keeps seeing what it saw then. The latest user message always resolves fresh (and
//! refreshes the entry). Bounded in entries and age; scoped by principal.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use lmchatkit_protocol::{ContentPart, Message};

/// What a resolution produced.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resolved {
    /// The content parts of an `@uri`.
    Parts(Vec<ContentPart>),
    /// The messages of an expanded prompt.
    Messages(Vec<Message>),
}

/// (principal, key) → (when, value).
#[derive(Debug)]
pub(crate) struct TurnCache {
    entries: Mutex<HashMap<(String, String), (Instant, Resolved)>>,
    capacity: usize,
    ttl: Duration,
}

impl Default for TurnCache {
    fn default() -> Self {
        Self::new(512, Duration::from_secs(30 * 60))
    }
}

impl TurnCache {
    pub(crate) fn new(capacity: usize, ttl: Duration) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            capacity,
            ttl,
        }
    }

    pub(crate) fn get(&self, principal: &str, key: &str) -> Option<Resolved> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let (at, value) = entries.get(&(principal.to_owned(), key.to_owned()))?;
        (at.elapsed() < self.ttl).then(|| value.clone())
    }

    pub(crate) fn put(&self, principal: &str, key: String, value: Resolved) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= self.capacity {
            let ttl = self.ttl;
            entries.retain(|_, (at, _)| at.elapsed() < ttl);
            // Still full: drop the oldest entry.
            if entries.len() >= self.capacity
                && let Some(oldest) = entries
                    .iter()
                    .min_by_key(|(_, (at, _))| *at)
                    .map(|(k, _)| k.clone())
            {
                entries.remove(&oldest);
            }
        }
        entries.insert((principal.to_owned(), key), (Instant::now(), value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scoped_bounded_and_expiring() {
        let c = TurnCache::new(2, Duration::from_secs(60));
        let v = |s: &str| Resolved::Parts(vec![ContentPart::text(s)]);
        c.put("alice", "k".into(), v("a"));
        assert_eq!(c.get("alice", "k"), Some(v("a")));
        assert_eq!(c.get("bob", "k"), None);
        c.put("alice", "k2".into(), v("b"));
        c.put("alice", "k3".into(), v("c"));
        assert_eq!(c.get("alice", "k"), None, "the oldest went first");
        assert_eq!(c.get("alice", "k3"), Some(v("c")));
        let short = TurnCache::new(8, Duration::ZERO);
        short.put("a", "k".into(), v("x"));
        assert_eq!(short.get("a", "k"), None);
    }
}
