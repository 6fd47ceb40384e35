//! Durability of the `lmchatkit` binary's SQLite history: the process is killed (SIGKILL) in the
//! middle of concurrent saves, restarted on the same file, and every save it acknowledged with a
//! 2xx must be there with its content.
//!
//! What this proves and what it cannot: a killed process loses nothing SQLite has committed,
//! whatever the `synchronous` mode (the WAL is in the OS page cache, which outlives the
//! process), so this guards the save path (no acknowledgement before the commit, recovery at
//! open). Power loss, which only `synchronous=FULL` covers, cannot be tested here. Run with
//! `--nocapture` to see the figures per round.

use crate::support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{App, http_client, start};

/// Rounds of start, save, kill.
const ROUNDS: usize = 5;
/// Concurrent saving tasks per round.
const WRITERS: usize = 8;

/// The text a save carries, so a found conversation can be checked against what was sent.
fn text(id: &str) -> String {
    format!("saved as {id}: {}", "some reply text ".repeat(16))
}

/// Saves new conversations one after another until a save fails (the process is gone);
/// acknowledged ids go into `acked`.
async fn writer(
    client: reqwest::Client,
    url: String,
    round: usize,
    task: usize,
    acked: Arc<Mutex<Vec<String>>>,
) {
    for n in 0.. {
        let id = format!("r{round}-t{task}-s{n}");
        let body = json!({
            "id": id, "title": id, "revision": 0,
            "messages": [
                {"id": "u", "role": "user", "content": format!("question {id}")},
                {"id": "a", "role": "assistant", "content": text(&id)},
            ],
        });
        let sent = client
            .put(format!("{url}/api/conversations/{id}"))
            .json(&body)
            .send()
            .await;
        match sent {
            Ok(res) if res.status().is_success() => acked.lock().unwrap().push(id),
            Ok(res) => panic!("{id}: {} before the kill", res.status()),
            Err(_) => return, // killed
        }
    }
}

/// A delay between 150 and 650 ms that differs from round to round and run to run.
fn kill_delay(round: usize) -> Duration {
    let nanos = std::time::SystemTime::UNIX_EPOCH
        .elapsed()
        .map_or(0, |d| d.subsec_nanos() as usize);
    Duration::from_millis(150 + ((nanos / 1000 + round * 97) % 500) as u64)
}

/// GETs JSON through the shared client (a new client per request costs more than the request).
async fn fetch(client: &reqwest::Client, url: &str) -> Value {
    let res = client.get(url).send().await.unwrap();
    assert_eq!(res.status(), 200, "{url}");
    res.json().await.unwrap()
}

fn start_on(db: &str) -> App {
    start(&["--db", db, "--no-demo-mcp"], &[])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_during_concurrent_saves_loses_no_acknowledged_save() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let db = db.to_str().unwrap();
    let mut app = start_on(db);
    let client = http_client();
    let mut figures = Vec::new();
    for round in 0..ROUNDS {
        let acked = Arc::new(Mutex::new(Vec::new()));
        let writers: Vec<_> = (0..WRITERS)
            .map(|task| {
                let (client, url) = (client.clone(), app.url.clone());
                tokio::spawn(writer(client, url, round, task, acked.clone()))
            })
            .collect();
        // The delay runs from the first acknowledged save, so the kill lands mid-stream
        // however slow the machine is.
        let waited = Instant::now();
        while acked.lock().unwrap().is_empty() {
            assert!(
                waited.elapsed() < Duration::from_secs(30),
                "round {round}: no save answered"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let delay = kill_delay(round);
        tokio::time::sleep(delay).await;
        app.child.kill().unwrap(); // SIGKILL
        app.child.wait().unwrap();
        let killed_at = Instant::now();
        for w in writers {
            w.await.unwrap();
        }
        let acked = acked.lock().unwrap().clone();

        app = start_on(db);
        let restart = killed_at.elapsed();
        let listed: BTreeMap<String, Value> =
            fetch(&client, &format!("{}/api/conversations", app.url))
                .await
                .as_array()
                .unwrap()
                .iter()
                .map(|c| (c["id"].as_str().unwrap().to_owned(), c.clone()))
                .collect();
        let mut found = 0;
        for id in &acked {
            let got = fetch(&client, &format!("{}/api/conversations/{id}", app.url)).await;
            assert_eq!(got["revision"], 1, "{id}: {got}");
            assert_eq!(got["messages"][1]["content"], text(id), "{id}: {got}");
            found += usize::from(listed.contains_key(id));
        }
        assert_eq!(
            found,
            acked.len(),
            "round {round}: listed {found} of the acknowledged"
        );
        let in_round = listed
            .keys()
            .filter(|id| id.starts_with(&format!("r{round}-")))
            .count();
        figures.push(format!(
            "round {round}: killed {delay:?} after the first answer; {} saves acknowledged, {found} found after \
             the restart ({} more committed but unanswered); restarted in {restart:.0?}",
            acked.len(),
            in_round - acked.len(),
        ));
    }
    println!("{}", figures.join("\n"));
}
