//! PostgreSQL history store (feature `postgres`): [`PostgresStore`] keeps conversations, each
//! principal's "always allow" list ([`ApprovalStore`](crate::ApprovalStore)) and (feature
//! `mcp`) users' own MCP servers ([`UserMcpStore`](crate::user_mcp::UserMcpStore)) in one
//! database, so several app instances behind a load balancer share them. It passes the same
//! conformance suites as the SQLite store.
//!
//! Decisions:
//! - Client: `tokio-postgres` behind a bounded `deadpool-postgres` pool ([`PostgresOptions`]:
//!   10 connections and a 5 s acquire timeout by default). Chosen over sqlx for its compile
//!   cost and because it changes no feature of the crates the rest of lmchatkit shares.
//! - TLS: none yet — the pool connects with `NoTls`, fine on loopback, a private network or a
//!   Unix socket; a URL asking for `sslmode=require` fails to connect rather than silently
//!   going plain. Encrypted connections are to be added behind an `sslmode`-capable connector
//!   (rustls, as reqwest here uses) when a deployment needs it; openssl is not pulled in.
//! - Migrations run at [`connect`](PostgresStore::connect), numbered and recorded in a table of
//!   their own, under `pg_advisory_xact_lock`, so instances starting together apply them once;
//!   a database with a newer schema than this build is refused (see `schema.rs`).
//! - Conversations are trees ([`tree`] has the decisions every store shares). Each message is
//!   a row keyed by its node number, `seq`: unique in the conversation and never reused (the
//!   conversation's `next_seq` hands them out, so the number of a node deleted with its branch
//!   stays unused, where `max(seq) + 1` would give it out again). A row keeps its `parent`
//!   (NULL for a first message), its `depth` (its position on any path through it), the
//!   SHA-256 of its canonical body (the message serialized as JSON, which includes its id)
//!   and its message id as JSON (`message_id`: a quoted string, in which a NUL is escaped;
//!   NULL without an id), so a save compares ids without reading a body. The conversation
//!   keeps its active `leaf`. Conversations stored before (schema version 3) were one list
//!   numbered from 0; migration 4 makes each row the child of the one before it, so they open
//!   as one branch (see `schema.rs`).
//! - The active path is read with a recursive CTE walking the parents up from the leaf (one
//!   primary-key lookup a node), in the statement that reads the conversation (one
//!   snapshot): a read costs the path it returns, or only the tail a
//!   [`get_tail`](HistoryStore::get_tail) asks for, whatever the other branches hold. Loading
//!   the `(seq, parent)` shape of the whole conversation and walking it in Rust would cost
//!   every node ever stored, on every turn's tail read. The same statement reads the nodes
//!   sharing a parent with a node it returns (an index-only scan of `(principal,
//!   conversation_id, parent, seq)`), and `tree::Shape` of those makes the `branches`, as in
//!   the memory store. Switching and deleting a branch load the whole shape instead: they
//!   need a node's descendants, and they are rare and user-driven.
//! - A save compares what it sends with the stored path ([`tree::plan`](crate::store::tree)),
//!   reading the path's hashes and message ids only, never a body; it updates in place the
//!   messages the plan says (one statement), inserts the new nodes (one statement, numbered
//!   from `next_seq`, the first a child of the last node kept) and moves the leaf. It deletes
//!   nothing: what a save leaves off its path stays, as a branch. So a save writes the rows it
//!   adds or changes and nothing of any other branch, reads O(path) hashes, and moves only
//!   the bodies it writes.
//! - The revision check-and-set is one statement: `INSERT … ON CONFLICT (principal, id) DO
//!   UPDATE … WHERE conversations.revision = $base RETURNING revision, leaf, next_seq`. It
//!   creates an absent conversation at revision 1 (whatever the base, as every store does),
//!   with the leaf of what it inserts; it bumps a matching one and locks its row until the
//!   message rows and the leaf (a second update of the row, when the save moves it) are
//!   written in the same transaction; a stale base returns no row, and the save answers
//!   [`SaveOutcome::Conflict`] with the current copy, which the competing save has committed
//!   by then. The totals are the sent messages', which are the active path after the save.
//! - A save that keeps stored messages ([`StoredConversation::kept`]) locks the conversation's
//!   row with `SELECT … FOR UPDATE`, checks the revision and the path's length (the leaf's
//!   depth + 1, one index lookup) and, when it keeps the whole path, inserts the new nodes
//!   below the leaf: no hash or body is read, and the totals grow by the new messages'.
//!   Keeping fewer than the path holds walks the path once, reading the hashes after the kept
//!   messages (to plan) and the kept bodies (for their totals).
//! - Switching or deleting a branch is one transaction that locks the conversation's row,
//!   moves the leaf (`tree::Shape` decides where), deletes the node's subtree (its search text
//!   goes with the rows), bumps the revision and `updated_at`, and, when the leaf moved,
//!   recomputes the totals from the new path's bodies.
//! - Search covers every branch: each hit names its node (`seq`) and its position on its
//!   branch (`depth`); newest conversation first, then by node number.
//! - PostgreSQL refuses a NUL character in `text`; a conversation's title, model or persona
//!   holding one is [`HistoryError::InvalidInput`] (a 400), checked before any SQL runs (and a
//!   server refusal of a character maps there too). Inside message bodies and JSON columns NUL
//!   is escaped by JSON (`\u0000`) and stored as sent. The approvals and user MCP stores refuse
//!   NUL the same way, but their error types have no bad-input case, so it is a storage error
//!   there; the routes already refuse control characters in what users send them (names,
//!   tool names), which leaves a host's principal id as the only way in.
//! - Nothing prints the URL's password: `Debug` of the store and of [`PostgresOptions`] shows
//!   the target without it, and every error text leaving the store is scrubbed of it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use deadpool_postgres::Pool;
use lmchatkit_protocol::{
    ConversationPatch, ConversationSummary, ConversationTotals, Params, StoredConversation,
};
use sha2::{Digest, Sha256};
use tokio_postgres::error::SqlState;

use super::rows::{
    MessageRow, decode_rows, encode_indexed, gone, now_ms, storage, stored_conversation,
};
use super::tree::{self, Shape};
use super::{BranchOutcome, HistoryError, HistoryStore, SaveOutcome, validate_id};
use crate::host::Principal;

mod approvals;
pub(crate) mod connect;
mod options;
pub(crate) mod schema;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
#[cfg(feature = "mcp")]
mod user_mcp;

use connect::{
    Prepared, Target, build_pool, chain, is_pool_unavailable, is_unreachable, prepare, scrub,
};
pub use options::{DEFAULT_ACQUIRE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, PostgresOptions};

