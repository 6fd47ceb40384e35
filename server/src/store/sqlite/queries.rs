//! The blocking SQL behind each store operation; each runs on the blocking pool with the
//! store's connection.

use std::sync::atomic::{AtomicU64, Ordering};

use lmchatkit_protocol::{
    ConversationSummary, ConversationTotals, Message, Params, Role, StoredConversation,
};
use rusqlite::{Connection, OptionalExtension, params};

use super::written::{Written, common_prefix};
use crate::store::HistoryError;
use crate::store::rows::{
    MessageRow, decode_rows, encode_indexed, gone, now_ms, row_matches, storage,
    stored_conversation,
};

/// `rusqlite` errors as [`HistoryError::Storage`].
pub(super) trait Db<T> {
    fn db(self) -> Result<T, HistoryError>;
}

impl<T> Db<T> for rusqlite::Result<T> {
    fn db(self) -> Result<T, HistoryError> {
        self.map_err(storage)
    }
}

/// The columns [`summary_from_row`] reads, in order.
pub(super) const SUMMARY_COLUMNS: &str =
    "id, title, persona_id, model, params, created_at, updated_at, revision, totals";

/// A summary row, with its params and totals still as JSON text (parsed by [`with_params`]).
pub(super) fn summary_from_row(
    r: &rusqlite::Row<'_>,
) -> rusqlite::Result<(ConversationSummary, String, String)> {
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
            totals: ConversationTotals::default(),
        },
        r.get(4)?,
        r.get(8)?,
    ))
}

/// Parses the params and totals JSON into the summary.
pub(super) fn with_params(
    (mut s, params, totals): (ConversationSummary, String, String),
) -> Result<ConversationSummary, HistoryError> {
    s.params = serde_json::from_str(&params).map_err(storage)?;
    s.totals = serde_json::from_str(&totals).map_err(storage)?;
    Ok(s)
}

/// The whole conversation, or `None`.
pub(super) fn load(
    conn: &Connection,
    principal: &str,
    id: &str,
) -> Result<Option<StoredConversation>, HistoryError> {
    load_from(conn, principal, id, 0)
}

/// The conversation with its last `n` messages only, and how many come before them; `None`
/// when absent. The count comes from the primary key's index (`max(seq)`); only the last `n`
/// bodies are read.
pub(super) fn load_tail(
    conn: &Connection,
    principal: &str,
    id: &str,
    n: usize,
) -> Result<Option<(StoredConversation, u64)>, HistoryError> {
    let last: Option<i64> = conn
        .prepare_cached(
            "SELECT max(seq) FROM messages WHERE principal = ?1 AND conversation_id = ?2",
        )
        .db()?
        .query_row(params![principal, id], |r| r.get(0))
        .db()?;
    let count = last.map_or(0, |s| s + 1);
    let from = (count - i64::try_from(n).unwrap_or(i64::MAX)).max(0);
    Ok(load_from(conn, principal, id, from)?.map(|c| (c, from as u64)))
}

/// The conversation with its messages from `seq` on, or `None`.
fn load_from(
    conn: &Connection,
    principal: &str,
    id: &str,
    seq: i64,
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
    let allowed: String = conn
        .prepare_cached("SELECT allowed_tools FROM conversations WHERE principal = ?1 AND id = ?2")
        .db()?
        .query_row(params![principal, id], |r| r.get(0))
        .db()?;
    let mut stmt = conn
        .prepare_cached(
            "SELECT body FROM messages WHERE principal = ?1 AND conversation_id = ?2 AND seq >= ?3
             ORDER BY seq",
        )
        .db()?;
    let bodies = stmt
        .query_map(params![principal, id, seq], |r| r.get::<_, String>(0))
        .db()?
        .collect::<rusqlite::Result<Vec<_>>>()
        .db()?;
    stored_conversation(s, &bodies, &allowed).map(Some)
}

