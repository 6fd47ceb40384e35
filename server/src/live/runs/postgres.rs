//! The PostgreSQL side of runs across instances ([`crate::live::Postgres`]); the logic both
//! engines share, and its decisions, are in `shared`.
//!
//! Tables (created by the history store's migration 2):
//! - `engine_runs` — one row per run: owner, thread, message id, resume base, status, the
//!   frames that end the log when its instance is lost (`lost`), `stop` once a stop was asked,
//!   `seq` (the id of its log's last frame), `lease_until` and `expires_at`. A partial unique
//!   index on `(owner, thread) WHERE status = 'running'` is what lets one run at a time write a
//!   conversation, on every instance.
//! - `engine_run_frames` — the log: `(run_id, seq)` and the frame's bytes, or, for the entry
//!   after the last frame, the status the run ended with.
//!
//! Decisions of this engine:
//! - **Each operation is one statement, or one transaction** holding the run's row lock, so a
//!   start, an append, an end and a takeover never interleave. An append is a single statement
//!   (update the run while it runs, insert the frames, notify), so it costs one round trip.
//! - **Followers wait for a notification** (channel `…_runs`, the run id as payload) instead of
//!   blocking a connection: a follower holds no connection while it waits, and looks again
//!   after [`BLOCK`] whether or not anything came.
//! - **Lifetimes are rows with a deadline**, compared with the server's clock; expired runs (and
//!   their logs, by cascade) are deleted by the starts that find them, a few at a time.

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use tokio::sync::broadcast;

use super::RunStatus;
use super::local::RETENTION;
use super::shared::{
    BATCH, BLOCK, Found, LEASE, LogReader, MAX_AGE, MAX_ENTRIES, Meta, NewRun, Read, RunLog,
    parse_status, status_str,
};
use crate::live::{Channel, EngineError, Postgres};

/// How many expired runs a start deletes at most.
const SWEEP: i64 = 16;

/// Runs in PostgreSQL.
pub(crate) struct PostgresRuns {
    pg: Postgres,
}

impl PostgresRuns {
    pub(crate) fn new(pg: Postgres) -> Self {
        Self { pg }
    }

    /// Deletes a few runs whose lifetime ended (their frames go with them).
    async fn sweep(&self, client: &tokio_postgres::Client) -> Result<(), EngineError> {
        client
            .execute(
                "DELETE FROM engine_runs WHERE id IN (
                     SELECT id FROM engine_runs WHERE expires_at < clock_timestamp()
                     LIMIT $1 FOR UPDATE SKIP LOCKED)",
                &[&SWEEP],
            )
            .await
            .map_err(|e| self.pg.error(e))?;
        Ok(())
    }
}