/// Keeps conversations (and approvals, and users' MCP servers) in PostgreSQL, scoped by
/// principal; see the [module docs](self) for the decisions.
///
/// `Debug` and every error leave the URL's password out:
///
/// ```
/// use lmchatkit::store::{PostgresOptions, PostgresStore};
///
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// // Port 1 on loopback: nothing listens there, so the connect fails.
/// let url = "postgres://app:hunter2@127.0.0.1:1/chat";
/// let err = rt.block_on(PostgresStore::connect(url, PostgresOptions::default())).unwrap_err();
/// assert!(!err.to_string().contains("hunter2"), "{err}");
/// assert!(!format!("{err:?}").contains("hunter2"));
/// ```
pub struct PostgresStore {
    pool: Pool,
    target: Target,
    max_connections: usize,
    /// The URL's password(s), to scrub error texts with.
    secrets: Arc<[String]>,
    counters: Arc<Counters>,
}

#[derive(Debug, Default)]
struct Counters {
    rows_written: AtomicU64,
    bodies_read: AtomicU64,
    hashes_read: AtomicU64,
}

/// What the store's saves and reads moved since it connected, counted from PostgreSQL's
/// answers: for operators' metrics and for tests of the save's cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostgresCounters {
    /// Message rows inserted or updated by saves (as PostgreSQL reports them; a save deletes
    /// none).
    pub rows_written: u64,
    /// Message bodies fetched from the database (by gets and conflict copies).
    pub bodies_read: u64,
    /// Stored message hashes fetched by saves to compare what they send with the stored path.
    pub hashes_read: u64,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("target", &self.target)
            .field("max_connections", &self.max_connections)
            .finish_non_exhaustive()
    }
}

/// The columns [`summary`] reads, in order.
const SUMMARY_COLUMNS: &str =
    "id, title, persona_id, model, params, created_at, updated_at, revision, totals";

/// The check-and-set of a save: creates at revision 1 with its leaf (`$12`) and next node
/// number (`$13`), or bumps a row whose revision is the base (`$11`), answering its stored
/// leaf and next node number; no row back means a stale base.
const UPSERT: &str = "INSERT INTO conversations AS c
        (principal, id, title, persona_id, model, params, created_at, updated_at, revision,
         allowed_tools, totals, leaf, next_seq)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, $10, $12, $13)
     ON CONFLICT (principal, id) DO UPDATE SET
        title = EXCLUDED.title, persona_id = EXCLUDED.persona_id, model = EXCLUDED.model,
        params = EXCLUDED.params, updated_at = EXCLUDED.updated_at, revision = c.revision + 1,
        allowed_tools = EXCLUDED.allowed_tools, totals = EXCLUDED.totals
     WHERE c.revision = $11
     RETURNING revision, leaf, next_seq";

/// The conversation with the last `$3` nodes of its active path (a recursive walk up the
/// parents from the leaf), the path's length (the leaf's depth + 1) and every node sharing a
/// parent with one of those: one statement, one snapshot. `depth` falls at each step, so the
/// walk ends even on rows no store writes.
const LOAD_TAIL: &str = "WITH RECURSIVE tail AS (
        SELECT m.seq, m.parent, m.depth, m.body, 1 AS k
        FROM conversations c
        JOIN messages m
          ON m.principal = c.principal AND m.conversation_id = c.id AND m.seq = c.leaf
        WHERE c.principal = $1 AND c.id = $2 AND $3 > 0
      UNION ALL
        SELECT m.seq, m.parent, m.depth, m.body, t.k + 1
        FROM tail t
        JOIN messages m
          ON m.principal = $1 AND m.conversation_id = $2 AND m.seq = t.parent
             AND m.depth < t.depth
        WHERE t.k < $3
     ),
     versions AS (
        SELECT s.seq, s.parent FROM messages s
        WHERE s.principal = $1 AND s.conversation_id = $2
          AND s.parent = ANY(ARRAY(SELECT t.parent FROM tail t WHERE t.parent IS NOT NULL))
      UNION ALL
        SELECT s.seq, s.parent FROM messages s
        WHERE s.principal = $1 AND s.conversation_id = $2 AND s.parent IS NULL
          AND EXISTS (SELECT 1 FROM tail t WHERE t.parent IS NULL)
     )
     SELECT id, title, persona_id, model, params, created_at, updated_at, revision, totals,
        allowed_tools,
        coalesce((SELECT l.depth + 1 FROM messages l
                  WHERE l.principal = c.principal AND l.conversation_id = c.id
                    AND l.seq = c.leaf), 0),
        ARRAY(SELECT t.seq FROM tail t ORDER BY t.depth),
        ARRAY(SELECT t.body FROM tail t ORDER BY t.depth),
        ARRAY(SELECT v.seq FROM versions v ORDER BY v.seq),
        ARRAY(SELECT v.parent FROM versions v ORDER BY v.seq)
     FROM conversations c
     WHERE c.principal = $1 AND c.id = $2";

/// The active path ending at the node `$3`, root first: each node's number, depth and message
/// id, its hash from depth `$4` on and its body before it.
const READ_PATH: &str = "WITH RECURSIVE path AS (
        SELECT seq, parent, depth, message_id,
               CASE WHEN depth >= $4 THEN hash END AS hash,
               CASE WHEN depth < $4 THEN body END AS body
        FROM messages
        WHERE principal = $1 AND conversation_id = $2 AND seq = $3
      UNION ALL
        SELECT m.seq, m.parent, m.depth, m.message_id,
               CASE WHEN m.depth >= $4 THEN m.hash END,
               CASE WHEN m.depth < $4 THEN m.body END
        FROM path p
        JOIN messages m
          ON m.principal = $1 AND m.conversation_id = $2 AND m.seq = p.parent
             AND m.depth < p.depth
     )
     SELECT seq, depth, message_id, hash, body FROM path ORDER BY depth";

/// How often a save retries when its conversation is deleted between a lost check-and-set and
/// the read of the current copy.
const SAVE_ATTEMPTS: usize = 3;

/// A `tokio-postgres` error as a [`HistoryError`]: a character PostgreSQL refuses is bad input,
/// PostgreSQL unreachable (a restart, a cut connection) is [`HistoryError::Busy`], anything
/// else the store failing.
pub(super) fn pg(e: tokio_postgres::Error) -> HistoryError {
    if is_unreachable(&e) {
        return HistoryError::Busy(format!("PostgreSQL is unreachable: {}", chain(&e)));
    }
    match e.code() {
        Some(c)
            if *c == SqlState::CHARACTER_NOT_IN_REPERTOIRE
                || *c == SqlState::UNTRANSLATABLE_CHARACTER =>
        {
            HistoryError::InvalidInput(format!("PostgreSQL refused the text: {}", chain(&e)))
        }
        _ => HistoryError::Storage(format!("PostgreSQL: {}", chain(&e))),
    }
}

/// Refuses text PostgreSQL cannot store (a NUL character) before it reaches the server.
fn no_nul(fields: &[(&str, &str)]) -> Result<(), HistoryError> {
    match fields.iter().find(|(_, v)| v.contains('\0')) {
        Some((name, _)) => Err(HistoryError::InvalidInput(format!(
            "the {name} holds a NUL character"
        ))),
        None => Ok(()),
    }
}

