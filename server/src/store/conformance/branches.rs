//! Conversations as trees ([`crate::store::tree`]): versions made by saves, switching, deleting
//! a branch, racing edits, search over every branch, and what a save writes.

use lmchatkit_protocol::{ConversationTotals, Message, StoredConversation};

use super::{Rows, conflict, conv, get, msg, reply, saved};
use crate::host::Principal;
use crate::store::{BranchOutcome, HistoryStore, SearchQuery};

fn ids(c: &StoredConversation) -> Vec<&str> {
    c.messages
        .iter()
        .map(|m| m.id.as_deref().unwrap_or("-"))
        .collect()
}

/// The versions of the message at `index` of the path, and which is current.
fn versions(c: &StoredConversation, index: u64) -> (Vec<u64>, u64) {
    let b = c
        .branches
        .iter()
        .find(|b| b.index == index)
        .unwrap_or_else(|| panic!("no versions at {index}: {:?}", c.branches));
    (b.versions.clone(), b.current)
}

async fn switch(store: &dyn HistoryStore, p: &Principal, id: &str, node: u64) -> u64 {
    match store.switch_branch(p, id, node).await.expect("switch") {
        Some(BranchOutcome::Done { revision }) => revision,
        other => panic!("switch to {node}: {other:?}"),
    }
}

