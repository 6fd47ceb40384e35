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
//! - Messages are rows, each with the SHA-256 of its canonical body (the message serialized as
//!   JSON, which includes its id). A save finds the common prefix by reading the stored
//!   hashes only, never a body, deletes the rows after it and inserts the rest in one
//!   statement, so a save is O(new messages) in rows written and bodies moved.
//! - The revision check-and-set is one statement: `INSERT … ON CONFLICT (principal, id) DO
//!   UPDATE … WHERE conversations.revision = $base RETURNING revision`. It creates an absent
//!   conversation at revision 1 (whatever the base, as every store does), bumps a matching one
//!   and locks its row until the message rows are changed in the same transaction; a stale base
//!   returns no row, and the save answers [`SaveOutcome::Conflict`] with the current copy,
//!   which the competing save has committed by then.
//! - A save that keeps stored messages ([`StoredConversation::kept`]) locks the conversation's
//!   row with `SELECT … FOR UPDATE`, checks the revision and the message count (`max(seq)`, from
//!   the primary key's index), deletes the rows after the kept ones and inserts the new ones:
//!   no hash is read, and the totals grow by the new messages'. Keeping fewer than are stored
//!   reads the kept bodies once for their totals.
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
    MessageRow, decode_message, decode_rows, encode_indexed, gone, now_ms, storage,
    stored_conversation,
};
use super::{HistoryError, HistoryStore, SaveOutcome, validate_id};
use crate::host::Principal;

mod approvals;
pub(crate) mod connect;
mod options;
pub(crate) mod schema;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
#[cfg(feature = "mcp")]
mod user_mcp;

use connect::{Prepared, Target, build_pool, chain, is_pool_timeout, prepare, scrub};
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
    /// Message rows inserted plus deleted by saves (as PostgreSQL reports them).
    pub rows_written: u64,
    /// Message bodies fetched from the database (by gets and conflict copies).
    pub bodies_read: u64,
    /// Stored message hashes fetched by saves to find the common prefix.
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

/// The check-and-set of a save: creates at revision 1, or bumps a row whose revision is the base
/// (`$11`); no row back means a stale base.
const UPSERT: &str = "INSERT INTO conversations AS c
        (principal, id, title, persona_id, model, params, created_at, updated_at, revision,
         allowed_tools, totals)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, $10)
     ON CONFLICT (principal, id) DO UPDATE SET
        title = EXCLUDED.title, persona_id = EXCLUDED.persona_id, model = EXCLUDED.model,
        params = EXCLUDED.params, updated_at = EXCLUDED.updated_at, revision = c.revision + 1,
        allowed_tools = EXCLUDED.allowed_tools, totals = EXCLUDED.totals
     WHERE c.revision = $11
     RETURNING revision";

/// How often a save retries when its conversation is deleted between a lost check-and-set and
/// the read of the current copy.
const SAVE_ATTEMPTS: usize = 3;