fn revision_of(r: i64) -> u64 {
    u64::try_from(r).unwrap_or(0)
}

fn summary(r: &tokio_postgres::Row) -> Result<ConversationSummary, HistoryError> {
    let params: String = r.try_get(4).map_err(pg)?;
    let totals: String = r.try_get(8).map_err(pg)?;
    Ok(ConversationSummary {
        id: r.try_get(0).map_err(pg)?,
        title: r.try_get(1).map_err(pg)?,
        persona_id: r.try_get(2).map_err(pg)?,
        model: r.try_get(3).map_err(pg)?,
        params: serde_json::from_str::<Params>(&params).map_err(storage)?,
        created_at: r.try_get(5).map_err(pg)?,
        updated_at: r.try_get(6).map_err(pg)?,
        revision: revision_of(r.try_get(7).map_err(pg)?),
        totals: serde_json::from_str::<ConversationTotals>(&totals).map_err(storage)?,
    })
}

impl PostgresStore {
    /// A branch switch, or a delete of `node` with its descendants (`delete`), in one
    /// transaction holding the conversation's row ([`tree`] says where the leaf goes).
    async fn branch_op(
        &self,
        principal: &Principal,
        id: &str,
        node: u64,
        delete: bool,
    ) -> Result<Option<BranchOutcome>, HistoryError> {
        validate_id(id)?;
        no_nul(&[("principal", principal.id())])?;
        let mut client = self.client().await?;
        let Some(locked) = self.lock_shape(&mut client, principal.id(), id).await? else {
            return Ok(None);
        };
        if !locked.shape.contains(node) {
            locked.tx.rollback().await.map_err(pg)?;
            return Ok(Some(BranchOutcome::NoSuchNode));
        }
        if !delete {
            let leaf = Some(locked.shape.switch_leaf(node, locked.leaf));
            return self
                .finish_branch(locked, principal.id(), id, leaf)
                .await
                .map(Some);
        }
        let leaf = locked.shape.leaf_after_delete(node, locked.leaf);
        let gone = locked
            .shape
            .subtree(node)
            .into_iter()
            .map(seq_of)
            .collect::<Result<Vec<i32>, _>>()?;
        let statement = locked
            .tx
            .prepare_cached(
                "DELETE FROM messages
                 WHERE principal = $1 AND conversation_id = $2 AND seq = ANY($3)",
            )
            .await
            .map_err(pg)?;
        locked
            .tx
            .execute(&statement, &[&principal.id(), &id, &gone])
            .await
            .map_err(pg)?;
        self.finish_branch(locked, principal.id(), id, leaf)
            .await
            .map(Some)
    }

    /// Connects to `url` (`postgres://user:password@host:port/db`, or the key-value form),
    /// with a pool set up by `options`, and creates or migrates the schema.
    ///
    /// Fails with [`HistoryError::Storage`] when the URL does not parse, the server cannot be
    /// reached within the acquire timeout, or the schema is newer than this build; with
    /// [`HistoryError::InvalidInput`] for a schema name that is not a plain identifier. No
    /// error text holds the URL's password.
    pub async fn connect(url: &str, options: PostgresOptions) -> Result<Self, HistoryError> {
        let store = Self::unconnected(url, &options)?;
        let applied = async {
            let mut client = store.client().await?;
            schema::migrate(&mut client, options.schema()).await
        }
        .await
        .map_err(|e| match store.scrubbed(e) {
            // At connect, a server out of reach is the deployment's to fix, not a moment to
            // wait out.
            HistoryError::Busy(m) => HistoryError::Storage(m),
            e => e,
        })?;
        tracing::info!(target = ?store.target, applied, "PostgreSQL history");
        Ok(store)
    }

    /// Checks that `url` is a connection string this store accepts, without connecting (for
    /// settings that want to refuse a typo at startup). The error never holds the password.
    ///
    /// ```
    /// use lmchatkit::store::PostgresStore;
    ///
    /// assert!(PostgresStore::check_url("postgres://app:pw@db.internal:5432/chat").is_ok());
    /// let err = PostgresStore::check_url("postgres://app:hunter2@db:notaport/chat").unwrap_err();
    /// assert!(!err.to_string().contains("hunter2"), "{err}");
    /// ```
    pub fn check_url(url: &str) -> Result<(), HistoryError> {
        Self::unconnected(url, &PostgresOptions::default()).map(drop)
    }

    /// The store with its pool built, before any connection is opened (the pool connects
    /// lazily).
    fn unconnected(url: &str, options: &PostgresOptions) -> Result<Self, HistoryError> {
        let Prepared {
            config,
            target,
            secrets,
        } = prepare(url, options)?;
        let pool = build_pool(config, options).map_err(|e| {
            HistoryError::Storage(scrub(&format!("PostgreSQL pool: {}", chain(&e)), &secrets))
        })?;
        Ok(Self {
            pool,
            target,
            max_connections: options.max_connections(),
            secrets,
            counters: Arc::default(),
        })
    }

    /// A pooled connection.
    pub(super) async fn client(&self) -> Result<deadpool_postgres::Object, HistoryError> {
        self.pool.get().await.map_err(|e| {
            let text = scrub(
                &format!("PostgreSQL connection: {}", chain(&e)),
                &self.secrets,
            );
            if is_pool_unavailable(&e) {
                HistoryError::Busy(text)
            } else {
                HistoryError::Storage(text)
            }
        })
    }

    /// `e` with the URL's password scrubbed from its text.
    fn scrubbed(&self, e: HistoryError) -> HistoryError {
        match e {
            HistoryError::Storage(m) => HistoryError::Storage(scrub(&m, &self.secrets)),
            HistoryError::Busy(m) => HistoryError::Busy(scrub(&m, &self.secrets)),
            HistoryError::InvalidInput(m) => HistoryError::InvalidInput(scrub(&m, &self.secrets)),
            other => other,
        }
    }

    /// What saves and reads moved since connect.
    pub fn counters(&self) -> PostgresCounters {
        let c = &self.counters;
        PostgresCounters {
            rows_written: c.rows_written.load(Ordering::SeqCst),
            bodies_read: c.bodies_read.load(Ordering::SeqCst),
            hashes_read: c.hashes_read.load(Ordering::SeqCst),
        }
    }

    /// The whole conversation in one statement (one snapshot), or `None`.
    async fn load(
        &self,
        client: &deadpool_postgres::ClientWrapper,
        principal: &str,
        id: &str,
    ) -> Result<Option<StoredConversation>, HistoryError> {
        let whole = self.load_tail(client, principal, id, usize::MAX).await?;
        Ok(whole.map(|(c, _)| c))
    }

