//! Conversation history: the [`HistoryStore`] trait and its stores.
//!
//! Write model: every conversation has a `revision` and is a tree of messages ([`tree`]): each
//! message has a parent, edits and regenerated replies are versions side by side, and the
//! conversation has an active leaf. A read returns the active path (root to leaf) with the
//! versions of its messages ([`StoredConversation::branches`]). A save sends the active path
//! with the revision it started from (`0` creates); the store compares it with the stored path,
//! keeps what is equal, updates in place what changed under its id, adds the rest as new
//! messages (a new version where they part) and bumps the revision; nothing of another branch
//! is written or lost. A save may instead name how many stored messages it keeps and send only
//! what follows them. A stale revision is a [`SaveOutcome::Conflict`] carrying the current
//! copy, so nothing is overwritten silently. [`HistoryStore::switch_branch`] and
//! [`HistoryStore::delete_branch`] move between versions and delete them. System messages are
//! never stored. Everything is scoped by [`Principal`].
//!
//! Decisions every store implements, checked by the `conformance` suite (public with the
//! `test-support` feature, for authors of other stores):
//! - What a save writes is what [`tree`] decides: messages equal to the stored path's (same
//!   id, same JSON) are kept; one changed under its id is updated in place when it ends the
//!   stored path or the save goes on with the stored next message; anything else starts a new
//!   version. Appending one turn writes one turn; regenerating a reply writes the new reply.
//! - A save may say how many stored messages it keeps ([`StoredConversation::kept`]): then its
//!   messages are only what follows them, nothing before them is compared or sent, and the
//!   totals grow by what the new messages add, so saving one more turn costs what the turn
//!   holds whatever the conversation's length. The client vouches for the kept messages under
//!   the base revision (as it vouches for the whole conversation in a whole save); the store
//!   checks the revision and that so many are stored. Keeping more than are stored, or keeping
//!   any of a conversation that is gone, is a [`SaveOutcome::Conflict`] (for a gone one, an
//!   empty copy at revision `0`); keeping none of a gone one creates it.
//! - A save with a base revision `> 0` for an id that is absent (e.g. deleted in another tab)
//!   recreates it at revision 1 rather than failing: nothing is lost.
//! - `created_at` is set by the first save (the body's value when `> 0`, else now) and kept after;
//!   `updated_at` is now (ms) on every save and patch.
//! - A patch whose title is blank after trimming keeps the stored title (the route rejects blank
//!   titles; this only guards direct callers).
//! - Only conversation ids are checked with [`validate_id`]; message ids are opaque data.

use async_trait::async_trait;
use lmchatkit_protocol::{
    ConversationPatch, ConversationSummary, ConversationTree, SearchHit, StoredConversation,
    TreeNode,
};

use crate::host::Principal;

#[cfg(any(test, feature = "test-support"))]
pub mod conformance;
pub mod memory;
pub(crate) mod restore;
mod rows;
pub(crate) use rows::now_ms;
pub mod search;
#[cfg(test)]
pub(crate) mod search_figures;
pub mod tree;
pub use search::SearchQuery;
mod approvals;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(feature = "mcp")]
mod user_mcp;

pub use approvals::{ApprovalStore, ApprovalStoreError};
#[cfg(feature = "mcp")]
pub use memory::MemoryUserMcpStore;
#[cfg(feature = "mcp")]
pub use user_mcp::{UserMcpRecord, UserMcpStore, UserMcpStoreError};

pub use memory::{MemoryApprovalStore, MemoryStore};
#[cfg(feature = "postgres")]
pub use postgres::{PostgresCounters, PostgresOptions, PostgresStore};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteOptions, SqliteStore, Synchronous, UnknownSynchronous};

/// Errors of a history store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The id is empty, too long, or holds `/`, `..`, NUL or control characters.
    #[error("invalid conversation id")]
    InvalidId,
    /// The conversation holds something the store cannot keep (e.g. a NUL character in a
    /// title, which PostgreSQL refuses); the caller's mistake, a 400.
    #[error("invalid conversation: {0}")]
    InvalidInput(String),
    /// The store is at capacity or briefly unreachable (no pooled connection within the
    /// acquire timeout): nothing was written, a retry may succeed; a 503 with `Retry-After`.
    #[error("history store busy: {0}")]
    Busy(String),
    /// The store failed.
    #[error("history store: {0}")]
    Storage(String),
}

impl From<HistoryError> for crate::error::Failure {
    fn from(e: HistoryError) -> Self {
        use crate::error::{BUSY_RETRY_AFTER, Failure};
        match e {
            HistoryError::InvalidId | HistoryError::InvalidInput(_) => {
                Failure::Invalid(e.to_string())
            }
            HistoryError::Busy(_) => Failure::Busy {
                message: e.to_string(),
                retry_after: BUSY_RETRY_AFTER,
            },
            HistoryError::Storage(_) => Failure::Internal(e.to_string()),
        }
    }
}

/// What a save did.
#[derive(Debug, Clone, PartialEq)]
pub enum SaveOutcome {
    /// Saved; the new revision.
    Saved {
        /// The revision after this save.
        revision: u64,
    },
    /// The base revision was stale (or `0` for an existing id): the current copy.
    Conflict(Box<StoredConversation>),
}

/// What a branch switch or delete did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BranchOutcome {
    /// Done; the new revision.
    Done {
        /// The revision after it.
        revision: u64,
    },
    /// The conversation holds no such node.
    NoSuchNode,
}

