//! The PostgreSQL store as an [`ApprovalStore`]: one `tool_approvals` row per principal, the
//! list as a JSON array (text); an empty list deletes the row.

use async_trait::async_trait;

use super::{PostgresStore, no_nul, pg};
use crate::host::Principal;
use crate::store::HistoryError;
use crate::store::rows::storage;
use crate::store::{ApprovalStore, ApprovalStoreError};

fn approval_error(e: HistoryError) -> ApprovalStoreError {
    ApprovalStoreError::Storage(e.to_string())
}

impl PostgresStore {
    async fn always_of(&self, principal: &str) -> Result<Vec<String>, HistoryError> {
        no_nul(&[("principal", principal)])?;
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT always FROM tool_approvals WHERE principal = $1",
                &[&principal],
            )
            .await
            .map_err(pg)?;
        match row {
            Some(row) => {
                let json: String = row.try_get(0).map_err(pg)?;
                serde_json::from_str(&json).map_err(storage)
            }
            None => Ok(Vec::new()),
        }
    }

    async fn set_always_of(&self, principal: &str, tools: &[String]) -> Result<(), HistoryError> {
        no_nul(&[("principal", principal)])?;
        let client = self.client().await?;
        if tools.is_empty() {
            client
                .execute(
                    "DELETE FROM tool_approvals WHERE principal = $1",
                    &[&principal],
                )
                .await
                .map_err(pg)?;
            return Ok(());
        }
        let json = serde_json::to_string(tools).map_err(storage)?;
        client
            .execute(
                "INSERT INTO tool_approvals (principal, always) VALUES ($1, $2)
                 ON CONFLICT (principal) DO UPDATE SET always = EXCLUDED.always",
                &[&principal, &json],
            )
            .await
            .map_err(pg)?;
        Ok(())
    }
}

#[async_trait]
impl ApprovalStore for PostgresStore {
    async fn always(&self, principal: &Principal) -> Result<Vec<String>, ApprovalStoreError> {
        self.always_of(principal.id()).await.map_err(approval_error)
    }

    async fn set_always(
        &self,
        principal: &Principal,
        tools: Vec<String>,
    ) -> Result<(), ApprovalStoreError> {
        self.set_always_of(principal.id(), &tools)
            .await
            .map_err(approval_error)
    }
}
