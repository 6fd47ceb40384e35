//! The blocking SQL behind each store operation; each runs on the blocking pool with the
//! store's connection.

use std::sync::atomic::{AtomicU64, Ordering};

use lmchatkit_protocol::{
    ConversationSummary, ConversationTotals, Params, Role, StoredConversation,
};
use rusqlite::{Connection, OptionalExtension, params};

use super::written::{Node, Written};
use crate::store::HistoryError;
use crate::store::rows::{
    MessageRow, decode_rows, encode_indexed, gone, now_ms, storage, stored_conversation,
};
use crate::store::tree::{self, Shape};

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

/// The whole conversation (its active path), or `None`.
pub(super) fn load(
    conn: &Connection,
    principal: &str,
    id: &str,
) -> Result<Option<StoredConversation>, HistoryError> {
    Ok(load_path(conn, principal, id, None)?.map(|(c, _)| c))
}

/// The conversation with the last `n` messages of its path only, and how many come before
/// them; `None` when absent. The path comes from the tree's index; only the last `n` bodies
/// are read.
pub(super) fn load_tail(
    conn: &Connection,
    principal: &str,
    id: &str,
    n: usize,
) -> Result<Option<(StoredConversation, u64)>, HistoryError> {
    load_path(conn, principal, id, Some(n))
}

/// The conversation with its path's messages (the last `tail` only, when given) and how many
/// come before them, or `None`.
fn load_path(
    conn: &Connection,
    principal: &str,
    id: &str,
    tail: Option<usize>,
) -> Result<Option<(StoredConversation, u64)>, HistoryError> {
    let row = conn
        .prepare_cached(&format!(
            "SELECT {SUMMARY_COLUMNS}, allowed_tools, leaf FROM conversations
             WHERE principal = ?1 AND id = ?2"
        ))
        .db()?
        .query_row(params![principal, id], |r| {
            Ok((
                summary_from_row(r)?,
                r.get::<_, String>(9)?,
                r.get::<_, Option<i64>>(10)?,
            ))
        })
        .optional()
        .db()?;
    let Some((row, allowed, leaf)) = row else {
        return Ok(None);
    };
    let s = with_params(row)?;
    let shape = shape(conn, principal, id)?;
    let path = shape.path(leaf.map(|l| l as u64));
    let from = tail.map_or(0, |n| path.len().saturating_sub(n));
    let bodies = path[from..]
        .iter()
        .map(|&node| Ok(message_row(conn, principal, id, node as i64)?.1))
        .collect::<Result<Vec<_>, HistoryError>>()?;
    let mut c = stored_conversation(s, &bodies, &allowed)?;
    c.branches = shape
        .branches(&path)
        .into_iter()
        .filter(|b| b.index >= from as u64)
        .map(|mut b| {
            b.index -= from as u64;
            b
        })
        .collect();
    Ok(Some((c, from as u64)))
}

/// The conversation's active leaf; `None` when the conversation is absent.
fn stored_leaf(
    conn: &Connection,
    principal: &str,
    id: &str,
) -> Result<Option<Option<i64>>, HistoryError> {
    conn.prepare_cached("SELECT leaf FROM conversations WHERE principal = ?1 AND id = ?2")
        .db()?
        .query_row(params![principal, id], |r| r.get(0))
        .optional()
        .db()
}

/// Every stored message of the conversation with its parent, and its leaf; `None` when
/// absent.
pub(super) fn load_tree(
    conn: &Connection,
    principal: &str,
    id: &str,
) -> Result<Option<lmchatkit_protocol::ConversationTree>, HistoryError> {
    let Some(leaf) = stored_leaf(conn, principal, id)? else {
        return Ok(None);
    };
    let rows = conn
        .prepare_cached(
            "SELECT seq, parent, body FROM messages
             WHERE principal = ?1 AND conversation_id = ?2 ORDER BY seq",
        )
        .db()?
        .query_map(params![principal, id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, Option<i64>>(1)?,
                r.get::<_, String>(2)?,
            ))
        })
        .db()?
        .collect::<rusqlite::Result<Vec<_>>>()
        .db()?;
    let nodes = rows
        .into_iter()
        .map(|(seq, parent, body)| {
            Ok(lmchatkit_protocol::TreeNode {
                node: seq as u64,
                parent: parent.map(|p| p as u64),
                message: crate::store::rows::decode_message(&body)?,
            })
        })
        .collect::<Result<Vec<_>, HistoryError>>()?;
    Ok(Some(lmchatkit_protocol::ConversationTree {
        nodes,
        leaf: leaf.map(|l| l as u64),
    }))
}

