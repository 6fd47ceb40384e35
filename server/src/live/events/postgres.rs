//! The PostgreSQL side of `/api/events` across instances; the logic both engines share, and
//! its decisions, are in `fanout`.
//!
//! Tables (the history store's migration 2): `engine_events` (id, scope, event JSON) and
//! `engine_event_seq`, one row holding the counter.
//!
//! Decisions of this engine:
//! - **A publish is one statement**: it bumps the counter, inserts the event under the new id
//!   and notifies the `…_events` channel. The counter's row lock is held until the statement
//!   commits, so ids commit in the order they are taken: a reader that has seen id `n` can
//!   never later find a smaller one appear (a sequence would not promise that).
//! - **The reader waits for a notification** (or [`BLOCK`]) and then reads the rows after its
//!   last; the notification only wakes it.
//! - **Trimming**: every 256th event deletes those more than the log's length behind it.

use async_trait::async_trait;
use tokio::sync::broadcast;

use super::fanout::{BLOCK, Entry, EventLog, EventReader, READ_COUNT};
use crate::live::{Channel, EngineError, Postgres};

/// Events in PostgreSQL.
pub(super) struct PostgresEvents {
    pg: Postgres,
}

impl PostgresEvents {
    pub(super) fn new(pg: Postgres) -> Self {
        Self { pg }
    }
}

/// Entries from rows of `id, scope, event`.
fn entries(pg: &Postgres, rows: Vec<tokio_postgres::Row>) -> Result<Vec<Entry>, EngineError> {
    rows.into_iter()
        .map(|r| {
            let id: i64 = r.try_get(0).map_err(|e| pg.error(e))?;
            Ok(Entry {
                id: id as u64,
                scope: r.try_get(1).map_err(|e| pg.error(e))?,
                event: r.try_get(2).map_err(|e| pg.error(e))?,
            })
        })
        .collect()
}

#[async_trait]
impl EventLog for PostgresEvents {
    async fn publish(
        &self,
        now_ms: u64,
        len: usize,
        scope: &str,
        event: &str,
    ) -> Result<u64, EngineError> {
        let client = self.pg.client().await?;
        let e = |e| self.pg.error(e);
        let channel = self.pg.channel(Channel::Events);
        // Twice: the first publish ever finds no counter and starts it at the wall clock.
        for _ in 0..2 {
            let row = client
                .query_opt(
                    "WITH c AS (UPDATE engine_event_seq SET n = n + 1 RETURNING n),
                     i AS (INSERT INTO engine_events (id, scope, event)
                           SELECT n, $1, $2 FROM c RETURNING id)
                     SELECT id, pg_notify($3, id::text) FROM i",
                    &[&scope, &event, &channel],
                )
                .await
                .map_err(e)?;
            if let Some(row) = row {
                let id: i64 = row.try_get(0).map_err(e)?;
                if id % 256 == 0 {
                    client
                        .execute(
                            "DELETE FROM engine_events WHERE id <= $1",
                            &[&(id - len as i64)],
                        )
                        .await
                        .map_err(e)?;
                }
                return Ok(id as u64);
            }
            client
                .execute(
                    "INSERT INTO engine_event_seq (n) VALUES ($1) ON CONFLICT DO NOTHING",
                    &[&(now_ms as i64)],
                )
                .await
                .map_err(e)?;
        }
        Err(EngineError::Postgres(
            "the event counter could not be started".into(),
        ))
    }

    async fn range(&self, from: u64, to: u64, count: u64) -> Result<Vec<Entry>, EngineError> {
        let client = self.pg.client().await?;
        let rows = client
            .query(
                "SELECT id, scope, event FROM engine_events
                 WHERE id >= $1 AND id <= $2 ORDER BY id LIMIT $3",
                &[&(from as i64), &(to as i64), &(count as i64)],
            )
            .await
            .map_err(|e| self.pg.error(e))?;
        entries(&self.pg, rows)
    }

    async fn seq(&self) -> Result<Option<u64>, EngineError> {
        let client = self.pg.client().await?;
        let row = client
            .query_opt("SELECT n FROM engine_event_seq", &[])
            .await
            .map_err(|e| self.pg.error(e))?;
        row.map(|r| r.try_get::<_, i64>(0).map(|n| n as u64))
            .transpose()
            .map_err(|e| self.pg.error(e))
    }

    async fn reader(&self) -> Result<Box<dyn EventReader>, EngineError> {
        Ok(Box::new(Reader {
            pg: self.pg.clone(),
            notices: self.pg.notices(Channel::Events),
        }))
    }
}

/// The reader: the rows after its last, then a wait for a notification.
struct Reader {
    pg: Postgres,
    notices: broadcast::Receiver<String>,
}

impl Reader {
    async fn rows(&self, pos: u64) -> Result<Vec<Entry>, EngineError> {
        let client = self.pg.client().await?;
        let rows = client
            .query(
                "SELECT id, scope, event FROM engine_events WHERE id > $1 ORDER BY id LIMIT $2",
                &[&(pos as i64), &(READ_COUNT as i64)],
            )
            .await
            .map_err(|e| self.pg.error(e))?;
        entries(&self.pg, rows)
    }
}

#[async_trait]
impl EventReader for Reader {
    async fn tail(&mut self) -> Result<Option<u64>, EngineError> {
        let client = self.pg.client().await?;
        let row = client
            .query_one("SELECT max(id) FROM engine_events", &[])
            .await
            .map_err(|e| self.pg.error(e))?;
        let max: Option<i64> = row.try_get(0).map_err(|e| self.pg.error(e))?;
        Ok(max.map(|m| m as u64))
    }

    async fn after(&mut self, pos: u64) -> Result<Vec<Entry>, EngineError> {
        // Whatever was announced before this read is covered by it.
        while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = self.notices.try_recv() {
        }
        let found = self.rows(pos).await?;
        if !found.is_empty() {
            return Ok(found);
        }
        let wait = async {
            match self.notices.recv().await {
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
            }
        };
        let _ = tokio::time::timeout(BLOCK, wait).await;
        self.rows(pos).await
    }
}
