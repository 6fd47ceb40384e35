//! The SQLite schema: connection settings and migrations, versioned by `PRAGMA user_version`.

use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

use lmchatkit_protocol::ConversationTotals;

use super::Synchronous;
use super::queries::Db;
use crate::store::HistoryError;
use crate::store::rows::{decode_rows, storage};

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
    // 4: what each conversation's replies used and cost (`ConversationTotals` as JSON),
    // written by every save; rows of older files are filled in by `backfill_totals`.
    "ALTER TABLE conversations ADD COLUMN totals TEXT NOT NULL DEFAULT '{}';",
    // 5: each principal's own MCP servers (`user_mcp`): `credentials` is the sealed headers
    // (never plain text), `tools` the accepted tools and `pending` the last refresh's listing,
    // both as JSON arrays.
    "CREATE TABLE user_mcp_servers (
        principal   TEXT    NOT NULL,
        slug        TEXT    NOT NULL,
        name        TEXT    NOT NULL,
        url         TEXT    NOT NULL,
        transport   TEXT    NOT NULL,
        credentials TEXT,
        enabled     INTEGER NOT NULL,
        created_at  INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL,
        revision    INTEGER NOT NULL,
        tools       TEXT    NOT NULL DEFAULT '[]',
        pending     TEXT    NOT NULL DEFAULT '[]',
        PRIMARY KEY (principal, slug)
    );",
    // 6: OAuth sign-in to users' servers (`user_mcp::oauth`): the status, and the sealed grant
    // and sign-in in progress (never plain text).
    "ALTER TABLE user_mcp_servers ADD COLUMN oauth_status TEXT NOT NULL DEFAULT 'not_used';
    ALTER TABLE user_mcp_servers ADD COLUMN oauth TEXT;
    ALTER TABLE user_mcp_servers ADD COLUMN oauth_pending TEXT;",
    // 7: a random number each save that writes messages changes (`sqlite::written`): a store
    // knows whether the rows are still the ones it wrote.
    "ALTER TABLE conversations ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;",
    // 8: full-text search (`store::search`): an FTS5 table of the searchable text of each
    // message, with the keys a hit needs (not indexed), and `messages.search_id`, the row of
    // a message's text there (NULL for messages search skips). A deleted message takes its
    // text with it (the trigger also runs for the rows a deleted conversation cascades to).
    // Rows stored before are indexed by `backfill_search`, in the migration's transaction.
    "CREATE VIRTUAL TABLE message_search USING fts5(
        text,
        principal UNINDEXED,
        conversation_id UNINDEXED,
        seq UNINDEXED,
        message_id UNINDEXED,
        tokenize = 'unicode61 remove_diacritics 0'
    );
    ALTER TABLE messages ADD COLUMN search_id INTEGER;
    CREATE TRIGGER messages_search_delete AFTER DELETE ON messages
        WHEN old.search_id IS NOT NULL
    BEGIN
        DELETE FROM message_search WHERE rowid = old.search_id;
    END;",
    // 9: full-text search without reading a stored row per match (`queries::search`): a
    // contentless FTS5 table (`detail=none`: rowids only, no positions or columns, which
    // search does not use) whose
    // rowid says where the message is, `conversations.search_key << 24 | seq`, so a search
    // reads only the index until it knows which conversations to open. Migration 8's table
    // goes; `backfill_search` indexes every stored message again.
    "DROP TRIGGER messages_search_delete;
    DROP TABLE message_search;
    ALTER TABLE conversations ADD COLUMN search_key INTEGER;
    UPDATE conversations SET search_key = rowid;
    CREATE UNIQUE INDEX conversations_by_search_key ON conversations (search_key);
    UPDATE messages SET search_id = NULL;
    CREATE VIRTUAL TABLE message_index USING fts5(
        text,
        content = '',
        contentless_delete = 1,
        detail = none,
        tokenize = 'unicode61 remove_diacritics 0'
    );
    CREATE TRIGGER messages_index_delete AFTER DELETE ON messages
        WHEN old.search_id IS NOT NULL
    BEGIN
        DELETE FROM message_index WHERE rowid = old.search_id;
    END;",
    // 10: conversations as trees (`store::tree`): `seq` numbers a message (its node), `parent`
    // is its parent's `seq` (NULL for a first message), `depth` its position on any path
    // through it; `conversations.leaf` ends the active path and `next_seq` is the number the
    // next new message gets (never one a deleted branch had). Rows stored before were one path
    // in `seq` order from 0, so each hangs from the one before and the last is the leaf. The
    // index holds the tree's shape, so reading it never touches a message's body.
    "ALTER TABLE messages ADD COLUMN parent INTEGER;
    ALTER TABLE messages ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
    UPDATE messages SET parent = nullif(seq, 0) - 1, depth = seq;
    ALTER TABLE conversations ADD COLUMN leaf INTEGER;
    UPDATE conversations SET leaf = (
        SELECT max(seq) FROM messages m
        WHERE m.principal = conversations.principal AND m.conversation_id = conversations.id
    );
    ALTER TABLE conversations ADD COLUMN next_seq INTEGER NOT NULL DEFAULT 0;
    UPDATE conversations SET next_seq = coalesce(leaf + 1, 0);
    CREATE INDEX messages_tree ON messages (principal, conversation_id, seq, parent, depth);",
    // 11: the full-text index merges its segments 16 at a time instead of FTS5's 4
    // (`automerge`, kept in the index's own config): each posting is merged about half as
    // often, which is most of what the index adds to a turn's save. Measured by the ignored
    // test `search_figures_on_ten_thousand_conversations` (10,000 conversations of 50
    // messages, saves with and without the index taking turns, 1,000 each): a turn's save
    // (2 messages onto 50) 1.79-1.84x the cost without the index at 4, 1.29-1.54x at 16;
    // a 50-message save 1.92-1.98x at 4, 1.83-1.86x at 16; search p95 13 ms either way.
    "INSERT INTO message_index (message_index, rank) VALUES ('automerge', 16);",
    // 12: what a save adds to the full-text index waits in `message_index_pending` (the
    // rowid only: the text is the message's), written in the save's transaction, until the
    // writer moves it into `message_index` in batches (`group`): FTS5 pays for every
    // transaction that writes to it (a new segment, its structure record, merges), so rows
    // written a few at a time cost it 10 to 20 times what rows written by the hundred do.
    // Search reads both, so a message is searchable from the commit of its save. A rowid is in
    // one of the two tables, never both; deleting a message removes it from whichever holds it.
    // Measured by `search_figures_on_ten_thousand_conversations` (release, saves with and
    // without searchable text taking turns, the writer's idle work waited out before each
    // timed save): a turn's save 0.99-1.06x the cost without (1.29-1.54x at migration 11), a
    // 50-message save 1.05-1.10x (1.83-1.90x); the idle work about 12 µs per message.
    "CREATE TABLE message_index_pending (id INTEGER PRIMARY KEY);
    DROP TRIGGER messages_index_delete;
    CREATE TRIGGER messages_index_delete AFTER DELETE ON messages
        WHEN old.search_id IS NOT NULL
    BEGIN
        DELETE FROM message_index WHERE rowid = (
            SELECT old.search_id WHERE NOT EXISTS (
                SELECT 1 FROM message_index_pending WHERE id = old.search_id
            )
        );
        DELETE FROM message_index_pending WHERE id = old.search_id;
    END;",
];

