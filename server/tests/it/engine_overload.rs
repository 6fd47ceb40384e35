//! Overload of the shared engines and the PostgreSQL store: a slow engine is waited for, and one
//! that cannot answer in time is a 503 with `Retry-After` (nothing done, retry later), never a
//! 500. Against the machine's Redis (127.0.0.1:6379) and PostgreSQL (database `test`).
//!
//! The Redis test stalls the whole Redis server for about a second (a busy script), so it holds
//! the machine's Redis alone (`TestEngine::redis_alone`): no other test of this binary uses Redis
//! meanwhile.

use crate::shared_engines;
use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use lmchatkit::live::Redis;
use lmchatkit::protocol::*;
use lmchatkit::store::postgres::test_support::{TestSchema, lock_table};
use lmchatkit::store::{HistoryError, HistoryStore, MemoryStore};
use lmchatkit::{ChatService, Principal};
use serde_json::json;
use shared_engines::{REDIS, Spec, TestEngine};
use support::*;

fn host() -> FakeHost {
    FakeHost {
        models: vec![Model::new("m")],
        events: vec![Event::delta("hello"), Event::done(FinishReason::Stop, None)],
        ..FakeHost::default()
    }
}

fn ask(thread: &str) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    post(
        "/chat/api/chat",
        &json!({"model": "m", "conversation_id": thread,
                "messages": [{"id": "u1", "role": "user", "content": "hi"}]}),
    )
}

fn assert_unavailable(reply: &Reply) {
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert_eq!(reply.headers["retry-after"], "1");
    assert!(reply.error().contains("busy"), "{}", reply.error());
}

/// Blocks the Redis server for `busy` with a script that spins (every client waits meanwhile).
fn stall_redis(busy: Duration) -> std::thread::JoinHandle<()> {
    const SPIN: &str = "local t0 = redis.call('TIME')
        local want = tonumber(ARGV[1])
        repeat
            local t = redis.call('TIME')
        until (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) >= want
        return 1";
    let client = redis::Client::open(REDIS).unwrap();
    let mut conn = client.get_connection().unwrap();
    std::thread::spawn(move || {
        let _: i64 = redis::cmd("EVAL")
            .arg(SPIN)
            .arg(0)
            .arg(busy.as_micros() as u64)
            .query(&mut conn)
            .unwrap();
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_started_while_redis_stalls_for_a_second_waits_for_it_instead_of_failing() {
    let Some(engine) = TestEngine::redis_alone().await else {
        return;
    };
    let svc = service(
        config(host())
            .history(MemoryStore::new())
            .shared_engine(engine.spec.connect().await),
    );
    // The first start subscribes the stop listener; the stall meets a start that only runs
    // its commands on the shared connection.
    let warm = send(&svc, ask("warm")).await;
    assert_eq!(warm.status, 200, "{}", warm.text());

    let stall = stall_redis(Duration::from_millis(1200));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let reply = send(&svc, ask("t1")).await;
    let waited = started.elapsed();
    stall.join().unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(reply.text().contains("hello"), "{}", reply.text());
    assert!(
        waited >= Duration::from_millis(800),
        "the start did not meet the stall ({waited:?})"
    );
}

#[tokio::test]
async fn a_chat_start_with_redis_unreachable_is_503_with_retry_after() {
    // Nothing listens on port 1; the connection opens on first use.
    let unreachable = Redis::open("redis://127.0.0.1:1").unwrap();
    let svc = service(
        config(host())
            .history(MemoryStore::new())
            .shared_engine(unreachable),
    );
    let started = Instant::now();
    let reply = send(&svc, ask("t1")).await;
    let waited = started.elapsed();
    assert_unavailable(&reply);
    assert!(reply.error().contains("Redis"), "{}", reply.error());
    // Reconnects are retried for about a second, not held for the client's whole patience.
    assert!(waited < Duration::from_secs(5), "answered after {waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_finds_the_postgres_pool_exhausted_is_503_with_retry_after() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    let timeout = Duration::from_millis(300);
    let store = Arc::new(db.connect_one(timeout).await.unwrap());
    let svc: ChatService =
        service(config(host()).history_arc(store.clone() as Arc<dyn HistoryStore>));
    // Another session locks the table, so a save holds the pool's only connection.
    let lock = db.lock("conversations").await.unwrap();
    let held = {
        let store = store.clone();
        tokio::spawn(async move {
            let c = StoredConversation {
                id: "a".into(),
                messages: vec![Message::user("hi").with_id("m1")],
                ..StoredConversation::default()
            };
            store.save(&Principal::anonymous(), c).await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;

    let err = store.list(&Principal::anonymous()).await.unwrap_err();
    assert!(matches!(err, HistoryError::Busy(_)), "{err:?}");
    let listed = send(&svc, get("/chat/api/conversations")).await;
    assert_unavailable(&listed);
    assert!(
        !listed.error().contains(db.url()),
        "the URL is not shown: {}",
        listed.error()
    );

    // Once the lock goes, the held save completes and the list answers again.
    lock.release().await.unwrap();
    held.await.unwrap().unwrap();
    let listed = send(&svc, get("/chat/api/conversations")).await;
    assert_eq!(listed.status, 200, "{}", listed.text());
}

/// The PostgreSQL engine's own pool: a run start that finds it exhausted is a 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_start_that_finds_the_postgres_engine_pool_exhausted_is_503() {
    let Some(engine) = TestEngine::postgres().await else {
        return;
    };
    let Spec::Postgres { url, schema } = &engine.spec else {
        unreachable!()
    };
    let options = lmchatkit::store::PostgresOptions::default()
        .with_schema(schema)
        .with_max_connections(1)
        .with_acquire_timeout(Duration::from_millis(300));
    let pg = lmchatkit::live::Postgres::connect(url, options)
        .await
        .unwrap();
    let svc = service(config(host()).history(MemoryStore::new()).shared_engine(pg));
    let warm = send(&svc, ask("warm")).await;
    assert_eq!(warm.status, 200, "{}", warm.text());
    // The warm run ends in the engine after its stream does: wait for that, so the lock below
    // meets only the next start.
    for _ in 0..250 {
        let c = send(&svc, get("/chat/api/conversations/warm")).await;
        if c.status == 200 && c.headers.get(RUN_ID_HEADER).is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Another session locks the runs table: the start's statement holds the only connection
    // (waiting on the lock), and the next start finds none free.
    let lock = lock_table(url, schema, "engine_runs").await.unwrap();
    let first = {
        let svc = svc.clone();
        tokio::spawn(async move { send(&svc, ask("t1")).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let second = send(&svc, ask("t2")).await;
    assert_unavailable(&second);
    lock.release().await.unwrap();
    let first = first.await.unwrap();
    assert_eq!(first.status, 200, "{}", first.text());
}
