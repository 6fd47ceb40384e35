//! History cost: with the SQLite store on a file, the time to save one more turn (the `PUT`
//! after a reply: the full conversation goes in, only the new turn is written) and to load a
//! conversation, at 10, 100, 1,000 and 5,000 messages. Flat per-message load cost is the target.
//!
//! Durability cost ([`sync_cost`]): saves of a new two-message conversation, one after another,
//! with `synchronous=FULL` (the default: every commit syncs the WAL) and `NORMAL` (synced at
//! checkpoints), each on its own file in the same directory, timed in alternating chunks so
//! both modes see the same machine load.

use std::path::Path;
use std::time::Instant;

use lmchatkit::Principal;
use lmchatkit::history::{HistoryStore, SaveOutcome, SqliteOptions, SqliteStore, Synchronous};
use lmchatkit::protocol::{Message, Role, StoredConversation};
use serde::Serialize;

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
    /// Median time to save it with one more turn (2 messages) appended, ms.
    pub save_turn_ms: f64,
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
        let mut saves = Vec::new();
        for _ in 0..repeats {
            let next = conv.messages.len();
            conv.messages.push(message(next));
            conv.messages.push(message(next + 1));
            // The copy handed to the store is the caller's, made before the clock starts.
            let copy = conv.clone();
            let t = Instant::now();
            conv.revision = save(&store, &who, copy).await?;
            saves.push(t.elapsed().as_secs_f64() * 1e3);
            // Keep the size at n for the next save.
            conv.messages.truncate(n);
            conv.revision = save(&store, &who, conv.clone()).await?;
        }
        let load_ms = median(&loads);
        out.push(HistoryPoint {
            messages: n,
            load_ms,
            load_us_per_message: load_ms * 1e3 / n.max(1) as f64,
            save_turn_ms: median(&saves),
            repeats,
        });
    }
    Ok(out)
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
