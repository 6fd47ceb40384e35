//! History cost: with the SQLite store on a file, the time to save one more turn and to load a
//! conversation (whole, and its last 64 messages as the service's save of a reply reads it), at
//! 10, 100, 1,000 and 5,000 messages. A turn is saved two ways: as the UI saves
//! it (the `PUT` after a reply keeps the stored messages, `kept`, and carries only the turn) and
//! whole (the full conversation goes in, the store finds what is new; direct callers and older
//! clients). Flat per-message load cost and a flat kept save are the targets.
//!
//! The same turn also goes through the service as a `PUT` (in-process, `tower::oneshot`, its
//! own SQLite file): the body the client sends is serialised before the clock starts; reading
//! and parsing it, the save and the answer are timed, so the whole-save column shows what
//! carrying the conversation in every `PUT` costs.
//!
//! Durability cost ([`sync_cost`]): saves of a new two-message conversation, one after another,
//! with `synchronous=FULL` (the default: every commit syncs the WAL) and `NORMAL` (synced at
//! checkpoints), each on its own file in the same directory, timed in alternating chunks so
//! both modes see the same machine load.

use std::path::Path;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::protocol::{Message, Role, SaveResponse, StoredConversation};
use lmchatkit::store::{HistoryStore, SaveOutcome, SqliteOptions, SqliteStore, Synchronous};
use lmchatkit::{ChatService, Config, Principal};
use serde::Serialize;
use tower::ServiceExt;

use super::stats::{Summary, median};

/// Measurements for one conversation size.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryPoint {
    /// Messages in the conversation.
    pub messages: usize,
    /// Median time to load it, ms.
    pub load_ms: f64,
    /// `load_ms` per message, µs.
    pub load_us_per_message: f64,
    /// Median time to load its last 64 messages (what the service's save of a reply reads), ms.
    pub tail_ms: f64,
    /// Median time to save one more turn (2 messages) as the UI does, keeping the stored
    /// messages and sending the turn only, ms.
    pub save_turn_ms: f64,
    /// Median time to save one more turn as a whole-conversation save, ms.
    pub save_turn_whole_ms: f64,
    /// Median time of the service's `PUT` of one more turn as the UI sends it (kept), ms.
    pub put_turn_ms: f64,
    /// Median time of the service's `PUT` of one more turn as a whole conversation, ms.
    pub put_turn_whole_ms: f64,
    /// Body size of that kept `PUT`, bytes.
    pub put_turn_bytes: usize,
    /// Body size of that whole `PUT`, bytes.
    pub put_turn_whole_bytes: usize,
    /// Loads and saves timed.
    pub repeats: usize,
}

fn message(i: usize) -> Message {
    let role = if i.is_multiple_of(2) {
        Role::User
    } else {
        Role::Assistant
    };
    // About the size of a short chat turn.
    let text = format!("message {i}: {}", "lorem ipsum dolor sit amet ".repeat(8));
    let mut m = Message::new(role, text);
    m.id = Some(format!("m{i}"));
    m.created_at = Some(1_700_000_000_000 + i as i64);
    m
}