    /// The conversation with the last `n` messages of its active path only and how many come
    /// before them, in one statement (one snapshot), or `None`. Its `branches` are those of
    /// the messages it holds, by position among them.
    async fn load_tail(
        &self,
        client: &deadpool_postgres::ClientWrapper,
        principal: &str,
        id: &str,
        n: usize,
    ) -> Result<Option<(StoredConversation, u64)>, HistoryError> {
        let n = i32::try_from(n).unwrap_or(i32::MAX);
        let stmt = client.prepare_cached(LOAD_TAIL).await.map_err(pg)?;
        let Some(row) = client
            .query_opt(&stmt, &[&principal, &id, &n])
            .await
            .map_err(pg)?
        else {
            return Ok(None);
        };
        let s = summary(&row)?;
        let allowed: String = row.try_get(9).map_err(pg)?;
        let count: i32 = row.try_get(10).map_err(pg)?;
        let tail: Vec<i32> = row.try_get(11).map_err(pg)?;
        let bodies: Vec<String> = row.try_get(12).map_err(pg)?;
        let versions: Vec<i32> = row.try_get(13).map_err(pg)?;
        let parents: Vec<Option<i32>> = row.try_get(14).map_err(pg)?;
        self.counters
            .bodies_read
            .fetch_add(bodies.len() as u64, Ordering::SeqCst);
        let before = count.saturating_sub(i32::try_from(tail.len()).unwrap_or(i32::MAX));
        if before < 0 || tail.len() != bodies.len() {
            return Err(broken(id));
        }
        let shape = Shape::new(
            versions
                .iter()
                .zip(&parents)
                .map(|(seq, parent)| (node(*seq), parent.map(node))),
        );
        let tail: Vec<u64> = tail.into_iter().map(node).collect();
        let mut c = stored_conversation(s, &bodies, &allowed)?;
        c.branches = shape.branches(&tail);
        Ok(Some((c, u64::try_from(before).unwrap_or(0))))
    }

    /// The active path ending at `leaf` (none: empty), root first, read in `tx`: each node's
    /// number and message id, the hash of those from position `split` on and the body of those
    /// before it. Counts what it reads.
    async fn read_path(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        principal: &str,
        id: &str,
        leaf: Option<i32>,
        split: i32,
    ) -> Result<Vec<PathNode>, HistoryError> {
        let Some(leaf) = leaf else {
            return Ok(Vec::new());
        };
        let stmt = tx.prepare_cached(READ_PATH).await.map_err(pg)?;
        let rows = tx
            .query(&stmt, &[&principal, &id, &leaf, &split])
            .await
            .map_err(pg)?;
        let mut path = Vec::with_capacity(rows.len());
        for (i, row) in rows.iter().enumerate() {
            let depth: i32 = row.try_get(1).map_err(pg)?;
            if usize::try_from(depth).ok() != Some(i) {
                return Err(broken(id));
            }
            path.push(PathNode {
                seq: row.try_get(0).map_err(pg)?,
                message_id: row.try_get(2).map_err(pg)?,
                hash: row.try_get(3).map_err(pg)?,
                body: row.try_get(4).map_err(pg)?,
            });
        }
        let split = usize::try_from(split).unwrap_or(0).min(path.len());
        let c = &self.counters;
        c.bodies_read.fetch_add(split as u64, Ordering::SeqCst);
        c.hashes_read
            .fetch_add((path.len() - split) as u64, Ordering::SeqCst);
        Ok(path)
    }

    /// One attempt at a save: `None` when the conversation vanished between a lost
    /// check-and-set and the read of the current copy.
    async fn try_save(
        &self,
        principal: &str,
        c: &StoredConversation,
        encoded: &Encoded,
    ) -> Result<Option<SaveOutcome>, HistoryError> {
        let now = now_ms();
        let created_at = if c.created_at > 0 { c.created_at } else { now };
        let base = i64::try_from(c.revision).unwrap_or(i64::MAX);
        // What a created conversation holds: the sent messages as one branch from node 0.
        let sent = i32::try_from(encoded.rows.len()).map_err(storage)?;
        let fresh_leaf = (sent > 0).then(|| sent - 1);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        let upsert = tx.prepare_cached(UPSERT).await.map_err(pg)?;
        let won = tx
            .query_opt(
                &upsert,
                &[
                    &principal,
                    &c.id,
                    &c.title,
                    &c.persona_id,
                    &c.model,
                    &encoded.params,
                    &created_at,
                    &now,
                    &encoded.allowed,
                    &encoded.totals,
                    &base,
                    &fresh_leaf,
                    &sent,
                ],
            )
            .await
            .map_err(pg)?;
        let Some(won) = won else {
            tx.rollback().await.map_err(pg)?;
            let current = self.load(&client, principal, &c.id).await?;
            return Ok(current.map(|cur| SaveOutcome::Conflict(Box::new(cur))));
        };
        let revision: i64 = won.try_get(0).map_err(pg)?;
        let leaf: Option<i32> = won.try_get(1).map_err(pg)?;
        let next: i32 = won.try_get(2).map_err(pg)?;
        // Revision 1 is a fresh row (an update makes base + 1 >= 2): nothing is stored yet, and
        // the row already holds the leaf and the next number of what is inserted.
        if revision == 1 {
            let root = Place {
                parent: None,
                depth: 0,
                seq: 0,
            };
            let written = insert_nodes(&tx, principal, &c.id, encoded, 0, root).await?;
            return self.commit(tx, written, revision).await.map(Some);
        }
        let stored = self.read_path(&tx, principal, &c.id, leaf, 0).await?;
        let plan = plan_against(&stored, None, encoded);
        let applied = apply(&tx, principal, &c.id, encoded, &plan, 0, next).await?;
        if (applied.leaf, applied.next) != (leaf, next) {
            let stmt = tx
                .prepare_cached(
                    "UPDATE conversations SET leaf = $3, next_seq = $4
                     WHERE principal = $1 AND id = $2",
                )
                .await
                .map_err(pg)?;
            tx.execute(&stmt, &[&principal, &c.id, &applied.leaf, &applied.next])
                .await
                .map_err(pg)?;
        }
        self.commit(tx, applied.written, revision).await.map(Some)
    }
}

