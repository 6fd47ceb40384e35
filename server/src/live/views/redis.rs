//! View tokens in Redis (feature `redis`), so a view URL issued by one instance loads from any
//! instance behind the same load balancer, once.
//!
//! Decisions:
//! - **The ticket is stored, not signed**: `SET {prefix}view:{token} <ticket JSON> PX <ttl>`.
//!   The URL stays a bare random token (nothing in it to forge or to read), Redis drops it when
//!   its lifetime ends, and single use is a storage fact rather than a promise.
//! - **Redeemed once across instances** with `GETDEL`: of two instances redeeming one token at
//!   the same moment, exactly one gets the ticket. The page's check (the token's principal is
//!   the caller) runs on a `GET` first, so a token refused to another caller stays valid for
//!   the one it was issued to, as in memory.
//! - **Per principal cap as in memory** ([`PER_PRINCIPAL`]): each principal has a sorted set
//!   `{prefix}views:{hash of the principal}` of its unredeemed tokens scored by issue time; one
//!   Lua script drops the expired ones from it, drops the principal's own oldest while it is
//!   over the cap (their tickets too), then stores the new ticket. A redeemed token leaves the
//!   set at once. The set expires with the newest token. One user opening thousands of views
//!   therefore still cannot evict another user's.
//! - **The total bound** of the in-memory store becomes the lifetime: every ticket and set
//!   expires within the TTL in Redis, so what Redis holds is at most the tokens issued in one
//!   TTL (each principal at most [`PER_PRINCIPAL`]) — Redis's own `maxmemory` is the operator's
//!   last word.
//! - **Redis unreachable or slow** is a 503 naming Redis, another failure a 500 (never a panic,
//!   never an unchecked view).
//! - The script touches keys it computes (the evicted tickets), so it expects one Redis, not a
//!   Redis Cluster.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::AsyncCommands;
use sha2::{Digest, Sha256};

use super::{PER_PRINCIPAL, ViewTicket, fresh_token};
use crate::error::Failure;
use crate::live::Redis;

/// Stores the ticket and keeps the principal's set within its cap.
/// KEYS: ticket, the principal's set. ARGV: ticket JSON, ttl ms, now ms, cap, token, the prefix
/// of ticket keys.
const ISSUE: &str = r"
local ttl = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local cap = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - ttl)
local over = redis.call('ZCARD', KEYS[2]) - cap + 1
if over > 0 then
  local old = redis.call('ZPOPMIN', KEYS[2], over)
  for i = 1, #old, 2 do
    redis.call('DEL', ARGV[6] .. old[i])
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
-- Scores strictly increase, so tokens issued within one millisecond still pop oldest first.
local score = now
local top = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
if top[2] and tonumber(top[2]) >= now then score = tonumber(top[2]) + 1 end
redis.call('ZADD', KEYS[2], score, ARGV[5])
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
";

/// The view tokens of every instance, in Redis.
pub(crate) struct SharedViews {
    redis: Redis,
    ttl: Duration,
    issue: redis::Script,
}

impl std::fmt::Debug for SharedViews {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedViews")
            .field("redis", &self.redis)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

fn failed(e: redis::RedisError) -> Failure {
    crate::live::EngineError::from(e).answer("view tokens")
}

impl SharedViews {
    /// Tokens in `redis` that last `ttl`.
    pub(crate) fn new(redis: Redis, ttl: Duration) -> Self {
        Self {
            redis,
            ttl,
            issue: redis::Script::new(ISSUE),
        }
    }

    fn ticket_key(&self, token: &str) -> String {
        self.redis.key(&format!("view:{token}"))
    }

    /// The principal's set (its id hashed: any bytes, bounded length).
    fn principal_key(&self, principal: &str) -> String {
        let digest = Sha256::digest(principal.as_bytes());
        self.redis
            .key(&format!("views:{}", hex::encode(&digest[..16])))
    }

