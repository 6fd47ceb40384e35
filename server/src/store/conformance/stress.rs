//! Stress parts of the conformance suite: concurrent saves and a long conversation.

use std::sync::Arc;

use lmchatkit_protocol::{ConversationTotals, Message};

use super::{conv, get, msg, reply, saved};
use crate::host::Principal;
use crate::store::{HistoryStore, SaveOutcome};

/// Concurrent saves: 16 tasks appending to their own conversations (two principals), then
/// rounds of saves racing from one base revision on a single conversation, where exactly one
/// wins and the others get a [`SaveOutcome::Conflict`] with the winner's copy, and two racing
/// creates of one new id. Spawns tokio tasks: run it on a multi-threaded runtime for real races.
/// `store` must be empty.
pub async fn concurrency(store: Arc<dyn HistoryStore>) {
    // Different conversations, two principals, each task appending sequentially.
    let mut tasks = Vec::new();
    for t in 0..16 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let p = Principal::new(format!("user-{}", t % 2));
            let id = format!("conc-{t}");
            let mut msgs = Vec::new();
            let mut rev = 0;
            for i in 0..10 {
                msgs.push(msg(
                    "user",
                    &format!("m{i}"),
                    &format!("task {t} message {i}"),
                ));
                rev = saved(&*store, &p, conv(&id, rev, msgs.clone())).await;
            }
            assert_eq!(rev, 10);
            let got = get(&*store, &p, &id).await;
            assert_eq!(got.messages, msgs);
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    for u in 0..2 {
        let p = Principal::new(format!("user-{u}"));
        assert_eq!(store.list(&p).await.expect("list").len(), 8);
    }

    // Races on one conversation: every round, N saves from the same base; exactly one wins.
    let p = Principal::new("racer");
    let id = "race";
    let mut base = saved(&*store, &p, conv(id, 0, vec![msg("user", "0", "start")])).await;
    for round in 0..20 {
        let racers = if round % 2 == 0 { 2 } else { 6 };
        let current = get(&*store, &p, id).await;
        let mut handles = Vec::new();
        for r in 0..racers {
            let store = store.clone();
            let p = p.clone();
            let mut msgs = current.messages.clone();
            // Each racer's reply costs something else, so a total from the wrong save shows.
            let cost = (r % 3 != 0).then_some(r as f64 + 0.5);
            msgs.push(reply(
                &format!("r{round}-{r}"),
                10 * (r as u64 + 1),
                r as u64 + 1,
                cost,
            ));
            handles.push(tokio::spawn(async move {
                let c = conv(id, base, msgs.clone());
                (store.save(&p, c).await.expect("save"), msgs)
            }));
        }
        let mut winners = Vec::new();
        for h in handles {
            match h.await.expect("task") {
                (SaveOutcome::Saved { revision }, msgs) => {
                    assert_eq!(revision, base + 1);
                    winners.push(msgs);
                }
                (SaveOutcome::Conflict(cur), _) => assert_eq!(cur.revision, base + 1),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: exactly one save wins");
        base += 1;
        let got = get(&*store, &p, id).await;
        assert_eq!(got.revision, base);
        assert_eq!(got.messages, winners[0]);
        let expected = ConversationTotals::of(&winners[0]);
        assert_eq!(got.totals, expected, "round {round}: the winner's totals");
        let listed = store.list(&p).await.expect("list");
        let listed = listed.iter().find(|s| s.id == id).expect("listed");
        assert_eq!(listed.totals, expected, "round {round}: the list's totals");
    }

    // Two racing creates (base 0) of a new id: one creates, the other conflicts.
    let (a, b) = tokio::join!(
        store.save(&p, conv("race-new", 0, vec![msg("user", "a", "a")])),
        store.save(&p, conv("race-new", 0, vec![msg("user", "b", "b")])),
    );
    let outcomes = [a.expect("save"), b.expect("save")];
    let wins = outcomes
        .iter()
        .filter(|o| matches!(o, SaveOutcome::Saved { revision: 1 }))
        .count();
    assert_eq!(wins, 1);
}

/// A 5,000-message conversation saves, loads back exactly and takes a one-message append.
/// `store` must be empty.
pub async fn large_conversation(store: &dyn HistoryStore) {
    let p = Principal::new("big");
    let mut msgs: Vec<Message> = (0..5000)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            msg(
                role,
                &format!("m{i}"),
                &format!("message number {i} {}", "lorem ipsum ".repeat(8)),
            )
        })
        .collect();
    let rev = saved(store, &p, conv("c-big", 0, msgs.clone())).await;
    let got = get(store, &p, "c-big").await;
    assert_eq!(got.messages.len(), 5000);
    assert_eq!(got.messages, msgs);
    msgs.push(msg("user", "m5000", "one more"));
    let rev = saved(store, &p, conv("c-big", rev, msgs.clone())).await;
    assert_eq!(rev, 2);
    let got = get(store, &p, "c-big").await;
    assert_eq!(got.messages.len(), 5001);
    assert_eq!(got.messages.last(), msgs.last());
    assert_eq!(store.list(&p).await.expect("list")[0].revision, 2);
}