impl PostgresStore {
    /// A save that keeps the first `kept` messages of the stored path
    /// ([`StoredConversation::kept`]) and sends what follows them: the row is locked with
    /// `FOR UPDATE`, its revision and path length checked, and the sent messages planned
    /// against the stored path after the kept ones. No hash or body is read when it keeps the
    /// whole path (the new nodes go below the leaf, and the totals grow by theirs).
    /// `None`: the conversation is absent and `kept` is `0`, which a whole save does.
    async fn try_save_kept(
        &self,
        principal: &str,
        c: &StoredConversation,
        kept: u64,
        encoded: &Encoded,
    ) -> Result<Option<SaveOutcome>, HistoryError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        let lock = tx
            .prepare_cached(
                "SELECT c.revision, c.totals, c.leaf, c.next_seq,
                        (SELECT m.depth + 1 FROM messages m
                         WHERE m.principal = c.principal AND m.conversation_id = c.id
                           AND m.seq = c.leaf)
                 FROM conversations c WHERE c.principal = $1 AND c.id = $2 FOR UPDATE",
            )
            .await
            .map_err(pg)?;
        let Some(row) = tx
            .query_opt(&lock, &[&principal, &c.id])
            .await
            .map_err(pg)?
        else {
            tx.rollback().await.map_err(pg)?;
            return Ok(match kept {
                0 => None,
                _ => Some(SaveOutcome::Conflict(Box::new(gone(&c.id)))),
            });
        };
        let stored: i64 = row.try_get(0).map_err(pg)?;
        let totals: String = row.try_get(1).map_err(pg)?;
        let leaf: Option<i32> = row.try_get(2).map_err(pg)?;
        let next: i32 = row.try_get(3).map_err(pg)?;
        let count: Option<i32> = row.try_get(4).map_err(pg)?;
        let count = count.map_or(0, |n| u64::try_from(n).unwrap_or(0));
        if c.revision == 0 || c.revision != revision_of(stored) || kept > count {
            tx.rollback().await.map_err(pg)?;
            let current = self.load(&client, principal, &c.id).await?;
            return Ok(Some(SaveOutcome::Conflict(Box::new(
                current.unwrap_or_else(|| gone(&c.id)),
            ))));
        }
        let from = usize::try_from(kept).map_err(storage)?;
        let (before, plan) = if kept == count {
            let before = serde_json::from_str::<ConversationTotals>(&totals).map_err(storage)?;
            let plan = plan_against(&[], leaf.map(node), encoded);
            (before, plan)
        } else {
            let split = i32::try_from(kept).map_err(storage)?;
            let path = self.read_path(&tx, principal, &c.id, leaf, split).await?;
            if path.len() as u64 != count {
                return Err(broken(&c.id));
            }
            let bodies = path[..from].iter().filter_map(|n| n.body.as_deref());
            let before = ConversationTotals::of(&decode_rows(bodies)?);
            let parent = from.checked_sub(1).map(|i| node(path[i].seq));
            (before, plan_against(&path[from..], parent, encoded))
        };
        let applied = apply(&tx, principal, &c.id, encoded, &plan, from, next).await?;
        let totals = before.then(ConversationTotals::of(&c.messages));
        let totals = serde_json::to_string(&totals).map_err(storage)?;
        let update = tx
            .prepare_cached(
                "UPDATE conversations
                 SET title = $3, persona_id = $4, model = $5, params = $6, updated_at = $7,
                     revision = revision + 1, allowed_tools = $8, totals = $9, leaf = $10,
                     next_seq = $11
                 WHERE principal = $1 AND id = $2 RETURNING revision",
            )
            .await
            .map_err(pg)?;
        let revision: i64 = tx
            .query_one(
                &update,
                &[
                    &principal,
                    &c.id,
                    &c.title,
                    &c.persona_id,
                    &c.model,
                    &encoded.params,
                    &now_ms(),
                    &encoded.allowed,
                    &totals,
                    &applied.leaf,
                    &applied.next,
                ],
            )
            .await
            .map_err(pg)?
            .try_get(0)
            .map_err(pg)?;
        self.commit(tx, applied.written, revision).await.map(Some)
    }

    /// Commits a save that changed `rows` message rows and left `revision`.
    async fn commit(
        &self,
        tx: deadpool_postgres::Transaction<'_>,
        rows: u64,
        revision: i64,
    ) -> Result<SaveOutcome, HistoryError> {
        tx.commit().await.map_err(pg)?;
        self.counters.rows_written.fetch_add(rows, Ordering::SeqCst);
        Ok(SaveOutcome::Saved {
            revision: revision_of(revision),
        })
    }

    /// Locks the conversation's row and loads its shape for a branch switch or delete: the
    /// transaction, the stored leaf and totals and the shape, or `None` when the conversation
    /// is absent (the transaction rolled back).
    async fn lock_shape<'a>(
        &self,
        client: &'a mut deadpool_postgres::Object,
        principal: &str,
        id: &str,
    ) -> Result<Option<Locked<'a>>, HistoryError> {
        let tx = client.transaction().await.map_err(pg)?;
        let lock = tx
            .prepare_cached(
                "SELECT leaf, totals FROM conversations
                 WHERE principal = $1 AND id = $2 FOR UPDATE",
            )
            .await
            .map_err(pg)?;
        let Some(row) = tx.query_opt(&lock, &[&principal, &id]).await.map_err(pg)? else {
            tx.rollback().await.map_err(pg)?;
            return Ok(None);
        };
        let leaf: Option<i32> = row.try_get(0).map_err(pg)?;
        let totals: String = row.try_get(1).map_err(pg)?;
        let nodes = tx
            .prepare_cached(
                "SELECT seq, parent FROM messages WHERE principal = $1 AND conversation_id = $2",
            )
            .await
            .map_err(pg)?;
        let rows = tx.query(&nodes, &[&principal, &id]).await.map_err(pg)?;
        let nodes = rows
            .iter()
            .map(|r| {
                let seq: i32 = r.try_get(0).map_err(pg)?;
                let parent: Option<i32> = r.try_get(1).map_err(pg)?;
                Ok((node(seq), parent.map(node)))
            })
            .collect::<Result<Vec<_>, HistoryError>>()?;
        Ok(Some(Locked {
            tx,
            leaf: leaf.map(node),
            totals,
            shape: Shape::new(nodes),
        }))
    }

    /// Ends a branch switch or delete: sets the leaf to `leaf`, the totals to the new path's
    /// (the stored ones when the leaf stays), bumps the revision and `updated_at`, commits;
    /// the new revision.
    async fn finish_branch(
        &self,
        locked: Locked<'_>,
        principal: &str,
        id: &str,
        leaf: Option<u64>,
    ) -> Result<BranchOutcome, HistoryError> {
        let Locked {
            tx, leaf: before, ..
        } = &locked;
        let seq = leaf.map(seq_of).transpose()?;
        let totals = if leaf == *before {
            locked.totals.clone()
        } else {
            let path = self.read_path(tx, principal, id, seq, i32::MAX).await?;
            let bodies = path.iter().filter_map(|n| n.body.as_deref());
            serde_json::to_string(&ConversationTotals::of(&decode_rows(bodies)?))
                .map_err(storage)?
        };
        let update = tx
            .prepare_cached(
                "UPDATE conversations
                 SET leaf = $3, totals = $4, updated_at = $5, revision = revision + 1
                 WHERE principal = $1 AND id = $2 RETURNING revision",
            )
            .await
            .map_err(pg)?;
        let revision: i64 = tx
            .query_one(&update, &[&principal, &id, &seq, &totals, &now_ms()])
            .await
            .map_err(pg)?
            .try_get(0)
            .map_err(pg)?;
        locked.tx.commit().await.map_err(pg)?;
        Ok(BranchOutcome::Done {
            revision: revision_of(revision),
        })
    }
}

