//! The in-memory [`UserMcpStore`]: a map keyed by (principal id, slug) behind a
//! `std::sync::Mutex` (never held across an `.await`). Nothing survives a restart.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::host::Principal;
use crate::store::{UserMcpRecord, UserMcpStore, UserMcpStoreError};

/// Keeps each principal's servers in memory.
///
/// ```
/// use lmchatkit::Principal;
/// use lmchatkit::user_mcp::{MemoryUserMcpStore, UserMcpRecord, UserMcpStore};
///
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// rt.block_on(async {
///     let store = MemoryUserMcpStore::default();
///     let alice = Principal::new("alice");
///     store.create(&alice, UserMcpRecord::new("docs", "Docs", "https://x.example/mcp", 1)).await.unwrap();
///     assert_eq!(store.list(&alice).await.unwrap().len(), 1);
///     assert!(store.list(&Principal::new("bob")).await.unwrap().is_empty());
/// });
/// ```
#[derive(Debug, Default)]
pub struct MemoryUserMcpStore {
    servers: Mutex<BTreeMap<(String, String), UserMcpRecord>>,
}

impl MemoryUserMcpStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), UserMcpRecord>> {
        // No code panics while holding the lock with the map half-changed.
        self.servers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn key(principal: &Principal, slug: &str) -> (String, String) {
    (principal.id().to_owned(), slug.to_owned())
}

#[async_trait]
impl UserMcpStore for MemoryUserMcpStore {
    async fn list(&self, principal: &Principal) -> Result<Vec<UserMcpRecord>, UserMcpStoreError> {
        Ok(self
            .lock()
            .iter()
            .filter(|((p, _), _)| p == principal.id())
            .map(|(_, r)| r.clone())
            .collect())
    }

    async fn get(
        &self,
        principal: &Principal,
        slug: &str,
    ) -> Result<Option<UserMcpRecord>, UserMcpStoreError> {
        Ok(self.lock().get(&key(principal, slug)).cloned())
    }

    async fn create(
        &self,
        principal: &Principal,
        mut record: UserMcpRecord,
    ) -> Result<(), UserMcpStoreError> {
        let mut map = self.lock();
        let k = key(principal, &record.slug);
        if map.contains_key(&k) {
            return Err(UserMcpStoreError::Duplicate(record.slug));
        }
        record.revision = 1;
        map.insert(k, record);
        Ok(())
    }

    async fn update(
        &self,
        principal: &Principal,
        mut record: UserMcpRecord,
    ) -> Result<bool, UserMcpStoreError> {
        let mut map = self.lock();
        let Some(stored) = map.get_mut(&key(principal, &record.slug)) else {
            return Ok(false);
        };
        if stored.revision != record.revision {
            return Err(UserMcpStoreError::Conflict(record.slug));
        }
        record.revision += 1;
        *stored = record;
        Ok(true)
    }

    async fn delete(&self, principal: &Principal, slug: &str) -> Result<bool, UserMcpStoreError> {
        Ok(self.lock().remove(&key(principal, slug)).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_memory_store_conforms() {
        crate::store::conformance::user_mcp::run(&MemoryUserMcpStore::default()).await;
    }
}
