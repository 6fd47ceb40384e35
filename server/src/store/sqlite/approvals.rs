//! The SQLite store as an [`ApprovalStore`]: one `tool_approvals` row per principal, the list
//! as a JSON array; an empty list deletes the row.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use super::SqliteStore;
use super::queries::Db;
use crate::host::Principal;
use crate::store::HistoryError;
use crate::store::rows::storage;
use crate::store::{ApprovalStore, ApprovalStoreError};

fn approval_error(e: HistoryError) -> ApprovalStoreError {
    ApprovalStoreError::Storage(e.to_string())
}

#[async_trait]
impl ApprovalStore for SqliteStore {
    async fn always(&self, principal: &Principal) -> Result<Vec<String>, ApprovalStoreError> {
        let principal = principal.id().to_owned();
        self.run(move |conn, _| {
            let json: Option<String> = conn
                .prepare_cached("SELECT always FROM tool_approvals WHERE principal = ?1")
                .db()?
                .query_row(params![principal], |r| r.get(0))
                .optional()
                .db()?;
            json.map_or(Ok(Vec::new()), |j| {
                serde_json::from_str(&j).map_err(storage)
            })
        })
        .await
        .map_err(approval_error)
    }

    async fn set_always(
        &self,
        principal: &Principal,
        tools: Vec<String>,
    ) -> Result<(), ApprovalStoreError> {
        let principal = principal.id().to_owned();
        let json = serde_json::to_string(&tools)
            .map_err(|e| ApprovalStoreError::Storage(e.to_string()))?;
        self.run(move |conn, _| {
            let changed = match tools.is_empty() {
                true => conn
                    .prepare_cached("DELETE FROM tool_approvals WHERE principal = ?1")
                    .db()?
                    .execute(params![principal]),
                false => conn
                    .prepare_cached(
                        "INSERT INTO tool_approvals (principal, always) VALUES (?1, ?2)
                         ON CONFLICT (principal) DO UPDATE SET always = excluded.always",
                    )
                    .db()?
                    .execute(params![principal, json]),
            };
            changed.db().map(drop)
        })
        .await
        .map_err(approval_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_sqlite_store_conforms() {
        crate::store::conformance::approvals::run(&SqliteStore::in_memory().unwrap()).await;
    }

    #[tokio::test]
    async fn lists_survive_a_reopen_of_the_history_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.db");
        let alice = Principal::new("alice");
        let store = SqliteStore::open(&path).unwrap();
        store
            .set_always(&alice, vec!["demo__echo".into()])
            .await
            .unwrap();
        drop(store);
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.always(&alice).await.unwrap(), ["demo__echo"]);
    }
}
