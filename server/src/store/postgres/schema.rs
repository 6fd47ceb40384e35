//! The PostgreSQL schema and its migrations.
//!
//! Decisions: migrations are numbered, append-only, and recorded one row per version in
//! `lmchatkit_migrations`; they run at connect in one transaction that first takes
//! `pg_advisory_xact_lock` on a key derived from the schema's name, so two instances starting
//! at once apply them once (the second waits, then finds them applied) and instances using
//! other schemas never wait for each other. A database whose highest recorded version is
//! newer than this build knows is refused, untouched. The schema's tables mirror the SQLite
//! store's (after its migration 6), with two differences: each message row carries the
//! SHA-256 of its body (`hash`), which the save compares instead of the body, and JSON stays
//! `text` (not `jsonb`), so bodies come back byte-exact (key order kept) and a `\u0000` inside
//! a JSON string is stored as written.
//!
//! Migration 4 makes conversations trees (the store's module docs say how they are kept): it
//! keeps every stored row and its `seq`, which becomes its node number, and makes each row the
//! child of the row before it, so a conversation stored before opens as one branch whose leaf
//! is its last message. Rows whose data a migration's SQL cannot compute are filled in by Rust
//! in the same transaction (`backfill_search`, `backfill_message_ids`). Tests bring a schema to
//! an earlier version with [`migrate_to`], to check the migrations from it.

use tokio_postgres::Client;

use super::pg;
use crate::store::HistoryError;

