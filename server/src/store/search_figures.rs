//! The search figures the chat-depth issue asks for, for any store (run by an ignored test of
//! the SQLite and of the PostgreSQL store): 10,000 conversations of 50 messages (30 words each,
//! from a 5,000-word vocabulary where a few words are common), then 200 searches of one or two
//! words, by kind; and what the index adds to a save: 1,000 saves of a 50-message conversation
//! whose messages are searched (user and assistant text) against 1,000 of the same text as tool
//! results, which are not indexed, taking turns, and the same for a turn (two messages onto
//! 50). A
//! measurement, not a check: it asserts only that searches find something.

use std::time::Instant;

use lmchatkit_protocol::Message;

use crate::host::Principal;
use crate::store::HistoryStore;
use crate::store::conformance::{conv, saved};

/// The mean cost of a save (ms) with the index and without, of a 50-message conversation and
/// of a turn.
pub(crate) struct SaveFigures {
    pub(crate) fifty: (f64, f64),
    pub(crate) turn: (f64, f64),
}

/// Prints the figures of `store` (named `name` in the output) and answers the save figures;
/// `loaded` runs once the conversations are stored (PostgreSQL's `ANALYZE`, as autovacuum would
/// run it), `settle` before each timed save (SQLite's writer ends what it was doing when idle:
/// saves in a chat come seconds apart, and a timed save should not wait for work the one
/// before it left).
pub(crate) async fn run(
    store: &dyn HistoryStore,
    name: &str,
    loaded: impl AsyncFnOnce(),
    settle: impl AsyncFn(),
) -> SaveFigures {
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

    // Saves with and without the index take turns (one of each per round), so a drift of the
    // machine or of the store (its log growing, a checkpoint) falls on both alike; the figure
    // is the mean of 1,000 of each.
    const SAVES: usize = 1_000;
    let mut with = 0.0;
    let mut without = 0.0;
    for c in 0..SAVES {
        for tool in [true, false] {
            let conv = conversation(format!("s{}{c}", if tool { "t" } else { "x" }), tool);
            settle().await;
            let t = Instant::now();
            saved(store, &p, conv).await;
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            if tool { without += ms } else { with += ms }
        }
    }
    println!(
        "search figures ({name}): a 50-message save: {:.3} ms indexed, {:.3} ms not ({:.2}x)",
        with / SAVES as f64,
        without / SAVES as f64,
        with / without
    );
    let fifty = (with / SAVES as f64, without / SAVES as f64);
    // A turn: two messages added to a stored conversation of 50 (the save a chat makes most),
    // onto the conversations saved above, again taking turns.
    let (mut with, mut without) = (0.0, 0.0);
    for c in 0..SAVES {
        for tool in [true, false] {
            let id = format!("s{}{c}", if tool { "t" } else { "x" });
            let mut stored = store.get(&p, &id).await.unwrap().unwrap();
            for i in 0..2 {
                let m = if tool {
                    Message::tool(format!("x{i}"), "srv__t", text())
                } else if i == 0 {
                    Message::user(text())
                } else {
                    Message::assistant(text())
                };
                stored.messages.push(m.with_id(format!("x{i}")));
            }
            settle().await;
            let t = Instant::now();
            saved(store, &p, stored).await;
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            if tool { without += ms } else { with += ms }
        }
    }
    println!(
        "search figures ({name}): a turn's save (2 messages onto 50): {:.3} ms indexed, {:.3} ms not ({:.2}x)",
        with / SAVES as f64,
        without / SAVES as f64,
        with / without
    );
    SaveFigures {
        fifty,
        turn: (with / SAVES as f64, without / SAVES as f64),
    }
}
