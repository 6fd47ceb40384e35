//! SQLite history store: one file (WAL journal, `synchronous=NORMAL`, foreign keys on, a busy
//! timeout), the schema created or migrated at open and versioned with `PRAGMA user_version`.
//!
//! Tables: `conversations` (one row per principal and id, with the revision) and `messages` (one
//! row per message: the id and the message as JSON, ordered by `seq`, deleted with their
//! conversation through `ON DELETE CASCADE`). A save runs in one `IMMEDIATE` transaction, so the
//! revision check and the write are atomic, even across processes sharing the file.
//!
//! rusqlite is blocking: every operation runs on [`tokio::task::spawn_blocking`] with the single
//! connection behind a `std::sync::Mutex` (reads share it; SQLite serialises writers anyway).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use lmchatkit_protocol::{ConversationPatch, ConversationSummary, Params, StoredConversation};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::rows::{MessageRow, decode_rows, encode_messages, now_ms, row_matches, storage};
use super::{HistoryError, HistoryStore, SaveOutcome, validate_id};
use crate::host::Principal;

/// How long a statement waits for another connection's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Schema migrations; `PRAGMA user_version` is the number applied. Append, never edit.
const MIGRATIONS: &[&str] = &[
    // 1: conversations and their message rows.
    "CREATE TABLE conversations (
        principal  TEXT    NOT NULL,
        id         TEXT    NOT NULL,
        title      TEXT    NOT NULL DEFAULT '',
        persona_id TEXT    NOT NULL DEFAULT '',
        model      TEXT    NOT NULL DEFAULT '',
        params     TEXT    NOT NULL DEFAULT '{}',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        revision   INTEGER NOT NULL,
        PRIMARY KEY (principal, id)
    );
    CREATE INDEX conversations_by_updated
        ON conversations (principal, updated_at DESC, id);
    CREATE TABLE messages (
        principal       TEXT    NOT NULL,
        conversation_id TEXT    NOT NULL,
        seq             INTEGER NOT NULL,
        message_id      TEXT,
        body            TEXT    NOT NULL,
        PRIMARY KEY (principal, conversation_id, seq),
        FOREIGN KEY (principal, conversation_id)
            REFERENCES conversations (principal, id) ON DELETE CASCADE
    );",
];

/// The schema version this build writes.
const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// `rusqlite` errors as [`HistoryError::Storage`].
trait Db<T> {
    fn db(self) -> Result<T, HistoryError>;
}

impl<T> Db<T> for rusqlite::Result<T> {
    fn db(self) -> Result<T, HistoryError> {
        self.map_err(storage)
    }
}

/// Keeps conversations in one SQLite file (or in memory), scoped by principal.
///
/// ```
/// use lmchatkit::Principal;
/// use lmchatkit::history::{HistoryStore, SaveOutcome, SqliteStore};
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
    /// Message rows inserted plus deleted by saves (as SQLite reports them), for tests.
    rows_written: Arc<AtomicU64>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating when missing) the database file at `path`, sets WAL mode,
    /// `synchronous=NORMAL`, foreign keys and a busy timeout, and creates or migrates the schema.
    ///
    /// Blocking (it touches the file): call it at startup or inside `spawn_blocking`. A file whose
    /// schema is newer than this build fails with [`HistoryError::Storage`] rather than being
    /// modified.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = lmchatkit::history::SqliteStore::open(dir.path().join("h.db")).unwrap();
    /// # drop(store);
    /// assert!(dir.path().join("h.db").exists());
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Self, HistoryError> {
        let path = path.as_ref();
        let conn = Connection::open(path).db()?;
        Self::init(conn, Some(path.to_owned()))
    }

    /// A private in-memory database (nothing persists; for tests and demos).
    ///
    /// ```
    /// use lmchatkit::Principal;
    /// use lmchatkit::history::{HistoryStore, SqliteStore};
    ///
    /// let store = SqliteStore::in_memory().unwrap();
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// assert!(rt.block_on(store.list(&Principal::anonymous())).unwrap().is_empty());
    /// ```
    pub fn in_memory() -> Result<Self, HistoryError> {
        Self::init(Connection::open_in_memory().db()?, None)
    }

    fn init(mut conn: Connection, path: Option<PathBuf>) -> Result<Self, HistoryError> {
        conn.busy_timeout(BUSY_TIMEOUT).db()?;
        // In-memory databases answer "memory"; files switch to (and stay in) WAL.
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .db()?;
        if path.is_some() && !mode.eq_ignore_ascii_case("wal") {
            return Err(HistoryError::Storage(format!(
                "could not enable WAL journal mode (got {mode})"
            )));
        }
        conn.pragma_update(None, "synchronous", "NORMAL").db()?;
        conn.pragma_update(None, "foreign_keys", "ON").db()?;
        migrate(&mut conn)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            path,
            rows_written: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Runs `f` with the connection on the blocking pool.
    async fn run<T, F>(&self, f: F) -> Result<T, HistoryError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &AtomicU64) -> Result<T, HistoryError> + Send + 'static,
    {
        let conn = self.conn.clone();
        let counter = self.rows_written.clone();
        tokio::task::spawn_blocking(move || {
            // A panic mid-transaction rolled it back when the transaction dropped, so the
            // connection behind a poisoned lock is still usable.
            let mut conn = conn.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut conn, &counter)
        })
        .await
        .map_err(storage)?
    }

    /// Message rows inserted plus deleted by saves since open.
    #[cfg(test)]
    pub(crate) fn rows_written(&self) -> u64 {
        self.rows_written.load(Ordering::SeqCst)
    }

    /// Runs `f` on the connection synchronously (test inspection only).
    #[cfg(test)]
    pub(crate) fn with_conn<T>(&self, f: impl FnOnce(&Connection) -> T) -> T {
        f(&self.conn.lock().unwrap())
    }
}