/// A conversation locked for a branch switch or delete ([`PostgresStore::lock_shape`]).
struct Locked<'a> {
    tx: deadpool_postgres::Transaction<'a>,
    leaf: Option<u64>,
    /// The stored totals, as JSON.
    totals: String,
    shape: Shape,
}

/// A node of the active path as a save reads it ([`PostgresStore::read_path`]).
struct PathNode {
    seq: i32,
    /// The message id as JSON ([`message_id`]).
    message_id: Option<String>,
    hash: Option<Vec<u8>>,
    body: Option<String>,
}

/// A node number as the wire has it (a stored `seq` is never negative).
fn node(seq: i32) -> u64 {
    u64::try_from(seq).unwrap_or(0)
}

/// A node number as a stored `seq`.
fn seq_of(node: u64) -> Result<i32, HistoryError> {
    i32::try_from(node).map_err(storage)
}

/// The error of a stored path that does not reach its root (never written).
fn broken(id: &str) -> HistoryError {
    HistoryError::Storage(format!("the stored path of conversation {id:?} is broken"))
}

/// A message id as the store keeps it (`messages.message_id`): JSON, so a NUL is escaped as
/// `\u0000`, which `text` could not hold; the tree migration reads it out of stored bodies
/// with `(body::json -> 'id')::text`, which gives the same text.
pub(super) fn message_id(id: Option<&str>) -> Result<Option<String>, HistoryError> {
    id.map(serde_json::to_string).transpose().map_err(storage)
}

/// The [`tree::plan`] of sending `encoded` for the positions of `stored` (the stored path from
/// the first position not kept), whose node before is `parent`: a message is the same body
/// when its hash is.
fn plan_against(stored: &[PathNode], parent: Option<u64>, encoded: &Encoded) -> tree::Plan {
    let nodes: Vec<(u64, Option<&str>)> = stored
        .iter()
        .map(|n| (node(n.seq), n.message_id.as_deref()))
        .collect();
    let ids: Vec<Option<&str>> = encoded.ids.iter().map(Option::as_deref).collect();
    tree::plan(&nodes, parent, &ids, |i| {
        stored[i].hash.as_deref() == encoded.hashes.get(i).map(Vec::as_slice)
    })
}

/// What [`apply`] did.
struct Applied {
    /// Message rows updated plus inserted.
    written: u64,
    /// The leaf after it.
    leaf: Option<i32>,
    /// The number the next new node gets after it.
    next: i32,
}

/// Carries out `plan` for `encoded`'s rows, sent for the path positions from `from` on:
/// updates the planned rows in place and inserts the new ones numbered from `next`.
async fn apply(
    tx: &deadpool_postgres::Transaction<'_>,
    principal: &str,
    id: &str,
    encoded: &Encoded,
    plan: &tree::Plan,
    from: usize,
    next: i32,
) -> Result<Applied, HistoryError> {
    let updated = update_nodes(tx, principal, id, encoded, &plan.updates).await?;
    let parent = plan.parent.map(seq_of).transpose()?;
    let place = Place {
        parent,
        depth: i32::try_from(from + plan.new_from).map_err(storage)?,
        seq: next,
    };
    let inserted = insert_nodes(tx, principal, id, encoded, plan.new_from, place).await?;
    let added = i32::try_from(encoded.rows.len() - plan.new_from).map_err(storage)?;
    let next_after = next.checked_add(added).ok_or_else(|| {
        HistoryError::Storage(format!("conversation {id:?} ran out of node numbers"))
    })?;
    Ok(Applied {
        written: updated + inserted,
        leaf: if added > 0 {
            Some(next_after - 1)
        } else {
            parent
        },
        next: next_after,
    })
}

/// Updates in place the stored nodes of `updates` (sent row index, node) with the sent rows;
/// the number updated.
async fn update_nodes(
    tx: &deadpool_postgres::Transaction<'_>,
    principal: &str,
    id: &str,
    encoded: &Encoded,
    updates: &[(usize, u64)],
) -> Result<u64, HistoryError> {
    if updates.is_empty() {
        return Ok(0);
    }
    let update = tx
        .prepare_cached(
            "UPDATE messages m SET hash = t.hash, body = t.body, search_text = t.search_text
             FROM UNNEST($3::int4[], $4::bytea[], $5::text[], $6::text[])
                 AS t(seq, hash, body, search_text)
             WHERE m.principal = $1 AND m.conversation_id = $2 AND m.seq = t.seq",
        )
        .await
        .map_err(pg)?;
    let seqs = updates
        .iter()
        .map(|(_, n)| seq_of(*n))
        .collect::<Result<Vec<i32>, _>>()?;
    let hashes: Vec<&[u8]> = updates
        .iter()
        .map(|(i, _)| encoded.hashes[*i].as_slice())
        .collect();
    let bodies: Vec<&str> = updates
        .iter()
        .map(|(i, _)| encoded.rows[*i].body.as_str())
        .collect();
    let texts: Vec<Option<String>> = updates
        .iter()
        .map(|(i, _)| encoded.rows[*i].text.as_deref().map(search_text))
        .collect();
    tx.execute(&update, &[&principal, &id, &seqs, &hashes, &bodies, &texts])
        .await
        .map_err(pg)
}

/// Where new nodes go: the first is a child of `parent` at `depth`, numbered `seq`, and each
/// next one a child of the one before it.
#[derive(Debug, Clone, Copy)]
struct Place {
    parent: Option<i32>,
    depth: i32,
    seq: i32,
}

/// Inserts `encoded`'s rows from index `from` on as new nodes at `place`; the number inserted.
async fn insert_nodes(
    tx: &deadpool_postgres::Transaction<'_>,
    principal: &str,
    id: &str,
    encoded: &Encoded,
    from: usize,
    place: Place,
) -> Result<u64, HistoryError> {
    let Place { parent, depth, seq } = place;
    let rows = &encoded.rows[from..];
    if rows.is_empty() {
        return Ok(0);
    }
    let insert = tx
        .prepare_cached(
            "INSERT INTO messages
                (principal, conversation_id, seq, parent, depth, message_id, hash, body,
                 search_text)
             SELECT $1, $2, t.seq, t.parent, t.depth, t.message_id, t.hash, t.body,
                 t.search_text
             FROM UNNEST($3::int4[], $4::int4[], $5::int4[], $6::text[], $7::bytea[],
                         $8::text[], $9::text[])
                 AS t(seq, parent, depth, message_id, hash, body, search_text)",
        )
        .await
        .map_err(pg)?;
    let n = i32::try_from(rows.len()).map_err(storage)?;
    let numbered = |start: i32| (0..n).map(move |k| start.checked_add(k));
    let seqs = numbered(seq).collect::<Option<Vec<i32>>>().ok_or_else(|| {
        HistoryError::Storage(format!("conversation {id:?} ran out of node numbers"))
    })?;
    let parents: Vec<Option<i32>> = std::iter::once(parent)
        .chain(seqs.iter().map(|s| Some(*s)))
        .take(rows.len())
        .collect();
    let depths = numbered(depth)
        .collect::<Option<Vec<i32>>>()
        .ok_or_else(|| HistoryError::Storage(format!("conversation {id:?} is too long")))?;
    let ids: Vec<Option<&str>> = encoded.ids[from..].iter().map(Option::as_deref).collect();
    let hashes: Vec<&[u8]> = encoded.hashes[from..].iter().map(Vec::as_slice).collect();
    let bodies: Vec<&str> = rows.iter().map(|r| r.body.as_str()).collect();
    let texts: Vec<Option<String>> = rows
        .iter()
        .map(|r| r.text.as_deref().map(search_text))
        .collect();
    tx.execute(
        &insert,
        &[
            &principal, &id, &seqs, &parents, &depths, &ids, &hashes, &bodies, &texts,
        ],
    )
    .await
    .map_err(pg)
}