/// Where conversations live. All methods are scoped to `principal`.
#[async_trait]
pub trait HistoryStore: Send + Sync + 'static {
    /// Summaries, newest `updated_at` first (ties by id).
    async fn list(&self, principal: &Principal) -> Result<Vec<ConversationSummary>, HistoryError>;

    /// One conversation, without system messages; `None` when absent.
    async fn get(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<Option<StoredConversation>, HistoryError>;

    /// The conversation with only its last `n` messages, and how many stored messages come
    /// before them; `None` when absent. What a save that keeps the rest needs to know of a
    /// long conversation (the service's own save of a reply reads this, not the whole of it).
    /// The default reads the whole conversation and drops the rest; the stores here read only
    /// the last `n` messages.
    async fn get_tail(
        &self,
        principal: &Principal,
        id: &str,
        n: usize,
    ) -> Result<Option<(StoredConversation, u64)>, HistoryError> {
        Ok(self.get(principal, id).await?.map(|mut c| {
            let before = c.messages.len().saturating_sub(n);
            c.messages.drain(..before);
            (c, before as u64)
        }))
    }

    /// Saves the conversation: the whole of it, or with [`StoredConversation::kept`] the
    /// messages after the kept ones; `conversation.revision` is the base revision.
    async fn save(
        &self,
        principal: &Principal,
        conversation: StoredConversation,
    ) -> Result<SaveOutcome, HistoryError>;

    /// Renames / changes setup; the new revision, or `None` when absent.
    async fn patch(
        &self,
        principal: &Principal,
        id: &str,
        patch: ConversationPatch,
    ) -> Result<Option<u64>, HistoryError>;

    /// Deletes; `false` when absent.
    async fn delete(&self, principal: &Principal, id: &str) -> Result<bool, HistoryError>;

    /// Every stored message of the conversation with its parent, and the active leaf (what an
    /// export that keeps every branch reads); `None` when absent. The default is the active
    /// path as one branch (a store without branches); the stores here give the whole tree.
    async fn get_tree(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<Option<ConversationTree>, HistoryError> {
        Ok(self.get(principal, id).await?.map(|c| {
            let nodes: Vec<TreeNode> = c
                .messages
                .into_iter()
                .enumerate()
                .map(|(i, message)| TreeNode {
                    node: i as u64,
                    parent: (i as u64).checked_sub(1),
                    message,
                })
                .collect();
            let leaf = nodes.last().map(|n| n.node);
            ConversationTree { nodes, leaf }
        }))
    }

    /// Makes the branch through `node` the active one ([`tree`] says how the leaf is chosen)
    /// and bumps the revision; `None` when the conversation is absent.
    async fn switch_branch(
        &self,
        principal: &Principal,
        id: &str,
        node: u64,
    ) -> Result<Option<BranchOutcome>, HistoryError>;

    /// Deletes `node` with every message that follows it on any branch, moving the active
    /// branch when it was among them ([`tree`] says where), and bumps the revision; `None`
    /// when the conversation is absent.
    async fn delete_branch(
        &self,
        principal: &Principal,
        id: &str,
        node: u64,
    ) -> Result<Option<BranchOutcome>, HistoryError>;

    /// The principal's messages that match `query` ([`search`] says what matches and how hits
    /// are ordered), at most [`SearchQuery::limit`].
    ///
    /// The default reads every conversation ([`list`](Self::list), then [`get`](Self::get)
    /// each) and is what the memory store uses; the SQLite and PostgreSQL stores ask their
    /// full-text index (FTS5; `tsvector` with a GIN index), kept in each save's transaction.
    async fn search(
        &self,
        principal: &Principal,
        query: &SearchQuery,
    ) -> Result<Vec<SearchHit>, HistoryError> {
        let mut hits = Vec::new();
        for summary in self.list(principal).await? {
            let Some(c) = self.get(principal, &summary.id).await? else {
                continue;
            };
            for (i, m) in c.messages.iter().enumerate() {
                if let Some(hit) = query.hit((&c.id, &c.title, c.updated_at), i as u64, m) {
                    hits.push(hit);
                    if hits.len() == query.limit() {
                        return Ok(hits);
                    }
                }
            }
        }
        Ok(hits)
    }
}

/// A conversation id from a URL path: percent-decoded, then checked with [`validate_id`].
///
/// ```
/// assert_eq!(lmchatkit::store::decode_id("c%201").unwrap(), "c 1");
/// assert!(lmchatkit::store::decode_id("%2E%2E").is_err());
/// ```
pub fn decode_id(raw: &str) -> Result<String, HistoryError> {
    let id = percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .map_err(|_| HistoryError::InvalidId)?
        .into_owned();
    validate_id(&id)?;
    Ok(id)
}

/// Checks a conversation id: 1–128 bytes, no `/`, `\`, `..`, NUL or control characters.
///
/// ```
/// assert!(lmchatkit::store::validate_id("c-abc123").is_ok());
/// assert!(lmchatkit::store::validate_id("../etc").is_err());
/// ```
pub fn validate_id(id: &str) -> Result<(), HistoryError> {
    let bad = id.is_empty()
        || id.len() > 128
        || id.contains("..")
        || id.chars().any(|c| c == '/' || c == '\\' || c.is_control());
    if bad {
        Err(HistoryError::InvalidId)
    } else {
        Ok(())
    }
}
