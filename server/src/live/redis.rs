//! [`Redis`]: the connection handle every Redis-backed part of the service shares.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection, PubSub};
use redis::{AsyncConnectionConfig, Client};

use super::EngineError;
use crate::secrets::{redact_url, redact_urls};

/// The key prefix when none is given.
pub const DEFAULT_PREFIX: &str = "lmchatkit:";

/// How long a command on the shared connection waits for its answer.
pub const REDIS_RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);

/// How many times a lost connection is retried (100, 200, 400 ms apart) before the requests
/// waiting on it fail with a 503.
const RECONNECT_RETRIES: usize = 3;

impl From<redis::RedisError> for EngineError {
    fn from(e: redis::RedisError) -> Self {
        let text = redact_urls(&e.to_string());
        if e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal() {
            Self::Busy(format!("Redis: {text}"))
        } else {
            Self::Command(text)
        }
    }
}

/// A connection to a Redis shared by several instances of the service. Cheap to clone; clones
/// share the connection.
///
/// `Debug` shows the URL without its password:
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let redis = lmchatkit::live::Redis::open("redis://:s3cret@redis.internal:6379/0")?
///     .with_prefix("myapp:");
/// let shown = format!("{redis:?}");
/// assert!(!shown.contains("s3cret"), "{shown}");
/// assert!(shown.contains("redis.internal:6379"), "{shown}");
/// # Ok::<(), lmchatkit::live::EngineError>(()) }).unwrap();
/// ```
#[derive(Clone)]
pub struct Redis {
    inner: Arc<Inner>,
    prefix: Arc<str>,
}

struct Inner {
    client: Client,
    conn: ConnectionManager,
    /// The URL as shown: without user info, query or fragment.
    shown_url: String,
}

impl fmt::Debug for Redis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redis")
            .field("url", &self.inner.shown_url)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl Redis {
    /// Connects to the Redis at `url` (`redis://[:PASSWORD@]HOST[:PORT][/DB]`) and checks it
    /// answers (`PING`). Keys start with [`DEFAULT_PREFIX`] unless [`Redis::with_prefix`] says
    /// otherwise.
    pub async fn connect(url: &str) -> Result<Self, EngineError> {
        let redis = Self::open(url)?;
        // A plain connection answers at once (the manager would retry with back-off).
        let check = async {
            let mut conn = redis
                .inner
                .client
                .get_multiplexed_async_connection()
                .await?;
            redis::cmd("PING").query_async::<()>(&mut conn).await
        };
        check.await.map_err(|e| EngineError::Connect {
            url: redis.inner.shown_url.clone(),
            reason: redact_urls(&e.to_string()),
        })?;
        Ok(redis)
    }

    /// Like [`Redis::connect`] without connecting: the connection opens on first use (and
    /// reopens after a loss). Must be called within a Tokio runtime.
    pub fn open(url: &str) -> Result<Self, EngineError> {
        let shown_url = redact_url(url);
        let invalid = |e: redis::RedisError| EngineError::InvalidUrl {
            url: shown_url.clone(),
            reason: redact_urls(&e.to_string()),
        };
        let client = Client::open(url).map_err(invalid)?;
        let conn = client
            .get_connection_manager_lazy(
                ConnectionManagerConfig::new()
                    .set_response_timeout(Some(REDIS_RESPONSE_TIMEOUT))
                    // Reconnecting tries 4 times over about a second (redis-rs's default, 7
                    // times over 6 s, held every request for 10 s while Redis was down).
                    .set_number_of_retries(RECONNECT_RETRIES)
                    .set_max_delay(Duration::from_millis(500)),
            )
            .map_err(invalid)?;
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                conn,
                shown_url,
            }),
            prefix: Arc::from(DEFAULT_PREFIX),
        })
    }

    /// The same connection with every key and channel starting with `prefix` (default
    /// [`DEFAULT_PREFIX`]). Give each deployment sharing a Redis its own.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Arc::from(prefix.into());
        self
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The key (or channel) `parts` under the prefix: `key("run:1:log")` is
    /// `lmchatkit:run:1:log` with the default prefix.
    pub(crate) fn key(&self, parts: &str) -> String {
        let mut key = String::with_capacity(self.prefix.len() + parts.len());
        key.push_str(&self.prefix);
        key.push_str(parts);
        key
    }

    /// The shared connection for short commands (never a blocking one).
    pub(crate) fn conn(&self) -> ConnectionManager {
        self.inner.conn.clone()
    }

    /// A pub/sub connection of its own.
    pub(crate) async fn subscribe(&self) -> Result<PubSub, EngineError> {
        Ok(self.inner.client.get_async_pubsub().await?)
    }

    /// A connection of its own, without a response timeout, for blocking reads (`XREAD
    /// BLOCK`): it waits as long as the command says.
    pub(crate) async fn dedicated(&self) -> Result<MultiplexedConnection, EngineError> {
        let config = AsyncConnectionConfig::new().set_response_timeout(None);
        Ok(self
            .inner
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The machine's Redis, or `None` (a skip, printed) when it is absent and `CI` is unset.
    async fn local() -> Option<Redis> {
        match Redis::connect("redis://127.0.0.1:6379").await {
            Ok(r) => Some(r.with_prefix(format!("lmck-test-{:016x}:", rand::random::<u64>()))),
            Err(e) if std::env::var_os("CI").is_none() => {
                eprintln!("skipped: no Redis at 127.0.0.1:6379 ({e})");
                None
            }
            Err(e) => panic!("CI needs the Redis at 127.0.0.1:6379: {e}"),
        }
    }

    #[tokio::test]
    async fn keys_and_channels_start_with_the_prefix_and_pubsub_reaches_a_subscriber() {
        use futures_util::StreamExt;
        let Some(redis) = local().await else { return };
        let key = redis.key("probe");
        assert!(
            key.starts_with("lmck-test-") && key.ends_with(":probe"),
            "{key}"
        );
        assert_eq!(
            Redis::open("redis://h").map(|r| r.key("x")).ok().as_deref(),
            Some("lmchatkit:x")
        );

        let mut sub = redis.subscribe().await.unwrap();
        sub.subscribe(&key).await.unwrap();
        let mut conn = redis.conn();
        redis::cmd("PUBLISH")
            .arg(&key)
            .arg("hello")
            .query_async::<i64>(&mut conn)
            .await
            .unwrap();
        let msg = tokio::time::timeout(std::time::Duration::from_secs(2), sub.on_message().next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(msg.get_payload::<String>().unwrap(), "hello");

        // A blocking read on a dedicated connection waits past the shared one's 500 ms
        // response timeout.
        let mut blocking = redis.dedicated().await.unwrap();
        let started = std::time::Instant::now();
        let got: Option<redis::Value> = redis::cmd("BLPOP")
            .arg(redis.key("nothing"))
            .arg(0.8)
            .query_async(&mut blocking)
            .await
            .unwrap();
        assert!(got.is_none() || matches!(got, Some(redis::Value::Nil)));
        assert!(started.elapsed() >= std::time::Duration::from_millis(700));
    }

    #[tokio::test]
    async fn a_refused_connection_names_the_url_without_its_password() {
        // Port 1 on loopback: nothing listens there.
        let err = Redis::connect("redis://user:s3cret@127.0.0.1:1/0")
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("127.0.0.1:1"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
    }

    #[tokio::test]
    async fn an_invalid_url_is_refused_without_its_password() {
        let err = Redis::connect("http://user:s3cret@127.0.0.1:6379")
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.starts_with("invalid Redis URL"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
    }
}
