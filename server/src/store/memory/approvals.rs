//! The in-memory [`ApprovalStore`], the default: a map keyed by principal id behind a
//! `std::sync::Mutex` (never held across an `.await`). Nothing survives a restart.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::host::Principal;
use crate::store::{ApprovalStore, ApprovalStoreError};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_memory_store_conforms() {
        crate::store::conformance::approvals::run(&MemoryApprovalStore::default()).await;
    }
}
