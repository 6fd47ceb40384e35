//! Conversations as trees: what every store shares of branches.
//!
//! Each stored message is a node: a number the store gives it (`seq` in the SQL stores; unique
//! in the conversation, growing, never reused), its parent's number (none for a first message)
//! and the message, whose id is the client's and may repeat. The conversation keeps its active
//! leaf; the active path, root to leaf, is what a read's `messages` holds, what the model gets
//! and what a save is compared with.
//!
//! Decisions every store implements (the conformance suite checks them):
//! - **A save compares** what it sends with the stored path, position by position from the
//!   first message it does not keep (`plan`). A message equal to the stored one (same id,
//!   same JSON) is that node. A message with the stored one's id but another body *updates*
//!   it in place when the stored one is the path's last, or when the save goes on with the
//!   stored next message (its id; without ids, its body): a reply saved again as it grows, an
//!   approval recorded on an earlier call, the steps of a reply marked interrupted. Otherwise it is an *edit*: from there every sent message is a new node,
//!   the first a child of the last node kept, so it is a new version beside the stored one,
//!   which keeps everything that followed it. A save writes what it adds or changes and
//!   nothing of any other branch.
//! - **A save whose path ends before the stored one moves the leaf**: the rest stays, as a
//!   branch beside which the next message starts.
//! - **Switching** to a node makes its branch the active one: the leaf becomes its newest
//!   descendant, at each step down the child stored last (after regenerate, then back, that is
//!   the version the user left). A node already on the active path keeps the path (a search
//!   hit there opens what is shown).
//! - **Deleting** a node deletes its descendants; when the leaf was among them, the active
//!   branch becomes the newest remaining sibling's, or else ends at the parent.
//! - **Totals** are the active path's (what the context holds, what the replies shown cost);
//!   a switch or a delete recomputes them.

use std::collections::HashMap;

use lmchatkit_protocol::Branch;

/// The shape of a stored conversation: every node's parent, and the children of each node
/// (oldest first).
#[derive(Debug, Default, Clone)]
pub(crate) struct Shape {
    parent: HashMap<u64, Option<u64>>,
    children: HashMap<Option<u64>, Vec<u64>>,
}

impl Shape {
    /// The shape of the nodes given as `(node, parent)`, in any order.
    pub(crate) fn new(nodes: impl IntoIterator<Item = (u64, Option<u64>)>) -> Self {
        let mut shape = Shape::default();
        for (node, parent) in nodes {
            shape.parent.insert(node, parent);
            shape.children.entry(parent).or_default().push(node);
        }
        for kids in shape.children.values_mut() {
            kids.sort_unstable();
        }
        shape
    }

    /// The children of `node` (of none: the first messages), oldest first.
    pub(crate) fn children_of(&self, node: Option<u64>) -> &[u64] {
        self.children.get(&node).map_or(&[], Vec::as_slice)
    }

    /// True when `node` has no children.
    pub(crate) fn is_leaf(&self, node: u64) -> bool {
        self.children_of(Some(node)).is_empty()
    }

    /// True when `node` is stored.
    pub(crate) fn contains(&self, node: u64) -> bool {
        self.parent.contains_key(&node)
    }

    /// The nodes from the root to `leaf`, in order; empty without a leaf (or for a leaf that is
    /// not stored, which no store writes).
    pub(crate) fn path(&self, leaf: Option<u64>) -> Vec<u64> {
        let mut path = Vec::new();
        let mut at = leaf;
        while let Some(node) = at {
            let Some(parent) = self.parent.get(&node) else {
                return Vec::new();
            };
            path.push(node);
            at = *parent;
            if path.len() > self.parent.len() {
                return Vec::new(); // a cycle: never written, never followed
            }
        }
        path.reverse();
        path
    }

    /// How many nodes come before `node` on its way from the root (its position on any path
    /// through it).
    pub(crate) fn depth(&self, node: u64) -> u64 {
        let mut depth = 0;
        let mut at = self.parent.get(&node).copied().flatten();
        while let Some(n) = at {
            depth += 1;
            at = self.parent.get(&n).copied().flatten();
            if depth > self.parent.len() as u64 {
                break; // a cycle: never written
            }
        }
        depth
    }

    /// The positions of `path` whose node has siblings, with every version.
    pub(crate) fn branches(&self, path: &[u64]) -> Vec<Branch> {
        path.iter()
            .enumerate()
            .filter_map(|(index, node)| {
                let parent = self.parent.get(node)?;
                let versions = self.children.get(parent)?;
                if versions.len() < 2 {
                    return None;
                }
                let current = versions.iter().position(|v| v == node)?;
                Some(Branch {
                    index: index as u64,
                    versions: versions.clone(),
                    current: current as u64,
                })
            })
            .collect()
    }

