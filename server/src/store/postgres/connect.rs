//! The connection plumbing the PostgreSQL store and the PostgreSQL engine
//! ([`crate::live::Postgres`]) share: a URL parsed with [`PostgresOptions`] applied, a bounded
//! pool, and error texts that never hold the password. Each builds its own pool with these, so
//! the engine's lease refreshes never queue behind the store's saves.

use std::error::Error as StdError;
use std::sync::Arc;

use deadpool_postgres::{Manager, Pool, Runtime};
use tokio_postgres::NoTls;

use super::PostgresOptions;
pub(crate) use super::options::{Target, scrub};
use super::options::{secrets_of, valid_schema};
use crate::store::HistoryError;

/// A connection string parsed, with `options` applied: what a pool (or a single connection,
/// such as the shared engine's listener) connects with.
pub(crate) struct Prepared {
    pub(crate) config: tokio_postgres::Config,
    pub(crate) target: Target,
    /// The URL's password(s), to scrub error texts with.
    pub(crate) secrets: Arc<[String]>,
}

/// Parses `url` and applies `options` (schema through `search_path`, connect timeout,
/// application name). The error never holds the password.
pub(crate) fn prepare(url: &str, options: &PostgresOptions) -> Result<Prepared, HistoryError> {
    let secrets: Arc<[String]> = secrets_of(url).into();
    let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
        HistoryError::Storage(scrub(&format!("PostgreSQL URL: {}", chain(&e)), &secrets))
    })?;
    if let Some(schema) = options.schema() {
        if !valid_schema(schema) {
            return Err(HistoryError::InvalidInput(format!(
                "PostgreSQL schema {schema:?}: use lowercase letters, digits and _"
            )));
        }
        let given = config.get_options().unwrap_or_default();
        let joined = format!("{given} -c search_path={schema}");
        config.options(joined.trim());
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(options.acquire_timeout());
    }
    if config.get_application_name().is_none() {
        config.application_name("lmchatkit");
    }
    let target = Target::of(&config, options.schema());
    Ok(Prepared {
        config,
        target,
        secrets,
    })
}

/// A bounded pool over `config`, waiting at most the acquire timeout for a connection.
pub(crate) fn build_pool(
    config: tokio_postgres::Config,
    options: &PostgresOptions,
) -> Result<Pool, deadpool_postgres::BuildError> {
    let timeout = Some(options.acquire_timeout());
    Pool::builder(Manager::new(config, NoTls))
        .max_size(options.max_connections())
        .wait_timeout(timeout)
        .create_timeout(timeout)
        .recycle_timeout(timeout)
        .runtime(Runtime::Tokio1)
        .build()
}

/// Whether the pool gave no connection within its timeouts (every connection busy, or a new
/// one not opened in time): overload, which callers answer with 503 rather than 500.
pub(crate) fn is_pool_timeout(e: &deadpool_postgres::PoolError) -> bool {
    matches!(e, deadpool_postgres::PoolError::Timeout(_))
}

/// Whether `e` says PostgreSQL could not be reached or dropped the connection (restarted, shut
/// down, a network cut) rather than refusing what was asked: nothing more was done, and a retry
/// may succeed once it is back, so callers answer 503 with `Retry-After` and retry saves.
pub(crate) fn is_unreachable(e: &tokio_postgres::Error) -> bool {
    use tokio_postgres::error::SqlState;
    if e.is_closed() {
        return true;
    }
    if let Some(code) = e.code() {
        return [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
            SqlState::CONNECTION_FAILURE,
            SqlState::CONNECTION_EXCEPTION,
        ]
        .contains(code);
    }
    // A socket error (refused, reset, closed mid-answer) is under the error's sources.
    let mut source = StdError::source(e);
    while let Some(s) = source {
        if s.is::<std::io::Error>() {
            return true;
        }
        source = s.source();
    }
    false
}

/// Whether the pool gave no connection because PostgreSQL is at capacity or unreachable
/// ([`is_pool_timeout`], [`is_unreachable`]): a 503, not a 500.
pub(crate) fn is_pool_unavailable(e: &deadpool_postgres::PoolError) -> bool {
    match e {
        deadpool_postgres::PoolError::Backend(e) => is_unreachable(e),
        e => is_pool_timeout(e),
    }
}

/// `e` and its sources, joined by `: `.
pub(crate) fn chain(e: &dyn StdError) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}