/// A message's searchable text as PostgreSQL keeps it: `text` cannot hold NUL, which is no
/// word anyway.
pub(super) fn search_text(text: &str) -> String {
    text.replace('\0', " ")
}

/// A save's values, encoded once for every attempt.
struct Encoded {
    rows: Vec<MessageRow>,
    hashes: Vec<Vec<u8>>,
    /// Each row's message id as the store keeps it ([`message_id`]).
    ids: Vec<Option<String>>,
    params: String,
    allowed: String,
    totals: String,
}

impl Encoded {
    fn of(c: &StoredConversation) -> Result<Self, HistoryError> {
        let rows = encode_indexed(&c.messages)?;
        let hashes = rows
            .iter()
            .map(|r| Sha256::digest(r.body.as_bytes()).to_vec())
            .collect();
        let ids = rows
            .iter()
            .map(|r| message_id(r.id.as_deref()))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            rows,
            hashes,
            ids,
            params: serde_json::to_string(&c.params).map_err(storage)?,
            allowed: serde_json::to_string(&c.allowed_tools).map_err(storage)?,
            totals: serde_json::to_string(&ConversationTotals::of(&c.messages)).map_err(storage)?,
        })
    }
}

#[async_trait]
impl HistoryStore for PostgresStore {
    async fn list(&self, principal: &Principal) -> Result<Vec<ConversationSummary>, HistoryError> {
        no_nul(&[("principal", principal.id())])?;
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(&format!(
                "SELECT {SUMMARY_COLUMNS} FROM conversations WHERE principal = $1
                 ORDER BY updated_at DESC, id COLLATE \"C\" ASC"
            ))
            .await
            .map_err(pg)?;
        let rows = client.query(&stmt, &[&principal.id()]).await.map_err(pg)?;
        rows.iter().map(summary).collect()
    }

    async fn get(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<Option<StoredConversation>, HistoryError> {
        validate_id(id)?;
        no_nul(&[("principal", principal.id())])?;
        let client = self.client().await?;
        self.load(&client, principal.id(), id).await
    }

    async fn get_tail(
        &self,
        principal: &Principal,
        id: &str,
        n: usize,
    ) -> Result<Option<(StoredConversation, u64)>, HistoryError> {
        validate_id(id)?;
        no_nul(&[("principal", principal.id())])?;
        let client = self.client().await?;
        self.load_tail(&client, principal.id(), id, n).await
    }

    async fn save(
        &self,
        principal: &Principal,
        conversation: StoredConversation,
    ) -> Result<SaveOutcome, HistoryError> {
        let c = conversation;
        validate_id(&c.id)?;
        no_nul(&[
            ("principal", principal.id()),
            ("title", &c.title),
            ("persona", &c.persona_id),
            ("model", &c.model),
        ])?;
        let encoded = Encoded::of(&c)?;
        // A kept save of a conversation that is gone and keeps none goes on as a whole save,
        // which creates it.
        if let Some(kept) = c.kept
            && let Some(outcome) = self
                .try_save_kept(principal.id(), &c, kept, &encoded)
                .await?
        {
            return Ok(outcome);
        }
        for _ in 0..SAVE_ATTEMPTS {
            if let Some(outcome) = self.try_save(principal.id(), &c, &encoded).await? {
                return Ok(outcome);
            }
        }
        Err(HistoryError::Storage(
            "the conversation kept being deleted and recreated during the save; retry".into(),
        ))
    }

    async fn patch(
        &self,
        principal: &Principal,
        id: &str,
        patch: ConversationPatch,
    ) -> Result<Option<u64>, HistoryError> {
        validate_id(id)?;
        let title = patch.title.trim().to_owned();
        no_nul(&[
            ("principal", principal.id()),
            ("title", &title),
            ("persona", patch.persona_id.as_deref().unwrap_or_default()),
            ("model", patch.model.as_deref().unwrap_or_default()),
        ])?;
        let params_json = patch
            .params
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(storage)?;
        let now = now_ms();
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "UPDATE conversations SET
                    title = CASE WHEN $3 = '' THEN title ELSE $3 END,
                    model = COALESCE(NULLIF($4, ''), model),
                    persona_id = COALESCE(NULLIF($5, ''), persona_id),
                    params = COALESCE($6, params),
                    updated_at = $7,
                    revision = revision + 1
                 WHERE principal = $1 AND id = $2
                 RETURNING revision",
            )
            .await
            .map_err(pg)?;
        let row = client
            .query_opt(
                &stmt,
                &[
                    &principal.id(),
                    &id,
                    &title,
                    &patch.model,
                    &patch.persona_id,
                    &params_json,
                    &now,
                ],
            )
            .await
            .map_err(pg)?;
        row.map(|r| r.try_get::<_, i64>(0).map(revision_of).map_err(pg))
            .transpose()
    }

