//! Full-text search ([`HistoryStore::search`]), as [`crate::store::search`] decides: the same
//! hits in the same order from every store.

use std::time::Duration;

use lmchatkit_protocol::{ConversationPatch, Message, SearchHit};

use super::{conv, get, msg, saved};
use crate::host::Principal;
use crate::store::{HistoryStore, SearchQuery};

async fn search(store: &dyn HistoryStore, p: &Principal, q: &str) -> Vec<SearchHit> {
    let query = SearchQuery::parse(q, None).expect("a valid query");
    store.search(p, &query).await.expect("search")
}

/// (conversation, message id, index) of each hit.
fn keys(hits: &[SearchHit]) -> Vec<(String, Option<String>, u64)> {
    hits.iter()
        .map(|h| (h.conversation_id.clone(), h.message_id.clone(), h.index))
        .collect()
}

fn key(c: &str, m: &str, i: u64) -> (String, Option<String>, u64) {
    (c.to_owned(), Some(m.to_owned()), i)
}

/// The matched words of a hit, as its ranges cut them out of its snippet.
fn matched(hit: &SearchHit) -> Vec<String> {
    let chars: Vec<char> = hit.snippet.chars().collect();
    hit.matches
        .iter()
        .map(|[s, e]| chars[*s as usize..*e as usize].iter().collect())
        .collect()
}

pub(super) async fn searching(store: &dyn HistoryStore) {
    let carol = Principal::new("search-carol");
    let dave = Principal::new("search-dave");
    assert!(search(store, &carol, "anything").await.is_empty());

    let tool = Message::tool("call_1", "srv__x", "async tool output").with_id("t1");
    saved(
        store,
        &carol,
        conv(
            "s1",
            0,
            vec![
                msg("user", "u1", "How do I write async Rust?"),
                msg(
                    "assistant",
                    "a1",
                    "Use Tokio, the async runtime. Größe matters.",
                ),
                tool,
            ],
        ),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    saved(
        store,
        &carol,
        conv(
            "s2",
            0,
            vec![
                msg("user", "u2", "Tell me about Python"),
                msg("assistant", "a2", "Python has ASYNC too: <b>asyncio</b>."),
            ],
        ),
    )
    .await;
    saved(
        store,
        &dave,
        conv(
            "s3",
            0,
            vec![msg("user", "u3", "dave's async python secrets")],
        ),
    )
    .await;

    // Newest conversation first, then by position; tool output is not searched.
    let hits = search(store, &carol, "async").await;
    assert_eq!(
        keys(&hits),
        [key("s2", "a2", 1), key("s1", "u1", 0), key("s1", "a1", 1)],
        "{hits:?}"
    );
    assert_eq!(hits[0].title, "title of s2");
    assert!(hits[0].updated_at > 0);
    // The snippet is the text as written (no markup added or interpreted); the ranges name
    // the matched words' prefixes.
    assert_eq!(hits[0].snippet, "Python has ASYNC too: <b>asyncio</b>.");
    assert_eq!(matched(&hits[0]), ["ASYNC", "async"]);

    // Every term, in any order and case, each starting a word.
    assert_eq!(
        keys(&search(store, &carol, "RUNTIME tok").await),
        [key("s1", "a1", 1)]
    );
    assert_eq!(
        keys(&search(store, &carol, "grö").await),
        [key("s1", "a1", 1)]
    );
    assert!(
        search(store, &carol, "sync").await.is_empty(),
        "not inside a word"
    );
    assert!(
        search(store, &carol, "async java").await.is_empty(),
        "every term"
    );

    // Another principal's messages never appear, and theirs are theirs.
    assert!(search(store, &dave, "rust").await.is_empty());
    assert_eq!(
        keys(&search(store, &dave, "python").await),
        [key("s3", "u3", 0)]
    );

    // The limit.
    let one = SearchQuery::parse("async", Some(1)).unwrap();
    assert_eq!(
        keys(&store.search(&carol, &one).await.unwrap()),
        [key("s2", "a2", 1)]
    );

    // What an engine would read as syntax is only words.
    for q in [
        "\"unbalanced",
        "a* OR NOT b",
        "col:umn",
        "(x",
        "'; DROP TABLE messages; --",
        "NEAR(a b)",
        "x & !y | z:*",
        "a\\b",
    ] {
        let query = SearchQuery::parse(q, None).expect("words");
        store.search(&carol, &query).await.expect(q);
    }
    assert_eq!(
        keys(&search(store, &carol, "\"python\" OR").await),
        Vec::<(String, Option<String>, u64)>::new(),
        "OR is a word here, and no message holds it"
    );

    // An edit replaces the old text; a patched title shows; a deleted conversation is gone.
    let mut s1 = get(store, &carol, "s1").await;
    s1.messages[0] = msg("user", "u1", "How do I write sync code?");
    saved(store, &carol, s1).await;
    assert!(
        search(store, &carol, "rust").await.is_empty(),
        "the old text"
    );
    assert_eq!(
        keys(&search(store, &carol, "sync").await),
        [key("s1", "u1", 0)]
    );
    let patch = ConversationPatch {
        title: "Renamed".into(),
        ..Default::default()
    };
    store.patch(&carol, "s1", patch).await.expect("patch");
    assert_eq!(search(store, &carol, "tokio").await[0].title, "Renamed");
    assert!(store.delete(&carol, "s2").await.expect("delete"));
    assert!(search(store, &carol, "python").await.is_empty());
    assert_eq!(search(store, &dave, "python").await.len(), 1);
}