/// Runs the history measurements on a fresh database at `db`, `repeats` times per point (at
/// least 3).
pub async fn run(db: &Path, sizes: &[usize], repeats: usize) -> Result<Vec<HistoryPoint>, String> {
    let _ = std::fs::remove_file(db);
    let store = SqliteStore::open(db).map_err(|e| e.to_string())?;
    let http_db = db.with_extension("http.db");
    remove_db(&http_db);
    let svc = service(&http_db)?;
    let who = Principal::anonymous();
    let mut out = Vec::new();
    for &n in sizes {
        let id = format!("history-{n}");
        let mut conv = StoredConversation {
            id: id.clone(),
            title: format!("{n} messages"),
            model: "mock-small".into(),
            messages: (0..n).map(message).collect(),
            ..Default::default()
        };
        conv.revision = save(&store, &who, conv.clone()).await?;
        let repeats = repeats.max(3);
        let mut loads = Vec::new();
        for _ in 0..repeats {
            let t = Instant::now();
            let got = store.get(&who, &id).await.map_err(|e| e.to_string())?;
            loads.push(t.elapsed().as_secs_f64() * 1e3);
            let got = got.ok_or("conversation vanished")?;
            if got.messages.len() != conv.messages.len() {
                return Err(format!("loaded {} of {n} messages", got.messages.len()));
            }
        }
        let (mut kept_saves, mut whole_saves) = (Vec::new(), Vec::new());
        for _ in 0..repeats {
            let turn = vec![message(n), message(n + 1)];
            // The copies handed to the store are the caller's, made before the clock starts.
            let kept = StoredConversation {
                messages: turn.clone(),
                kept: Some(n as u64),
                ..header(&conv)
            };
            let t = Instant::now();
            conv.revision = save(&store, &who, kept).await?;
            kept_saves.push(t.elapsed().as_secs_f64() * 1e3);
            conv.revision = save(&store, &who, back_to(&conv, n)).await?;

            conv.messages.extend(turn);
            let whole = conv.clone();
            let t = Instant::now();
            conv.revision = save(&store, &who, whole).await?;
            whole_saves.push(t.elapsed().as_secs_f64() * 1e3);
            conv.messages.truncate(n);
            conv.revision = save(&store, &who, back_to(&conv, n)).await?;
        }
        let mut tails = Vec::new();
        for _ in 0..repeats {
            let t = Instant::now();
            let got = store.get_tail(&who, &id, 64).await;
            tails.push(t.elapsed().as_secs_f64() * 1e3);
            let (got, _) = got
                .map_err(|e| e.to_string())?
                .ok_or("conversation vanished")?;
            if got.messages.len() != n.min(64) {
                return Err(format!("the tail held {} messages", got.messages.len()));
            }
        }
        let puts = put_turns(&svc, &conv, repeats).await?;
        let load_ms = median(&loads);
        out.push(HistoryPoint {
            messages: n,
            load_ms,
            load_us_per_message: load_ms * 1e3 / n.max(1) as f64,
            tail_ms: median(&tails),
            save_turn_ms: median(&kept_saves),
            save_turn_whole_ms: median(&whole_saves),
            put_turn_ms: puts.kept_ms,
            put_turn_whole_ms: puts.whole_ms,
            put_turn_bytes: puts.kept_bytes,
            put_turn_whole_bytes: puts.whole_bytes,
            repeats,
        });
    }
    drop(svc);
    remove_db(&http_db);
    Ok(out)
}

/// The service the `PUT`s go to: SQLite history on `db`, an upstream nothing listens on (no
/// turn runs).
fn service(db: &Path) -> Result<ChatService, String> {
    let upstream = OpenAiConfig::new("http://127.0.0.1:9").with_api_key("sk-bench");
    let store = SqliteStore::open(db).map_err(|e| e.to_string())?;
    let config = Config::builder(OpenAiBackend::new(upstream))
        .history(store)
        .build()
        .map_err(|e| e.to_string())?;
    Ok(ChatService::new(config))
}

/// Medians and body sizes of the `PUT`s of one more turn.
struct Puts {
    kept_ms: f64,
    whole_ms: f64,
    kept_bytes: usize,
    whole_bytes: usize,
}

/// Stores `conv` through `svc`, then times `repeats` `PUT`s of one more turn each way, putting
/// the conversation back to its size after each.
async fn put_turns(
    svc: &ChatService,
    conv: &StoredConversation,
    repeats: usize,
) -> Result<Puts, String> {
    let n = conv.messages.len();
    let mut c = StoredConversation {
        revision: 0,
        ..conv.clone()
    };
    c.revision = put(svc, &c).await?.0;
    let (mut kept, mut whole) = (Vec::new(), Vec::new());
    let (mut kept_bytes, mut whole_bytes) = (0, 0);
    for _ in 0..repeats {
        let turn = vec![message(n), message(n + 1)];
        let body = StoredConversation {
            messages: turn.clone(),
            kept: Some(n as u64),
            ..header(&c)
        };
        let (revision, ms, bytes) = put(svc, &body).await?;
        (c.revision, kept_bytes) = (revision, bytes);
        kept.push(ms);
        c.revision = put(svc, &back_to(&c, n)).await?.0;

        c.messages.extend(turn);
        let (revision, ms, bytes) = put(svc, &c).await?;
        (c.revision, whole_bytes) = (revision, bytes);
        whole.push(ms);
        c.messages.truncate(n);
        c.revision = put(svc, &back_to(&c, n)).await?.0;
    }
    Ok(Puts {
        kept_ms: median(&kept),
        whole_ms: median(&whole),
        kept_bytes,
        whole_bytes,
    })
}

