//! The PostgreSQL store as a [`UserMcpStore`]: one `user_mcp_servers` row per principal and
//! slug; the accepted tools and the pending review as JSON arrays (text); updates checked on
//! the revision in the `UPDATE`'s `WHERE`, as the SQLite store does.

use async_trait::async_trait;
use tokio_postgres::Row;

use super::{PostgresStore, no_nul, pg};
use crate::host::Principal;
use crate::store::HistoryError;
use crate::store::rows::storage;
use crate::store::{UserMcpRecord, UserMcpStore, UserMcpStoreError};

const COLUMNS: &str = "slug, name, url, transport, credentials, enabled, created_at, updated_at, \
                       revision, tools, pending, oauth_status, oauth, oauth_pending";

fn store_error(e: HistoryError) -> UserMcpStoreError {
    UserMcpStoreError::Storage(e.to_string())
}

/// `value` as the string serde makes of it (an enum's name).
fn word(value: impl serde::Serialize) -> Result<String, HistoryError> {
    match serde_json::to_value(value).map_err(storage)? {
        serde_json::Value::String(s) => Ok(s),
        other => Ok(other.to_string()),
    }
}

fn from_word<T: serde::de::DeserializeOwned>(s: String) -> Result<T, HistoryError> {
    serde_json::from_value(serde_json::Value::String(s)).map_err(storage)
}

fn decode(r: &Row) -> Result<UserMcpRecord, HistoryError> {
    let mut rec = UserMcpRecord::new(
        r.try_get::<_, String>(0).map_err(pg)?,
        r.try_get::<_, String>(1).map_err(pg)?,
        r.try_get::<_, String>(2).map_err(pg)?,
        r.try_get(6).map_err(pg)?,
    );
    rec.transport = from_word(r.try_get(3).map_err(pg)?)?;
    rec.credentials = r.try_get(4).map_err(pg)?;
    rec.enabled = r.try_get(5).map_err(pg)?;
    rec.updated_at = r.try_get(7).map_err(pg)?;
    rec.revision = u64::try_from(r.try_get::<_, i64>(8).map_err(pg)?).unwrap_or(0);
    rec.tools = serde_json::from_str(&r.try_get::<_, String>(9).map_err(pg)?).map_err(storage)?;
    rec.pending =
        serde_json::from_str(&r.try_get::<_, String>(10).map_err(pg)?).map_err(storage)?;
    rec.oauth_status = from_word(r.try_get(11).map_err(pg)?)?;
    rec.oauth = r.try_get(12).map_err(pg)?;
    rec.oauth_pending = r.try_get(13).map_err(pg)?;
    Ok(rec)
}

/// The encoded columns of `rec`: transport, tools, pending, OAuth status.
struct Encoded {
    transport: String,
    tools: String,
    pending: String,
    oauth_status: String,
}

fn encode(rec: &UserMcpRecord) -> Result<Encoded, HistoryError> {
    Ok(Encoded {
        transport: word(rec.transport)?,
        tools: serde_json::to_string(&rec.tools).map_err(storage)?,
        pending: serde_json::to_string(&rec.pending).map_err(storage)?,
        oauth_status: word(rec.oauth_status)?,
    })
}

/// Refuses NUL characters in the record's plain-text columns.
fn check(principal: &str, rec: &UserMcpRecord) -> Result<(), HistoryError> {
    no_nul(&[
        ("principal", principal),
        ("slug", &rec.slug),
        ("name", &rec.name),
        ("url", &rec.url),
        (
            "credentials",
            rec.credentials.as_deref().unwrap_or_default(),
        ),
        ("OAuth grant", rec.oauth.as_deref().unwrap_or_default()),
        (
            "OAuth sign-in",
            rec.oauth_pending.as_deref().unwrap_or_default(),
        ),
    ])
}