    async fn get_tree(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<Option<lmchatkit_protocol::ConversationTree>, HistoryError> {
        validate_id(id)?;
        no_nul(&[("principal", principal.id())])?;
        let client = self.client().await?;
        let leaf = client
            .prepare_cached("SELECT leaf FROM conversations WHERE principal = $1 AND id = $2")
            .await
            .map_err(pg)?;
        let Some(row) = client
            .query_opt(&leaf, &[&principal.id(), &id])
            .await
            .map_err(pg)?
        else {
            return Ok(None);
        };
        let leaf: Option<i32> = row.try_get(0).map_err(pg)?;
        let nodes = client
            .prepare_cached(
                "SELECT seq, parent, body FROM messages
                 WHERE principal = $1 AND conversation_id = $2 ORDER BY seq",
            )
            .await
            .map_err(pg)?;
        let nodes = client
            .query(&nodes, &[&principal.id(), &id])
            .await
            .map_err(pg)?
            .iter()
            .map(|r| {
                let seq: i32 = r.try_get(0).map_err(pg)?;
                let parent: Option<i32> = r.try_get(1).map_err(pg)?;
                let body: String = r.try_get(2).map_err(pg)?;
                Ok(lmchatkit_protocol::TreeNode {
                    node: node(seq),
                    parent: parent.map(node),
                    message: decode_rows([body.as_str()])?
                        .pop()
                        .ok_or_else(|| HistoryError::Storage("a system message stored".into()))?,
                })
            })
            .collect::<Result<Vec<_>, HistoryError>>()?;
        Ok(Some(lmchatkit_protocol::ConversationTree {
            nodes,
            leaf: leaf.map(node),
        }))
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
        no_nul(&[("principal", principal.id())])?;
        let client = self.client().await?;
        // Messages go with it (ON DELETE CASCADE).
        let n = client
            .execute(
                "DELETE FROM conversations WHERE principal = $1 AND id = $2",
                &[&principal.id(), &id],
            )
            .await
            .map_err(pg)?;
        Ok(n > 0)
    }

    /// In two stages (`store::search`'s first stage, then the index), in one read-only
    /// snapshot: the newest conversations' searchable text, a few conversations a round
    /// (doubling, at most 64), until the page is full, or the first stage's budget is spent
    /// and the hits so far do not promise a full page within 5,000 messages;
    /// then the GIN index, for every term, in the conversations not read yet. Its matches are
    /// few by then (the query is rare): each one the index gives is a heap row visited and
    /// sent with its text, which is what made a middling query cost 200 ms and more when the
    /// index answered every search (measured by `search_figures_on_ten_thousand_conversations_in_postgres`).
    async fn search(
        &self,
        principal: &Principal,
        query: &crate::store::SearchQuery,
    ) -> Result<Vec<lmchatkit_protocol::SearchHit>, HistoryError> {
        no_nul(&[("principal", principal.id())])?;
        let mut client = self.client().await?;
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(pg)?;
        let newest = tx
            .prepare_cached(
                "SELECT c.id, c.title, c.updated_at, m.seq, m.depth, m.message_id, m.search_text
                 FROM (SELECT id, title, updated_at FROM conversations WHERE principal = $1
                       ORDER BY updated_at DESC, id COLLATE \"C\" ASC
                       LIMIT $2 OFFSET $3) c
                 LEFT JOIN messages m ON m.principal = $1 AND m.conversation_id = c.id
                       AND m.search_text IS NOT NULL
                 ORDER BY c.updated_at DESC, c.id COLLATE \"C\" ASC, m.seq ASC",
            )
            .await
            .map_err(pg)?;
        let mut first = crate::store::search::NewestFirst::new(query);
        let mut round: i64 = 4;
        'rounds: while first.worth_more(SEARCH_READ_MOST) {
            let offset = first.scanned().len() as i64;
            let rows = tx
                .query(&newest, &[&principal.id(), &round, &offset])
                .await
                .map_err(pg)?;
            let mut current: Option<String> = None;
            for row in &rows {
                let id: String = row.try_get(0).map_err(pg)?;
                if current.as_deref() != Some(id.as_str()) {
                    if let Some(done) = current.take() {
                        first.scanned_whole(&done);
                        if !first.worth_more(SEARCH_READ_MOST) {
                            break 'rounds;
                        }
                    }
                    current = Some(id.clone());
                }
                let Some(seq) = row.try_get::<_, Option<i32>>(3).map_err(pg)? else {
                    continue;
                };
                let depth: i32 = row.try_get(4).map_err(pg)?;
                let title: String = row.try_get(1).map_err(pg)?;
                let updated_at: i64 = row.try_get(2).map_err(pg)?;
                let text: Option<String> = row.try_get(6).map_err(pg)?;
                first.message(
                    (&id, &title, updated_at),
                    (node(seq), u64::try_from(depth).unwrap_or(0)),
                    stored_message_id(row.try_get(5).map_err(pg)?)?,
                    text.as_deref().unwrap_or(""),
                );
            }
            match current {
                Some(done) => first.scanned_whole(&done),
                None => break,
            }
            if (first.scanned().len() as i64) < offset + round {
                break;
            }
            round = (round * 2).min(64);
        }
        if first.is_full() {
            return Ok(first.into_hits());
        }
        // Every term: the GIN index intersects their lists without reading a row.
        let terms: Vec<&str> = query.terms().iter().map(String::as_str).collect();
        let terms = crate::store::SearchQuery::tsquery(&terms);
        let scanned = first.scanned().to_vec();
        let found = first.into_hits();
        // The first matches in order, a few more than the page misses (the check here may
        // refuse a match of PostgreSQL's parser); all of them when that was not enough.
        let wanted = query.limit() - found.len();
        for rows in [Some((wanted * 2 + 8) as i64), None] {
            let stmt = tx
                .prepare_cached(
                    "SELECT m.conversation_id, m.seq, m.depth, m.message_id, m.search_text, c.title,
                            c.updated_at
                     FROM messages m
                     JOIN conversations c ON c.principal = m.principal AND c.id = m.conversation_id
                     WHERE m.principal = $1 AND m.search @@ to_tsquery('simple', $2)
                           AND m.conversation_id <> ALL($3)
                     ORDER BY c.updated_at DESC, c.id COLLATE \"C\" ASC, m.seq ASC
                     LIMIT $4",
                )
                .await
                .map_err(pg)?;
            let matched = tx
                .query(&stmt, &[&principal.id(), &terms, &scanned, &rows])
                .await
                .map_err(pg)?;
            let mut hits = found.clone();
            for row in &matched {
                let conversation_id: String = row.try_get(0).map_err(pg)?;
                let seq: i32 = row.try_get(1).map_err(pg)?;
                let depth: i32 = row.try_get(2).map_err(pg)?;
                let message_id = stored_message_id(row.try_get(3).map_err(pg)?)?;
                let text: Option<String> = row.try_get(4).map_err(pg)?;
                let title: String = row.try_get(5).map_err(pg)?;
                let updated_at: i64 = row.try_get(6).map_err(pg)?;
                if let Some(mut hit) = query.hit_in_text(
                    (&conversation_id, &title, updated_at),
                    u64::try_from(depth).unwrap_or(0),
                    message_id,
                    text.as_deref().unwrap_or(""),
                ) {
                    hit.node = Some(node(seq));
                    hits.push(hit);
                    if hits.len() == query.limit() {
                        return Ok(hits);
                    }
                }
            }
            if rows.is_none_or(|n| (matched.len() as i64) < n) {
                return Ok(hits);
            }
        }
        Ok(found)
    }
}

/// The most messages a search reads in its first stage when the hits so far say the page
/// fills within them ([`NewestFirst::worth_more`](crate::store::search::NewestFirst::worth_more)).
const SEARCH_READ_MOST: usize = 5_000;

/// A message id as the store keeps it (JSON, [`message_id`]), decoded.
fn stored_message_id(id: Option<String>) -> Result<Option<String>, HistoryError> {
    id.map(|id| serde_json::from_str::<String>(&id))
        .transpose()
        .map_err(storage)
}

#[cfg(test)]
mod tests;