/// Length of the common prefix of the stored rows and `incoming`, reading only as far as needed
/// (each row read is counted in `read`).
fn stored_prefix(
    conn: &Connection,
    principal: &str,
    id: &str,
    incoming: &[MessageRow],
    read: &AtomicU64,
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
        read.fetch_add(1, Ordering::Relaxed);
        let id = r.get_ref(0).db()?.as_str_or_null().map_err(storage)?;
        let body = r.get_ref(1).db()?.as_str().map_err(storage)?;
        if !row_matches(id, body, &incoming[keep]) {
            break;
        }
        keep += 1;
    }
    Ok(keep)
}

/// Inserts `rows` with `seq` numbers from `first_seq`; the number inserted. Rows with
/// searchable text are indexed ([`index_text`]).
fn insert_rows(
    conn: &Connection,
    principal: &str,
    id: &str,
    first_seq: usize,
    rows: &[MessageRow],
) -> Result<u64, HistoryError> {
    let key: Option<i64> = if rows.iter().any(|r| r.text.is_some()) {
        conn.prepare_cached("SELECT search_key FROM conversations WHERE principal = ?1 AND id = ?2")
            .db()?
            .query_row(params![principal, id], |r| r.get(0))
            .optional()
            .db()?
            .flatten()
    } else {
        None
    };
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO messages (principal, conversation_id, seq, message_id, body, search_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .db()?;
    let mut n = 0;
    for (i, row) in rows.iter().enumerate() {
        let seq = (first_seq + i) as i64;
        let search_id = match (&row.text, key) {
            (Some(text), Some(key)) => index_text(conn, key, seq, text)?,
            _ => None,
        };
        n += stmt
            .execute(params![principal, id, seq, row.id, row.body, search_id])
            .db()? as u64;
    }
    Ok(n)
}

/// Bits of a full-text index rowid that hold the message's `seq`; the conversation's
/// `search_key` is above them.
const SEQ_BITS: u32 = 24;

/// The full-text index rowid of message `seq` of the conversation whose `search_key` is
/// `key`; `None` past what the rowid can say (a conversation of over 16 million messages, or
/// more than 2^39 conversations ever created), whose messages are not indexed.
pub(super) fn search_rowid(key: i64, seq: i64) -> Option<i64> {
    // (Shifted only once in range: a larger key would overflow.)
    if key > 0 && key < 1 << (63 - SEQ_BITS) && (0..1 << SEQ_BITS).contains(&seq) {
        Some(key << SEQ_BITS | seq)
    } else {
        None
    }
}

/// Adds a message's searchable text to the full-text index; its rowid there ([`search_rowid`]),
/// `None` when it cannot have one.
pub(super) fn index_text(
    conn: &Connection,
    key: i64,
    seq: i64,
    text: &str,
) -> Result<Option<i64>, HistoryError> {
    let Some(rowid) = search_rowid(key, seq) else {
        return Ok(None);
    };
    conn.prepare_cached("INSERT INTO message_index (rowid, text) VALUES (?1, ?2)")
        .db()?
        .execute(params![rowid, text])
        .db()?;
    Ok(Some(rowid))
}

/// At most this many matched conversations are looked up one by one; past it the caller's
/// conversations are walked newest first instead (a common word matches most of them).
const LOOKUP_CONVERSATIONS: usize = 256;

/// The principal's messages matching `query`, conversations newest first, messages in order.
///
/// The index answers rowids only (no stored row is read for a match): each says which
/// conversation (`search_key`) and which message (`seq`) matched. The index is one for all
/// principals: another principal's matches are read as rowids and dropped, as their
/// conversations are never the caller's. Then the conversations are
/// taken newest first, and the matched messages of each are read and checked
/// ([`SearchQuery::hit_in_text`], which makes the snippet) until `limit` hits: a word in every
/// conversation costs the few conversations that fill the page, not the thousands that match.
/// Measured by the ignored test `search_figures_on_ten_thousand_conversations`.
pub(super) fn search(
    conn: &Connection,
    principal: &str,
    query: &crate::store::SearchQuery,
) -> Result<Vec<lmchatkit_protocol::SearchHit>, HistoryError> {
    let expression = query.fts5();
    let mut matched: std::collections::HashMap<i64, Vec<i64>> = Default::default();
    {
        let mut stmt = conn
            .prepare_cached("SELECT rowid FROM message_index WHERE message_index MATCH ?1")
            .db()?;
        let mut rows = stmt.query(params![expression]).db()?;
        while let Some(r) = rows.next().db()? {
            let rowid: i64 = r.get(0).db()?;
            matched
                .entry(rowid >> SEQ_BITS)
                .or_default()
                .push(rowid & ((1 << SEQ_BITS) - 1));
        }
    }
    if matched.is_empty() {
        return Ok(Vec::new());
    }
    // (updated_at, id, title, key) of the matched conversations, newest first, as needed.
    let mut candidates: Vec<(i64, String, String, i64)> = Vec::new();
    let mut hits = Vec::new();
    if matched.len() <= LOOKUP_CONVERSATIONS {
        let mut stmt = conn
            .prepare_cached(
                "SELECT updated_at, id, title FROM conversations
                 WHERE search_key = ?1 AND principal = ?2",
            )
            .db()?;
        for &key in matched.keys() {
            if let Some((updated_at, id, title)) = stmt
                .query_row(params![key, principal], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()
                .db()?
            {
                candidates.push((updated_at, id, title, key));
            }
        }
        candidates.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        for candidate in &candidates {
            if hits_in(conn, principal, query, candidate, &matched, &mut hits)? {
                break;
            }
        }
        return Ok(hits);
    }
    let mut stmt = conn
        .prepare_cached(
            "SELECT updated_at, id, title, search_key FROM conversations
             WHERE principal = ?1 ORDER BY updated_at DESC, id",
        )
        .db()?;
    let mut rows = stmt.query(params![principal]).db()?;
    while let Some(r) = rows.next().db()? {
        let key: Option<i64> = r.get(3).db()?;
        let Some(key) = key.filter(|k| matched.contains_key(k)) else {
            continue;
        };
        let candidate = (r.get(0).db()?, r.get(1).db()?, r.get(2).db()?, key);
        if hits_in(conn, principal, query, &candidate, &matched, &mut hits)? {
            break;
        }
    }
    Ok(hits)
}

/// Adds the hits among the matched messages of one conversation; whether `hits` is full.
fn hits_in(
    conn: &Connection,
    principal: &str,
    query: &crate::store::SearchQuery,
    (updated_at, id, title, key): &(i64, String, String, i64),
    matched: &std::collections::HashMap<i64, Vec<i64>>,
    hits: &mut Vec<lmchatkit_protocol::SearchHit>,
) -> Result<bool, HistoryError> {
    let mut seqs = matched.get(key).cloned().unwrap_or_default();
    seqs.sort_unstable();
    let mut stmt = conn
        .prepare_cached(
            "SELECT message_id, body FROM messages
             WHERE principal = ?1 AND conversation_id = ?2 AND seq = ?3",
        )
        .db()?;
    for seq in seqs {
        let Some((message_id, body)) = stmt
            .query_row(params![principal, id, seq], |r| {
                Ok((r.get::<_, Option<String>>(0)?, r.get::<_, String>(1)?))
            })
            .optional()
            .db()?
        else {
            continue;
        };
        let message = crate::store::rows::decode_message(&body)?;
        let Some(text) = crate::store::search::searchable_text(&message) else {
            continue;
        };
        if let Some(hit) =
            query.hit_in_text((id, title, *updated_at), seq as u64, message_id, &text)
        {
            hits.push(hit);
            if hits.len() == query.limit() {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// What a save moved, for tests and the store's counters.
#[derive(Default)]
pub(super) struct Counters {
    /// Message rows inserted plus deleted.
    pub written: AtomicU64,
    /// Stored message rows read to find the common prefix.
    pub read: AtomicU64,
    /// Transactions the writer committed (each holding one or more saves).
    pub groups: AtomicU64,
}

/// What one save did inside its group's transaction.
pub(super) enum Attempt {
    /// Written (to be committed): the revision, the generation stored, what the messages are
    /// now (for the cache) and the message rows inserted plus deleted.
    Saved {
        revision: u64,
        generation: i64,
        messages: Stored,
        changed: u64,
    },
    /// The base revision was stale; nothing written.
    Conflict(Box<StoredConversation>),
}

/// The messages a save left stored, for the cache of what was written.
pub(super) enum Stored {
    /// All of them.
    All(Vec<Message>),
    /// The first `kept` of those the cache held (`cached`: whether it held the generation the
    /// save replaced), then `added`.
    Kept {
        kept: usize,
        added: Vec<Message>,
        cached: bool,
    },
}

/// One save on `conn`, inside a transaction (or savepoint) the caller holds: revision check,
/// prefix write, row update with the totals of the saved messages and a fresh generation. The
/// common prefix comes from `written` when it holds the stored generation (nothing read, only
/// the new messages serialised), else from comparing the serialised messages with the stored
/// rows.
pub(super) fn save_in(
    conn: &Connection,
    read: &AtomicU64,
    written: &Written,
    principal: &str,
    mut c: StoredConversation,
) -> Result<Attempt, HistoryError> {
    if let Some(kept) = c.kept.take() {
        return save_kept_in(conn, read, written, principal, c, kept);
    }
    let now = now_ms();
    let params_json = serde_json::to_string(&c.params).map_err(storage)?;
    let allowed_json = serde_json::to_string(&c.allowed_tools).map_err(storage)?;
    let totals_json =
        serde_json::to_string(&ConversationTotals::of(&c.messages)).map_err(storage)?;
    // System messages are never stored.
    let mut messages = std::mem::take(&mut c.messages);
    messages.retain(|m| m.role != Role::System);
    let generation: i64 = rand::random();
    let current: Option<(i64, i64)> = conn
        .prepare_cached(
            "SELECT revision, generation FROM conversations WHERE principal = ?1 AND id = ?2",
        )
        .db()?
        .query_row(params![principal, c.id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .db()?;
    let (revision, changed) = match current {
        None => {
            // Absent: create (also for a base > 0, e.g. deleted elsewhere — nothing is lost).
            let created_at = if c.created_at > 0 { c.created_at } else { now };
            conn.prepare_cached(
                "INSERT INTO conversations
                 (principal, id, title, persona_id, model, params, created_at, updated_at, revision,
                  allowed_tools, totals, generation, search_key)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1, ?9, ?10, ?11,
                         (SELECT coalesce(max(search_key), 0) + 1 FROM conversations))",
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
                now,
                allowed_json,
                totals_json,
                generation
            ])
            .db()?;
            let rows = encode_indexed(&messages)?;
            (1, insert_rows(conn, principal, &c.id, 0, &rows)?)
        }
        Some((stored, _)) if c.revision == 0 || c.revision != stored as u64 => {
            let current = load(conn, principal, &c.id)?
                .ok_or_else(|| HistoryError::Storage("conversation vanished".into()))?;
            return Ok(Attempt::Conflict(Box::new(current)));
        }
        Some((stored, stored_generation)) => {
            let (keep, rows) = match written.get(principal, &c.id, stored_generation) {
                Some(before) => {
                    let keep = common_prefix(before, &messages);
                    (keep, encode_indexed(&messages[keep..])?)
                }
                None => {
                    let mut rows = encode_indexed(&messages)?;
                    let keep = stored_prefix(conn, principal, &c.id, &rows, read)?;
                    rows.drain(..keep);
                    (keep, rows)
                }
            };
            let deleted = conn
                .prepare_cached(
                    "DELETE FROM messages WHERE principal = ?1 AND conversation_id = ?2 AND seq >= ?3",
                )
                .db()?
                .execute(params![principal, c.id, keep as i64])
                .db()? as u64;
            let inserted = insert_rows(conn, principal, &c.id, keep, &rows)?;
            let revision = stored + 1;
            let json = [params_json, allowed_json, totals_json];
            update_row(conn, principal, &c, &json, now, revision, generation)?;
            (revision as u64, deleted + inserted)
        }
    };
    Ok(Attempt::Saved {
        revision,
        generation,
        messages: Stored::All(messages),
        changed,
    })
}

/// A save that keeps the first `kept` stored messages ([`StoredConversation::kept`]) and
/// replaces the rest with `c.messages`: it reads no message row when it keeps them all (the
/// totals grow by what the new messages add) and serialises only the new messages, so saving
/// one more turn costs the same at 100 messages as at 5,000. Keeping fewer reads the kept rows
/// once for their totals.
fn save_kept_in(
    conn: &Connection,
    read: &AtomicU64,
    written: &Written,
    principal: &str,
    mut c: StoredConversation,
    kept: u64,
) -> Result<Attempt, HistoryError> {
    let current: Option<(i64, i64, String, Option<i64>)> = conn
        .prepare_cached(
            "SELECT revision, generation, totals,
                    (SELECT max(seq) FROM messages WHERE principal = ?1 AND conversation_id = ?2)
             FROM conversations WHERE principal = ?1 AND id = ?2",
        )
        .db()?
        .query_row(params![principal, c.id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()
        .db()?;
    let Some((stored, stored_generation, totals, last_seq)) = current else {
        // Gone: keeping none is a whole save that creates it; keeping some cannot be done.
        return match kept {
            0 => save_in(conn, read, written, principal, c),
            _ => Ok(Attempt::Conflict(Box::new(gone(&c.id)))),
        };
    };
    let count = last_seq.map_or(0, |s| s + 1) as u64;
    if c.revision == 0 || c.revision != stored as u64 || kept > count {
        let current = load(conn, principal, &c.id)?
            .ok_or_else(|| HistoryError::Storage("conversation vanished".into()))?;
        return Ok(Attempt::Conflict(Box::new(current)));
    }
    let mut added = std::mem::take(&mut c.messages);
    added.retain(|m| m.role != Role::System);
    let before = if kept == count {
        serde_json::from_str::<ConversationTotals>(&totals).map_err(storage)?
    } else {
        ConversationTotals::of(&stored_rows_before(conn, principal, &c.id, kept, read)?)
    };
    let json = [
        serde_json::to_string(&c.params).map_err(storage)?,
        serde_json::to_string(&c.allowed_tools).map_err(storage)?,
        serde_json::to_string(&before.then(ConversationTotals::of(&added))).map_err(storage)?,
    ];
    let generation: i64 = rand::random();
    let deleted = conn
        .prepare_cached(
            "DELETE FROM messages WHERE principal = ?1 AND conversation_id = ?2 AND seq >= ?3",
        )
        .db()?
        .execute(params![principal, c.id, kept as i64])
        .db()? as u64;
    let rows = encode_indexed(&added)?;
    let inserted = insert_rows(conn, principal, &c.id, kept as usize, &rows)?;
    let revision = stored + 1;
    update_row(conn, principal, &c, &json, now_ms(), revision, generation)?;
    let cached = written.get(principal, &c.id, stored_generation).is_some();
    Ok(Attempt::Saved {
        revision: revision as u64,
        generation,
        messages: Stored::Kept {
            kept: kept as usize,
            added,
            cached,
        },
        changed: deleted + inserted,
    })
}

/// The first `n` stored messages (each row read is counted in `read`).
fn stored_rows_before(
    conn: &Connection,
    principal: &str,
    id: &str,
    n: u64,
    read: &AtomicU64,
) -> Result<Vec<Message>, HistoryError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT body FROM messages
             WHERE principal = ?1 AND conversation_id = ?2 AND seq < ?3 ORDER BY seq",
        )
        .db()?;
    let bodies = stmt
        .query_map(params![principal, id, n as i64], |r| r.get::<_, String>(0))
        .db()?
        .collect::<rusqlite::Result<Vec<_>>>()
        .db()?;
    read.fetch_add(bodies.len() as u64, Ordering::Relaxed);
    decode_rows(bodies.iter().map(String::as_str))
}

/// Writes a saved conversation's row: its settings from `c`, `json` (its params, allowed tools
/// and totals as JSON), the time, the new revision and the generation of its messages.
fn update_row(
    conn: &Connection,
    principal: &str,
    c: &StoredConversation,
    json: &[String; 3],
    now: i64,
    revision: i64,
    generation: i64,
) -> Result<(), HistoryError> {
    let [params_json, allowed_json, totals_json] = json;
    conn.prepare_cached(
        "UPDATE conversations
         SET title = ?3, persona_id = ?4, model = ?5, params = ?6, updated_at = ?7,
             revision = ?8, allowed_tools = ?9, totals = ?10, generation = ?11
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
        revision,
        allowed_json,
        totals_json,
        generation
    ])
    .db()?;
    Ok(())
}