impl PostgresStore {
    async fn mcp_list(&self, principal: &str) -> Result<Vec<UserMcpRecord>, HistoryError> {
        no_nul(&[("principal", principal)])?;
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {COLUMNS} FROM user_mcp_servers WHERE principal = $1
                     ORDER BY slug COLLATE \"C\""
                ),
                &[&principal],
            )
            .await
            .map_err(pg)?;
        rows.iter().map(decode).collect()
    }

    async fn mcp_get(
        &self,
        principal: &str,
        slug: &str,
    ) -> Result<Option<UserMcpRecord>, HistoryError> {
        no_nul(&[("principal", principal), ("slug", slug)])?;
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT {COLUMNS} FROM user_mcp_servers WHERE principal = $1 AND slug = $2"
                ),
                &[&principal, &slug],
            )
            .await
            .map_err(pg)?;
        row.as_ref().map(decode).transpose()
    }

    /// `true` when inserted, `false` when the slug is taken.
    async fn mcp_create(&self, principal: &str, rec: &UserMcpRecord) -> Result<bool, HistoryError> {
        check(principal, rec)?;
        let enc = encode(rec)?;
        let client = self.client().await?;
        let n = client
            .execute(
                "INSERT INTO user_mcp_servers (principal, slug, name, url, transport,
                    credentials, enabled, created_at, updated_at, revision, tools, pending,
                    oauth_status, oauth, oauth_pending)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $10, $11, $12, $13, $14)
                 ON CONFLICT (principal, slug) DO NOTHING",
                &[
                    &principal,
                    &rec.slug,
                    &rec.name,
                    &rec.url,
                    &enc.transport,
                    &rec.credentials,
                    &rec.enabled,
                    &rec.created_at,
                    &rec.updated_at,
                    &enc.tools,
                    &enc.pending,
                    &enc.oauth_status,
                    &rec.oauth,
                    &rec.oauth_pending,
                ],
            )
            .await
            .map_err(pg)?;
        Ok(n > 0)
    }

    /// (updated, exists).
    async fn mcp_update(
        &self,
        principal: &str,
        rec: &UserMcpRecord,
    ) -> Result<(bool, bool), HistoryError> {
        check(principal, rec)?;
        let enc = encode(rec)?;
        let revision = i64::try_from(rec.revision).unwrap_or(i64::MAX);
        let client = self.client().await?;
        let n = client
            .execute(
                "UPDATE user_mcp_servers SET name = $3, url = $4, transport = $5,
                    credentials = $6, enabled = $7, updated_at = $8,
                    revision = revision + 1, tools = $9, pending = $10,
                    oauth_status = $12, oauth = $13, oauth_pending = $14
                 WHERE principal = $1 AND slug = $2 AND revision = $11",
                &[
                    &principal,
                    &rec.slug,
                    &rec.name,
                    &rec.url,
                    &enc.transport,
                    &rec.credentials,
                    &rec.enabled,
                    &rec.updated_at,
                    &enc.tools,
                    &enc.pending,
                    &revision,
                    &enc.oauth_status,
                    &rec.oauth,
                    &rec.oauth_pending,
                ],
            )
            .await
            .map_err(pg)?;
        if n > 0 {
            return Ok((true, true));
        }
        let exists = client
            .query_opt(
                "SELECT 1 FROM user_mcp_servers WHERE principal = $1 AND slug = $2",
                &[&principal, &rec.slug],
            )
            .await
            .map_err(pg)?
            .is_some();
        Ok((false, exists))
    }

    async fn mcp_delete(&self, principal: &str, slug: &str) -> Result<bool, HistoryError> {
        no_nul(&[("principal", principal), ("slug", slug)])?;
        let client = self.client().await?;
        let n = client
            .execute(
                "DELETE FROM user_mcp_servers WHERE principal = $1 AND slug = $2",
                &[&principal, &slug],
            )
            .await
            .map_err(pg)?;
        Ok(n > 0)
    }
}

#[async_trait]
impl UserMcpStore for PostgresStore {
    async fn list(&self, principal: &Principal) -> Result<Vec<UserMcpRecord>, UserMcpStoreError> {
        self.mcp_list(principal.id()).await.map_err(store_error)
    }

    async fn get(
        &self,
        principal: &Principal,
        slug: &str,
    ) -> Result<Option<UserMcpRecord>, UserMcpStoreError> {
        self.mcp_get(principal.id(), slug)
            .await
            .map_err(store_error)
    }

    async fn create(
        &self,
        principal: &Principal,
        record: UserMcpRecord,
    ) -> Result<(), UserMcpStoreError> {
        match self.mcp_create(principal.id(), &record).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(UserMcpStoreError::Duplicate(record.slug)),
            Err(e) => Err(store_error(e)),
        }
    }

    async fn update(
        &self,
        principal: &Principal,
        record: UserMcpRecord,
    ) -> Result<bool, UserMcpStoreError> {
        match self.mcp_update(principal.id(), &record).await {
            Ok((true, _)) => Ok(true),
            Ok((false, true)) => Err(UserMcpStoreError::Conflict(record.slug)),
            Ok((false, false)) => Ok(false),
            Err(e) => Err(store_error(e)),
        }
    }

    async fn delete(&self, principal: &Principal, slug: &str) -> Result<bool, UserMcpStoreError> {
        self.mcp_delete(principal.id(), slug)
            .await
            .map_err(store_error)
    }
}
