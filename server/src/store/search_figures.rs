//! The search figures the chat-depth issue asks for, for any store (run by an ignored test of
//! the SQLite and of the PostgreSQL store): 10,000 conversations of 50 messages (30 words each,
//! from a 5,000-word vocabulary where a few words are common), then 200 searches of one or two
//! words, by kind; and what the index adds to a save: 500 saves of a 50-message conversation
//! whose messages are searched (user and assistant text) against 500 of the same text as tool
//! results, which are not indexed, and the same for a turn (two messages onto 50). A
//! measurement, not a check: it asserts only that searches find something.

use std::time::Instant;

use lmchatkit_protocol::Message;

use crate::host::Principal;
use crate::store::HistoryStore;
use crate::store::conformance::{conv, saved};

/// Prints the figures of `store` (named `name` in the output); `loaded` runs once the
/// conversations are stored (PostgreSQL's `ANALYZE`, as autovacuum would run it).
pub(crate) async fn run(store: &dyn HistoryStore, name: &str, loaded: impl AsyncFnOnce()) {
    let p = Principal::new("bench");
    // A small linear congruential generator: the same text every run.
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        seed >> 33
    };
    let mut word = move || {
        // One word in four from the 50 common ones.
        let n = next();
        if n % 4 == 0 {
            format!("common{}", n / 4 % 50)
        } else {
            format!("word{}", n % 5_000)
        }
    };
    let mut text = move || (0..30).map(|_| word()).collect::<Vec<_>>().join(" ");
    let mut conversation = |id: String, tool: bool| {
        let messages = (0..50)
            .map(|i| {
                let m = if tool {
                    Message::tool(format!("c{i}"), "srv__t", text())
                } else if i % 2 == 0 {
                    Message::user(text())
                } else {
                    Message::assistant(text())
                };
                m.with_id(format!("m{i}"))
            })
            .collect();
        conv(&id, 0, messages)
    };
    let started = Instant::now();
    for c in 0..10_000 {
        saved(store, &p, conversation(format!("c{c}"), false)).await;
    }
    println!(
        "search figures ({name}): 10,000 conversations of 50 messages saved in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    loaded().await;

    let mut times = Vec::new();
    let mut by_kind: [Vec<f64>; 4] = Default::default();
    let mut found = 0;
    for q in 0..200 {
        let query = match q % 4 {
            0 => "common7".to_owned(),
            1 => format!("word{}", q * 37 % 5_000),
            2 => format!("word{} common{}", q * 53 % 5_000, q % 50),
            _ => format!("word{}", q * 11 % 500),
        };
        let query = crate::store::SearchQuery::parse(&query, None).unwrap();
        let t = Instant::now();
        found += store.search(&p, &query).await.unwrap().len();
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        times.push(ms);
        by_kind[q % 4].push(ms);
    }
    times.sort_by(f64::total_cmp);
    assert!(found > 0, "the searches found nothing");
    println!(
        "search figures ({name}): 200 searches: p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms",
        times[100], times[190], times[199]
    );
    let kinds = [
        "a word in 14% of messages",
        "a rare word",
        "a rare and a common word",
        "a prefix of 11 to 1,111 words",
    ];
    for (kind, mut t) in kinds.into_iter().zip(by_kind) {
        t.sort_by(f64::total_cmp);
        println!(
            "search figures ({name}):   {kind}: p50 {:.2} ms, p95 {:.2} ms",
            t[t.len() / 2],
            t[t.len() * 95 / 100]
        );
    }

    let mut cost = |tool: bool, from: usize| {
        let batch: Vec<_> = (0..500)
            .map(|c| conversation(format!("s{}", from + c), tool))
            .collect();
        let p = &p;
        async move {
            let t = Instant::now();
            for c in batch {
                saved(store, p, c).await;
            }
            t.elapsed().as_secs_f64() * 1000.0 / 500.0
        }
    };
    let without = cost(true, 0).await;
    let with = cost(false, 500).await;
    println!(
        "search figures ({name}): a 50-message save: {with:.3} ms indexed, {without:.3} ms not ({:.2}x)",
        with / without
    );
    // A turn: two messages added to a stored conversation of 50 (the save a chat makes most).
    let mut turn = |tool: bool, from: usize| {
        let p = &p;
        let mut extra = (0..1_000).map(|_| text()).collect::<Vec<_>>();
        async move {
            let mut total = 0.0;
            for c in 0..500 {
                let id = format!("s{}", from + c);
                let mut stored = store.get(p, &id).await.unwrap().unwrap();
                for (i, t) in [extra.pop().unwrap(), extra.pop().unwrap()]
                    .into_iter()
                    .enumerate()
                {
                    let m = if tool {
                        Message::tool(format!("x{i}"), "srv__t", t)
                    } else if i == 0 {
                        Message::user(t)
                    } else {
                        Message::assistant(t)
                    };
                    stored.messages.push(m.with_id(format!("x{i}")));
                }
                let t = Instant::now();
                saved(store, p, stored).await;
                total += t.elapsed().as_secs_f64() * 1000.0;
            }
            total / 500.0
        }
    };
    let without = turn(true, 0).await;
    let with = turn(false, 500).await;
    println!(
        "search figures ({name}): a turn's save (2 messages onto 50): {with:.3} ms indexed, {without:.3} ms not ({:.2}x)",
        with / without
    );
}
