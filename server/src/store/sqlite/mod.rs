//! SQLite history store: one file (WAL journal, `synchronous` from [`SqliteOptions`], foreign
//! keys on, a busy timeout), the schema created or migrated at open and versioned with
//! `PRAGMA user_version`.
//!
//! Durability: a save is acknowledged only after its transaction commits. With the default
//! [`Synchronous::Full`] the commit waits for the WAL to reach the disk, so an acknowledged save
//! survives a power loss or an OS crash; [`Synchronous::Normal`] trades that for throughput (the
//! last saves before a power loss can be rolled back; the file stays consistent). Either mode
//! survives the process being killed: the WAL is in the OS page cache, and the next open
//! recovers it. The app's kill -9 test (`binary_durability`) checks the latter with the real
//! binary; power loss cannot be tested there. The bench reports the cost of `Full`.
//!
//! Tables: `conversations` (one row per principal and id, with the revision) and `messages` (one
//! row per message: the id and the message as JSON, ordered by `seq`, deleted with their
//! conversation through `ON DELETE CASCADE`). A save runs in one `IMMEDIATE` transaction, so the
//! revision check and the write are atomic, even across processes sharing the file. The store
//! is also an [`ApprovalStore`](crate::ApprovalStore): `tool_approvals` holds each principal's
//! "always allow" list in the same file, and (feature `mcp`) a
//! [`UserMcpStore`](crate::user_mcp::UserMcpStore): `user_mcp_servers` holds each principal's
//! own MCP servers, so they share the history's file, durability and backups.
//!
//! rusqlite is blocking: every operation runs on [`tokio::task::spawn_blocking`] with the single
//! connection behind a `std::sync::Mutex` (reads share it; SQLite serialises writers anyway).
//!
//! Saves go through one writer thread that commits every save waiting in one transaction
//! (each in a savepoint, answered after the commit; see `group`), so concurrent saves share a
//! WAL sync. A save costs what it adds: the store remembers what it wrote last of recent
//! conversations (bounded; checked against a random `generation` each message write stores in
//! the row, so a write through another connection is noticed), finds the common prefix by
//! comparing messages with that, and serialises and writes only the messages after it. Without
//! a current entry it compares the serialised messages with the stored rows, as it always did
//! (see `written`).

use std::path::{Path, PathBuf};
#[cfg(test)]
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use lmchatkit_protocol::{ConversationPatch, ConversationSummary, StoredConversation};
use rusqlite::{Connection, OptionalExtension, params};

use self::group::{FlushLimits, Group};
use self::queries::{
    Counters, Db, SUMMARY_COLUMNS, load, load_tail, summary_from_row, with_params,
};
use self::written::Written;
use super::rows::{now_ms, storage};
use super::{BranchOutcome, HistoryError, HistoryStore, SaveOutcome, validate_id};
use crate::host::Principal;

