//! The shared engines the tests of several instances run on, each test once per engine: the
//! machine's Redis (127.0.0.1:6379) under a fresh key prefix, and its PostgreSQL (database
//! `test`) under a fresh schema. What a test made is removed when it ends, also when it
//! panics. Without an engine a test fails when `CI` is set and is skipped (saying so)
//! otherwise.

use std::sync::LazyLock;

use lmchatkit::live::{Postgres, Redis, SharedEngine};
use lmchatkit::store::PostgresOptions;
use lmchatkit::store::postgres::test_support::TestSchema;
use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

pub const REDIS: &str = "redis://127.0.0.1:6379";

/// Where the instances of one test meet: a Redis key prefix or a PostgreSQL schema.
#[derive(Clone, Debug)]
pub enum Spec {
    Redis(String),
    Postgres { url: String, schema: String },
}

impl Spec {
    /// A connection of its own to the test's engine (as each instance opens one).
    pub async fn connect(&self) -> SharedEngine {
        match self {
            Self::Redis(prefix) => Redis::connect(REDIS)
                .await
                .unwrap()
                .with_prefix(prefix.clone())
                .into(),
            Self::Postgres { url, schema } => {
                let options = PostgresOptions::default().with_schema(schema);
                Postgres::connect(url, options).await.unwrap().into()
            }
        }
    }
}

/// Who uses the machine's Redis now. The tests of this binary run side by side, and
/// `engine_overload` stalls the whole Redis server for about a second: a Redis test holds this
/// shared ([`TestEngine::redis`]), the stall alone ([`TestEngine::redis_alone`]), so no other
/// test's Redis call meets the stall (as when the stall had a test binary of its own).
static REDIS_TURN: LazyLock<RwLock<()>> = LazyLock::new(|| RwLock::new(()));

/// A hold on [`REDIS_TURN`], shared or alone, kept as long as the test's engine.
enum RedisTurn {
    Shared(#[allow(dead_code)] RwLockReadGuard<'static, ()>),
    Alone(#[allow(dead_code)] RwLockWriteGuard<'static, ()>),
}

/// A test's engine.
pub struct TestEngine {
    pub spec: Spec,
    /// Dropped (with everything in the schema) with the engine.
    _schema: Option<TestSchema>,
    /// Released when the engine is dropped.
    _turn: Option<RedisTurn>,
}

impl TestEngine {
    /// A fresh Redis prefix, or `None` (a printed skip) without a Redis outside CI.
    pub async fn redis() -> Option<Self> {
        let turn = RedisTurn::Shared(REDIS_TURN.read().await);
        Self::on_redis(turn).await
    }

    /// [`Self::redis`] with no other test of this binary on Redis until it is dropped: for a
    /// test that stalls the Redis server.
    pub async fn redis_alone() -> Option<Self> {
        let turn = RedisTurn::Alone(REDIS_TURN.write().await);
        Self::on_redis(turn).await
    }

    async fn on_redis(turn: RedisTurn) -> Option<Self> {
        match Redis::connect(REDIS).await {
            Ok(_) => Some(Self {
                spec: Spec::Redis(format!("lmck-test-{:016x}:", rand::random::<u64>())),
                _schema: None,
                _turn: Some(turn),
            }),
            Err(e) if std::env::var_os("CI").is_none() => {
                eprintln!("skipped: no Redis at {REDIS} ({e})");
                None
            }
            Err(e) => panic!("CI needs the Redis at {REDIS}: {e}"),
        }
    }

    /// A fresh PostgreSQL schema, or `None` (a printed skip) without one outside CI.
    pub async fn postgres() -> Option<Self> {
        let schema = TestSchema::new().await?;
        Some(Self {
            spec: Spec::Postgres {
                url: schema.store_url(),
                schema: schema.schema().to_owned(),
            },
            _schema: Some(schema),
            _turn: None,
        })
    }
}

impl Drop for TestEngine {
    /// Deletes every key under a Redis prefix (a schema goes with its own drop).
    fn drop(&mut self) {
        let Spec::Redis(prefix) = &self.spec else {
            return;
        };
        let Ok(client) = redis::Client::open(REDIS) else {
            return;
        };
        let Ok(mut conn) = client.get_connection() else {
            return;
        };
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{prefix}*"))
            .query(&mut conn)
            .unwrap_or_default();
        if !keys.is_empty() {
            let _: Result<i64, _> = redis::cmd("DEL").arg(keys).query(&mut conn);
        }
    }
}

/// Runs each test body (`async fn name(spec: &Spec)`) once per engine: `name::on_redis`,
/// `name::on_postgres`.
macro_rules! on_each_engine {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test]
            async fn on_redis() {
                let Some(engine) = crate::shared_engines::TestEngine::redis().await else {
                    return;
                };
                super::$name(&engine.spec).await;
            }

            #[tokio::test]
            async fn on_postgres() {
                let Some(engine) = crate::shared_engines::TestEngine::postgres().await else {
                    return;
                };
                super::$name(&engine.spec).await;
            }
        }
    )*};
}
