//! Importing a conversation with every branch ([`StoredConversation::tree`], as an export
//! with `?tree=1` wrote it), through the [`HistoryStore`] trait alone, so every store can.
//!
//! Decisions:
//! - **Replayed, not written raw.** Each branch (each leaf's path, in depth-first order, the
//!   versions of a message oldest first) is saved in turn: the store's own rules
//!   ([`super::tree`]) make the versions where the paths part, so the tree is stored as any
//!   store stores trees and no store needs a second way in. Then the exported active leaf is
//!   switched to. Node numbers are the store's own; the shape is the export's.
//! - **Checked before, compared after.** A tree whose parents are not stored before their
//!   children, that repeats a node or names a leaf it does not hold is refused (a 400) before
//!   anything is written; a replay that did not give the same shape (two versions whose paths
//!   look alike to the save rules) is deleted again and refused, so nothing half-imported
//!   stays.

use std::collections::HashSet;

use lmchatkit_protocol::{ConversationTree, StoredConversation};

use super::tree::Shape;
use super::{BranchOutcome, HistoryError, HistoryStore, SaveOutcome};
use crate::host::Principal;

/// Stores `conversation` (revision `0`, its `tree` set) with every branch; a conflict when its
/// id is taken.
pub(crate) async fn restore(
    store: &dyn HistoryStore,
    principal: &Principal,
    mut conversation: StoredConversation,
) -> Result<SaveOutcome, HistoryError> {
    let tree = conversation.tree.take().unwrap_or_default();
    let shape = checked(&tree)?;
    let id = conversation.id.clone();
    let header = StoredConversation {
        messages: Vec::new(),
        kept: None,
        branches: Vec::new(),
        ..conversation
    };
    let message = |node: u64| {
        tree.nodes
            .iter()
            .find(|n| n.node == node)
            .map(|n| n.message.clone())
    };
    let order = preorder(&shape);
    let leaves: Vec<u64> = order
        .iter()
        .copied()
        .filter(|n| shape.is_leaf(*n))
        .collect();
    let mut revision = 0;
    let paths: Vec<Vec<u64>> = if leaves.is_empty() {
        vec![Vec::new()]
    } else {
        leaves.iter().map(|l| shape.path(Some(*l))).collect()
    };
    for path in paths {
        let save = StoredConversation {
            revision,
            messages: path.into_iter().filter_map(message).collect(),
            ..header.clone()
        };
        match store.save(principal, save).await? {
            SaveOutcome::Saved { revision: r } => revision = r,
            conflict @ SaveOutcome::Conflict(_) => return Ok(conflict),
        }
    }
    let stored = store
        .get_tree(principal, &id)
        .await?
        .ok_or_else(|| HistoryError::Storage("an imported conversation vanished".into()))?;
    let stored_shape = Shape::new(stored.nodes.iter().map(|n| (n.node, n.parent)));
    let stored_order = preorder(&stored_shape);
    if stored_order.len() != order.len() {
        store.delete(principal, &id).await?;
        return Err(HistoryError::InvalidInput(
            "the tree could not be restored: two of its versions look alike".into(),
        ));
    }
    if let Some(leaf) = tree.leaf {
        let at = order.iter().position(|n| *n == leaf);
        if let Some(node) = at.and_then(|i| stored_order.get(i)) {
            match store.switch_branch(principal, &id, *node).await? {
                Some(BranchOutcome::Done { revision: r }) => revision = r,
                _ => return Err(HistoryError::Storage("switching an import failed".into())),
            }
        }
    }
    Ok(SaveOutcome::Saved { revision })
}

/// The tree's shape, when its nodes are unique, each after its parent, and its leaf is one of
/// them.
fn checked(tree: &ConversationTree) -> Result<Shape, HistoryError> {
    let invalid = |why: &str| HistoryError::InvalidInput(format!("invalid tree: {why}"));
    let mut seen = HashSet::new();
    for n in &tree.nodes {
        if n.parent.is_some_and(|p| !seen.contains(&p)) {
            return Err(invalid("a message comes before its parent"));
        }
        if !seen.insert(n.node) {
            return Err(invalid("a node number repeats"));
        }
    }
    if tree.leaf.is_some_and(|l| !seen.contains(&l)) {
        return Err(invalid("the leaf is not one of its messages"));
    }
    Ok(Shape::new(tree.nodes.iter().map(|n| (n.node, n.parent))))
}

/// Every node, depth first, children in the order they were stored.
fn preorder(shape: &Shape) -> Vec<u64> {
    let mut out = Vec::new();
    let mut stack: Vec<u64> = shape.children_of(None).iter().rev().copied().collect();
    while let Some(n) = stack.pop() {
        out.push(n);
        stack.extend(shape.children_of(Some(n)).iter().rev());
    }
    out
}
