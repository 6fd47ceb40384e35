//! lmchatkit as the bench runs it: a `ChatService` over the OpenAI-compatible backend and the
//! SQLite history store, each connection served by `lmchatkit::connection::serve` as the
//! `lmchatkit` binary serves it, in its own process so its CPU and RSS are its own.
//! The same relay on the shared engines ([`Storage::Shared`]) keeps history in a `PostgresStore`
//! (a schema of its own, the default pool) and runs every turn as a Redis-backed run
//! (`engine::Redis` under a prefix of its own), or, without Redis, as a run of the PostgreSQL
//! engine (`engine::Postgres`, its own pool of the same size, the same schema), as several
//! instances would (see [`super::engines`]).

use std::net::SocketAddr;
use std::path::Path;

use lmchatkit::connection::{self, Connection};
use lmchatkit::live::{Postgres, Redis};
use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::protocol::Model;
use lmchatkit::store::{PostgresOptions, PostgresStore, SqliteStore};
use lmchatkit::{ChatService, Config};

/// Where the relay keeps history and runs.
#[derive(Debug, Clone, Copy)]
pub enum Storage<'a> {
    /// No history store: nothing is saved (a client that keeps its conversations itself, as an
    /// AI SDK app without server-side persistence does); runs in-process.
    None,
    /// The SQLite file at the path; runs in-process (the default deployment).
    Sqlite(&'a Path),
    /// History in PostgreSQL (`postgres`, schema `schema`, created and migrated at start) and
    /// runs through the Redis at `redis.0` with keys under `redis.1`, or through PostgreSQL
    /// itself without one.
    Shared {
        /// The PostgreSQL URL.
        postgres: &'a str,
        /// The schema the store (and the PostgreSQL engine) creates and uses.
        schema: &'a str,
        /// The Redis URL and the prefix of every key; `None`: the PostgreSQL engine.
        redis: Option<(&'a str, &'a str)>,
    },
}

/// Serves lmchatkit on `addr` with the upstream at `base_url` (ending in `/v1`) and history
/// (and runs) as `storage` says. `upstream_h2` makes the upstream client speak HTTP/2 (prior
/// knowledge), so thousands of upstream streams share a few sockets — as they do against a
/// real HTTPS provider, which negotiates HTTP/2. `nodelay` sets `TCP_NODELAY` on accepted
/// connections (the binary sets it too); without it Nagle's algorithm holds the first event behind the response head until the client's delayed ACK (~40 ms on
/// Linux) on every keep-alive request after the first.
pub async fn serve(
    addr: SocketAddr,
    base_url: &str,
    storage: Storage<'_>,
    upstream_h2: bool,
    nodelay: bool,
) -> Result<SocketAddr, Box<dyn std::error::Error>> {
    let mut upstream = OpenAiConfig::new(base_url)
        .with_api_key("sk-bench")
        .with_models(vec![Model::new("mock-small")]);
    if upstream_h2 {
        let client = reqwest::Client::builder().http2_prior_knowledge().build()?;
        upstream = upstream.with_http_client(client);
    }
    let mut builder = Config::builder(OpenAiBackend::new(upstream));
    builder = match storage {
        Storage::None => builder,
        Storage::Sqlite(db) => builder.history(SqliteStore::open(db)?),
        Storage::Shared {
            postgres,
            schema,
            redis,
        } => {
            let options = PostgresOptions::default().with_schema(schema);
            let builder = builder.history(PostgresStore::connect(postgres, options.clone()).await?);
            match redis {
                Some((url, prefix)) => {
                    builder.redis(Redis::connect(url).await?.with_prefix(prefix))
                }
                None => builder.shared_engine(Postgres::connect(postgres, options).await?),
            }
        }
    };
    let config = builder
        .title("lmchatkit")
        // The bench's clients stand for as many users as it opens streams (10,000 at once in
        // the full run); the default caps (4 per principal, 256 in total) would refuse them. A
        // host serving that many users raises them the same way; the count is still kept.
        .max_streams(usize::MAX, usize::MAX)
        .build()?;
    let svc = ChatService::new(config);
    let listener = super::sys::listen(addr)?;
    let addr = listener.local_addr()?;
    let settings = Connection::default().with_nodelay(nodelay);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (svc, settings) = (svc.clone(), settings.clone());
            tokio::spawn(async move { connection::serve(stream, svc, &settings, None).await });
        }
    });
    Ok(addr)
}