/// The shape of the conversation's tree, from the tree's index (no body read).
fn shape(conn: &Connection, principal: &str, id: &str) -> Result<Shape, HistoryError> {
    let nodes = conn
        .prepare_cached(
            "SELECT seq, parent FROM messages INDEXED BY messages_tree
             WHERE principal = ?1 AND conversation_id = ?2",
        )
        .db()?
        .query_map(params![principal, id], |r| {
            Ok((
                r.get::<_, i64>(0)? as u64,
                r.get::<_, Option<i64>>(1)?.map(|p| p as u64),
            ))
        })
        .db()?
        .collect::<rusqlite::Result<Vec<_>>>()
        .db()?;
    Ok(Shape::new(nodes))
}

/// The id and body of message `seq`.
fn message_row(
    conn: &Connection,
    principal: &str,
    id: &str,
    seq: i64,
) -> Result<(Option<String>, String), HistoryError> {
    conn.prepare_cached(
        "SELECT message_id, body FROM messages
         WHERE principal = ?1 AND conversation_id = ?2 AND seq = ?3",
    )
    .db()?
    .query_row(params![principal, id, seq], |r| Ok((r.get(0)?, r.get(1)?)))
    .db()
}

/// A stored message of the path: its node, id and body.
type PathRow = (i64, Option<String>, String);

/// The active path's messages, each with its node, id and body (each row read is counted in
/// `read`).
fn stored_path(
    conn: &Connection,
    principal: &str,
    id: &str,
    leaf: Option<i64>,
    read: &AtomicU64,
) -> Result<Vec<PathRow>, HistoryError> {
    shape(conn, principal, id)?
        .path(leaf.map(|l| l as u64))
        .into_iter()
        .map(|node| {
            read.fetch_add(1, Ordering::Relaxed);
            let (message_id, body) = message_row(conn, principal, id, node as i64)?;
            Ok((node as i64, message_id, body))
        })
        .collect()
}

/// The number of messages on the path ending at `leaf` (its depth plus one, from the tree's
/// index).
fn path_len(
    conn: &Connection,
    principal: &str,
    id: &str,
    leaf: Option<i64>,
) -> Result<u64, HistoryError> {
    let Some(leaf) = leaf else { return Ok(0) };
    let depth: i64 = conn
        .prepare_cached(
            "SELECT depth FROM messages INDEXED BY messages_tree
             WHERE principal = ?1 AND conversation_id = ?2 AND seq = ?3",
        )
        .db()?
        .query_row(params![principal, id, leaf], |r| r.get(0))
        .db()?;
    Ok(depth as u64 + 1)
}

/// The conversation's `search_key`, when any row to write has searchable text.
fn search_key_for(
    conn: &Connection,
    principal: &str,
    id: &str,
    rows: &[&MessageRow],
) -> Result<Option<i64>, HistoryError> {
    if !rows.iter().any(|r| r.text.is_some()) {
        return Ok(None);
    }
    Ok(conn
        .prepare_cached("SELECT search_key FROM conversations WHERE principal = ?1 AND id = ?2")
        .db()?
        .query_row(params![principal, id], |r| r.get(0))
        .optional()
        .db()?
        .flatten())
}

