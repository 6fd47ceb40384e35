//! In-memory history store: a map keyed by (principal id, conversation id) behind a
//! `std::sync::Mutex` (never held across an `.await`).
//!
//! Messages are kept as rows of serialized JSON, exactly like the SQLite store, so both stores
//! share the same prefix rule and round-trip behaviour. Nothing survives a restart.

mod approvals;
#[cfg(feature = "mcp")]
mod user_mcp;

pub use approvals::MemoryApprovalStore;
#[cfg(feature = "mcp")]
pub use user_mcp::MemoryUserMcpStore;

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use lmchatkit_protocol::{
    ConversationPatch, ConversationSummary, ConversationTotals, StoredConversation,
};

use super::rows::{MessageRow, common_prefix, decode_rows, encode_messages, gone, now_ms};
use super::{HistoryError, HistoryStore, SaveOutcome, validate_id};
use crate::host::Principal;

/// One stored conversation: its summary (with the current revision), the tools it always
/// allows, and its message rows.
#[derive(Debug, Clone)]
struct Entry {
    summary: ConversationSummary,
    allowed_tools: Vec<String>,
    rows: Vec<MessageRow>,
}

impl Entry {
    fn to_conversation(&self) -> Result<StoredConversation, HistoryError> {
        let s = &self.summary;
        Ok(StoredConversation {
            id: s.id.clone(),
            title: s.title.clone(),
            persona_id: s.persona_id.clone(),
            model: s.model.clone(),
            params: s.params.clone(),
            created_at: s.created_at,
            updated_at: s.updated_at,
            revision: s.revision,
            messages: decode_rows(self.rows.iter().map(|r| r.body.as_str()))?,
            allowed_tools: self.allowed_tools.clone(),
            totals: s.totals,
            kept: None,
        })
    }
}

type Key = (String, String);

/// Keeps conversations in memory, scoped by principal. Cheap to create; nothing persists.
///
/// ```
/// use lmchatkit::Principal;
/// use lmchatkit::store::{HistoryStore, MemoryStore, SaveOutcome};
/// use lmchatkit::protocol::{Message, StoredConversation};
///
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// rt.block_on(async {
///     let store = MemoryStore::new();
///     let alice = Principal::new("alice");
///     let conversation = StoredConversation {
///         id: "c-1".into(),
///         title: "Hello".into(),
///         revision: 0, // 0 creates
///         messages: vec![Message::user("hi").with_id("m1")],
///         ..Default::default()
///     };
///     let saved = store.save(&alice, conversation).await.unwrap();
///     assert_eq!(saved, SaveOutcome::Saved { revision: 1 });
///
///     let got = store.get(&alice, "c-1").await.unwrap().unwrap();
///     assert_eq!(got.revision, 1);
///     assert_eq!(got.messages[0].content.as_text(), Some("hi"));
///     // Another principal never sees it.
///     assert!(store.get(&Principal::new("bob"), "c-1").await.unwrap().is_none());
/// });
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    map: Mutex<HashMap<Key, Entry>>,
    /// Message rows inserted plus deleted by saves, for tests of the prefix write.
    rows_written: AtomicU64,
}

impl MemoryStore {
    /// An empty store.
    ///
    /// ```
    /// use lmchatkit::Principal;
    /// use lmchatkit::store::{HistoryStore, MemoryStore};
    ///
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let store = MemoryStore::new();
    /// let list = rt.block_on(store.list(&Principal::anonymous())).unwrap();
    /// assert!(list.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
        // A panic while holding the lock leaves every entry whole (each write replaces whole
        // values), so a poisoned map is still consistent.
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Message rows inserted plus deleted by saves since creation.
    #[cfg(test)]
    pub(crate) fn rows_written(&self) -> u64 {
        self.rows_written.load(Ordering::SeqCst)
    }
}

fn key(principal: &Principal, id: &str) -> Key {
    (principal.id().to_owned(), id.to_owned())
}