fn millis(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[async_trait]
impl RunLog for PostgresRuns {
    async fn start(&self, run: &NewRun<'_>) -> Result<Option<String>, EngineError> {
        let client = self.pg.client().await?;
        let e = |e| self.pg.error(e);
        self.sweep(&client).await?;
        // Twice: the holder found may end between the insert and the look at it.
        for _ in 0..2 {
            let inserted = client
                .query_opt(
                    "INSERT INTO engine_runs (id, owner, thread, message_id, resume_base, status,
                         lost, lease_until, expires_at)
                     VALUES ($1, $2, $3, $4, $5, 'running', $6,
                         clock_timestamp() + $7 * interval '1 millisecond',
                         clock_timestamp() + $8 * interval '1 millisecond')
                     ON CONFLICT (owner, thread) WHERE status = 'running' AND thread IS NOT NULL
                     DO NOTHING
                     RETURNING id",
                    &[
                        &run.id,
                        &run.owner,
                        &run.thread,
                        &run.message_id,
                        &run.resume_base,
                        &run.lost,
                        &millis(LEASE),
                        &millis(MAX_AGE),
                    ],
                )
                .await
                .map_err(e)?;
            if inserted.is_some() {
                return Ok(None);
            }
            if let Some(thread) = run.thread
                && let Some(holder) = self.active(run.owner, thread).await?
            {
                return Ok(Some(holder));
            }
        }
        Ok(Some(String::new()))
    }

    async fn append(&self, id: &str, batch: &[(u64, Bytes)]) -> Result<Found, EngineError> {
        let client = self.pg.client().await?;
        let seqs: Vec<i64> = batch.iter().map(|(s, _)| *s as i64).collect();
        let frames: Vec<&[u8]> = batch.iter().map(|(_, f)| f.as_ref()).collect();
        let last = seqs.iter().copied().max().unwrap_or(0);
        let row = client
            .query_opt(
                "WITH r AS (
                     UPDATE engine_runs SET seq = GREATEST(seq, $2)
                     WHERE id = $1 AND status = 'running' RETURNING id),
                 i AS (
                     INSERT INTO engine_run_frames (run_id, seq, frame)
                     SELECT r.id, f.seq, f.frame
                     FROM r, unnest($3::bigint[], $4::bytea[]) AS f (seq, frame)
                     ON CONFLICT DO NOTHING)
                 SELECT pg_notify($5, r.id) FROM r",
                &[&id, &last, &seqs, &frames, &self.pg.channel(Channel::Runs)],
            )
            .await
            .map_err(|e| self.pg.error(e))?;
        // A long reply keeps its end: frames far behind the last go, now and then.
        let keep = MAX_ENTRIES as i64;
        if row.is_some() && last > keep && (last - seqs.len() as i64) / 1024 != last / 1024 {
            client
                .execute(
                    "DELETE FROM engine_run_frames WHERE run_id = $1 AND seq <= $2",
                    &[&id, &(last - keep)],
                )
                .await
                .map_err(|e| self.pg.error(e))?;
        }
        // The run's row outlives a restart of PostgreSQL: a missing one is an expired run.
        Ok(if row.is_some() {
            Found::Running
        } else {
            Found::Ended
        })
    }

    async fn end(&self, id: &str, status: RunStatus, reap: bool) -> Result<bool, EngineError> {
        let e = |e| self.pg.error(e);
        let mut client = self.pg.client().await?;
        let tx = client.transaction().await.map_err(e)?;
        let row = tx
            .query_opt(
                "UPDATE engine_runs SET status = $2,
                     expires_at = clock_timestamp() + $3 * interval '1 millisecond'
                 WHERE id = $1 AND status = 'running'
                     AND (NOT $4 OR lease_until < clock_timestamp())
                 RETURNING seq, lost",
                &[&id, &status_str(status), &millis(RETENTION), &reap],
            )
            .await
            .map_err(e)?;
        let Some(row) = row else {
            return Ok(false);
        };
        let mut seq: i64 = row.try_get(0).map_err(e)?;
        let lost: String = row.try_get(1).map_err(e)?;
        let mut seqs = Vec::new();
        let mut frames: Vec<Option<Vec<u8>>> = Vec::new();
        let mut statuses: Vec<Option<&str>> = Vec::new();
        if reap {
            for data in serde_json::from_str::<Vec<String>>(&lost).unwrap_or_default() {
                seq += 1;
                seqs.push(seq);
                frames.push(Some(format!("id: {seq}\ndata: {data}\n\n").into_bytes()));
                statuses.push(None);
            }
        }
        seqs.push(seq + 1);
        frames.push(None);
        statuses.push(Some(status_str(status)));
        tx.execute(
            "INSERT INTO engine_run_frames (run_id, seq, frame, status)
             SELECT $1, f.seq, f.frame, f.status
             FROM unnest($2::bigint[], $3::bytea[], $4::text[]) AS f (seq, frame, status)
             ON CONFLICT DO NOTHING",
            &[&id, &seqs, &frames, &statuses],
        )
        .await
        .map_err(e)?;
        tx.execute(
            "UPDATE engine_runs SET seq = $2 WHERE id = $1",
            &[&id, &(seq + 1)],
        )
        .await
        .map_err(e)?;
        tx.execute(
            "SELECT pg_notify($1, $2)",
            &[&self.pg.channel(Channel::Runs), &id],
        )
        .await
        .map_err(e)?;
        tx.commit().await.map_err(e)?;
        Ok(true)
    }

    async fn refresh(&self, id: &str) -> Result<Found, EngineError> {
        let client = self.pg.client().await?;
        let row = client
            .query_opt(
                "UPDATE engine_runs SET
                     lease_until = clock_timestamp() + $2 * interval '1 millisecond',
                     expires_at = clock_timestamp() + $3 * interval '1 millisecond'
                 WHERE id = $1 AND status = 'running' RETURNING stop",
                &[&id, &millis(LEASE), &millis(MAX_AGE)],
            )
            .await
            .map_err(|e| self.pg.error(e))?;
        Ok(match row {
            Some(r) if r.try_get::<_, bool>(0).unwrap_or(false) => Found::StopAsked,
            Some(_) => Found::Running,
            None => Found::Ended,
        })
    }

    async fn stop(&self, id: &str) -> Result<(), EngineError> {
        let client = self.pg.client().await?;
        client
            .query_opt(
                "UPDATE engine_runs SET stop = true WHERE id = $1 AND status = 'running'
                 RETURNING pg_notify($2, id)",
                &[&id, &self.pg.channel(Channel::Stops)],
            )
            .await
            .map_err(|e| self.pg.error(e))?;
        Ok(())
    }

    async fn load(&self, id: &str) -> Result<Option<Meta>, EngineError> {
        let client = self.pg.client().await?;
        let e = |e| self.pg.error(e);
        let row = client
            .query_opt(
                "SELECT owner, message_id, resume_base, thread FROM engine_runs
                 WHERE id = $1 AND expires_at > clock_timestamp()",
                &[&id],
            )
            .await
            .map_err(e)?;
        let Some(row) = row else { return Ok(None) };
        let base: Option<String> = row.try_get(2).map_err(e)?;
        Ok(Some(Meta {
            owner: row.try_get(0).map_err(e)?,
            thread: row.try_get(3).map_err(e)?,
            message_id: row.try_get(1).map_err(e)?,
            resume_base: base.and_then(|b| serde_json::from_str(&b).ok()),
        }))
    }

    async fn status(&self, id: &str) -> Result<Option<(RunStatus, bool)>, EngineError> {
        let client = self.pg.client().await?;
        let e = |e| self.pg.error(e);
        let row = client
            .query_opt(
                "SELECT status, lease_until > clock_timestamp() FROM engine_runs
                 WHERE id = $1 AND expires_at > clock_timestamp()",
                &[&id],
            )
            .await
            .map_err(e)?;
        let Some(row) = row else { return Ok(None) };
        let status: String = row.try_get(0).map_err(e)?;
        Ok(Some((parse_status(&status), row.try_get(1).map_err(e)?)))
    }

    async fn active(&self, owner: &str, thread: &str) -> Result<Option<String>, EngineError> {
        let client = self.pg.client().await?;
        let e = |e| self.pg.error(e);
        let row = client
            .query_opt(
                "SELECT id FROM engine_runs
                 WHERE owner = $1 AND thread = $2 AND status = 'running'",
                &[&owner, &thread],
            )
            .await
            .map_err(e)?;
        row.map(|r| r.try_get(0)).transpose().map_err(e)
    }

    fn reader(&self, id: &str) -> Box<dyn LogReader> {
        Box::new(Reader {
            pg: self.pg.clone(),
            id: id.to_owned(),
            notices: self.pg.notices(Channel::Runs),
        })
    }

    async fn stops(&self) -> Result<BoxStream<'static, String>, EngineError> {
        let notices = self.pg.notices(Channel::Stops);
        Ok(futures_util::stream::unfold(notices, |mut rx| async move {
            loop {
                match rx.recv().await {
                    Ok(id) if !id.is_empty() => return Some((id, rx)),
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        })
        .boxed())
    }
}