/// `PUT`s `c` through `svc`: the new revision, the time from the request to the parsed answer
/// (ms) and the body's size.
async fn put(svc: &ChatService, c: &StoredConversation) -> Result<(u64, f64, usize), String> {
    let body = serde_json::to_vec(c).map_err(|e| e.to_string())?;
    let size = body.len();
    let req = http::Request::put(format!("/chat/api/conversations/{}", c.id))
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let t = Instant::now();
    let res = svc.clone().oneshot(req).await.map_err(|e| e.to_string())?;
    let status = res.status();
    let bytes = res
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    let ms = t.elapsed().as_secs_f64() * 1e3;
    if status != http::StatusCode::OK {
        return Err(format!(
            "PUT answered {status}: {}",
            String::from_utf8_lossy(&bytes)
        ));
    }
    let saved: SaveResponse = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    Ok((saved.revision, ms, size))
}

/// `conv`'s settings and revision, without messages.
fn header(conv: &StoredConversation) -> StoredConversation {
    StoredConversation {
        id: conv.id.clone(),
        title: conv.title.clone(),
        model: conv.model.clone(),
        revision: conv.revision,
        ..Default::default()
    }
}

/// A save that keeps the first `n` stored messages and drops the rest.
fn back_to(conv: &StoredConversation, n: usize) -> StoredConversation {
    StoredConversation {
        kept: Some(n as u64),
        ..header(conv)
    }
}

async fn save(
    store: &SqliteStore,
    who: &Principal,
    conv: StoredConversation,
) -> Result<u64, String> {
    match store.save(who, conv).await.map_err(|e| e.to_string())? {
        SaveOutcome::Saved { revision } => Ok(revision),
        SaveOutcome::Conflict(_) => Err("unexpected conflict".into()),
    }
}

/// Save costs under one `synchronous` mode.
#[derive(Debug, Clone, Serialize)]
pub struct SyncPoint {
    /// `full` or `normal`.
    pub synchronous: String,
    /// Saves timed.
    pub saves: usize,
    /// Saves per second, one after another (saves / their summed time).
    pub saves_per_s: f64,
    /// Time of one save, ms.
    pub save_ms: Summary,
}

/// Chunks the saves of each mode are split into, alternating between the modes.
const SYNC_CHUNKS: usize = 4;

/// Times `saves` saves (at least [`SYNC_CHUNKS`]) per `synchronous` mode, on fresh files in
/// `dir`: FULL first, then NORMAL.
pub async fn sync_cost(dir: &Path, saves: usize) -> Result<Vec<SyncPoint>, String> {
    let who = Principal::anonymous();
    let per_chunk = saves.div_ceil(SYNC_CHUNKS).max(1);
    let mut modes = Vec::new();
    for mode in Synchronous::ALL {
        let db = dir.join(format!("lmchatkit-sync-{}-{mode}.db", std::process::id()));
        remove_db(&db);
        let options = SqliteOptions::default().with_synchronous(mode);
        let store = SqliteStore::open_with(&db, options).map_err(|e| e.to_string())?;
        modes.push((mode, db, store, Vec::new()));
    }
    for chunk in 0..SYNC_CHUNKS {
        for (mode, _, store, times) in &mut modes {
            for i in 0..per_chunk {
                let conv = StoredConversation {
                    id: format!("sync-{chunk}-{i}"),
                    title: format!("{mode} save"),
                    model: "mock-small".into(),
                    messages: vec![message(0), message(1)],
                    ..Default::default()
                };
                let t = Instant::now();
                save(store, &who, conv).await?;
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    Ok(modes
        .into_iter()
        .map(|(mode, db, store, times)| {
            drop(store);
            remove_db(&db);
            let total_s = times.iter().sum::<f64>() / 1e3;
            SyncPoint {
                synchronous: mode.to_string(),
                saves: times.len(),
                saves_per_s: times.len() as f64 / total_s.max(f64::MIN_POSITIVE),
                save_ms: Summary::of(&times),
            }
        })
        .collect())
}

/// Removes a database file and its WAL and shared-memory files.
pub fn remove_db(db: &Path) {
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", db.display()));
    }
}