#[async_trait]
impl HistoryStore for MemoryStore {
    async fn list(&self, principal: &Principal) -> Result<Vec<ConversationSummary>, HistoryError> {
        let map = self.lock();
        let mut out: Vec<ConversationSummary> = map
            .iter()
            .filter(|((p, _), _)| p == principal.id())
            .map(|(_, e)| e.summary.clone())
            .collect();
        drop(map);
        out.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    async fn get(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<Option<StoredConversation>, HistoryError> {
        validate_id(id)?;
        let entry = self.lock().get(&key(principal, id)).cloned();
        entry.map(|e| e.to_conversation()).transpose()
    }

    async fn get_tail(
        &self,
        principal: &Principal,
        id: &str,
        n: usize,
    ) -> Result<Option<(StoredConversation, u64)>, HistoryError> {
        validate_id(id)?;
        let map = self.lock();
        let Some(entry) = map.get(&key(principal, id)) else {
            return Ok(None);
        };
        let before = entry.rows.len().saturating_sub(n);
        let tail = Entry {
            summary: entry.summary.clone(),
            allowed_tools: entry.allowed_tools.clone(),
            rows: entry.rows[before..].to_vec(),
        };
        drop(map);
        Ok(Some((tail.to_conversation()?, before as u64)))
    }

    async fn save(
        &self,
        principal: &Principal,
        conversation: StoredConversation,
    ) -> Result<SaveOutcome, HistoryError> {
        validate_id(&conversation.id)?;
        let mut rows = encode_messages(&conversation.messages)?;
        // The totals of the messages sent: the whole conversation's, or a kept save's tail's.
        let sent = ConversationTotals::of(&conversation.messages);
        let now = now_ms();
        let base = conversation.revision;
        let kept = conversation.kept;
        let mut map = self.lock();
        let k = key(principal, &conversation.id);
        let summary = |created_at, revision, totals| ConversationSummary {
            id: conversation.id.clone(),
            title: conversation.title.clone(),
            persona_id: conversation.persona_id.clone(),
            model: conversation.model.clone(),
            params: conversation.params.clone(),
            created_at,
            updated_at: now,
            revision,
            totals,
        };
        match map.get_mut(&k) {
            None if kept.is_some_and(|n| n > 0) => {
                Ok(SaveOutcome::Conflict(Box::new(gone(&conversation.id))))
            }
            None => {
                // Absent: create (also for a base > 0, e.g. deleted elsewhere — nothing is lost).
                let created_at = if conversation.created_at > 0 {
                    conversation.created_at
                } else {
                    now
                };
                self.rows_written
                    .fetch_add(rows.len() as u64, Ordering::SeqCst);
                map.insert(
                    k,
                    Entry {
                        summary: summary(created_at, 1, sent),
                        allowed_tools: conversation.allowed_tools.clone(),
                        rows,
                    },
                );
                Ok(SaveOutcome::Saved { revision: 1 })
            }
            Some(entry)
                if base == 0
                    || base != entry.summary.revision
                    || kept.is_some_and(|n| n > entry.rows.len() as u64) =>
            {
                let current = entry.clone();
                drop(map);
                Ok(SaveOutcome::Conflict(Box::new(current.to_conversation()?)))
            }
            Some(entry) => {
                let (keep, totals) = match kept {
                    None => {
                        let keep = common_prefix(
                            entry
                                .rows
                                .iter()
                                .map(|r| (r.id.as_deref(), r.body.as_str())),
                            &rows,
                        );
                        rows.drain(..keep);
                        (keep, sent)
                    }
                    Some(n) => {
                        let keep = n as usize;
                        let before = if keep == entry.rows.len() {
                            entry.summary.totals
                        } else {
                            let prefix = &entry.rows[..keep];
                            ConversationTotals::of(&decode_rows(
                                prefix.iter().map(|r| r.body.as_str()),
                            )?)
                        };
                        (keep, before.then(sent))
                    }
                };
                let written = (entry.rows.len() - keep) + rows.len();
                entry.rows.truncate(keep);
                entry.rows.extend(rows);
                let revision = entry.summary.revision + 1;
                entry.summary = summary(entry.summary.created_at, revision, totals);
                entry.allowed_tools = conversation.allowed_tools.clone();
                self.rows_written
                    .fetch_add(written as u64, Ordering::SeqCst);
                Ok(SaveOutcome::Saved { revision })
            }
        }
    }

    async fn patch(
        &self,
        principal: &Principal,
        id: &str,
        patch: ConversationPatch,
    ) -> Result<Option<u64>, HistoryError> {
        validate_id(id)?;
        let now = now_ms();
        let mut map = self.lock();
        let Some(entry) = map.get_mut(&key(principal, id)) else {
            return Ok(None);
        };
        let s = &mut entry.summary;
        let title = patch.title.trim();
        if !title.is_empty() {
            s.title = title.to_owned();
        }
        if let Some(model) = patch.model.filter(|m| !m.is_empty()) {
            s.model = model;
        }
        if let Some(persona_id) = patch.persona_id.filter(|p| !p.is_empty()) {
            s.persona_id = persona_id;
        }
        if let Some(params) = patch.params {
            s.params = params;
        }
        s.revision += 1;
        s.updated_at = now;
        Ok(Some(s.revision))
    }

    async fn delete(&self, principal: &Principal, id: &str) -> Result<bool, HistoryError> {
        validate_id(id)?;
        Ok(self.lock().remove(&key(principal, id)).is_some())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::store::conformance;

    #[tokio::test]
    async fn conformance_suite() {
        let store = MemoryStore::new();
        conformance::run_with_row_count(&store, &|| store.rows_written()).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_saves() {
        conformance::concurrency(Arc::new(MemoryStore::new())).await;
    }

    #[tokio::test]
    async fn large_conversation() {
        conformance::large_conversation(&MemoryStore::new()).await;
    }
}