    /// The leaf of `node`'s branch: its newest descendant, stepping down to the child stored
    /// last.
    pub(crate) fn newest_leaf(&self, node: u64) -> u64 {
        let mut at = node;
        while let Some(&last) = self.children.get(&Some(at)).and_then(|k| k.last()) {
            at = last;
        }
        at
    }

    /// The leaf once the branch through `node` is the active one, the leaf being `leaf` before
    /// (see the module docs).
    pub(crate) fn switch_leaf(&self, node: u64, leaf: Option<u64>) -> u64 {
        match leaf {
            Some(l) if self.path(Some(l)).contains(&node) => l,
            _ => self.newest_leaf(node),
        }
    }

    /// `node` and every descendant of it.
    pub(crate) fn subtree(&self, node: u64) -> Vec<u64> {
        let mut out = vec![node];
        let mut i = 0;
        while let Some(&at) = out.get(i) {
            if let Some(kids) = self.children.get(&Some(at)) {
                out.extend(kids);
            }
            i += 1;
        }
        out
    }

    /// The leaf once `node` and its descendants are deleted, the leaf being `leaf` before.
    pub(crate) fn leaf_after_delete(&self, node: u64, leaf: Option<u64>) -> Option<u64> {
        let gone = self.subtree(node);
        if !leaf.is_some_and(|l| gone.contains(&l)) {
            return leaf;
        }
        let parent = self.parent.get(&node).copied().flatten();
        let sibling = self
            .children
            .get(&parent)
            .and_then(|kids| kids.iter().rev().find(|k| **k != node).copied());
        match sibling {
            Some(s) => Some(self.newest_leaf(s)),
            None => parent,
        }
    }
}

/// What a save does, position by position from the first message it does not keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Sent messages (by index) that update their stored node (by number) in place.
    pub updates: Vec<(usize, u64)>,
    /// The first sent message that is a new node; every one from it is (the sent count when
    /// none is).
    pub new_from: usize,
    /// The node the first new one is a child of; when none is new, the new leaf.
    pub parent: Option<u64>,
}