/// Keeps conversations in one SQLite file (or in memory), scoped by principal.
///
/// ```
/// use lmchatkit::Principal;
/// use lmchatkit::store::{HistoryStore, SaveOutcome, SqliteStore};
/// use lmchatkit::protocol::{Message, StoredConversation};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("history.db");
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// rt.block_on(async {
///     let store = SqliteStore::open(&path).unwrap();
///     let me = Principal::anonymous();
///     let conversation = StoredConversation {
///         id: "c-1".into(),
///         title: "Persisted".into(),
///         messages: vec![Message::user("hi").with_id("m1")],
///         ..Default::default()
///     };
///     assert_eq!(
///         store.save(&me, conversation).await.unwrap(),
///         SaveOutcome::Saved { revision: 1 }
///     );
///     drop(store);
///
///     // Reopened, the conversation is still there.
///     let store = SqliteStore::open(&path).unwrap();
///     let got = store.get(&me, "c-1").await.unwrap().unwrap();
///     assert_eq!(got.title, "Persisted");
///     assert_eq!(got.revision, 1);
/// });
/// ```
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    path: Option<PathBuf>,
    synchronous: Synchronous,
    /// Message rows written and read by saves (as SQLite reports them), for tests.
    counters: Arc<Counters>,
    /// What saves wrote last of recent conversations (see `written`); locked only while the
    /// connection is.
    written: Arc<Mutex<Written>>,
    /// The writer thread saves go through (see `group`).
    group: Group,
    /// When the writer fills the full-text index (see `group`); tests change them.
    #[cfg_attr(not(test), allow(dead_code))]
    limits: Arc<FlushLimits>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .field("synchronous", &self.synchronous)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating when missing) the database file at `path` with the default
    /// [`SqliteOptions`] (`synchronous=FULL`); see [`open_with`](Self::open_with).
    ///
    /// Blocking (it touches the file): call it at startup or inside `spawn_blocking`. A file whose
    /// schema is newer than this build fails with [`HistoryError::Storage`] rather than being
    /// modified.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = lmchatkit::store::SqliteStore::open(dir.path().join("h.db")).unwrap();
    /// # drop(store);
    /// assert!(dir.path().join("h.db").exists());
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Self, HistoryError> {
        Self::open_with(path, SqliteOptions::default())
    }

    /// Opens (creating when missing) the database file at `path`, sets WAL mode, the
    /// `synchronous` mode of `options`, foreign keys and a busy timeout, and creates or migrates
    /// the schema.
    ///
    /// Blocking, like [`open`](Self::open).
    pub fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, HistoryError> {
        let path = path.as_ref();
        let conn = Connection::open(path).db()?;
        Self::init(conn, Some(path.to_owned()), &options)
    }

    /// A private in-memory database (nothing persists; for tests and demos).
    ///
    /// ```
    /// use lmchatkit::Principal;
    /// use lmchatkit::store::{HistoryStore, SqliteStore};
    ///
    /// let store = SqliteStore::in_memory().unwrap();
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// assert!(rt.block_on(store.list(&Principal::anonymous())).unwrap().is_empty());
    /// ```
    pub fn in_memory() -> Result<Self, HistoryError> {
        Self::in_memory_with(SqliteOptions::default())
    }

    /// A private in-memory database set up with `options` (nothing reaches a disk, so
    /// `synchronous` changes nothing but what SQLite reports).
    pub fn in_memory_with(options: SqliteOptions) -> Result<Self, HistoryError> {
        Self::init(Connection::open_in_memory().db()?, None, &options)
    }

    /// The `synchronous` mode the connection runs with.
    pub fn synchronous(&self) -> Synchronous {
        self.synchronous
    }

    fn init(
        mut conn: Connection,
        path: Option<PathBuf>,
        options: &SqliteOptions,
    ) -> Result<Self, HistoryError> {
        schema::configure(&conn, path.is_some(), options.synchronous())?;
        schema::migrate(&mut conn)?;
        let conn = Arc::new(Mutex::new(conn));
        let counters = Arc::<Counters>::default();
        let written = Arc::<Mutex<Written>>::default();
        let limits = Arc::<FlushLimits>::default();
        let group = Group::start(
            conn.clone(),
            counters.clone(),
            written.clone(),
            limits.clone(),
        )?;
        Ok(Self {
            conn,
            path,
            synchronous: options.synchronous(),
            counters,
            written,
            group,
            limits,
        })
    }

    /// Runs `f` with the connection on the blocking pool.
    async fn run<T, F>(&self, f: F) -> Result<T, HistoryError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &Counters) -> Result<T, HistoryError> + Send + 'static,
    {
        let conn = self.conn.clone();
        let counters = self.counters.clone();
        tokio::task::spawn_blocking(move || {
            // A panic mid-transaction rolled it back when the transaction dropped, so the
            // connection behind a poisoned lock is still usable.
            let mut conn = conn.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut conn, &counters)
        })
        .await
        .map_err(storage)?
    }

    /// A branch switch or delete ([`queries::branch_op`]) in one transaction; what the cache
    /// held of the conversation is forgotten (the generation changed).
    async fn branch_op(
        &self,
        principal: &Principal,
        id: &str,
        node: u64,
        delete: bool,
    ) -> Result<Option<BranchOutcome>, HistoryError> {
        validate_id(id)?;
        let (principal, id) = (principal.id().to_owned(), id.to_owned());
        let written = self.written.clone();
        self.run(move |conn, _| {
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .db()?;
            let out = queries::branch_op(&tx, &principal, &id, node, delete)?;
            tx.commit().db()?;
            let forgotten = written
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .forget(&principal, &id);
            drop(forgotten);
            Ok(out)
        })
        .await
    }

    /// Message rows inserted, updated or deleted by saves since open.
    #[cfg(test)]
    pub(crate) fn rows_written(&self) -> u64 {
        self.counters.written.load(Ordering::SeqCst)
    }

    /// Stored message rows read by saves to find the common prefix since open.
    #[cfg(test)]
    pub(crate) fn rows_read(&self) -> u64 {
        self.counters.read.load(Ordering::SeqCst)
    }

    /// Waits until the writer has ended what it was doing (a save group, or one batch of rows
    /// moved into the full-text index while it was idle).
    #[cfg(test)]
    pub(crate) async fn settle(&self) {
        self.group.settle().await;
    }

    /// Rows the writer has moved into the full-text index since open, and the time that took.
    #[cfg(test)]
    pub(crate) fn index_flushed(&self) -> (u64, std::time::Duration) {
        (
            self.counters.flushed.load(Ordering::SeqCst),
            std::time::Duration::from_nanos(self.counters.flush_nanos.load(Ordering::SeqCst)),
        )
    }

    /// Sets how many rows must wait before an idle writer moves them into the full-text index,
    /// and past how many a save group moves them before its commit.
    #[cfg(test)]
    pub(crate) fn set_flush_limits(&self, at: usize, forced: usize) {
        self.limits.at.store(at, Ordering::SeqCst);
        self.limits.forced.store(forced, Ordering::SeqCst);
    }

    /// Runs `f` on the connection synchronously (test inspection only).
    #[cfg(test)]
    pub(crate) fn with_conn<T>(&self, f: impl FnOnce(&Connection) -> T) -> T {
        f(&self.conn.lock().unwrap())
    }
}