fn migrate(conn: &mut Connection) -> Result<(), HistoryError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .db()?;
    let version: i64 = tx
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .db()?;
    if version > SCHEMA_VERSION {
        return Err(HistoryError::Storage(format!(
            "history database schema version {version} is newer than this build ({SCHEMA_VERSION})"
        )));
    }
    for sql in &MIGRATIONS[usize::try_from(version).unwrap_or(0)..] {
        tx.execute_batch(sql).db()?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .db()?;
    tx.commit().db()
}

const SUMMARY_COLUMNS: &str =
    "id, title, persona_id, model, params, created_at, updated_at, revision";

fn summary_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(ConversationSummary, String)> {
    Ok((
        ConversationSummary {
            id: r.get(0)?,
            title: r.get(1)?,
            persona_id: r.get(2)?,
            model: r.get(3)?,
            params: Params::new(),
            created_at: r.get(5)?,
            updated_at: r.get(6)?,
            revision: r.get::<_, i64>(7)? as u64,
        },
        r.get(4)?,
    ))
}

fn with_params(
    (mut s, params): (ConversationSummary, String),
) -> Result<ConversationSummary, HistoryError> {
    s.params = serde_json::from_str(&params).map_err(storage)?;
    Ok(s)
}

/// The whole conversation, or `None`.
fn load(
    conn: &Connection,
    principal: &str,
    id: &str,
) -> Result<Option<StoredConversation>, HistoryError> {
    let row = conn
        .prepare_cached(&format!(
            "SELECT {SUMMARY_COLUMNS} FROM conversations WHERE principal = ?1 AND id = ?2"
        ))
        .db()?
        .query_row(params![principal, id], summary_from_row)
        .optional()
        .db()?;
    let Some(row) = row else {
        return Ok(None);
    };
    let s = with_params(row)?;
    let mut stmt = conn
        .prepare_cached(
            "SELECT body FROM messages WHERE principal = ?1 AND conversation_id = ?2 ORDER BY seq",
        )
        .db()?;
    let bodies = stmt
        .query_map(params![principal, id], |r| r.get::<_, String>(0))
        .db()?
        .collect::<rusqlite::Result<Vec<_>>>()
        .db()?;
    Ok(Some(StoredConversation {
        id: s.id,
        title: s.title,
        persona_id: s.persona_id,
        model: s.model,
        params: s.params,
        created_at: s.created_at,
        updated_at: s.updated_at,
        revision: s.revision,
        messages: decode_rows(bodies.iter().map(String::as_str))?,
    }))
}

/// Length of the common prefix of the stored rows and `incoming`, reading only as far as needed.
fn stored_prefix(
    conn: &Connection,
    principal: &str,
    id: &str,
    incoming: &[MessageRow],
) -> Result<usize, HistoryError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT message_id, body FROM messages
             WHERE principal = ?1 AND conversation_id = ?2 ORDER BY seq",
        )
        .db()?;
    let mut rows = stmt.query(params![principal, id]).db()?;
    let mut keep = 0;
    while keep < incoming.len() {
        let Some(r) = rows.next().db()? else { break };
        let id = r.get_ref(0).db()?.as_str_or_null().map_err(storage)?;
        let body = r.get_ref(1).db()?.as_str().map_err(storage)?;
        if !row_matches(id, body, &incoming[keep]) {
            break;
        }
        keep += 1;
    }
    Ok(keep)
}

