//! [`ApprovalStore`]: where each principal's "always allow" list lives. The memory, SQLite and
//! PostgreSQL stores implement it ([`MemoryApprovalStore`](super::MemoryApprovalStore) is the
//! default).

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
/// The history's [`SqliteStore`](super::SqliteStore) implements it too, in the same
/// database file, and so does `PostgresStore` (feature `postgres`); [`MemoryApprovalStore`](super::MemoryApprovalStore) is
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
