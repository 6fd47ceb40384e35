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

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use lmchatkit_protocol::{
    ConversationPatch, ConversationSummary, ConversationTotals, ConversationTree, SearchHit,
    StoredConversation, TreeNode,
};

use super::rows::{MessageRow, decode_rows, encode_messages, gone, now_ms};
use super::tree::{self, Shape};
use super::{BranchOutcome, HistoryError, HistoryStore, SaveOutcome, SearchQuery, validate_id};
use crate::host::Principal;

/// One stored conversation: its summary (with the current revision), the tools it always
/// allows, its messages as nodes of a tree ([`tree`](crate::store::tree)) and its active leaf.
#[derive(Debug, Clone)]
struct Entry {
    summary: ConversationSummary,
    allowed_tools: Vec<String>,
    /// Every stored message by node number: its parent and its row.
    nodes: BTreeMap<u64, (Option<u64>, MessageRow)>,
    leaf: Option<u64>,
    /// The number the next new node gets.
    next: u64,
}

impl Entry {
    fn new(summary: ConversationSummary, allowed_tools: Vec<String>) -> Self {
        Entry {
            summary,
            allowed_tools,
            nodes: BTreeMap::new(),
            leaf: None,
            next: 0,
        }
    }

    fn shape(&self) -> Shape {
        Shape::new(self.nodes.iter().map(|(n, (p, _))| (*n, *p)))
    }

    /// The active path's nodes, root first.
    fn path(&self) -> Vec<u64> {
        self.shape().path(self.leaf)
    }