/// The [`Plan`] of a save. `stored` is the stored path from the first position the save does
/// not keep, as `(node, message id)`; `parent` the node before that position; `sent` the ids
/// of the messages sent for those positions; `same_body(i)` says whether sent message `i` is
/// the same JSON as `stored[i]`.
pub(crate) fn plan(
    stored: &[(u64, Option<&str>)],
    parent: Option<u64>,
    sent: &[Option<&str>],
    same_body: impl Fn(usize) -> bool,
) -> Plan {
    let mut updates = Vec::new();
    let mut parent = parent;
    let mut i = 0;
    while let (Some(&(node, stored_id)), Some(&id)) = (stored.get(i), sent.get(i)) {
        if id != stored_id {
            break;
        }
        if !same_body(i) {
            // Without an id, another body is another message.
            let is_last = i + 1 == stored.len();
            // Goes on with the stored next message: the same id (changed too, it is then an
            // update of its own), or without ids the same body.
            let goes_on = matches!(
                (stored.get(i + 1), sent.get(i + 1)),
                (Some(&(_, next)), Some(&sent_next))
                    if next == sent_next && (next.is_some() || same_body(i + 1))
            );
            if id.is_none() || !(is_last || goes_on) {
                break;
            }
            updates.push((i, node));
        }
        parent = Some(node);
        i += 1;
    }
    Plan {
        updates,
        new_from: i,
        parent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 0 ─ 1 ─ 2
    ///   │   └ 4 ─ 5
    ///   └ 3
    fn shape() -> Shape {
        Shape::new([
            (0, None),
            (1, Some(0)),
            (2, Some(1)),
            (3, Some(0)),
            (4, Some(1)),
            (5, Some(4)),
        ])
    }

    #[test]
    fn the_path_runs_from_the_root_to_the_leaf() {
        let s = shape();
        assert_eq!(s.path(Some(5)), vec![0, 1, 4, 5]);
        assert_eq!(s.path(Some(0)), vec![0]);
        assert!(s.path(None).is_empty());
        assert!(s.path(Some(9)).is_empty());
    }

    #[test]
    fn branches_list_every_version_of_a_path_message_with_siblings() {
        let s = shape();
        let b = s.branches(&s.path(Some(5)));
        assert_eq!(
            b,
            vec![
                Branch {
                    index: 1,
                    versions: vec![1, 3],
                    current: 0
                },
                Branch {
                    index: 2,
                    versions: vec![2, 4],
                    current: 1
                },
            ]
        );
        // Two roots are versions of the first message.
        let roots = Shape::new([(0, None), (1, None)]);
        assert_eq!(roots.branches(&[1])[0].versions, vec![0, 1]);
    }

    #[test]
    fn switching_lands_on_the_newest_descendant() {
        let s = shape();
        assert_eq!(s.newest_leaf(0), 3, "3 was stored after 1");
        assert_eq!(s.newest_leaf(1), 5);
        assert_eq!(s.newest_leaf(2), 2);
        assert_eq!(s.newest_leaf(3), 3);
    }

    #[test]
    fn switching_to_a_node_on_the_path_keeps_the_path() {
        let s = shape();
        assert_eq!(s.switch_leaf(1, Some(2)), 2, "1 is on the path to 2");
        assert_eq!(s.switch_leaf(4, Some(2)), 5);
        assert_eq!(s.switch_leaf(0, None), 3);
    }

    #[test]
    fn deleting_the_active_branch_moves_to_the_newest_sibling_or_the_parent() {
        let s = shape();
        assert_eq!(s.subtree(1), vec![1, 2, 4, 5]);
        assert_eq!(s.leaf_after_delete(4, Some(5)), Some(2));
        assert_eq!(s.leaf_after_delete(2, Some(2)), Some(5));
        assert_eq!(s.leaf_after_delete(5, Some(5)), Some(4));
        assert_eq!(s.leaf_after_delete(1, Some(5)), Some(3));
        // A branch off the path goes without moving the leaf.
        assert_eq!(s.leaf_after_delete(3, Some(5)), Some(5));
        assert_eq!(s.leaf_after_delete(0, Some(5)), None);
    }

    fn run(stored: &[(u64, Option<&str>)], sent: &[(Option<&str>, bool)]) -> Plan {
        let ids: Vec<_> = sent.iter().map(|s| s.0).collect();
        plan(stored, Some(100), &ids, |i| sent[i].1)
    }

    #[test]
    fn a_save_reuses_equal_messages_and_updates_a_growing_last_one() {
        let stored = [(1, Some("u")), (2, Some("a"))];
        // Equal, then one more: one new node under 2.
        let p = run(
            &stored,
            &[(Some("u"), true), (Some("a"), true), (Some("x"), false)],
        );
        assert_eq!((p.updates.len(), p.new_from, p.parent), (0, 2, Some(2)));
        // The last one changed (a reply saved again): updated in place.
        let p = run(&stored, &[(Some("u"), true), (Some("a"), false)]);
        assert_eq!(
            (p.updates, p.new_from, p.parent),
            (vec![(1, 2)], 2, Some(2))
        );
        // Both changed under their ids (the steps of one reply marked): both in place.
        let p = run(&stored, &[(Some("u"), false), (Some("a"), false)]);
        assert_eq!(p.updates, vec![(0, 1), (1, 2)]);
        assert_eq!((p.new_from, p.parent), (2, Some(2)));
        // An earlier one changed with the rest unchanged (an approval recorded): in place.
        let p = run(&stored, &[(Some("u"), false), (Some("a"), true)]);
        assert_eq!(
            (p.updates, p.new_from, p.parent),
            (vec![(0, 1)], 2, Some(2))
        );
    }

    #[test]
    fn an_edit_or_another_id_starts_a_version_beside_the_stored_one() {
        let stored = [(1, Some("u")), (2, Some("a"))];
        // The user message edited, keeping its id, the reply dropped: a new version of u.
        let p = run(&stored, &[(Some("u"), false)]);
        assert_eq!((p.updates.len(), p.new_from, p.parent), (0, 0, Some(100)));
        // A regenerated reply (another id): a new version of a.
        let p = run(&stored, &[(Some("u"), true), (Some("b"), false)]);
        assert_eq!((p.new_from, p.parent), (1, Some(1)));
        // Without ids, another body is another message.
        let p = plan(&[(1, None), (2, None)], None, &[None, None], |i| i == 0);
        assert_eq!((p.new_from, p.parent), (1, Some(1)));
        // A shorter save moves the leaf back.
        let p = run(&stored, &[(Some("u"), true)]);
        assert_eq!((p.new_from, p.parent), (1, Some(1)));
        let p = run(&stored, &[]);
        assert_eq!((p.new_from, p.parent), (0, Some(100)));
    }
}
