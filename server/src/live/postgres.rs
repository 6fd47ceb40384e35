//! [`Postgres`]: the shared engine for deployments that run PostgreSQL and no Redis.
//!
//! Decisions:
//! - **Tables for state, `NOTIFY` to wake.** Runs, their logs, events and view tokens are rows
//!   (the `engine_*` tables, created by the history store's migrations, so one mechanism
//!   versions every table lmchatkit owns). A notification only says "look again" (its payload
//!   is a run id or an event id); readers always read the rows, so a notification lost while
//!   the listener reconnects costs latency, never data: every reader also looks again on a
//!   timer.
//! - **One listening connection per handle**, opened at [`Postgres::connect`] and kept open
//!   (reopened with a backoff after a loss), `LISTEN`ing on the three channels of the
//!   deployment (runs, stops, events). Notifications are handed out in-process over broadcast
//!   channels; after a reconnect every channel gets an empty wake-up, since something may have
//!   been missed meanwhile. The listener ends when the last clone of the handle is dropped.
//! - **Channels are named after the schema** (`lmck_` and 12 hex digits of its name's
//!   SHA-256, then the kind), because notifications are per database while tables are per
//!   schema: two deployments in two schemas of one database never wake each other.
//! - **Its own bounded pool** ([`PostgresOptions`], the history store's options), apart from
//!   the history store's, so lease refreshes and log appends never queue behind saves.
//! - Times that several instances compare (leases, lifetimes) are the server's
//!   (`clock_timestamp()`), never an instance's clock.
//! - **Its connections commit with `synchronous_commit = off`**: a run's log, the event log and
//!   view tokens are transient (the reply itself is saved by the history store, whose commits
//!   stay synchronous), so a commit need not wait for the WAL to reach the disk. Every frame a
//!   reply appends is a commit; waiting for an `fdatasync` each time made the copy, and so
//!   each start queued behind it on the pool, the bottleneck under load. If PostgreSQL itself
//!   crashes, the last fraction of a second of these commits can be lost (never torn): a view
//!   URL issued just before fails, a follower sees the end of the run as failed, like a lost
//!   instance's; the same as a Redis restart without persistence.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Pool;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use tokio::sync::{broadcast, mpsc, watch};
use tokio_postgres::{AsyncMessage, NoTls};

use super::EngineError;
use crate::store::postgres::connect::{
    Prepared, Target, build_pool, chain, is_pool_unavailable, is_unreachable, prepare, scrub,
};
use crate::store::postgres::schema;
use crate::store::{HistoryError, PostgresOptions};

/// How many notifications a slow receiver may fall behind before it only gets a wake-up.
const NOTICES: usize = 4096;
/// The longest wait between the listener's reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// What a notification is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Channel {
    /// A run's log grew or the run ended (payload: the run id).
    Runs = 0,
    /// A stop was asked (payload: the run id).
    Stops = 1,
    /// An event was published (payload: its id).
    Events = 2,
}

const CHANNELS: [Channel; 3] = [Channel::Runs, Channel::Stops, Channel::Events];

impl Channel {
    fn suffix(self) -> &'static str {
        match self {
            Self::Runs => "runs",
            Self::Stops => "stops",
            Self::Events => "events",
        }
    }
}

/// A PostgreSQL database shared by several instances of the service, as their shared engine
/// (see [`crate::live`]). Cheap to clone; clones share the pool and the listener.
///
/// `Debug` and errors never show the URL's password:
///
/// ```
/// use lmchatkit::live::Postgres;
/// use lmchatkit::store::PostgresOptions;
///
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// // Port 1 on loopback: nothing listens there.
/// let url = "postgres://app:hunter2@127.0.0.1:1/chat";
/// let err = rt.block_on(Postgres::connect(url, PostgresOptions::default())).unwrap_err();
/// assert!(!err.to_string().contains("hunter2"), "{err}");
/// ```
#[derive(Clone)]
pub struct Postgres {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    target: Target,
    secrets: Arc<[String]>,
    /// The channel names, by [`Channel`].
    channels: [String; 3],
    /// Notifications, by [`Channel`].
    notices: [broadcast::Sender<String>; 3],
    /// True while the listener is `LISTEN`ing.
    listening: watch::Receiver<bool>,
    /// Dropped with the last handle: the listener then ends.
    _alive: watch::Sender<()>,
}

impl fmt::Debug for Postgres {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Postgres")
            .field("target", &self.inner.target)
            .finish_non_exhaustive()
    }
}