    /// The rows of `path`.
    fn rows<'a>(&'a self, path: &'a [u64]) -> impl Iterator<Item = &'a MessageRow> + 'a {
        path.iter()
            .filter_map(|n| self.nodes.get(n).map(|(_, r)| r))
    }

    /// Appends `rows` as new nodes below `parent`; the last one's number.
    fn append(&mut self, mut parent: Option<u64>, rows: Vec<MessageRow>) -> Option<u64> {
        for row in rows {
            let node = self.next;
            self.next += 1;
            self.nodes.insert(node, (parent, row));
            parent = Some(node);
        }
        parent
    }

    /// The copy a read returns: the path from `from` on.
    fn to_conversation(&self, from: usize) -> Result<StoredConversation, HistoryError> {
        let s = &self.summary;
        let shape = self.shape();
        let path = shape.path(self.leaf);
        let mut branches = shape.branches(&path);
        let tail = path.get(from..).unwrap_or_default();
        branches.retain(|b| b.index >= from as u64);
        for b in &mut branches {
            b.index -= from as u64;
        }
        Ok(StoredConversation {
            id: s.id.clone(),
            title: s.title.clone(),
            persona_id: s.persona_id.clone(),
            model: s.model.clone(),
            params: s.params.clone(),
            created_at: s.created_at,
            updated_at: s.updated_at,
            revision: s.revision,
            messages: decode_rows(self.rows(tail).map(|r| r.body.as_str()))?,
            allowed_tools: self.allowed_tools.clone(),
            totals: s.totals,
            kept: None,
            tree: None,
            branches,
        })
    }

    /// The totals of the messages of `path`.
    fn totals_of(&self, path: &[u64]) -> Result<ConversationTotals, HistoryError> {
        let messages = decode_rows(self.rows(path).map(|r| r.body.as_str()))?;
        Ok(ConversationTotals::of(&messages))
    }

    /// Recomputes the totals of the active path (it moved), bumps the revision and the time.
    fn touch(&mut self) -> Result<u64, HistoryError> {
        self.summary.totals = self.totals_of(&self.path())?;
        self.summary.revision += 1;
        self.summary.updated_at = now_ms();
        Ok(self.summary.revision)
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

    /// A branch switch, or a delete of `node` with its descendants (`delete`): the leaf goes
    /// where [`tree`] says.
    fn branch_op(
        &self,
        principal: &Principal,
        id: &str,
        node: u64,
        delete: bool,
    ) -> Result<Option<BranchOutcome>, HistoryError> {
        validate_id(id)?;
        let mut map = self.lock();
        let Some(entry) = map.get_mut(&key(principal, id)) else {
            return Ok(None);
        };
        let shape = entry.shape();
        if !shape.contains(node) {
            return Ok(Some(BranchOutcome::NoSuchNode));
        }
        if delete {
            entry.leaf = shape.leaf_after_delete(node, entry.leaf);
            for gone in shape.subtree(node) {
                entry.nodes.remove(&gone);
            }
        } else {
            entry.leaf = Some(shape.switch_leaf(node, entry.leaf));
        }
        let revision = entry.touch()?;
        Ok(Some(BranchOutcome::Done { revision }))
    }

    /// Message rows inserted, updated or deleted by saves since creation.
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
        entry.map(|e| e.to_conversation(0)).transpose()
    }

    async fn get_tail(
        &self,
        principal: &Principal,
        id: &str,
        n: usize,
    ) -> Result<Option<(StoredConversation, u64)>, HistoryError> {
        validate_id(id)?;
        let entry = self.lock().get(&key(principal, id)).cloned();
        let Some(entry) = entry else {
            return Ok(None);
        };
        let before = entry.path().len().saturating_sub(n);
        Ok(Some((entry.to_conversation(before)?, before as u64)))
    }

    async fn save(
        &self,
        principal: &Principal,
        conversation: StoredConversation,
    ) -> Result<SaveOutcome, HistoryError> {
        validate_id(&conversation.id)?;
        let mut rows = encode_messages(&conversation.messages)?;
        // The totals of the messages sent: the whole path's, or a kept save's tail's.
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
        let Some(entry) = map.get_mut(&k) else {
            if kept.is_some_and(|n| n > 0) {
                return Ok(SaveOutcome::Conflict(Box::new(gone(&conversation.id))));
            }
            // Absent: create (also for a base > 0, e.g. deleted elsewhere — nothing is lost).
            let created_at = if conversation.created_at > 0 {
                conversation.created_at
            } else {
                now
            };
            self.rows_written
                .fetch_add(rows.len() as u64, Ordering::SeqCst);
            let mut entry = Entry::new(summary(created_at, 1, sent), conversation.allowed_tools);
            entry.leaf = entry.append(None, rows);
            map.insert(k, entry);
            return Ok(SaveOutcome::Saved { revision: 1 });
        };
        let path = entry.path();
        if base == 0
            || base != entry.summary.revision
            || kept.is_some_and(|n| n > path.len() as u64)
        {
            let current = entry.clone();
            drop(map);
            return Ok(SaveOutcome::Conflict(Box::new(current.to_conversation(0)?)));
        }
        let from = kept.map_or(0, |n| n as usize);
        let totals = match kept {
            None => sent,
            Some(_) if from == path.len() => entry.summary.totals.then(sent),
            Some(_) => entry.totals_of(&path[..from])?.then(sent),
        };
        let plan = {
            let stored: Vec<(u64, Option<&str>)> = path[from..]
                .iter()
                .map(|n| (*n, entry.nodes.get(n).and_then(|(_, r)| r.id.as_deref())))
                .collect();
            let ids: Vec<Option<&str>> = rows.iter().map(|r| r.id.as_deref()).collect();
            let body = |i: usize| entry.nodes.get(&stored[i].0).map(|(_, r)| r.body.as_str());
            tree::plan(&stored, from.checked_sub(1).map(|i| path[i]), &ids, |i| {
                body(i) == Some(rows[i].body.as_str())
            })
        };
        let added = rows.split_off(plan.new_from);
        let written = plan.updates.len() + added.len();
        for (i, node) in plan.updates {
            if let Some((_, row)) = entry.nodes.get_mut(&node) {
                *row = rows[i].clone();
            }
        }
        entry.leaf = entry.append(plan.parent, added);
        let revision = entry.summary.revision + 1;
        entry.summary = summary(entry.summary.created_at, revision, totals);
        entry.allowed_tools = conversation.allowed_tools;
        self.rows_written
            .fetch_add(written as u64, Ordering::SeqCst);
        Ok(SaveOutcome::Saved { revision })
    }

    /// A scan of every branch of every conversation of the principal, newest first, each
    /// conversation's messages in the order they were stored.
    async fn search(
        &self,
        principal: &Principal,
        query: &SearchQuery,
    ) -> Result<Vec<SearchHit>, HistoryError> {
        let mut entries: Vec<Entry> = self
            .lock()
            .iter()
            .filter(|((p, _), _)| p == principal.id())
            .map(|(_, e)| e.clone())
            .collect();
        entries.sort_by(|a, b| {
            let (a, b) = (&a.summary, &b.summary);
            b.updated_at.cmp(&a.updated_at).then(a.id.cmp(&b.id))
        });
        let mut hits = Vec::new();
        for e in entries {
            let shape = e.shape();
            let s = &e.summary;
            for (node, (_, row)) in &e.nodes {
                let m = super::rows::decode_message(&row.body)?;
                let depth = shape.depth(*node);
                if let Some(mut hit) = query.hit((&s.id, &s.title, s.updated_at), depth, &m) {
                    hit.node = Some(*node);
                    hits.push(hit);
                    if hits.len() == query.limit() {
                        return Ok(hits);
                    }
                }
            }
        }
        Ok(hits)
    }

    async fn get_tree(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<Option<ConversationTree>, HistoryError> {
        validate_id(id)?;
        let entry = self.lock().get(&key(principal, id)).cloned();
        let Some(entry) = entry else { return Ok(None) };
        let nodes = entry
            .nodes
            .iter()
            .map(|(node, (parent, row))| {
                Ok(TreeNode {
                    node: *node,
                    parent: *parent,
                    message: super::rows::decode_message(&row.body)?,
                })
            })
            .collect::<Result<Vec<_>, HistoryError>>()?;
        Ok(Some(ConversationTree {
            nodes,
            leaf: entry.leaf,
        }))
    }

    async fn switch_branch(
        &self,
        principal: &Principal,
        id: &str,
        node: u64,
    ) -> Result<Option<BranchOutcome>, HistoryError> {
        self.branch_op(principal, id, node, false)
    }

    async fn delete_branch(
        &self,
        principal: &Principal,
        id: &str,
        node: u64,
    ) -> Result<Option<BranchOutcome>, HistoryError> {
        self.branch_op(principal, id, node, true)
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