/// Schema migrations; version `i + 1` is `MIGRATIONS[i]`. Append, never edit.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: everything the SQLite store holds after its migration 6.
    "CREATE TABLE conversations (
        principal     TEXT   NOT NULL,
        id            TEXT   NOT NULL,
        title         TEXT   NOT NULL DEFAULT '',
        persona_id    TEXT   NOT NULL DEFAULT '',
        model         TEXT   NOT NULL DEFAULT '',
        params        TEXT   NOT NULL DEFAULT '{}',
        created_at    BIGINT NOT NULL,
        updated_at    BIGINT NOT NULL,
        revision      BIGINT NOT NULL,
        allowed_tools TEXT   NOT NULL DEFAULT '[]',
        totals        TEXT   NOT NULL DEFAULT '{}',
        PRIMARY KEY (principal, id)
    );
    CREATE INDEX conversations_by_updated
        ON conversations (principal, updated_at DESC, id COLLATE \"C\");
    CREATE TABLE messages (
        principal       TEXT    NOT NULL,
        conversation_id TEXT    NOT NULL,
        seq             INTEGER NOT NULL,
        hash            BYTEA   NOT NULL,
        body            TEXT    NOT NULL,
        PRIMARY KEY (principal, conversation_id, seq),
        FOREIGN KEY (principal, conversation_id)
            REFERENCES conversations (principal, id) ON DELETE CASCADE
    );
    CREATE TABLE tool_approvals (
        principal TEXT NOT NULL PRIMARY KEY,
        always    TEXT NOT NULL DEFAULT '[]'
    );
    CREATE TABLE user_mcp_servers (
        principal     TEXT    NOT NULL,
        slug          TEXT    NOT NULL,
        name          TEXT    NOT NULL,
        url           TEXT    NOT NULL,
        transport     TEXT    NOT NULL,
        credentials   TEXT,
        enabled       BOOLEAN NOT NULL,
        created_at    BIGINT  NOT NULL,
        updated_at    BIGINT  NOT NULL,
        revision      BIGINT  NOT NULL,
        tools         TEXT    NOT NULL DEFAULT '[]',
        pending       TEXT    NOT NULL DEFAULT '[]',
        oauth_status  TEXT    NOT NULL DEFAULT 'not_used',
        oauth         TEXT,
        oauth_pending TEXT,
        PRIMARY KEY (principal, slug)
    );",
    // 2: the shared engine (`engine::Postgres`): runs and their logs, events, view tokens.
    "CREATE TABLE engine_runs (
        id          TEXT        PRIMARY KEY,
        owner       TEXT        NOT NULL,
        thread      TEXT,
        message_id  TEXT        NOT NULL,
        resume_base TEXT,
        status      TEXT        NOT NULL,
        lost        TEXT        NOT NULL DEFAULT '[]',
        stop        BOOLEAN     NOT NULL DEFAULT false,
        seq         BIGINT      NOT NULL DEFAULT 0,
        lease_until TIMESTAMPTZ NOT NULL,
        expires_at  TIMESTAMPTZ NOT NULL
    );
    CREATE UNIQUE INDEX engine_runs_active ON engine_runs (owner, thread)
        WHERE status = 'running' AND thread IS NOT NULL;
    CREATE INDEX engine_runs_by_expiry ON engine_runs (expires_at);
    CREATE TABLE engine_run_frames (
        run_id TEXT   NOT NULL REFERENCES engine_runs (id) ON DELETE CASCADE,
        seq    BIGINT NOT NULL,
        frame  BYTEA,
        status TEXT,
        PRIMARY KEY (run_id, seq)
    );
    CREATE TABLE engine_event_seq (
        single BOOLEAN PRIMARY KEY DEFAULT true CHECK (single),
        n      BIGINT  NOT NULL
    );
    CREATE TABLE engine_events (
        id    BIGINT PRIMARY KEY,
        scope TEXT   NOT NULL,
        event TEXT   NOT NULL
    );
    CREATE TABLE engine_views (
        token      TEXT        PRIMARY KEY,
        principal  TEXT        NOT NULL,
        ticket     TEXT        NOT NULL,
        issued_at  TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
        expires_at TIMESTAMPTZ NOT NULL
    );
    CREATE INDEX engine_views_by_principal ON engine_views (principal, issued_at);
    CREATE INDEX engine_views_by_expiry ON engine_views (expires_at);",
    // 3: full-text search (`store::search`): each message's searchable text (NULL for messages
    // search skips), its `tsvector` with the `simple` configuration (lowercased words, no
    // stemming and no stop words, as the other stores match), and a GIN index on it. Rows
    // stored before are filled in by `backfill_search`, in the migration's transaction.
    "ALTER TABLE messages ADD COLUMN search_text TEXT;
    ALTER TABLE messages ADD COLUMN search tsvector
        GENERATED ALWAYS AS (to_tsvector('simple', coalesce(search_text, ''))) STORED;
    CREATE INDEX messages_search ON messages USING GIN (search);",
    // 4: conversations as trees (`store::tree`). `seq` becomes the node number (kept: the
    // stored rows keep theirs); each row gets its parent's number (NULL for a first message),
    // its depth (its position on any path through it) and its message id as JSON, which a
    // save compares without reading a body; the conversation gets its active leaf and the
    // number its next node takes. The previous release kept seqs contiguous from 0 (a save
    // deleted from the first change and numbered from there), so a stored conversation
    // becomes one branch: each row's parent is the row before it in seq order, which the
    // window also gets right for a gap nobody wrote. A body holding `\u0000` is one
    // PostgreSQL's JSON functions refuse to read: its id is filled in by
    // `backfill_message_ids`, in the migration's transaction.
    "ALTER TABLE messages
        ADD COLUMN parent INTEGER,
        ADD COLUMN depth INTEGER,
        ADD COLUMN message_id TEXT;
    UPDATE messages m SET parent = o.parent, depth = o.depth
    FROM (SELECT principal, conversation_id, seq,
                 lag(seq) OVER w AS parent, (row_number() OVER w - 1)::integer AS depth
          FROM messages
          WINDOW w AS (PARTITION BY principal, conversation_id ORDER BY seq)) o
    WHERE m.principal = o.principal AND m.conversation_id = o.conversation_id
      AND m.seq = o.seq;
    UPDATE messages SET message_id = (body::json -> 'id')::text
    WHERE strpos(body, '\\u0000') = 0;
    ALTER TABLE messages ALTER COLUMN depth SET NOT NULL;
    CREATE INDEX messages_by_parent ON messages (principal, conversation_id, parent, seq);
    ALTER TABLE conversations
        ADD COLUMN leaf INTEGER,
        ADD COLUMN next_seq INTEGER NOT NULL DEFAULT 0;
    UPDATE conversations c SET leaf = t.last, next_seq = t.last + 1
    FROM (SELECT principal, conversation_id, max(seq) AS last
          FROM messages GROUP BY principal, conversation_id) t
    WHERE c.principal = t.principal AND c.id = t.conversation_id;",
];

/// The migration that added full-text search.
const SEARCH_MIGRATION: usize = 3;

/// The migration that made conversations trees.
const TREE_MIGRATION: usize = 4;

/// The schema version this build writes.
pub(crate) const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// Creates the schema when `schema` is set, then applies the missing migrations, all in one
/// transaction under the schema's advisory lock; refuses a newer schema. Returns the number of
/// migrations applied (0 when up to date).
pub(crate) async fn migrate(
    client: &mut Client,
    schema: Option<&str>,
) -> Result<usize, HistoryError> {
    migrate_to(client, schema, MIGRATIONS.len()).await
}