    /// Issues a fresh token for `ticket`.
    pub(crate) async fn issue(&self, ticket: ViewTicket) -> Result<String, Failure> {
        let token = fresh_token();
        let json = serde_json::to_string(&ticket)
            .map_err(|e| Failure::Internal(format!("view ticket: {e}")))?;
        let ttl_ms = u64::try_from(self.ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let mut conn = self.redis.conn();
        self.issue
            .key(self.ticket_key(&token))
            .key(self.principal_key(&ticket.principal))
            .arg(json)
            .arg(ttl_ms)
            .arg(now_ms())
            .arg(PER_PRINCIPAL)
            .arg(&token)
            .arg(self.ticket_key(""))
            .invoke_async::<i64>(&mut conn)
            .await
            .map_err(failed)?;
        Ok(token)
    }

    /// Redeems `token` once across instances, if `accept` agrees; `None` when unknown, used,
    /// expired or refused (a refused token stays valid).
    pub(crate) async fn redeem(
        &self,
        token: &str,
        accept: impl FnOnce(&ViewTicket) -> bool,
    ) -> Result<Option<ViewTicket>, Failure> {
        // Anything else was never issued (and never reaches a key).
        if !super::well_formed(token) {
            return Ok(None);
        }
        let key = self.ticket_key(token);
        let mut conn = self.redis.conn();
        let Some(json) = conn.get::<_, Option<String>>(&key).await.map_err(failed)? else {
            return Ok(None);
        };
        let Ok(ticket) = serde_json::from_str::<ViewTicket>(&json) else {
            tracing::warn!("a stored view ticket does not parse; refused");
            return Ok(None);
        };
        if !accept(&ticket) {
            return Ok(None);
        }
        // Only one redeemer gets it back.
        let taken: Option<String> = conn.get_del(&key).await.map_err(failed)?;
        if taken.is_none() {
            return Ok(None);
        }
        // It no longer counts against the principal's cap (best effort: it expires anyway).
        let _: Result<i64, _> = conn
            .zrem(self.principal_key(&ticket.principal), token)
            .await;
        Ok(Some(ticket))
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::super::{Views, conformance};
    use super::*;

    const LONG: Duration = Duration::from_secs(60);

    /// A Redis at 127.0.0.1:6379 under a fresh prefix, or `None` (skipped; a failure in CI).
    async fn redis() -> Option<Redis> {
        match Redis::connect("redis://127.0.0.1:6379").await {
            Ok(r) => {
                Some(r.with_prefix(format!("lmck-test-views-{:016x}:", rand::random::<u64>())))
            }
            Err(e) if std::env::var_os("CI").is_some() => panic!("Redis is needed in CI: {e}"),
            Err(e) => {
                eprintln!("skipped: no Redis at 127.0.0.1:6379 ({e})");
                None
            }
        }
    }

    async fn cleanup(redis: &Redis) {
        let mut conn = redis.conn();
        let keys: Vec<String> = conn
            .keys(format!("{}*", redis.prefix()))
            .await
            .unwrap_or_default();
        if !keys.is_empty() {
            let _: Result<i64, _> = conn.del(keys).await;
        }
    }

    fn views(r: &Redis, ttl: Duration) -> Views {
        Views::Shared(SharedViews::new(r.clone(), ttl))
    }

    #[tokio::test]
    async fn a_token_issued_by_one_instance_is_redeemed_once_by_any() {
        let Some(r) = redis().await else { return };
        let (a, b) = (views(&r, LONG), views(&r, LONG));
        conformance::redeemed_once_by_any(&a, &b).await;
        cleanup(&r).await;
    }

    #[tokio::test]
    async fn tokens_expire_in_redis() {
        let Some(r) = redis().await else { return };
        conformance::expire(&views(&r, Duration::from_millis(30))).await;
        cleanup(&r).await;
    }

    #[tokio::test]
    async fn a_principal_over_its_cap_loses_its_own_oldest_and_no_one_elses() {
        let Some(r) = redis().await else { return };
        let v = SharedViews::new(r.clone(), LONG);
        let bob = v.principal_key("bob");
        conformance::over_the_cap_loses_its_own_oldest(&Views::Shared(v)).await;
        let mut conn = r.conn();
        let held: i64 = conn.zcard(bob).await.unwrap();
        assert_eq!(
            held as usize,
            PER_PRINCIPAL - 1,
            "a redeemed token left the set"
        );
        cleanup(&r).await;
    }
}