/// A `tokio-postgres` error as a [`HistoryError`]: a character PostgreSQL refuses is bad input,
/// anything else the store failing.
pub(super) fn pg(e: tokio_postgres::Error) -> HistoryError {
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
        .map_err(|e| store.scrubbed(e))?;
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
            if is_pool_timeout(&e) {
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
        client: &tokio_postgres::Client,
        principal: &str,
        id: &str,
    ) -> Result<Option<StoredConversation>, HistoryError> {
        let whole = self.load_tail(client, principal, id, usize::MAX).await?;
        Ok(whole.map(|(c, _)| c))
    }

    /// The conversation with its last `n` messages only and how many come before them, in one
    /// statement (one snapshot), or `None`. The count comes from the primary key's index.
    async fn load_tail(
        &self,
        client: &tokio_postgres::Client,
        principal: &str,
        id: &str,
        n: usize,
    ) -> Result<Option<(StoredConversation, u64)>, HistoryError> {
        let n = i32::try_from(n).unwrap_or(i32::MAX);
        let row = client
            .query_opt(
                &format!(
                    "SELECT {SUMMARY_COLUMNS}, allowed_tools,
                        ARRAY(SELECT m.body FROM messages m
                              WHERE m.principal = c.principal AND m.conversation_id = c.id
                                AND m.seq >= t.first
                              ORDER BY m.seq),
                        t.first
                     FROM conversations c,
                          LATERAL (SELECT greatest(0, coalesce(max(seq) + 1, 0) - $3) AS first
                                   FROM messages WHERE principal = $1 AND conversation_id = $2) t
                     WHERE c.principal = $1 AND c.id = $2"
                ),
                &[&principal, &id, &n],
            )
            .await
            .map_err(pg)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let s = summary(&row)?;
        let allowed: String = row.try_get(9).map_err(pg)?;
        let bodies: Vec<String> = row.try_get(10).map_err(pg)?;
        let before: i32 = row.try_get(11).map_err(pg)?;
        self.counters
            .bodies_read
            .fetch_add(bodies.len() as u64, Ordering::SeqCst);
        let c = stored_conversation(s, &bodies, &allowed)?;
        Ok(Some((c, u64::try_from(before).unwrap_or(0))))
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
        // Revision 1 is a fresh row (an update makes base + 1 >= 2): nothing is stored yet.
        let (keep, deleted) = if revision == 1 {
            (0, 0)
        } else {
            let hashes = tx
                .prepare_cached(
                    "SELECT hash FROM messages WHERE principal = $1 AND conversation_id = $2
                     ORDER BY seq",
                )
                .await
                .map_err(pg)?;
            let stored = tx.query(&hashes, &[&principal, &c.id]).await.map_err(pg)?;
            self.counters
                .hashes_read
                .fetch_add(stored.len() as u64, Ordering::SeqCst);
            let mut keep = 0;
            for (row, hash) in stored.iter().zip(&encoded.hashes) {
                let got: &[u8] = row.try_get(0).map_err(pg)?;
                if got != hash.as_slice() {
                    break;
                }
                keep += 1;
            }
            let deleted = match keep < stored.len() {
                true => delete_rows(&tx, principal, &c.id, keep).await?,
                false => 0,
            };
            (keep, deleted)
        };
        let inserted = insert_rows(&tx, principal, &c.id, keep, keep, encoded).await?;
        self.commit(tx, deleted + inserted, revision)
            .await
            .map(Some)
    }
}

impl PostgresStore {
    /// A save that keeps the first `kept` stored messages ([`StoredConversation::kept`]) and
    /// replaces the rest with the body's: the row is locked with `FOR UPDATE`, its revision and
    /// message count checked, and only the rows after `kept` deleted and the new ones inserted.
    /// No hash or body is read when it keeps them all (the totals grow by the new messages').
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
                "SELECT revision, totals,
                        (SELECT max(seq) FROM messages
                         WHERE principal = $1 AND conversation_id = $2)
                 FROM conversations WHERE principal = $1 AND id = $2 FOR UPDATE",
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
        let last_seq: Option<i32> = row.try_get(2).map_err(pg)?;
        let count = last_seq.map_or(0, |s| i64::from(s) + 1) as u64;
        if c.revision == 0 || c.revision != revision_of(stored) || kept > count {
            tx.rollback().await.map_err(pg)?;
            let current = self.load(&client, principal, &c.id).await?;
            return Ok(Some(SaveOutcome::Conflict(Box::new(
                current.unwrap_or_else(|| gone(&c.id)),
            ))));
        }
        let from = i32::try_from(kept).map_err(storage)?;
        let before = if kept == count {
            serde_json::from_str::<ConversationTotals>(&totals).map_err(storage)?
        } else {
            let bodies = tx
                .prepare_cached(
                    "SELECT body FROM messages
                     WHERE principal = $1 AND conversation_id = $2 AND seq < $3 ORDER BY seq",
                )
                .await
                .map_err(pg)?;
            let rows = tx
                .query(&bodies, &[&principal, &c.id, &from])
                .await
                .map_err(pg)?;
            self.counters
                .bodies_read
                .fetch_add(rows.len() as u64, Ordering::SeqCst);
            let bodies = rows
                .iter()
                .map(|r| r.try_get::<_, String>(0).map_err(pg))
                .collect::<Result<Vec<_>, _>>()?;
            ConversationTotals::of(&decode_rows(bodies.iter().map(String::as_str))?)
        };
        let totals = before.then(ConversationTotals::of(&c.messages));
        let totals = serde_json::to_string(&totals).map_err(storage)?;
        let deleted = delete_rows(&tx, principal, &c.id, kept as usize).await?;
        let inserted = insert_rows(&tx, principal, &c.id, kept as usize, 0, encoded).await?;
        let update = tx
            .prepare_cached(
                "UPDATE conversations
                 SET title = $3, persona_id = $4, model = $5, params = $6, updated_at = $7,
                     revision = revision + 1, allowed_tools = $8, totals = $9
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
                ],
            )
            .await
            .map_err(pg)?
            .try_get(0)
            .map_err(pg)?;
        self.commit(tx, deleted + inserted, revision)
            .await
            .map(Some)
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
}