/// Inserts `rows` with `seq` numbers from `first_seq`; the number inserted.
fn insert_rows(
    conn: &Connection,
    principal: &str,
    id: &str,
    first_seq: usize,
    rows: &[MessageRow],
) -> Result<u64, HistoryError> {
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO messages (principal, conversation_id, seq, message_id, body)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .db()?;
    let mut n = 0;
    for (i, row) in rows.iter().enumerate() {
        let seq = (first_seq + i) as i64;
        n += stmt
            .execute(params![principal, id, seq, row.id, row.body])
            .db()? as u64;
    }
    Ok(n)
}

fn save_blocking(
    conn: &mut Connection,
    counter: &AtomicU64,
    principal: &str,
    c: StoredConversation,
    rows: Vec<MessageRow>,
) -> Result<SaveOutcome, HistoryError> {
    let now = now_ms();
    let params_json = serde_json::to_string(&c.params).map_err(storage)?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .db()?;
    let current: Option<i64> = tx
        .prepare_cached("SELECT revision FROM conversations WHERE principal = ?1 AND id = ?2")
        .db()?
        .query_row(params![principal, c.id], |r| r.get(0))
        .optional()
        .db()?;
    let (revision, written) = match current {
        None => {
            // Absent: create (also for a base > 0, e.g. deleted elsewhere — nothing is lost).
            let created_at = if c.created_at > 0 { c.created_at } else { now };
            tx.prepare_cached(
                "INSERT INTO conversations
                 (principal, id, title, persona_id, model, params, created_at, updated_at, revision)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1)",
            )
            .db()?
            .execute(params![
                principal,
                c.id,
                c.title,
                c.persona_id,
                c.model,
                params_json,
                created_at,
                now
            ])
            .db()?;
            (1, insert_rows(&tx, principal, &c.id, 0, &rows)?)
        }
        Some(stored) if c.revision == 0 || c.revision != stored as u64 => {
            let current = load(&tx, principal, &c.id)?
                .ok_or_else(|| HistoryError::Storage("conversation vanished".into()))?;
            return Ok(SaveOutcome::Conflict(Box::new(current)));
        }
        Some(stored) => {
            let keep = stored_prefix(&tx, principal, &c.id, &rows)?;
            let deleted = tx
                .prepare_cached(
                    "DELETE FROM messages WHERE principal = ?1 AND conversation_id = ?2 AND seq >= ?3",
                )
                .db()?
                .execute(params![principal, c.id, keep as i64])
                .db()? as u64;
            let inserted = insert_rows(&tx, principal, &c.id, keep, &rows[keep..])?;
            let revision = stored + 1;
            tx.prepare_cached(
                "UPDATE conversations
                 SET title = ?3, persona_id = ?4, model = ?5, params = ?6, updated_at = ?7,
                     revision = ?8
                 WHERE principal = ?1 AND id = ?2",
            )
            .db()?
            .execute(params![
                principal,
                c.id,
                c.title,
                c.persona_id,
                c.model,
                params_json,
                now,
                revision
            ])
            .db()?;
            (revision as u64, deleted + inserted)
        }
    };
    tx.commit().db()?;
    counter.fetch_add(written, Ordering::SeqCst);
    Ok(SaveOutcome::Saved { revision })
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

    async fn save(
        &self,
        principal: &Principal,
        conversation: StoredConversation,
    ) -> Result<SaveOutcome, HistoryError> {
        validate_id(&conversation.id)?;
        let principal = principal.id().to_owned();
        self.run(move |conn, counter| {
            // Serialise off the async threads: a long conversation is real work.
            let rows = encode_messages(&conversation.messages)?;
            save_blocking(conn, counter, &principal, conversation, rows)
        })
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

    async fn delete(&self, principal: &Principal, id: &str) -> Result<bool, HistoryError> {
        validate_id(id)?;
        let (principal, id) = (principal.id().to_owned(), id.to_owned());
        self.run(move |conn, _| {
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
}

#[cfg(test)]
mod tests;