/// [`migrate`] up to version `target` only: what an earlier release left (for tests of the
/// migrations from it).
pub(crate) async fn migrate_to(
    client: &mut Client,
    schema: Option<&str>,
    target: usize,
) -> Result<usize, HistoryError> {
    let target = target.min(MIGRATIONS.len());
    let tx = client.transaction().await.map_err(pg)?;
    // The lock's key: the schema's name (the current one when none is set), hashed by the
    // server into the bigint the lock wants.
    let key = match schema {
        Some(s) => s.to_owned(),
        None => tx
            .query_one("SELECT current_schema()::text", &[])
            .await
            .map_err(pg)?
            .try_get::<_, Option<String>>(0)
            .map_err(pg)?
            .unwrap_or_else(|| "public".to_owned()),
    };
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('lmchatkit.migrate.' || $1, 0))",
        &[&key],
    )
    .await
    .map_err(pg)?;
    if let Some(schema) = schema {
        // `schema` passed `valid_schema`: a plain identifier, safe unquoted.
        tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
            .await
            .map_err(pg)?;
    }
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS lmchatkit_migrations (
            version    INTEGER PRIMARY KEY,
            applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )",
    )
    .await
    .map_err(pg)?;
    let version: i32 = tx
        .query_one(
            "SELECT COALESCE(MAX(version), 0) FROM lmchatkit_migrations",
            &[],
        )
        .await
        .map_err(pg)?
        .try_get(0)
        .map_err(pg)?;
    if version > SCHEMA_VERSION {
        return Err(HistoryError::Storage(format!(
            "history database schema version {version} is newer than this build \
             ({SCHEMA_VERSION}): upgrade lmchatkit, or point it at another database or schema"
        )));
    }
    let from = usize::try_from(version).unwrap_or(0);
    for (i, sql) in MIGRATIONS.iter().enumerate().take(target).skip(from) {
        tx.batch_execute(sql).await.map_err(pg)?;
        let v = i32::try_from(i + 1).unwrap_or(i32::MAX);
        tx.execute(
            "INSERT INTO lmchatkit_migrations (version) VALUES ($1)",
            &[&v],
        )
        .await
        .map_err(pg)?;
    }
    if from > 0 && from < SEARCH_MIGRATION && target >= SEARCH_MIGRATION {
        backfill_search(&tx).await?;
    }
    if from > 0 && from < TREE_MIGRATION && target >= TREE_MIGRATION {
        backfill_message_ids(&tx).await?;
    }
    tx.commit().await.map_err(pg)?;
    Ok(target.saturating_sub(from))
}

/// Fills in the message id of the rows the tree migration's SQL could not read (a body
/// holding `\u0000`, which PostgreSQL's JSON functions refuse), in the migration's
/// transaction.
async fn backfill_message_ids(tx: &tokio_postgres::Transaction<'_>) -> Result<(), HistoryError> {
    backfill(tx, "WHERE strpos(body, '\\u0000') > 0", "message_id", |m| {
        super::message_id(m.id.as_deref())
    })
    .await
}

/// Fills in the searchable text of every message stored before search was (in the
/// migration's transaction).
async fn backfill_search(tx: &tokio_postgres::Transaction<'_>) -> Result<(), HistoryError> {
    backfill(tx, "", "search_text", |m| {
        Ok(crate::store::search::searchable_text(m).map(|t| super::search_text(&t)))
    })
    .await
}

/// Sets `column` of the message rows `filter` selects to what `value` makes of each message
/// (left alone where it makes nothing).
async fn backfill(
    tx: &tokio_postgres::Transaction<'_>,
    filter: &str,
    column: &str,
    value: impl Fn(&lmchatkit_protocol::Message) -> Result<Option<String>, HistoryError>,
) -> Result<(), HistoryError> {
    let rows = tx
        .query(
            &format!("SELECT principal, conversation_id, seq, body FROM messages {filter}"),
            &[],
        )
        .await
        .map_err(pg)?;
    let update = tx
        .prepare(&format!(
            "UPDATE messages SET {column} = $4
             WHERE principal = $1 AND conversation_id = $2 AND seq = $3"
        ))
        .await
        .map_err(pg)?;
    for row in rows {
        let (principal, id, seq, body): (String, String, i32, String) = (
            row.try_get(0).map_err(pg)?,
            row.try_get(1).map_err(pg)?,
            row.try_get(2).map_err(pg)?,
            row.try_get(3).map_err(pg)?,
        );
        let message = crate::store::rows::decode_message(&body)?;
        if let Some(v) = value(&message)? {
            tx.execute(&update, &[&principal, &id, &seq, &v])
                .await
                .map_err(pg)?;
        }
    }
    Ok(())
}