/// The migration that made the full-text index as it is now.
const SEARCH_MIGRATION: i64 = 9;

/// The migration that added the `totals` column.
const TOTALS_MIGRATION: i64 = 4;

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

/// Computes the totals of every conversation saved before they were kept (in the migration's
/// transaction).
fn backfill_totals(conn: &Connection) -> Result<(), HistoryError> {
    let keys = conn
        .prepare("SELECT principal, id FROM conversations")
        .db()?
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .db()?
        .collect::<rusqlite::Result<Vec<_>>>()
        .db()?;
    for (principal, id) in keys {
        let bodies = conn
            .prepare_cached(
                "SELECT body FROM messages WHERE principal = ?1 AND conversation_id = ?2 ORDER BY seq",
            )
            .db()?
            .query_map(rusqlite::params![principal, id], |r| r.get::<_, String>(0))
            .db()?
            .collect::<rusqlite::Result<Vec<_>>>()
            .db()?;
        let messages = decode_rows(bodies.iter().map(String::as_str))?;
        let totals = serde_json::to_string(&ConversationTotals::of(&messages)).map_err(storage)?;
        conn.prepare_cached(
            "UPDATE conversations SET totals = ?3 WHERE principal = ?1 AND id = ?2",
        )
        .db()?
        .execute(rusqlite::params![principal, id, totals])
        .db()?;
    }
    Ok(())
}

/// Indexes the text of every message stored before the index was as it is now (in the
/// migration's transaction).
fn backfill_search(conn: &Connection) -> Result<(), HistoryError> {
    let rows = conn
        .prepare(
            "SELECT m.rowid, c.search_key, m.seq, m.body
             FROM messages m
             JOIN conversations c ON c.principal = m.principal AND c.id = m.conversation_id",
        )
        .db()?
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, String>(3)?,
            ))
        })
        .db()?
        .collect::<rusqlite::Result<Vec<_>>>()
        .db()?;
    for (rowid, key, seq, body) in rows {
        let message = crate::store::rows::decode_message(&body)?;
        let Some(text) = crate::store::search::searchable_text(&message) else {
            continue;
        };
        let Some(search_id) = super::queries::index_text(conn, key, seq, &text)? else {
            continue;
        };
        conn.prepare_cached("UPDATE messages SET search_id = ?2 WHERE rowid = ?1")
            .db()?
            .execute(rusqlite::params![rowid, search_id])
            .db()?;
    }
    Ok(())
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
    if version > 0 && version < TOTALS_MIGRATION {
        backfill_totals(&tx)?;
    }
    if version > 0 && version < SEARCH_MIGRATION {
        backfill_search(&tx)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .db()?;
    tx.commit().db()
}
