//! [`ApprovalStore`]: where each principal's "always allow" list lives, and
//! [`MemoryApprovalStore`], the default.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::host::Principal;

/// Errors of an approval store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalStoreError {
    /// The store failed.
    #[error("approval store: {0}")]
    Storage(String),
}

/// Keeps, per principal, the tools they always allow (full tool names). The service reads it
/// on every decision that would ask, and `PUT {prefix}/api/tools/approvals` replaces it.
///
/// The history's [`SqliteStore`](crate::history::SqliteStore) implements it too, in the same
/// database file, and so does `PostgresStore` (feature `postgres`); [`MemoryApprovalStore`] is
/// the default.
#[async_trait]
pub trait ApprovalStore: Send + Sync + 'static {
    /// The tools `principal` always allows (empty when nothing is stored).
    async fn always(&self, principal: &Principal) -> Result<Vec<String>, ApprovalStoreError>;

    /// Replaces the list of `principal` (an empty list clears it). The service hands over a
    /// cleaned list: trimmed, without blanks or duplicates, within its caps.
    async fn set_always(
        &self,
        principal: &Principal,
        tools: Vec<String>,
    ) -> Result<(), ApprovalStoreError>;
}

/// Keeps the lists in memory (nothing survives a restart).
///
/// ```
/// use lmchatkit::Principal;
/// use lmchatkit::access::approval::{ApprovalStore, MemoryApprovalStore};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryApprovalStore::default();
/// let alice = Principal::new("alice");
/// store.set_always(&alice, vec!["demo__echo".into()]).await.unwrap();
/// assert_eq!(store.always(&alice).await.unwrap(), ["demo__echo"]);
/// assert!(store.always(&Principal::new("bob")).await.unwrap().is_empty());
/// # });
/// ```
#[derive(Debug, Default)]
pub struct MemoryApprovalStore {
    lists: Mutex<HashMap<String, Vec<String>>>,
}

#[async_trait]
impl ApprovalStore for MemoryApprovalStore {
    async fn always(&self, principal: &Principal) -> Result<Vec<String>, ApprovalStoreError> {
        let lists = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        Ok(lists.get(principal.id()).cloned().unwrap_or_default())
    }

    async fn set_always(
        &self,
        principal: &Principal,
        tools: Vec<String>,
    ) -> Result<(), ApprovalStoreError> {
        let mut lists = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        match tools.is_empty() {
            true => lists.remove(principal.id()),
            false => lists.insert(principal.id().to_owned(), tools),
        };
        Ok(())
    }
}

/// What every [`ApprovalStore`] must do; run against each implementation.
#[cfg(test)]
pub(crate) async fn conformance(store: &dyn ApprovalStore) {
    let (alice, bob) = (Principal::new("alice"), Principal::new("bob"));
    assert!(store.always(&alice).await.unwrap().is_empty());
    store
        .set_always(&alice, vec!["a__x".into(), "b__y".into()])
        .await
        .unwrap();
    assert_eq!(store.always(&alice).await.unwrap(), ["a__x", "b__y"]);
    // Per principal: bob sees nothing of alice's, and his list leaves hers alone.
    assert!(store.always(&bob).await.unwrap().is_empty());
    store.set_always(&bob, vec!["c__z".into()]).await.unwrap();
    assert_eq!(store.always(&alice).await.unwrap(), ["a__x", "b__y"]);
    assert_eq!(store.always(&bob).await.unwrap(), ["c__z"]);
    // A set replaces the whole list, in the order given; an empty one clears it.
    store
        .set_always(&alice, vec!["d__w".into(), "a__x".into()])
        .await
        .unwrap();
    assert_eq!(store.always(&alice).await.unwrap(), ["d__w", "a__x"]);
    store.set_always(&alice, Vec::new()).await.unwrap();
    assert!(store.always(&alice).await.unwrap().is_empty());
    assert_eq!(store.always(&bob).await.unwrap(), ["c__z"]);
    // The anonymous principal is a principal like any other.
    let anon = Principal::anonymous();
    assert!(store.always(&anon).await.unwrap().is_empty());
    store.set_always(&anon, vec!["e".into()]).await.unwrap();
    assert_eq!(store.always(&anon).await.unwrap(), ["e"]);
}
