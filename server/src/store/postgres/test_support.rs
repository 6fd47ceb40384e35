//! Test helpers for the PostgreSQL store (feature `test-support`): a fresh random schema on the
//! test machine's PostgreSQL per test, dropped when the helper is dropped (also when the test
//! panics).
//!
//! Decisions: the server is `LMCHATKIT_TEST_POSTGRES_URL`, by default
//! `postgres://postgres@127.0.0.1:5432/test`. When it cannot be reached, [`TestSchema::new`]
//! panics if the environment variable `CI` is set and otherwise prints why and returns `None`,
//! so the caller skips. Stores of [`TestSchema::connect`] name their connections after the
//! schema (`application_name`), so the drop can end any connection a failed test left in a
//! transaction (its tasks run on the test's runtime, which the drop blocks) instead of waiting
//! for its locks forever; the drop also gives up after a lock timeout, saying so.

use std::time::Duration;

use super::{PostgresOptions, PostgresStore};
use crate::store::HistoryError;

/// The server tests use when `LMCHATKIT_TEST_POSTGRES_URL` is unset.
pub const DEFAULT_TEST_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// A random schema of its own on the test PostgreSQL, dropped (with everything in it) on drop.
#[derive(Debug)]
pub struct TestSchema {
    url: String,
    schema: String,
}

impl TestSchema {
    /// A fresh schema name on the test server, or `None` (after printing why) when the server
    /// is unreachable and `CI` is unset; panics when it is unreachable and `CI` is set.
    pub async fn new() -> Option<Self> {
        let url = std::env::var("LMCHATKIT_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| DEFAULT_TEST_URL.into());
        let probe = async {
            let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
            let task = tokio::spawn(conn);
            client.simple_query("SELECT 1").await?;
            drop(client);
            let _ = task.await;
            Ok::<_, tokio_postgres::Error>(())
        };
        match tokio::time::timeout(Duration::from_secs(5), probe).await {
            Ok(Ok(())) => {}
            outcome => {
                let why = match outcome {
                    Ok(Err(e)) => super::chain(&e),
                    _ => "timed out".into(),
                };
                if std::env::var_os("CI").is_some() {
                    panic!("PostgreSQL at {url} is needed (CI is set): {why}");
                }
                eprintln!("skipped: PostgreSQL at {url} is unreachable ({why})");
                return None;
            }
        }
        let schema = format!("lmck_test_{:016x}", rand::random::<u64>());
        Some(Self { url, schema })
    }

    /// The server's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The schema's name.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The server's URL with the schema's name as `application_name`, so the drop can find
    /// connections a failed test left open.
    pub fn store_url(&self) -> String {
        let sep = if self.url.contains('?') { '&' } else { '?' };
        format!("{}{sep}application_name={}", self.url, self.schema)
    }

    /// Options selecting the schema.
    pub fn options(&self) -> PostgresOptions {
        PostgresOptions::default().with_schema(self.schema.clone())
    }

    /// A store on the schema (migrated at connect).
    pub async fn connect(&self) -> Result<PostgresStore, HistoryError> {
        PostgresStore::connect(&self.store_url(), self.options()).await
    }

    /// A store on the schema whose pool holds one connection and waits `acquire_timeout` for
    /// it (for tests of an exhausted pool).
    pub async fn connect_one(
        &self,
        acquire_timeout: Duration,
    ) -> Result<PostgresStore, HistoryError> {
        let options = self
            .options()
            .with_max_connections(1)
            .with_acquire_timeout(acquire_timeout);
        PostgresStore::connect(&self.store_url(), options).await
    }

    /// Runs `sql` (one or more statements) in the schema on a connection of its own.
    pub async fn execute(
        &self,
        sql: &str,
    ) -> Result<Vec<tokio_postgres::SimpleQueryMessage>, HistoryError> {
        let (client, conn) = tokio_postgres::connect(&self.url, tokio_postgres::NoTls)
            .await
            .map_err(super::pg)?;
        let task = tokio::spawn(conn);
        client
            .batch_execute(&format!("SET search_path = {}", self.schema))
            .await
            .map_err(super::pg)?;
        let out = client.simple_query(sql).await.map_err(super::pg);
        drop(client);
        let _ = task.await;
        out
    }

    /// Locks `table` of the schema (`ACCESS EXCLUSIVE`, in an open transaction on a
    /// connection of its own) until [`TableLock::release`]: what holds a store's statements,
    /// and so its pooled connections, for as long as a test needs.
    pub async fn lock(&self, table: &str) -> Result<TableLock, HistoryError> {
        lock_table(&self.url, &self.schema, table).await
    }
}

/// A table held locked by another session; see [`TestSchema::lock`].
pub struct TableLock {
    client: tokio_postgres::Client,
}

impl TableLock {
    /// Ends the locking transaction.
    pub async fn release(self) -> Result<(), HistoryError> {
        self.client.batch_execute("COMMIT").await.map_err(super::pg)
    }
}

/// Locks `table` of `schema` on the server at `url` until [`TableLock::release`].
pub async fn lock_table(url: &str, schema: &str, table: &str) -> Result<TableLock, HistoryError> {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(super::pg)?;
    tokio::spawn(conn);
    client
        .batch_execute(&format!(
            "SET search_path = {schema}; BEGIN; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"
        ))
        .await
        .map_err(super::pg)?;
    Ok(TableLock { client })
}

impl Drop for TestSchema {
    fn drop(&mut self) {
        let (url, schema) = (self.url.clone(), self.schema.clone());
        // A runtime of its own on a thread of its own: drop runs inside the test's runtime.
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async {
                let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                    .await
                    .map_err(|e| e.to_string())?;
                let task = tokio::spawn(conn);
                // Connections named after the schema (or with it in their name) are this
                // test's: end them, so none holds a lock the drop would wait for.
                let out = client
                    .batch_execute(&format!(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                         WHERE application_name LIKE '%{schema}%' AND pid <> pg_backend_pid();
                         SET lock_timeout = '10s';
                         DROP SCHEMA IF EXISTS {schema} CASCADE"
                    ))
                    .await
                    .map_err(|e| e.to_string());
                drop(client);
                let _ = task.await;
                out
            })
        })
        .join();
        if let Ok(Err(e)) = dropped {
            eprintln!("could not drop the test schema {}: {e}", self.schema);
        }
    }
}