impl Postgres {
    /// Connects to `url` (as [`PostgresStore::connect`](crate::store::PostgresStore::connect)
    /// does, with its own pool set up by `options`), creates or migrates the tables, and starts
    /// listening. Must be called within a Tokio runtime.
    pub async fn connect(url: &str, options: PostgresOptions) -> Result<Self, EngineError> {
        let history = |e: HistoryError| EngineError::Postgres(e.to_string());
        let Prepared {
            mut config,
            target,
            secrets,
        } = prepare(url, &options).map_err(history)?;
        // Run logs, events and view tokens are transient: see the module docs.
        let given = config.get_options().unwrap_or_default();
        config.options(format!("{given} -c synchronous_commit=off").trim());
        let fail = |what: &str, e: &dyn std::error::Error| {
            EngineError::Postgres(scrub(&format!("PostgreSQL {what}: {}", chain(e)), &secrets))
        };
        let pool = build_pool(config.clone(), &options).map_err(|e| fail("pool", &e))?;
        let mut client = pool.get().await.map_err(|e| fail("connection", &e))?;
        schema::migrate(&mut client, options.schema())
            .await
            .map_err(|e| EngineError::Postgres(scrub(&e.to_string(), &secrets)))?;
        let current: Option<String> = client
            .query_one("SELECT current_schema()::text", &[])
            .await
            .and_then(|r| r.try_get(0))
            .map_err(|e| fail("", &e))?;
        drop(client);
        let digest = Sha256::digest(current.as_deref().unwrap_or("public").as_bytes());
        let base = format!("lmck_{}", hex::encode(&digest[..6]));
        let channels = CHANNELS.map(|c| format!("{base}_{}", c.suffix()));
        let notices = CHANNELS.map(|_| broadcast::channel(NOTICES).0);
        let (ready_tx, listening) = watch::channel(false);
        let (alive, alive_rx) = watch::channel(());
        tokio::spawn(listen(
            config,
            channels.clone(),
            notices.clone(),
            ready_tx,
            alive_rx,
            secrets.clone(),
        ));
        let engine = Self {
            inner: Arc::new(Inner {
                pool,
                target,
                secrets,
                channels,
                notices,
                listening,
                _alive: alive,
            }),
        };
        // Readers started from now on rely on notifications: wait for the listener a while
        // (they still look again on their timers without it).
        let mut ready = engine.inner.listening.clone();
        let waited = tokio::time::timeout(options.acquire_timeout(), ready.wait_for(|r| *r));
        if waited.await.is_err() {
            tracing::warn!(target = ?engine.inner.target, "the PostgreSQL listener is not listening yet");
        }
        tracing::info!(target = ?engine.inner.target, "PostgreSQL shared engine");
        Ok(engine)
    }

    /// A pooled connection.
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, EngineError> {
        self.inner.pool.get().await.map_err(|e| {
            let text = scrub(
                &format!("PostgreSQL connection: {}", chain(&e)),
                &self.inner.secrets,
            );
            if is_pool_unavailable(&e) {
                EngineError::Busy(text)
            } else {
                EngineError::Postgres(text)
            }
        })
    }

    /// `e` as an engine error, without the password.
    /// PostgreSQL unreachable (a restart, a cut connection) is [`EngineError::Busy`]: a 503.
    pub(crate) fn error(&self, e: tokio_postgres::Error) -> EngineError {
        let text = scrub(&format!("PostgreSQL: {}", chain(&e)), &self.inner.secrets);
        if is_unreachable(&e) {
            EngineError::Busy(text)
        } else {
            EngineError::Postgres(text)
        }
    }

    /// The name of `channel` (for `pg_notify`).
    pub(crate) fn channel(&self, channel: Channel) -> &str {
        &self.inner.channels[channel as usize]
    }

    /// The notifications on `channel` from now on (an empty payload: look again, something may
    /// have been missed).
    pub(crate) fn notices(&self, channel: Channel) -> broadcast::Receiver<String> {
        self.inner.notices[channel as usize].subscribe()
    }
}

/// The listener: `LISTEN`s on every channel and hands notifications out; reconnects after a
/// loss, until every handle is gone.
async fn listen(
    config: tokio_postgres::Config,
    channels: [String; 3],
    notices: [broadcast::Sender<String>; 3],
    ready: watch::Sender<bool>,
    mut alive: watch::Receiver<()>,
    secrets: Arc<[String]>,
) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let session = async {
            let (client, mut conn) = config.connect(NoTls).await?;
            let (tx, mut rx) = mpsc::unbounded_channel();
            // The connection makes progress only while its messages are polled.
            let driver = tokio::spawn(async move {
                let mut messages = futures_util::stream::poll_fn(move |cx| conn.poll_message(cx));
                while let Some(m) = messages.next().await {
                    match m {
                        Ok(AsyncMessage::Notification(n)) => {
                            if tx.send(n).is_err() {
                                return Ok(());
                            }
                        }
                        Ok(_) => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            });
            let sql: String = channels
                .iter()
                .map(|c| format!("LISTEN \"{c}\";"))
                .collect();
            client.batch_execute(&sql).await?;
            ready.send_replace(true);
            for n in &notices {
                let _ = n.send(String::new());
            }
            loop {
                tokio::select! {
                    n = rx.recv() => match n {
                        Some(n) => {
                            if let Some(i) = channels.iter().position(|c| c == n.channel()) {
                                let _ = notices[i].send(n.payload().to_owned());
                            }
                        }
                        None => break,
                    },
                    _ = alive.changed() => return Ok(true),
                }
            }
            ready.send_replace(false);
            match driver.await {
                Ok(Err(e)) => Err(e),
                _ => Ok(false),
            }
        };
        match session.await {
            Ok(true) => return,
            Ok(false) => {
                tracing::warn!("the PostgreSQL listener's connection closed; reopening");
                backoff = Duration::from_millis(100);
            }
            Err(e) => {
                let text = scrub(&chain(&e), &secrets);
                tracing::warn!(error = %text, "the PostgreSQL listener failed; reopening");
            }
        }
        ready.send_replace(false);
        tokio::select! {
            _ = alive.changed() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}