/// Replaces message `seq`'s id and body (an update in place: [`tree::plan`]), moving its
/// text in the full-text index.
fn update_message(
    conn: &Connection,
    principal: &str,
    id: &str,
    key: Option<i64>,
    seq: i64,
    row: &MessageRow,
) -> Result<(), HistoryError> {
    let old: Option<i64> = conn
        .prepare_cached(
            "SELECT search_id FROM messages
             WHERE principal = ?1 AND conversation_id = ?2 AND seq = ?3",
        )
        .db()?
        .query_row(params![principal, id, seq], |r| r.get(0))
        .db()?;
    if let Some(old) = old {
        unindex(conn, old)?;
    }
    let search_id = match (&row.text, key) {
        (Some(_), Some(key)) => queue_for_index(conn, key, seq)?,
        _ => None,
    };
    conn.prepare_cached(
        "UPDATE messages SET message_id = ?4, body = ?5, search_id = ?6
         WHERE principal = ?1 AND conversation_id = ?2 AND seq = ?3",
    )
    .db()?
    .execute(params![principal, id, seq, row.id, row.body, search_id])
    .db()?;
    Ok(())
}

/// Inserts `rows` as a chain of new messages below `parent`, numbered from `first`, the first
/// at position `depth`; their numbers (`seq`). Rows with searchable text are queued for the
/// full-text index ([`queue_for_index`]).
fn insert_rows(
    conn: &Connection,
    principal: &str,
    id: &str,
    (mut parent, first, depth): (Option<i64>, i64, usize),
    rows: &[MessageRow],
) -> Result<Vec<i64>, HistoryError> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let key = search_key_for(conn, principal, id, &rows.iter().collect::<Vec<_>>())?;
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO messages
             (principal, conversation_id, seq, message_id, body, search_id, parent, depth)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )
        .db()?;
    let mut seqs = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let seq = first + i as i64;
        let search_id = match (&row.text, key) {
            (Some(_), Some(key)) => queue_for_index(conn, key, seq)?,
            _ => None,
        };
        let at = (depth + i) as i64;
        stmt.execute(params![
            principal, id, seq, row.id, row.body, search_id, parent, at
        ])
        .db()?;
        parent = Some(seq);
        seqs.push(seq);
    }
    Ok(seqs)
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

/// Queues message `seq` of the conversation whose `search_key` is `key` for the full-text
/// index (`message_index_pending`, which search reads as well, moved into the index by
/// [`flush_index`], which reads the text from the message); its rowid there
/// ([`search_rowid`]), `None` when it cannot have one.
fn queue_for_index(conn: &Connection, key: i64, seq: i64) -> Result<Option<i64>, HistoryError> {
    let Some(rowid) = search_rowid(key, seq) else {
        return Ok(None);
    };
    conn.prepare_cached("INSERT INTO message_index_pending (id) VALUES (?1)")
        .db()?
        .execute(params![rowid])
        .db()?;
    Ok(Some(rowid))
}

/// The queued rows (lowest rowids first, at most `most`, of principal `?3` when not null) with
/// their messages' bodies: from the queue's rowid to the conversation (its `search_key`), then
/// the message by its key.
const QUEUED: &str = "SELECT p.id, m.body FROM message_index_pending p
     CROSS JOIN conversations c ON c.search_key = p.id >> ?1
     CROSS JOIN messages m ON m.principal = c.principal AND m.conversation_id = c.id
         AND m.seq = p.id & ?2
     WHERE ?3 IS NULL OR c.principal = ?3
     ORDER BY p.id LIMIT ?4";

/// Calls `each` with the rowid and searchable text of up to `most` queued rows (of `principal`
/// only, when given); the last rowid read.
fn queued(
    conn: &Connection,
    principal: Option<&str>,
    most: usize,
    mut each: impl FnMut(i64, &str) -> Result<(), HistoryError>,
) -> Result<Option<i64>, HistoryError> {
    let mut stmt = conn.prepare_cached(QUEUED).db()?;
    let mut rows = stmt
        .query(params![
            SEQ_BITS,
            (1_i64 << SEQ_BITS) - 1,
            principal,
            i64::try_from(most).unwrap_or(i64::MAX)
        ])
        .db()?;
    let mut last = None;
    while let Some(r) = rows.next().db()? {
        let rowid: i64 = r.get(0).db()?;
        last = Some(rowid);
        let body: String = r.get(1).db()?;
        let message = crate::store::rows::decode_message(&body)?;
        if let Some(text) = crate::store::search::searchable_text(&message) {
            each(rowid, &text)?;
        }
    }
    Ok(last)
}

