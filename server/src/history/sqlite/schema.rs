//! The SQLite schema: connection settings and migrations, versioned by `PRAGMA user_version`.

use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

use super::Synchronous;
use super::queries::Db;
use crate::history::HistoryError;

/// How long a statement waits for another connection's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Schema migrations; `PRAGMA user_version` is the number applied. Append, never edit.
pub(super) const MIGRATIONS: &[&str] = &[
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
    // 2: the tools a conversation always allows (a JSON array of names).
    "ALTER TABLE conversations ADD COLUMN allowed_tools TEXT NOT NULL DEFAULT '[]';",
    // 3: the tools each principal always allows, in every chat (a JSON array of names).
    "CREATE TABLE tool_approvals (
        principal TEXT NOT NULL PRIMARY KEY,
        always    TEXT NOT NULL DEFAULT '[]'
    );",
];

/// The schema version this build writes.
pub(super) const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Sets the busy timeout, WAL journal mode (files only; an in-memory database answers
/// "memory"), the `synchronous` mode and foreign keys.
pub(super) fn configure(
    conn: &Connection,
    is_file: bool,
    synchronous: Synchronous,
) -> Result<(), HistoryError> {
    conn.busy_timeout(BUSY_TIMEOUT).db()?;
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
        .db()?;
    if is_file && !mode.eq_ignore_ascii_case("wal") {
        return Err(HistoryError::Storage(format!(
            "could not enable WAL journal mode (got {mode})"
        )));
    }
    conn.pragma_update(None, "synchronous", synchronous.pragma())
        .db()?;
    conn.pragma_update(None, "foreign_keys", "ON").db()
}

/// Creates or migrates the schema in one transaction; refuses a newer schema.
pub(super) fn migrate(conn: &mut Connection) -> Result<(), HistoryError> {
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
