//! What is live while replies run, in one place: `runs` (each reply's log, its
//! stop, each conversation's running run), [`events`] (what another tab of the same principal
//! hears) and `views` (the short-lived tokens behind MCP App view URLs). Each
//! sits in a folder of its own with the in-process kind beside the shared ones:
//!
//! | | in-process (the default) | Redis (feature `redis`) | PostgreSQL (feature `postgres`) |
//! |---|---|---|---|
//! | runs | `runs/local.rs` | `runs/redis.rs` | `runs/postgres.rs` |
//! | events | `events/fanout.rs` | `events/redis.rs` | `events/postgres.rs` |
//! | view tokens | `views/mod.rs` | `views/redis.rs` | `views/postgres.rs` |
//!
//! A service given no engine keeps all three in its own memory, as one instance needs. Several
//! instances share them through a [`SharedEngine`], built from either engine's handle:
//! - [`Redis`]: Streams for logs and events, pub/sub for stops, keys with a lifetime for
//!   leases and view tokens (`redis.rs`: the connection).
//! - [`Postgres`]: tables for the same, `LISTEN/NOTIFY` to wake readers, for deployments that
//!   run PostgreSQL and no Redis (`postgres.rs`: the pool and the listener; its tables come
//!   with the PostgreSQL store's migrations, [`crate::store::postgres`]).
//!
//! Each concern's own module holds the logic its kinds share and the trait each shared engine
//! implements (`runs::shared::RunLog`, `events::fanout::EventLog`, `views::Views`).
//!
//! Decisions:
//! - **One handle, cheap to clone**, per engine. Short commands share one multiplexed
//!   connection (Redis) or a bounded pool (PostgreSQL); what blocks (`XREAD BLOCK`, `LISTEN`)
//!   gets a connection of its own and never holds up the others.
//! - **Every key, table and channel is the deployment's own**: Redis keys and channels start
//!   with a prefix (default `lmchatkit:`); PostgreSQL tables live in the connection's schema
//!   and its notification channels are named after that schema, so several deployments (and
//!   tests) can share one server without meeting.
//! - **The URL's password never shows**: `Debug` and every error name the target without its
//!   user info, query or fragment ([`crate::secrets::redact_url`]).
//! - **One error type** ([`EngineError`]) for both engines; a request that meets one becomes a
//!   500 naming the engine, never a panic, except overload ([`EngineError::Busy`]: a command
//!   timed out, a pool had no free connection in time), which is a 503 with `Retry-After`.
//! - **A Redis command waits at most [`REDIS_RESPONSE_TIMEOUT`]** (redis-rs's default is
//!   500 ms). Under a burst on a busy machine an answer can take longer than that, and a
//!   timed-out command is not known to have failed (a run's start may have been taken): a
//!   short limit turns load into errors, a long one only delays a dead connection's detection,
//!   which the connection manager also learns from the socket.

pub mod events;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;
pub(crate) mod runs;
pub(crate) mod views;

#[cfg(feature = "postgres")]
pub(crate) use postgres::Channel;
#[cfg(feature = "postgres")]
pub use postgres::Postgres;
#[cfg(feature = "redis")]
pub use redis::{DEFAULT_PREFIX, REDIS_RESPONSE_TIMEOUT, Redis};

use crate::error::Failure;

/// Errors of a shared engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The URL is not a Redis URL.
    #[error("invalid Redis URL {url}: {reason} (use redis://[:PASSWORD@]HOST[:PORT][/DB])")]
    InvalidUrl {
        /// The URL without its password.
        url: String,
        /// Why it was refused.
        reason: String,
    },
    /// Redis could not be reached.
    #[error("cannot connect to Redis at {url}: {reason}")]
    Connect {
        /// The URL without its password.
        url: String,
        /// Why.
        reason: String,
    },
    /// A Redis command failed.
    #[error("Redis: {0}")]
    Command(String),
    /// PostgreSQL refused the URL, could not be reached, or a statement failed (the text
    /// without the password).
    #[error("{0}")]
    Postgres(String),
    /// The engine is at capacity or briefly unreachable: a Redis command got no answer within
    /// the response timeout or its connection dropped, a PostgreSQL pool had no free connection
    /// in time. Nothing the request asked for was done; a retry may succeed.
    #[error("{0}")]
    Busy(String),
}

impl EngineError {
    /// The answer to a request that met this error while doing `what`: 503 with `Retry-After`
    /// when the engine is busy, else 500.
    pub(crate) fn answer(self, what: &str) -> Failure {
        match self {
            EngineError::Busy(_) => Failure::Busy {
                message: format!("{what}: the shared engine is busy: {self}"),
                retry_after: crate::error::BUSY_RETRY_AFTER,
            },
            _ => Failure::Internal(format!("{what}: the shared engine failed: {self}")),
        }
    }
}

impl From<EngineError> for Failure {
    fn from(e: EngineError) -> Self {
        e.answer("runs")
    }
}

/// The engine several instances share: runs (their logs, stops and each conversation's
/// running run), events and view tokens go through it. Built from either engine's handle:
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use lmchatkit::live::{Postgres, SharedEngine};
/// use lmchatkit::store::PostgresOptions;
///
/// let pg = Postgres::connect("postgres://app@db.internal/chat", PostgresOptions::default()).await?;
/// let engine = SharedEngine::from(pg);
/// # let _ = engine; Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum SharedEngine {
    /// Redis.
    #[cfg(feature = "redis")]
    Redis(Redis),
    /// PostgreSQL.
    #[cfg(feature = "postgres")]
    Postgres(Postgres),
}

#[cfg(feature = "redis")]
impl From<Redis> for SharedEngine {
    fn from(r: Redis) -> Self {
        Self::Redis(r)
    }
}

#[cfg(feature = "postgres")]
impl From<Postgres> for SharedEngine {
    fn from(p: Postgres) -> Self {
        Self::Postgres(p)
    }
}