/// Takes the text of full-text rowid `rowid` out of whichever table holds it (as the delete
/// trigger of `messages` does).
fn unindex(conn: &Connection, rowid: i64) -> Result<(), HistoryError> {
    let queued = conn
        .prepare_cached("DELETE FROM message_index_pending WHERE id = ?1")
        .db()?
        .execute(params![rowid])
        .db()?;
    if queued == 0 {
        conn.prepare_cached("DELETE FROM message_index WHERE rowid = ?1")
            .db()?
            .execute(params![rowid])
            .db()?;
    }
    Ok(())
}

/// How many rows wait for the full-text index.
pub(super) fn pending_count(conn: &Connection) -> Result<usize, HistoryError> {
    let n: i64 = conn
        .prepare_cached("SELECT count(*) FROM message_index_pending")
        .db()?
        .query_row([], |r| r.get(0))
        .db()?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Moves up to `most` waiting rows (lowest rowids first) into the full-text index, inside the
/// caller's transaction, reading each one's text from its message; how many it moved. One
/// FTS5 transaction of hundreds of rows costs about a tenth per row of what a save's two rows
/// cost it (schema migration 12).
pub(super) fn flush_index(conn: &Connection, most: usize) -> Result<usize, HistoryError> {
    let mut insert = conn
        .prepare_cached("INSERT INTO message_index (rowid, text) VALUES (?1, ?2)")
        .db()?;
    let mut moved = 0;
    let last = queued(conn, None, most, |rowid, text| {
        insert.execute(params![rowid, text]).db()?;
        moved += 1;
        Ok(())
    })?;
    if let Some(last) = last {
        conn.prepare_cached("DELETE FROM message_index_pending WHERE id <= ?1")
            .db()?
            .execute(params![last])
            .db()?;
    }
    Ok(moved)
}

/// Adds a message's searchable text to the full-text index itself (a migration's backfill, in
/// one transaction); its rowid there ([`search_rowid`]), `None` when it cannot have one.
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

/// The principal's messages matching `query`, conversations newest first, messages in order,
/// in two stages ([`NewestFirst`](crate::store::search::NewestFirst)), in one read transaction:
///
/// 1. The newest conversations are read whole and checked, up to a budget of messages: a
///    dense query fills its page here.
/// 2. Otherwise the index is asked for the query's rare terms only (the first stage says which),
///    and answers rowids only (no stored row is read for a match): each says which
///    conversation (`search_key`) and which message (`seq`) matched. The index is one for all
///    principals: another principal's matches are read as rowids and dropped, as their
///    conversations are never the caller's. The caller's rows still waiting for the index
///    (`message_index_pending`, at most a few hundred: see `group`) are checked in Rust and
///    join the matches. Then the conversations the first stage did not
///    read are taken newest first, and the matched messages of each are read and checked
///    ([`SearchQuery::hit_in_text`], which also checks the common terms and makes the snippet)
///    until `limit` hits.
///
/// Measured by the ignored test `search_figures_on_ten_thousand_conversations`.
pub(super) fn search(
    conn: &Connection,
    principal: &str,
    query: &crate::store::SearchQuery,
) -> Result<Vec<lmchatkit_protocol::SearchHit>, HistoryError> {
    let tx = conn.unchecked_transaction().db()?;
    let mut first = crate::store::search::NewestFirst::new(query);
    let mut scanned_keys = std::collections::HashSet::new();
    {
        let mut conversations = tx
            .prepare_cached(
                "SELECT updated_at, id, title, search_key FROM conversations
                 WHERE principal = ?1 ORDER BY updated_at DESC, id",
            )
            .db()?;
        let mut messages = tx
            .prepare_cached(
                "SELECT seq, depth, message_id, body FROM messages
                 WHERE principal = ?1 AND conversation_id = ?2 AND search_id IS NOT NULL
                 ORDER BY seq",
            )
            .db()?;
        let mut rows = conversations.query(params![principal]).db()?;
        while first.wants_more() {
            let Some(r) = rows.next().db()? else { break };
            let (updated_at, id, title, key): (i64, String, String, Option<i64>) = (
                r.get(0).db()?,
                r.get(1).db()?,
                r.get(2).db()?,
                r.get(3).db()?,
            );
            let mut found = messages.query(params![principal, id]).db()?;
            while let Some(m) = found.next().db()? {
                let body: String = m.get(3).db()?;
                let message = crate::store::rows::decode_message(&body)?;
                let Some(text) = crate::store::search::searchable_text(&message) else {
                    continue;
                };
                let (seq, depth): (i64, i64) = (m.get(0).db()?, m.get(1).db()?);
                first.message(
                    (&id, &title, updated_at),
                    (seq as u64, depth as u64),
                    m.get(2).db()?,
                    &text,
                );
            }
            first.scanned_whole(&id);
            scanned_keys.extend(key);
        }
    }
    if first.is_full() {
        return Ok(first.into_hits());
    }
    let expression = crate::store::SearchQuery::fts5(&first.selective());
    let mut hits = first.into_hits();
    let mut matched: std::collections::HashMap<i64, Vec<i64>> = Default::default();
    // The caller's rows still waiting for the index (a few hundred at most): checked here.
    queued(&tx, Some(principal), usize::MAX, |rowid, text| {
        let key = rowid >> SEQ_BITS;
        if !scanned_keys.contains(&key) && query.matches(text) {
            matched
                .entry(key)
                .or_default()
                .push(rowid & ((1 << SEQ_BITS) - 1));
        }
        Ok(())
    })?;
    {
        let mut stmt = tx
            .prepare_cached("SELECT rowid FROM message_index WHERE message_index MATCH ?1")
            .db()?;
        let mut rows = stmt.query(params![expression]).db()?;
        while let Some(r) = rows.next().db()? {
            let rowid: i64 = r.get(0).db()?;
            let key = rowid >> SEQ_BITS;
            if !scanned_keys.contains(&key) {
                matched
                    .entry(key)
                    .or_default()
                    .push(rowid & ((1 << SEQ_BITS) - 1));
            }
        }
    }
    if matched.is_empty() {
        return Ok(hits);
    }
    // (updated_at, id, title, key) of the matched conversations, newest first, as needed.
    let mut candidates: Vec<(i64, String, String, i64)> = Vec::new();
    if matched.len() <= LOOKUP_CONVERSATIONS {
        let mut stmt = tx
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
            if hits_in(&tx, principal, query, candidate, &matched, &mut hits)? {
                break;
            }
        }
        return Ok(hits);
    }
    let mut stmt = tx
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
        if hits_in(&tx, principal, query, &candidate, &matched, &mut hits)? {
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
            "SELECT message_id, body, depth FROM messages
             WHERE principal = ?1 AND conversation_id = ?2 AND seq = ?3",
        )
        .db()?;
    for seq in seqs {
        let Some((message_id, body, depth)) = stmt
            .query_row(params![principal, id, seq], |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                ))
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
        if let Some(mut hit) =
            query.hit_in_text((id, title, *updated_at), depth as u64, message_id, &text)
        {
            hit.node = Some(seq as u64);
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
    /// Rows the writer moved into the full-text index, and the time it took (ns).
    pub flushed: AtomicU64,
    pub flush_nanos: AtomicU64,
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
    All(Vec<Node>),
    /// The first `kept` of those the cache held (`cached`: whether it held the generation the
    /// save replaced), then `added`.
    Kept {
        kept: usize,
        added: Vec<Node>,
        cached: bool,
    },
}

/// One save on `conn`, inside a transaction (or savepoint) the caller holds: revision check,
/// the tree's write ([`tree::plan`]: updates in place, new messages as new nodes, never a
/// delete), row update with the leaf, the totals of the saved path and a fresh generation. The
/// stored path comes from `written` when it holds the stored generation (nothing read, only
/// the messages written are serialised), else from the rows.
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
    // System messages are never stored.
    let mut messages = std::mem::take(&mut c.messages);
    messages.retain(|m| m.role != Role::System);
    let totals_json = serde_json::to_string(&ConversationTotals::of(&messages)).map_err(storage)?;
    let json = [params_json, allowed_json, totals_json];
    let generation: i64 = rand::random();
    let current: Option<(i64, i64, Option<i64>, i64)> = conn
        .prepare_cached(
            "SELECT revision, generation, leaf, next_seq FROM conversations
             WHERE principal = ?1 AND id = ?2",
        )
        .db()?
        .query_row(params![principal, c.id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()
        .db()?;
    let (revision, seqs, changed) = match current {
        None => {
            // Absent: create (also for a base > 0, e.g. deleted elsewhere — nothing is lost).
            let created_at = if c.created_at > 0 { c.created_at } else { now };
            let [params_json, allowed_json, totals_json] = &json;
            conn.prepare_cached(
                "INSERT INTO conversations
                 (principal, id, title, persona_id, model, params, created_at, updated_at, revision,
                  allowed_tools, totals, generation, search_key, leaf, next_seq)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1, ?9, ?10, ?11,
                         (SELECT coalesce(max(search_key), 0) + 1 FROM conversations),
                         nullif(?12, 0) - 1, ?12)",
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
                generation,
                // The next number; the leaf is the one before (none without messages): the
                // messages are numbered from 0.
                messages.len() as i64
            ])
            .db()?;
            let rows = encode_indexed(&messages)?;
            let seqs = insert_rows(conn, principal, &c.id, (None, 0, 0), &rows)?;
            let n = seqs.len() as u64;
            (1, seqs, n)
        }
        Some((stored, ..)) if c.revision == 0 || c.revision != stored as u64 => {
            let current = load(conn, principal, &c.id)?
                .ok_or_else(|| HistoryError::Storage("conversation vanished".into()))?;
            return Ok(Attempt::Conflict(Box::new(current)));
        }
        Some((stored, stored_generation, leaf, next)) => {
            let ids: Vec<Option<&str>> = messages.iter().map(|m| m.id.as_deref()).collect();
            let (plan, path, mut rows) = match written.get(principal, &c.id, stored_generation) {
                Some(before) => {
                    let nodes: Vec<(u64, Option<&str>)> = before
                        .iter()
                        .map(|(n, m)| (*n as u64, m.id.as_deref()))
                        .collect();
                    let plan = tree::plan(&nodes, None, &ids, |i| before[i].1 == messages[i]);
                    let path: Vec<i64> = before.iter().map(|(n, _)| *n).collect();
                    (plan, path, None)
                }
                None => {
                    let rows = encode_indexed(&messages)?;
                    let stored_rows = stored_path(conn, principal, &c.id, leaf, read)?;
                    let nodes: Vec<(u64, Option<&str>)> = stored_rows
                        .iter()
                        .map(|(n, id, _)| (*n as u64, id.as_deref()))
                        .collect();
                    let plan = tree::plan(&nodes, None, &ids, |i| stored_rows[i].2 == rows[i].body);
                    let path = stored_rows.iter().map(|(n, ..)| *n).collect();
                    (plan, path, Some(rows))
                }
            };
            // Serialised only now when the cache spared it: the messages written.
            let first_written = plan
                .updates
                .first()
                .map_or(plan.new_from, |(i, _)| *i)
                .min(plan.new_from);
            let rows = match rows.take() {
                Some(rows) => rows,
                None => {
                    let mut rows = vec![MessageRow::default(); first_written];
                    rows.extend(encode_indexed(&messages[first_written..])?);
                    rows
                }
            };
            let at = (0, next);
            let (seqs, leaf, next) = write_plan(conn, principal, &c.id, &plan, &path, at, &rows)?;
            let revision = stored + 1;
            update_row(
                conn,
                principal,
                &c,
                &json,
                now,
                (revision, generation, leaf, next),
            )?;
            let changed = (plan.updates.len() + rows.len() - plan.new_from) as u64;
            (revision as u64, seqs, changed)
        }
    };
    Ok(Attempt::Saved {
        revision,
        generation,
        messages: Stored::All(seqs.into_iter().zip(messages).collect()),
        changed,
    })
}