pub(super) async fn branching(
    store: &dyn HistoryStore,
    alice: &Principal,
    bob: &Principal,
    rows: Rows<'_>,
) {
    let id = "c-tree";
    let u1 = msg("user", "u1", "what is a tree?");
    let a1 = reply("a1", 10, 5, Some(0.5));
    let mut rev = saved(store, alice, conv(id, 0, vec![u1.clone(), a1.clone()])).await;
    assert!(get(store, alice, id).await.branches.is_empty());

    // Regenerate: the reply after u1 replaced by another; the first stays as a version.
    let a2 = reply("a2", 10, 7, Some(0.25));
    let w = rows.now();
    rev = saved(store, alice, conv(id, rev, vec![u1.clone(), a2.clone()])).await;
    rows.written(w, 1, "a regenerated reply");
    let got = get(store, alice, id).await;
    assert_eq!(ids(&got), ["u1", "a2"]);
    let (replies, current) = versions(&got, 1);
    assert_eq!((replies.len(), current), (2, 1));
    assert_eq!(got.totals, ConversationTotals::of(&got.messages));
    assert_eq!(
        got.totals.total_cost_usd,
        Some(0.25),
        "the path's replies only"
    );

    // Edit: the user message sent with its id and another text, its reply dropped, is a new
    // version of it (an AI SDK client edits so); the first keeps both replies.
    let mut u1b = u1.clone();
    u1b.content = "what is a forest?".into();
    let a3 = reply("a3", 12, 3, None);
    rev = saved(store, alice, conv(id, rev, vec![u1b.clone()])).await;
    let w = rows.now();
    rev = saved(store, alice, conv(id, rev, vec![u1b.clone(), a3.clone()])).await;
    rows.written(w, 1, "a reply to the edit");
    let got = get(store, alice, id).await;
    assert_eq!(got.messages, vec![u1b.clone(), a3.clone()]);
    let (firsts, current) = versions(&got, 0);
    assert_eq!((firsts.len(), current), (2, 1));
    assert!(
        got.branches.iter().all(|b| b.index == 0),
        "a3 has no sibling"
    );

    // Adding to the active branch writes only what is added, whatever the other branches hold.
    let u2 = msg("user", "u2", "and a grove?");
    let w = rows.now();
    rev = saved(
        store,
        alice,
        conv(id, rev, vec![u1b.clone(), a3.clone(), u2.clone()]),
    )
    .await;
    rows.written(w, 1, "one message on a branching conversation");

    // Switching to the first version of the first message: its newest descendant (a2, stored
    // after a1) ends the path; the revision moves and the totals are the path's.
    let before = rev;
    rev = switch(store, alice, id, firsts[0]).await;
    assert!(rev > before);
    let got = get(store, alice, id).await;
    assert_eq!((got.revision, ids(&got)), (rev, vec!["u1", "a2"]));
    assert_eq!(got.messages, vec![u1.clone(), a2.clone()]);
    assert_eq!(got.totals, ConversationTotals::of(&got.messages));
    assert_eq!(versions(&got, 0), (firsts.clone(), 0));
    assert_eq!(versions(&got, 1), (replies.clone(), 1));
    // ... and to the first reply; then back to the edit, which ends at u2.
    switch(store, alice, id, replies[0]).await;
    assert_eq!(ids(&get(store, alice, id).await), ["u1", "a1"]);
    // A node on the path keeps the path (not its newest descendant, a2).
    switch(store, alice, id, firsts[0]).await;
    assert_eq!(ids(&get(store, alice, id).await), ["u1", "a1"]);
    rev = switch(store, alice, id, firsts[1]).await;
    assert_eq!(ids(&get(store, alice, id).await), ["u1", "a3", "u2"]);

    // A tail read names versions by position in the tail.
    let (tail, before_tail) = store
        .get_tail(alice, id, 2)
        .await
        .expect("tail")
        .expect("present");
    assert_eq!((before_tail, ids(&tail)), (1, vec!["a3", "u2"]));
    assert!(tail.branches.is_empty(), "the versions are before the tail");

    // Racing edits from one revision: one wins, the other gets the current copy.
    let mut u2x = u2.clone();
    u2x.content = "and a wood?".into();
    let from = rev;
    rev = saved(
        store,
        alice,
        conv(id, from, vec![u1b.clone(), a3.clone(), u2x.clone()]),
    )
    .await;
    let copy = conflict(store, alice, conv(id, from, vec![u1b.clone(), a3.clone()])).await;
    assert_eq!((copy.revision, ids(&copy)), (rev, vec!["u1", "a3", "u2"]));
    assert_eq!(copy.messages[2], u2x, "the winner's edit");

    // The whole tree: every stored message, each after its parent, the leaf ending the path.
    let tree = store
        .get_tree(alice, id)
        .await
        .expect("tree")
        .expect("present");
    let tree_ids: Vec<&str> = tree
        .nodes
        .iter()
        .map(|n| n.message.id.as_deref().unwrap_or("-"))
        .collect();
    assert_eq!(tree_ids, ["u1", "a1", "a2", "u1", "a3", "u2"]);
    for (i, n) in tree.nodes.iter().enumerate() {
        let parent_at = n
            .parent
            .map(|p| tree.nodes.iter().position(|m| m.node == p));
        assert!(
            parent_at.is_none_or(|at| at.is_some_and(|at| at < i)),
            "{tree:?}"
        );
    }
    let leaf = tree
        .nodes
        .iter()
        .find(|n| Some(n.node) == tree.leaf)
        .expect("leaf");
    assert_eq!(leaf.message, u2x);
    assert!(store.get_tree(bob, id).await.expect("tree").is_none());

    // Search finds every branch; a hit names its node, and switching there opens it.
    let query = SearchQuery::parse("forest", None).expect("query");
    let hits = store.search(alice, &query).await.expect("search");
    assert_eq!(hits.len(), 1);
    assert_eq!((hits[0].index, hits[0].node), (0, Some(firsts[1])));
    let query = SearchQuery::parse("tree", None).expect("query");
    let hits = store.search(alice, &query).await.expect("search");
    let hit = hits
        .iter()
        .find(|h| h.conversation_id == id)
        .expect("a hit");
    assert_eq!(hit.node, Some(firsts[0]), "a message off the path");
    rev = switch(store, alice, id, firsts[0]).await;
    assert_eq!(ids(&get(store, alice, id).await), ["u1", "a2"]);

    // Nobody else's conversation and no unknown node.
    assert_eq!(
        store
            .switch_branch(bob, id, firsts[0])
            .await
            .expect("switch"),
        None
    );
    assert_eq!(
        store
            .delete_branch(bob, id, firsts[0])
            .await
            .expect("delete"),
        None
    );
    assert_eq!(
        store
            .switch_branch(alice, "c-none", 0)
            .await
            .expect("switch"),
        None
    );
    assert_eq!(
        store
            .switch_branch(alice, id, 1 << 40)
            .await
            .expect("switch"),
        Some(BranchOutcome::NoSuchNode)
    );
    assert_eq!(
        store
            .delete_branch(alice, id, 1 << 40)
            .await
            .expect("delete"),
        Some(BranchOutcome::NoSuchNode)
    );
    assert_eq!(get(store, alice, id).await.revision, rev, "nothing changed");

    // Deleting the active reply: the path moves to its newest remaining sibling (a1).
    let (_, deleted) = (
        rev,
        store
            .delete_branch(alice, id, replies[1])
            .await
            .expect("delete"),
    );
    let Some(BranchOutcome::Done { revision }) = deleted else {
        panic!("delete: {deleted:?}");
    };
    let got = get(store, alice, id).await;
    assert_eq!((got.revision, ids(&got)), (revision, vec!["u1", "a1"]));
    assert_eq!(
        versions(&got, 0).0,
        firsts,
        "the reply had no versions left"
    );
    assert!(got.branches.iter().all(|b| b.index == 0));
    // Deleting a branch off the path leaves the path: the edit goes with its replies.
    store
        .delete_branch(alice, id, firsts[1])
        .await
        .expect("delete");
    let got = get(store, alice, id).await;
    assert_eq!(ids(&got), ["u1", "a1"]);
    assert!(got.branches.is_empty());
    let query = SearchQuery::parse("forest", None).expect("query");
    assert!(
        store
            .search(alice, &query)
            .await
            .expect("search")
            .is_empty()
    );
    // Deleting the first message leaves an empty path; a save starts again, and no new message
    // takes the number of a deleted one.
    let mut seen: Vec<u64> = firsts.clone();
    for words in ["answer", "wood", "tree"] {
        let query = SearchQuery::parse(words, None).expect("query");
        let hits = store.search(alice, &query).await.expect("search");
        seen.extend(
            hits.iter()
                .filter(|h| h.conversation_id == id)
                .filter_map(|h| h.node),
        );
    }
    let highest = seen.iter().copied().max().expect("nodes");
    store
        .delete_branch(alice, id, firsts[0])
        .await
        .expect("delete");
    let got = get(store, alice, id).await;
    assert!(got.messages.is_empty() && got.branches.is_empty());
    assert_eq!(got.totals, ConversationTotals::default());
    let fresh = vec![Message::user("again").with_id("n1")];
    let rev = saved(store, alice, conv(id, got.revision, fresh.clone())).await;
    assert_eq!(get(store, alice, id).await.messages, fresh);
    let other = vec![Message::user("and again").with_id("n2")];
    saved(store, alice, conv(id, rev, other.clone())).await;
    let got = get(store, alice, id).await;
    assert_eq!(got.messages, other);
    let (fresh_nodes, _) = versions(&got, 0);
    assert!(
        fresh_nodes.iter().all(|n| *n > highest),
        "new nodes {fresh_nodes:?} after deleted ones up to {highest}"
    );
    assert!(store.delete(alice, id).await.expect("delete"));
}
