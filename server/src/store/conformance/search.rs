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

/// What a scan of every conversation finds, newest first (the list's order), every stored
/// message in node order: the hits every store's search must equal, however it finds them.
async fn scanned(store: &dyn HistoryStore, p: &Principal, query: &SearchQuery) -> Vec<SearchHit> {
    let mut hits = Vec::new();
    for summary in store.list(p).await.expect("list") {
        let tree = store
            .get_tree(p, &summary.id)
            .await
            .expect("tree")
            .expect("listed");
        let mut depth = std::collections::HashMap::new();
        let mut nodes: Vec<_> = tree.nodes.iter().collect();
        nodes.sort_by_key(|n| n.node);
        for n in &tree.nodes {
            let d = n.parent.map_or(0, |parent| depth[&parent] + 1);
            depth.insert(n.node, d);
        }
        for n in nodes {
            let c = (
                summary.id.as_str(),
                summary.title.as_str(),
                summary.updated_at,
            );
            if let Some(mut hit) = query.hit(c, depth[&n.node], &n.message) {
                hit.node = Some(n.node);
                hits.push(hit);
                if hits.len() == query.limit() {
                    return hits;
                }
            }
        }
    }
    hits
}

/// Queries dense and rare, alone and together, over more messages than a search reads before
/// it asks the engine's index ([`crate::store::search::NewestFirst`]), find what a scan of
/// everything finds, in its order, whichever way the store finds them.
pub(super) async fn searching_many(store: &dyn HistoryStore) {
    let erin = Principal::new("search-erin");
    let frank = Principal::new("search-frank");
    // 120 conversations of 12 messages: "alpha" in every message, "often" in one in three,
    // "needle" in one in 97, "early" only in the oldest, "pre<n>" words for prefixes; every
    // tenth conversation has a
    // second version of its last reply, which holds "branchword".
    let mut n = 0;
    for c in 0..120 {
        let id = format!("m{c:03}");
        let mut messages = Vec::new();
        for i in 0..12 {
            n += 1;
            let mut text = format!("alpha pre{} text{c}x{i}", n % 40);
            if n % 3 == 0 {
                text.push_str(" often");
            }
            if n % 97 == 0 {
                text.push_str(" the needle");
            }
            if c < 30 && i % 2 == 0 {
                text.push_str(" early");
            }
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            messages.push(msg(role, &format!("{id}-{i}"), &text));
        }
        messages
            .push(Message::tool("call", "srv__x", "needle in a tool").with_id(format!("{id}-t")));
        let rev = saved(store, &erin, conv(&id, 0, messages.clone())).await;
        if c % 10 == 0 {
            messages.pop();
            messages.pop();
            messages.push(msg(
                "assistant",
                &format!("{id}-b"),
                "branchword alpha needle",
            ));
            saved(store, &erin, conv(&id, rev, messages)).await;
        }
    }
    saved(
        store,
        &frank,
        conv(
            "f1",
            0,
            vec![msg("user", "f", "alpha needle often branchword")],
        ),
    )
    .await;
    for (q, limit) in [
        ("alpha", None),
        ("alpha", Some(100)),
        ("needle", None),
        ("needle", Some(100)),
        ("alpha needle", Some(100)),
        ("often needle", None),
        ("often alpha", Some(100)),
        ("pre1", None),
        ("pre13 often", Some(100)),
        ("branchword", None),
        ("early", None),
        ("early alpha", Some(50)),
        ("text77x3", None),
        ("nothing", None),
    ] {
        let query = SearchQuery::parse(q, limit).expect("a valid query");
        let got = store.search(&erin, &query).await.expect("search");
        let want = scanned(store, &erin, &query).await;
        let nodes = |hits: &[SearchHit]| -> Vec<_> {
            hits.iter()
                .map(|h| (h.conversation_id.clone(), h.node, h.index))
                .collect()
        };
        assert_eq!(nodes(&got), nodes(&want), "{q:?} (limit {limit:?})");
        assert_eq!(keys(&got), keys(&want), "{q:?}");
        assert!(
            got.iter().all(|h| !h.conversation_id.starts_with('f')),
            "another principal's"
        );
    }
    // The dense query fills its page; the rare ones find every match.
    let all = |q: &str| SearchQuery::parse(q, Some(100)).expect("valid");
    assert_eq!(
        store
            .search(&erin, &all("alpha"))
            .await
            .expect("search")
            .len(),
        100
    );
    let needles = store.search(&erin, &all("needle")).await.expect("search");
    assert!(needles.len() > 12, "{}", needles.len());
}