/// Carries out `plan` for `rows` (the messages sent for positions `from` on; `path` the
/// stored path's nodes from `from` on): updates in place, inserts the new ones. The nodes of
/// the sent messages, in order, and the new leaf.
fn write_plan(
    conn: &Connection,
    principal: &str,
    id: &str,
    plan: &tree::Plan,
    path: &[i64],
    (from, next): (usize, i64),
    rows: &[MessageRow],
) -> Result<(Vec<i64>, Option<i64>, i64), HistoryError> {
    if !plan.updates.is_empty() {
        let updated: Vec<&MessageRow> = plan.updates.iter().map(|(i, _)| &rows[*i]).collect();
        let key = search_key_for(conn, principal, id, &updated)?;
        for (i, node) in &plan.updates {
            update_message(conn, principal, id, key, *node as i64, &rows[*i])?;
        }
    }
    let parent = plan.parent.map(|p| p as i64);
    let added = insert_rows(
        conn,
        principal,
        id,
        (parent, next, from + plan.new_from),
        &rows[plan.new_from..],
    )?;
    let leaf = added.last().copied().or(parent);
    let next = next + added.len() as i64;
    let mut seqs = path[..plan.new_from].to_vec();
    seqs.extend(added);
    Ok((seqs, leaf, next))
}

