//! The SQLite store as a [`UserMcpStore`]: one `user_mcp_servers` row per principal and slug in
//! the history's file; the accepted tools and the pending review as JSON arrays; updates
//! checked on the revision in the `UPDATE`'s `WHERE`.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, Row, params};

use super::SqliteStore;
use super::queries::Db;
use crate::host::Principal;
use crate::store::HistoryError;
use crate::store::rows::storage;
use crate::store::{UserMcpRecord, UserMcpStore, UserMcpStoreError};

const COLUMNS: &str = "slug, name, url, transport, credentials, enabled, created_at, updated_at, \
                       revision, tools, pending, oauth_status, oauth, oauth_pending";

fn store_error(e: HistoryError) -> UserMcpStoreError {
    UserMcpStoreError::Storage(e.to_string())
}

/// The row's columns, JSON (and the OAuth status) still encoded.
type RawRow = (UserMcpRecord, String, String, String, String);

fn raw(r: &Row<'_>) -> rusqlite::Result<RawRow> {
    let mut rec = UserMcpRecord::new(
        r.get::<_, String>(0)?,
        r.get::<_, String>(1)?,
        r.get::<_, String>(2)?,
        r.get(6)?,
    );
    rec.credentials = r.get(4)?;
    rec.enabled = r.get(5)?;
    rec.updated_at = r.get(7)?;
    rec.revision = r.get::<_, i64>(8)?.try_into().unwrap_or(0);
    rec.oauth = r.get(12)?;
    rec.oauth_pending = r.get(13)?;
    Ok((rec, r.get(3)?, r.get(9)?, r.get(10)?, r.get(11)?))
}

fn decode(
    (mut rec, transport, tools, pending, oauth_status): RawRow,
) -> Result<UserMcpRecord, HistoryError> {
    rec.transport =
        serde_json::from_value(serde_json::Value::String(transport)).map_err(storage)?;
    rec.oauth_status =
        serde_json::from_value(serde_json::Value::String(oauth_status)).map_err(storage)?;
    rec.tools = serde_json::from_str(&tools).map_err(storage)?;
    rec.pending = serde_json::from_str(&pending).map_err(storage)?;
    Ok(rec)
}

/// The encoded columns of `rec`: transport, tools, pending, OAuth status.
struct Encoded {
    transport: String,
    tools: String,
    pending: String,
    oauth_status: String,
}

/// `value` as the string serde makes of it (an enum's name).
fn word(value: impl serde::Serialize) -> Result<String, UserMcpStoreError> {
    match serde_json::to_value(value).map_err(|e| UserMcpStoreError::Storage(e.to_string()))? {
        serde_json::Value::String(s) => Ok(s),
        other => Ok(other.to_string()),
    }
}

fn encode(rec: &UserMcpRecord) -> Result<Encoded, UserMcpStoreError> {
    let e = |e: serde_json::Error| UserMcpStoreError::Storage(e.to_string());
    Ok(Encoded {
        transport: word(rec.transport)?,
        tools: serde_json::to_string(&rec.tools).map_err(e)?,
        pending: serde_json::to_string(&rec.pending).map_err(e)?,
        oauth_status: word(rec.oauth_status)?,
    })
}