/// Deletes the message rows from `seq` on; the number deleted.
async fn delete_rows(
    tx: &deadpool_postgres::Transaction<'_>,
    principal: &str,
    id: &str,
    seq: usize,
) -> Result<u64, HistoryError> {
    let delete = tx
        .prepare_cached(
            "DELETE FROM messages WHERE principal = $1 AND conversation_id = $2 AND seq >= $3",
        )
        .await
        .map_err(pg)?;
    let from = i32::try_from(seq).map_err(storage)?;
    tx.execute(&delete, &[&principal, &id, &from])
        .await
        .map_err(pg)
}

/// Inserts `encoded`'s rows from index `from` on, numbered from `seq`; the number inserted.
async fn insert_rows(
    tx: &deadpool_postgres::Transaction<'_>,
    principal: &str,
    id: &str,
    seq: usize,
    from: usize,
    encoded: &Encoded,
) -> Result<u64, HistoryError> {
    let rows = &encoded.rows[from..];
    if rows.is_empty() {
        return Ok(0);
    }
    let insert = tx
        .prepare_cached(
            "INSERT INTO messages (principal, conversation_id, seq, hash, body, search_text)
             SELECT $1, $2, t.seq, t.hash, t.body, t.search_text
             FROM UNNEST($3::int4[], $4::bytea[], $5::text[], $6::text[])
                 AS t(seq, hash, body, search_text)",
        )
        .await
        .map_err(pg)?;
    let seqs = (seq..seq + rows.len())
        .map(i32::try_from)
        .collect::<Result<Vec<i32>, _>>()
        .map_err(storage)?;
    let hashes: Vec<&[u8]> = encoded.hashes[from..].iter().map(Vec::as_slice).collect();
    let bodies: Vec<&str> = rows.iter().map(|r| r.body.as_str()).collect();
    let texts: Vec<Option<String>> = rows
        .iter()
        .map(|r| r.text.as_deref().map(search_text))
        .collect();
    tx.execute(&insert, &[&principal, &id, &seqs, &hashes, &bodies, &texts])
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
        Ok(Self {
            rows,
            hashes,
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

    async fn search(
        &self,
        principal: &Principal,
        query: &crate::store::SearchQuery,
    ) -> Result<Vec<lmchatkit_protocol::SearchHit>, HistoryError> {
        no_nul(&[("principal", principal.id())])?;
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT m.conversation_id, m.seq, m.body, m.search_text, c.title, c.updated_at
                 FROM messages m
                 JOIN conversations c ON c.principal = m.principal AND c.id = m.conversation_id
                 WHERE m.principal = $1 AND m.search @@ to_tsquery('simple', $2)
                 ORDER BY c.updated_at DESC, c.id COLLATE \"C\" ASC, m.seq ASC",
            )
            .await
            .map_err(pg)?;
        let rows = client
            .query(&stmt, &[&principal.id(), &query.tsquery()])
            .await
            .map_err(pg)?;
        let mut hits = Vec::new();
        for row in rows {
            let conversation_id: String = row.try_get(0).map_err(pg)?;
            let seq: i32 = row.try_get(1).map_err(pg)?;
            let body: String = row.try_get(2).map_err(pg)?;
            let text: Option<String> = row.try_get(3).map_err(pg)?;
            let title: String = row.try_get(4).map_err(pg)?;
            let updated_at: i64 = row.try_get(5).map_err(pg)?;
            let message_id = decode_message(&body)?.id;
            if let Some(hit) = query.hit_in_text(
                (&conversation_id, &title, updated_at),
                u64::try_from(seq).unwrap_or(0),
                message_id,
                text.as_deref().unwrap_or(""),
            ) {
                hits.push(hit);
                if hits.len() == query.limit() {
                    break;
                }
            }
        }
        Ok(hits)
    }
}

#[cfg(test)]
mod tests;