#[async_trait]
impl HistoryStore for SqliteStore {
    async fn list(&self, principal: &Principal) -> Result<Vec<ConversationSummary>, HistoryError> {
        let principal = principal.id().to_owned();
        self.run(move |conn, _| {
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT {SUMMARY_COLUMNS} FROM conversations WHERE principal = ?1
                     ORDER BY updated_at DESC, id ASC"
                ))
                .db()?;
            let rows = stmt
                .query_map(params![principal], summary_from_row)
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            rows.into_iter().map(with_params).collect()
        })
        .await
    }

    async fn get(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<Option<StoredConversation>, HistoryError> {
        validate_id(id)?;
        let (principal, id) = (principal.id().to_owned(), id.to_owned());
        self.run(move |conn, _| load(conn, &principal, &id)).await
    }

    async fn get_tail(
        &self,
        principal: &Principal,
        id: &str,
        n: usize,
    ) -> Result<Option<(StoredConversation, u64)>, HistoryError> {
        validate_id(id)?;
        let (principal, id) = (principal.id().to_owned(), id.to_owned());
        self.run(move |conn, _| load_tail(conn, &principal, &id, n))
            .await
    }

    async fn save(
        &self,
        principal: &Principal,
        conversation: StoredConversation,
    ) -> Result<SaveOutcome, HistoryError> {
        validate_id(&conversation.id)?;
        // Serialising happens on the writer thread too, off the async threads: a long
        // conversation is real work.
        self.group
            .save(principal.id().to_owned(), conversation)
            .await
    }

    async fn patch(
        &self,
        principal: &Principal,
        id: &str,
        patch: ConversationPatch,
    ) -> Result<Option<u64>, HistoryError> {
        validate_id(id)?;
        let (principal, id) = (principal.id().to_owned(), id.to_owned());
        let title = patch.title.trim().to_owned();
        let params_json = patch
            .params
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(storage)?;
        let now = now_ms();
        self.run(move |conn, _| {
            let revision: Option<i64> = conn
                .prepare_cached(
                    "UPDATE conversations SET
                        title = CASE WHEN ?3 = '' THEN title ELSE ?3 END,
                        model = COALESCE(NULLIF(?4, ''), model),
                        persona_id = COALESCE(NULLIF(?5, ''), persona_id),
                        params = COALESCE(?6, params),
                        updated_at = ?7,
                        revision = revision + 1
                     WHERE principal = ?1 AND id = ?2
                     RETURNING revision",
                )
                .db()?
                .query_row(
                    params![
                        principal,
                        id,
                        title,
                        patch.model,
                        patch.persona_id,
                        params_json,
                        now
                    ],
                    |r| r.get(0),
                )
                .optional()
                .db()?;
            Ok(revision.map(|r| r as u64))
        })
        .await
    }

    async fn get_tree(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<Option<lmchatkit_protocol::ConversationTree>, HistoryError> {
        validate_id(id)?;
        let (principal, id) = (principal.id().to_owned(), id.to_owned());
        self.run(move |conn, _| queries::load_tree(conn, &principal, &id))
            .await
    }

    async fn switch_branch(
        &self,
        principal: &Principal,
        id: &str,
        node: u64,
    ) -> Result<Option<BranchOutcome>, HistoryError> {
        self.branch_op(principal, id, node, false).await
    }

    async fn delete_branch(
        &self,
        principal: &Principal,
        id: &str,
        node: u64,
    ) -> Result<Option<BranchOutcome>, HistoryError> {
        self.branch_op(principal, id, node, true).await
    }

    async fn delete(&self, principal: &Principal, id: &str) -> Result<bool, HistoryError> {
        validate_id(id)?;
        let (principal, id) = (principal.id().to_owned(), id.to_owned());
        let written = self.written.clone();
        self.run(move |conn, _| {
            let forgotten = written
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .forget(&principal, &id);
            drop(forgotten);
            // Messages go with it (ON DELETE CASCADE).
            let n = conn
                .prepare_cached("DELETE FROM conversations WHERE principal = ?1 AND id = ?2")
                .db()?
                .execute(params![principal, id])
                .db()?;
            Ok(n > 0)
        })
        .await
    }

    async fn search(
        &self,
        principal: &Principal,
        query: &crate::store::SearchQuery,
    ) -> Result<Vec<lmchatkit_protocol::SearchHit>, HistoryError> {
        let (principal, query) = (principal.id().to_owned(), query.clone());
        self.run(move |conn, _| queries::search(conn, &principal, &query))
            .await
    }
}

mod approvals;
mod group;
mod options;
mod queries;
mod schema;
#[cfg(feature = "mcp")]
mod user_mcp;
mod written;

pub use options::{SqliteOptions, Synchronous, UnknownSynchronous};
#[cfg(test)]
mod tests;