#[async_trait]
impl UserMcpStore for SqliteStore {
    async fn list(&self, principal: &Principal) -> Result<Vec<UserMcpRecord>, UserMcpStoreError> {
        let principal = principal.id().to_owned();
        self.run(move |conn, _| {
            let rows = conn
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM user_mcp_servers WHERE principal = ?1 ORDER BY slug"
                ))
                .db()?
                .query_map(params![principal], raw)
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            rows.into_iter().map(decode).collect()
        })
        .await
        .map_err(store_error)
    }

    async fn get(
        &self,
        principal: &Principal,
        slug: &str,
    ) -> Result<Option<UserMcpRecord>, UserMcpStoreError> {
        let (principal, slug) = (principal.id().to_owned(), slug.to_owned());
        self.run(move |conn, _| {
            let row = conn
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM user_mcp_servers WHERE principal = ?1 AND slug = ?2"
                ))
                .db()?
                .query_row(params![principal, slug], raw)
                .optional()
                .db()?;
            row.map(decode).transpose()
        })
        .await
        .map_err(store_error)
    }

    async fn create(
        &self,
        principal: &Principal,
        record: UserMcpRecord,
    ) -> Result<(), UserMcpStoreError> {
        let principal = principal.id().to_owned();
        let enc = encode(&record)?;
        let slug = record.slug.clone();
        let inserted = self
            .run(move |conn, _| {
                let n = conn
                    .prepare_cached(
                        "INSERT INTO user_mcp_servers (principal, slug, name, url, transport,
                            credentials, enabled, created_at, updated_at, revision, tools, pending,
                            oauth_status, oauth, oauth_pending)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1, ?10, ?11, ?12, ?13, ?14)
                         ON CONFLICT (principal, slug) DO NOTHING",
                    )
                    .db()?
                    .execute(params![
                        principal,
                        record.slug,
                        record.name,
                        record.url,
                        enc.transport,
                        record.credentials,
                        record.enabled,
                        record.created_at,
                        record.updated_at,
                        enc.tools,
                        enc.pending,
                        enc.oauth_status,
                        record.oauth,
                        record.oauth_pending
                    ])
                    .db()?;
                Ok(n > 0)
            })
            .await
            .map_err(store_error)?;
        match inserted {
            true => Ok(()),
            false => Err(UserMcpStoreError::Duplicate(slug)),
        }
    }

    async fn update(
        &self,
        principal: &Principal,
        record: UserMcpRecord,
    ) -> Result<bool, UserMcpStoreError> {
        let principal = principal.id().to_owned();
        let enc = encode(&record)?;
        let slug = record.slug.clone();
        let revision = i64::try_from(record.revision).unwrap_or(i64::MAX);
        // (updated, exists)
        let (updated, exists) = self
            .run(move |conn, _| {
                let n = conn
                    .prepare_cached(
                        "UPDATE user_mcp_servers SET name = ?3, url = ?4, transport = ?5,
                            credentials = ?6, enabled = ?7, updated_at = ?8,
                            revision = revision + 1, tools = ?9, pending = ?10,
                            oauth_status = ?12, oauth = ?13, oauth_pending = ?14
                         WHERE principal = ?1 AND slug = ?2 AND revision = ?11",
                    )
                    .db()?
                    .execute(params![
                        principal,
                        record.slug,
                        record.name,
                        record.url,
                        enc.transport,
                        record.credentials,
                        record.enabled,
                        record.updated_at,
                        enc.tools,
                        enc.pending,
                        revision,
                        enc.oauth_status,
                        record.oauth,
                        record.oauth_pending
                    ])
                    .db()?;
                if n > 0 {
                    return Ok((true, true));
                }
                let exists = conn
                    .prepare_cached(
                        "SELECT 1 FROM user_mcp_servers WHERE principal = ?1 AND slug = ?2",
                    )
                    .db()?
                    .query_row(params![principal, record.slug], |_| Ok(()))
                    .optional()
                    .db()?
                    .is_some();
                Ok((false, exists))
            })
            .await
            .map_err(store_error)?;
        match (updated, exists) {
            (true, _) => Ok(true),
            (false, true) => Err(UserMcpStoreError::Conflict(slug)),
            (false, false) => Ok(false),
        }
    }

    async fn delete(&self, principal: &Principal, slug: &str) -> Result<bool, UserMcpStoreError> {
        let (principal, slug) = (principal.id().to_owned(), slug.to_owned());
        self.run(move |conn, _| {
            let n = conn
                .prepare_cached("DELETE FROM user_mcp_servers WHERE principal = ?1 AND slug = ?2")
                .db()?
                .execute(params![principal, slug])
                .db()?;
            Ok(n > 0)
        })
        .await
        .map_err(store_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_sqlite_store_conforms() {
        crate::store::conformance::user_mcp::run(&SqliteStore::in_memory().unwrap()).await;
    }

    #[tokio::test]
    async fn servers_survive_a_reopen_of_the_history_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.db");
        let alice = Principal::new("alice");
        let store = SqliteStore::open(&path).unwrap();
        let mut rec = UserMcpRecord::new("docs", "Docs", "https://docs.example/mcp", 5);
        rec.credentials = Some("lmck1.k1.c2VhbGVk".into());
        store.create(&alice, rec).await.unwrap();
        drop(store);
        let store = SqliteStore::open(&path).unwrap();
        let got = store.get(&alice, "docs").await.unwrap().unwrap();
        assert_eq!(got.credentials.as_deref(), Some("lmck1.k1.c2VhbGVk"));
        assert_eq!((got.created_at, got.revision), (5, 1));
    }
}