/// A follower's reader: reads the rows after its last, then waits for a notification about
/// its run (or [`BLOCK`]) and reads again.
struct Reader {
    pg: Postgres,
    id: String,
    /// Subscribed before the first read, so nothing appended after it goes unnoticed.
    notices: broadcast::Receiver<String>,
}

impl Reader {
    async fn rows(&self, after: u64) -> Result<Read, EngineError> {
        let client = self.pg.client().await?;
        let e = |e| self.pg.error(e);
        let rows = client
            .query(
                "SELECT seq, frame, status FROM engine_run_frames
                 WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                &[&self.id, &(after as i64), &(BATCH as i64)],
            )
            .await
            .map_err(e)?;
        let (mut frames, mut last, mut ended) = (Vec::new(), after, false);
        for row in rows {
            let seq: i64 = row.try_get(0).map_err(e)?;
            let frame: Option<Vec<u8>> = row.try_get(1).map_err(e)?;
            match frame {
                Some(f) => {
                    frames.push(Bytes::from(f));
                    last = seq as u64;
                }
                None => {
                    ended = true;
                    break;
                }
            }
        }
        if frames.is_empty() && !ended {
            return Ok(Read::Nothing);
        }
        Ok(Read::Entries {
            frames,
            last,
            ended,
        })
    }
}

#[async_trait]
impl LogReader for Reader {
    async fn read(&mut self, after: u64) -> Result<Read, EngineError> {
        // Whatever was announced before this read is covered by it.
        while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = self.notices.try_recv() {
        }
        if let found @ Read::Entries { .. } = self.rows(after).await? {
            return Ok(found);
        }
        let wait = async {
            loop {
                match self.notices.recv().await {
                    Ok(id) if id == self.id || id.is_empty() => return,
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => return,
                    Err(broadcast::error::RecvError::Closed) => {
                        return std::future::pending().await;
                    }
                }
            }
        };
        let _ = tokio::time::timeout(BLOCK, wait).await;
        self.rows(after).await
    }
}
