//! View tokens in PostgreSQL (feature `postgres`, [`crate::live::Postgres`]), so a view URL
//! issued by one instance loads from any instance behind the same load balancer, once; the
//! same rules as in memory and in Redis (`redis`).
//!
//! Decisions:
//! - **The ticket is stored, not signed**: one row of `engine_views` per token with its
//!   deadline; the URL stays a bare random token.
//! - **Redeemed once across instances**: the page's check (the token's principal is the caller)
//!   runs on a read first, so a token refused to another caller stays valid for the one it was
//!   issued to; then `DELETE … RETURNING` hands the ticket to exactly one redeemer.
//! - **Per principal cap** ([`PER_PRINCIPAL`]): an issue, in one transaction holding an
//!   advisory lock on the principal, drops the principal's expired tokens and its own oldest
//!   while it is over the cap, then stores the new one. One user opening thousands of views
//!   cannot evict another user's.
//! - **Expired rows** of every principal are deleted by every 64th issue, a batch at a time,
//!   so the table holds about the tokens of one lifetime.
//! - **PostgreSQL's pool exhausted** is a 503, another failure a 500 naming it (never a panic,
//!   never an unchecked view).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{PER_PRINCIPAL, ViewTicket, fresh_token};
use crate::error::Failure;
use crate::live::Postgres;

/// The view tokens of every instance, in PostgreSQL.
pub(crate) struct PostgresViews {
    pg: Postgres,
    ttl: Duration,
    issued: AtomicU64,
}

impl std::fmt::Debug for PostgresViews {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresViews")
            .field("pg", &self.pg)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

fn failed(e: crate::live::EngineError) -> Failure {
    e.answer("view tokens")
}

impl PostgresViews {
    /// Tokens in `pg` that last `ttl`.
    pub(crate) fn new(pg: Postgres, ttl: Duration) -> Self {
        Self {
            pg,
            ttl,
            issued: AtomicU64::new(0),
        }
    }

    /// Issues a fresh token for `ticket`.
    pub(crate) async fn issue(&self, ticket: ViewTicket) -> Result<String, Failure> {
        let token = fresh_token();
        let json = serde_json::to_string(&ticket)
            .map_err(|e| Failure::Internal(format!("view ticket: {e}")))?;
        let ttl_ms = self.ttl.as_secs_f64() * 1000.0;
        let e = |e| failed(self.pg.error(e));
        let mut client = self.pg.client().await.map_err(failed)?;
        let tx = client.transaction().await.map_err(e)?;
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('lmchatkit.views.' || $1, 0))",
            &[&ticket.principal],
        )
        .await
        .map_err(e)?;
        let keep = PER_PRINCIPAL as i64 - 1;
        tx.execute(
            "DELETE FROM engine_views WHERE principal = $1 AND (expires_at <= clock_timestamp()
                 OR token IN (SELECT token FROM engine_views WHERE principal = $1
                              ORDER BY issued_at DESC, token OFFSET $2))",
            &[&ticket.principal, &keep],
        )
        .await
        .map_err(e)?;
        tx.execute(
            "INSERT INTO engine_views (token, principal, ticket, expires_at)
             VALUES ($1, $2, $3, clock_timestamp() + $4 * interval '1 millisecond')",
            &[&token, &ticket.principal, &json, &ttl_ms],
        )
        .await
        .map_err(e)?;
        tx.commit().await.map_err(e)?;
        if self.issued.fetch_add(1, Ordering::Relaxed) % 64 == 63 {
            let swept = client
                .execute(
                    "DELETE FROM engine_views WHERE token IN (
                         SELECT token FROM engine_views WHERE expires_at <= clock_timestamp()
                         LIMIT 1000)",
                    &[],
                )
                .await;
            if let Err(err) = swept {
                tracing::warn!(error = %self.pg.error(err), "deleting expired view tokens failed");
            }
        }
        Ok(token)
    }

    /// Redeems `token` once across instances, if `accept` agrees; `None` when unknown, used,
    /// expired or refused (a refused token stays valid).
    pub(crate) async fn redeem(
        &self,
        token: &str,
        accept: impl FnOnce(&ViewTicket) -> bool,
    ) -> Result<Option<ViewTicket>, Failure> {
        if !super::well_formed(token) {
            return Ok(None);
        }
        let e = |e| failed(self.pg.error(e));
        let client = self.pg.client().await.map_err(failed)?;
        let row = client
            .query_opt(
                "SELECT ticket FROM engine_views
                 WHERE token = $1 AND expires_at > clock_timestamp()",
                &[&token],
            )
            .await
            .map_err(e)?;
        let Some(row) = row else { return Ok(None) };
        let json: String = row.try_get(0).map_err(e)?;
        let Ok(ticket) = serde_json::from_str::<ViewTicket>(&json) else {
            tracing::warn!("a stored view ticket does not parse; refused");
            return Ok(None);
        };
        if !accept(&ticket) {
            return Ok(None);
        }
        // Only one redeemer gets it.
        let taken = client
            .execute(
                "DELETE FROM engine_views WHERE token = $1 AND expires_at > clock_timestamp()",
                &[&token],
            )
            .await
            .map_err(e)?;
        Ok((taken == 1).then_some(ticket))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Views, conformance};
    use super::*;

    const LONG: Duration = Duration::from_secs(60);

    /// The machine's PostgreSQL under a fresh schema, or `None` (skipped; a failure in CI).
    async fn pg() -> Option<Postgres> {
        let schema = format!("lmck_views_{:016x}", rand::random::<u64>());
        let options = crate::store::PostgresOptions::default().with_schema(schema);
        match Postgres::connect("postgres://postgres@127.0.0.1:5432/test", options).await {
            Ok(pg) => Some(pg),
            Err(e) if std::env::var_os("CI").is_some() => panic!("PostgreSQL is needed in CI: {e}"),
            Err(e) => {
                eprintln!("skipped: no PostgreSQL at 127.0.0.1:5432 ({e})");
                None
            }
        }
    }

    fn views(pg: &Postgres, ttl: Duration) -> Views {
        Views::Postgres(PostgresViews::new(pg.clone(), ttl))
    }

    #[tokio::test]
    async fn a_token_issued_by_one_instance_is_redeemed_once_by_any() {
        let Some(pg) = pg().await else { return };
        let (a, b) = (views(&pg, LONG), views(&pg, LONG));
        conformance::redeemed_once_by_any(&a, &b).await;
    }

    #[tokio::test]
    async fn tokens_expire_in_postgres() {
        let Some(pg) = pg().await else { return };
        conformance::expire(&views(&pg, Duration::from_millis(30))).await;
    }

    #[tokio::test]
    async fn a_principal_over_its_cap_loses_its_own_oldest_and_no_one_elses() {
        let Some(pg) = pg().await else { return };
        conformance::over_the_cap_loses_its_own_oldest(&views(&pg, LONG)).await;
        let client = pg.client().await.unwrap();
        let held: i64 = client
            .query_one(
                "SELECT count(*) FROM engine_views WHERE principal = 'bob'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            held as usize,
            PER_PRINCIPAL - 1,
            "a redeemed token left the table"
        );
    }
}