/// A save that keeps the first `kept` messages of the stored path
/// ([`StoredConversation::kept`]) and sends what follows them: when it keeps the whole path
/// (one more turn) it reads no message and serialises only the new ones, so it costs the same
/// at 100 messages as at 5,000. Keeping fewer reads the path once (the kept messages for their
/// totals, the rest to compare).
fn save_kept_in(
    conn: &Connection,
    read: &AtomicU64,
    written: &Written,
    principal: &str,
    mut c: StoredConversation,
    kept: u64,
) -> Result<Attempt, HistoryError> {
    let current: Option<(i64, i64, String, Option<i64>, i64)> = conn
        .prepare_cached(
            "SELECT revision, generation, totals, leaf, next_seq
             FROM conversations WHERE principal = ?1 AND id = ?2",
        )
        .db()?
        .query_row(params![principal, c.id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .optional()
        .db()?;
    let Some((stored, stored_generation, totals, leaf, next)) = current else {
        // Gone: keeping none is a whole save that creates it; keeping some cannot be done.
        return match kept {
            0 => save_in(conn, read, written, principal, c),
            _ => Ok(Attempt::Conflict(Box::new(gone(&c.id)))),
        };
    };
    let count = path_len(conn, principal, &c.id, leaf)?;
    if c.revision == 0 || c.revision != stored as u64 || kept > count {
        let current = load(conn, principal, &c.id)?
            .ok_or_else(|| HistoryError::Storage("conversation vanished".into()))?;
        return Ok(Attempt::Conflict(Box::new(current)));
    }
    let mut added = std::mem::take(&mut c.messages);
    added.retain(|m| m.role != Role::System);
    let rows = encode_indexed(&added)?;
    let (before, stored_rows, parent) = if kept == count {
        let before = serde_json::from_str::<ConversationTotals>(&totals).map_err(storage)?;
        (before, Vec::new(), leaf)
    } else {
        let all = stored_path(conn, principal, &c.id, leaf, read)?;
        let kept_messages = decode_rows(all[..kept as usize].iter().map(|(_, _, b)| b.as_str()))?;
        let parent = (kept as usize).checked_sub(1).map(|i| all[i].0);
        let mut all = all;
        let rest = all.split_off(kept as usize);
        (ConversationTotals::of(&kept_messages), rest, parent)
    };
    let nodes: Vec<(u64, Option<&str>)> = stored_rows
        .iter()
        .map(|(n, id, _)| (*n as u64, id.as_deref()))
        .collect();
    let ids: Vec<Option<&str>> = rows.iter().map(|r| r.id.as_deref()).collect();
    let plan = tree::plan(&nodes, parent.map(|p| p as u64), &ids, |i| {
        stored_rows[i].2 == rows[i].body
    });
    let path: Vec<i64> = stored_rows.iter().map(|(n, ..)| *n).collect();
    let json = [
        serde_json::to_string(&c.params).map_err(storage)?,
        serde_json::to_string(&c.allowed_tools).map_err(storage)?,
        serde_json::to_string(&before.then(ConversationTotals::of(&added))).map_err(storage)?,
    ];
    let generation: i64 = rand::random();
    let at = (kept as usize, next);
    let (seqs, leaf, next) = write_plan(conn, principal, &c.id, &plan, &path, at, &rows)?;
    let changed = (plan.updates.len() + rows.len() - plan.new_from) as u64;
    let revision = stored + 1;
    update_row(
        conn,
        principal,
        &c,
        &json,
        now_ms(),
        (revision, generation, leaf, next),
    )?;
    let cached = written.get(principal, &c.id, stored_generation).is_some();
    Ok(Attempt::Saved {
        revision: revision as u64,
        generation,
        messages: Stored::Kept {
            kept: kept as usize,
            added: seqs.into_iter().zip(added).collect(),
            cached,
        },
        changed,
    })
}

/// Writes a saved conversation's row: its settings from `c`, `json` (its params, allowed tools
/// and totals as JSON), the time, and the new revision, the generation of its messages, its
/// leaf and the number of the next new message.
fn update_row(
    conn: &Connection,
    principal: &str,
    c: &StoredConversation,
    json: &[String; 3],
    now: i64,
    (revision, generation, leaf, next): (i64, i64, Option<i64>, i64),
) -> Result<(), HistoryError> {
    let [params_json, allowed_json, totals_json] = json;
    conn.prepare_cached(
        "UPDATE conversations
         SET title = ?3, persona_id = ?4, model = ?5, params = ?6, updated_at = ?7,
             revision = ?8, allowed_tools = ?9, totals = ?10, generation = ?11, leaf = ?12,
             next_seq = ?13
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
        generation,
        leaf,
        next
    ])
    .db()?;
    Ok(())
}

/// Makes the branch through `node` the active one, or deletes `node` with its descendants
/// (`delete`), in the caller's transaction: the leaf moves as [`tree`] says, the totals are
/// the new path's, the revision and the generation change. `None` when the conversation is
/// absent.
pub(super) fn branch_op(
    conn: &Connection,
    principal: &str,
    id: &str,
    node: u64,
    delete: bool,
) -> Result<Option<crate::store::BranchOutcome>, HistoryError> {
    use crate::store::BranchOutcome;
    let Some(leaf) = stored_leaf(conn, principal, id)? else {
        return Ok(None);
    };
    let shape = shape(conn, principal, id)?;
    if !shape.contains(node) {
        return Ok(Some(BranchOutcome::NoSuchNode));
    }
    let leaf = if delete {
        let mut stmt = conn
            .prepare_cached(
                "DELETE FROM messages WHERE principal = ?1 AND conversation_id = ?2 AND seq = ?3",
            )
            .db()?;
        for gone in shape.subtree(node) {
            stmt.execute(params![principal, id, gone as i64]).db()?;
        }
        shape.leaf_after_delete(node, leaf.map(|l| l as u64))
    } else {
        Some(shape.switch_leaf(node, leaf.map(|l| l as u64)))
    };
    let bodies = shape
        .path(leaf)
        .into_iter()
        .map(|n| Ok(message_row(conn, principal, id, n as i64)?.1))
        .collect::<Result<Vec<_>, HistoryError>>()?;
    let totals = ConversationTotals::of(&decode_rows(bodies.iter().map(String::as_str))?);
    let revision: i64 = conn
        .prepare_cached(
            "UPDATE conversations
             SET leaf = ?3, totals = ?4, revision = revision + 1, updated_at = ?5, generation = ?6
             WHERE principal = ?1 AND id = ?2
             RETURNING revision",
        )
        .db()?
        .query_row(
            params![
                principal,
                id,
                leaf.map(|l| l as i64),
                serde_json::to_string(&totals).map_err(storage)?,
                now_ms(),
                rand::random::<i64>()
            ],
            |r| r.get(0),
        )
        .db()?;
    Ok(Some(BranchOutcome::Done {
        revision: revision as u64,
    }))
}
