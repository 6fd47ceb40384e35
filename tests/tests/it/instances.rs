//! Two `lmchatkit` app processes on loopback behind no load balancer at all (the test is the
//! balancer: it picks the instance of every request), sharing the machine's PostgreSQL
//! (history) and a shared engine for runs, events and view tokens — Redis (`…::on_redis`), or
//! the same PostgreSQL (`--engine postgres`, `…::on_postgres`) — against the mock upstream:
//!
//! - a save through B reaches a tab on A over `/api/events`;
//! - a run started on A is followed from B after the client's connection to A is cut, with no
//!   event lost or duplicated;
//! - a stop sent to B stops A's upstream request through the engine's notice, not the once-a-second
//!   lease refresh (measured by the mock upstream);
//! - a view URL issued by A loads from B, once;
//! - `kill -9` of A mid-run leaves the partial reply saved and the run marked failed;
//! - Redis stopped mid-reply and started again empty (a `redis-server` of the test's own)
//!   costs the reply nothing, answers 503 with `Retry-After` while it is away, and needs no
//!   restart of either instance; PostgreSQL (history and engine) cut off mid-reply and let
//!   through again likewise.
//!
//! Needs the built binary (`cargo test --workspace` builds it), PostgreSQL and Redis; skipped
//! with a note where they are missing, failed under `CI`.

use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use lmchatkit::protocol::RUN_ID_HEADER;
use lmchatkit_tests::app_binary::{self, App, binary};
use lmchatkit_tests::engines::{self, Prefix, Schema};
use lmchatkit_tests::mock_upstream::MockUpstream;
use serde_json::{Value, json};

/// A running app process and the data directory it was given.
struct Instance {
    app: App,
    _data: tempfile::TempDir,
}

impl Instance {
    fn at(&self, route: &str) -> String {
        format!("{}{route}", self.app.url.trim_end_matches('/'))
    }

    /// The scheme, host and port the instance listens on.
    fn origin(&self) -> String {
        self.app
            .url
            .split('/')
            .take(3)
            .collect::<Vec<_>>()
            .join("/")
    }

    /// `kill -9`: the process gets no chance to clean up.
    fn kill_hard(&mut self) {
        let _ = self.app.child.kill(); // SIGKILL on Unix
        let _ = self.app.child.wait();
    }
}

/// The engine two instances share runs, events and view tokens through.
#[derive(Clone, Copy, Debug)]
enum Engine {
    Redis,
    Postgres,
}

/// What two instances share: the database schema, the Redis prefix (with Redis), the mock
/// upstream, and the config file naming the key file they sign with.
struct Cluster {
    /// Dropped with the cluster (and the schema with it).
    _schema: Schema,
    prefix: Option<Prefix>,
    /// The Redis the instances use (with Redis).
    redis: String,
    /// The database URL the instances are given (the schema's, unless a test routes it).
    db: String,
    mock: MockUpstream,
    shared: tempfile::TempDir,
}

impl Cluster {
    /// `None` (with a note) where the binary, PostgreSQL or Redis is missing outside CI.
    async fn new(engine: Engine) -> Option<Self> {
        Self::with_redis(engine, engines::REDIS).await
    }

    /// As [`Cluster::new`], with the Redis at `redis`.
    async fn with_redis(engine: Engine, redis: &str) -> Option<Self> {
        if !binary().exists() {
            assert!(
                std::env::var_os("CI").is_none(),
                "{} is not built",
                binary().display()
            );
            eprintln!("SKIPPED: {} is not built", binary().display());
            return None;
        }
        let schema = engines::schema()?;
        let prefix = match engine {
            Engine::Redis => Some(engines::redis_prefix()?),
            Engine::Postgres => None,
        };
        let mock = MockUpstream::start().await;
        let shared = tempfile::tempdir().unwrap();
        let key = shared.path().join("lmchatkit.key");
        let config = format!("[user_mcp]\nkey_file = {:?}\n", key.display().to_string());
        std::fs::write(shared.path().join("lmchatkit.toml"), config).unwrap();
        Some(Self {
            db: schema.url(),
            _schema: schema,
            prefix,
            redis: redis.to_owned(),
            mock,
            shared,
        })
    }

    /// One app instance on the shared engines.
    fn instance(&self) -> Instance {
        let data = tempfile::tempdir().unwrap();
        let mut cmd = app_binary::command();
        let config = self.shared.path().join("lmchatkit.toml");
        cmd.args(["--listen", "127.0.0.1:0", "--db", &self.db])
            .arg("--config")
            .arg(config);
        match &self.prefix {
            Some(p) => cmd.args(["--redis", &self.redis, "--redis-prefix", &p.prefix]),
            None => cmd.args(["--engine", "postgres"]),
        };
        cmd.env("OPENAI_BASE_URL", self.mock.base_url())
            .env("XDG_DATA_HOME", data.path())
            .env("HOME", data.path())
            .args(["--log", "warn"])
            .stderr(Stdio::inherit());
        Instance {
            app: app_binary::spawn(cmd),
            _data: data,
        }
    }
}

/// Runs each test body once per engine: `name::on_redis`, `name::on_postgres`.
macro_rules! on_each_engine {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_redis() {
                super::$name(super::Engine::Redis).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_postgres() {
                super::$name(super::Engine::Postgres).await;
            }
        }
    )*};
}

on_each_engine!(
    a_save_through_b_reaches_a_tab_on_a,
    a_run_started_on_a_is_followed_from_b_with_no_event_lost_or_twice,
    a_stop_sent_to_b_stops_the_upstream_of_a_by_its_notice_not_the_lease_refresh,
    a_view_url_issued_by_a_loads_from_b_once,
    killing_a_mid_run_leaves_the_partial_reply_saved_and_the_run_failed,
);

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Saves conversation `id` holding one user message through `at`; its revision.
async fn save_question(at: &Instance, id: &str, question: &str) -> u64 {
    let body = json!({"id": id, "title": question, "revision": 0,
        "messages": [{"id": "u1", "role": "user", "content": question}]});
    let res = client()
        .put(at.at(&format!("/api/conversations/{id}")))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        200,
        "{}",
        res.text().await.unwrap_or_default()
    );
    res.json::<Value>().await.unwrap()["revision"]
        .as_u64()
        .unwrap()
}

/// One SSE event: its id (when it has one) and its data.
#[derive(Debug, Clone, PartialEq)]
struct Sse {
    id: Option<u64>,
    data: String,
}

/// Reads SSE events off a response body as they come.
struct SseReader {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: String,
}

impl SseReader {
    fn new(res: reqwest::Response) -> Self {
        Self {
            body: res.bytes_stream().boxed(),
            buf: String::new(),
        }
    }

    /// The next event with data (comments and heartbeats skipped); `None` at the end.
    async fn next(&mut self) -> Option<Sse> {
        loop {
            while let Some(end) = self.buf.find("\n\n") {
                let frame: String = self.buf.drain(..end + 2).collect();
                let mut ev = Sse {
                    id: None,
                    data: String::new(),
                };
                for line in frame.lines() {
                    if let Some(id) = line.strip_prefix("id: ") {
                        ev.id = id.trim().parse().ok();
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        ev.data.push_str(d);
                    }
                }
                if !ev.data.is_empty() {
                    return Some(ev);
                }
            }
            match tokio::time::timeout(Duration::from_secs(20), self.body.next()).await {
                Ok(Some(Ok(chunk))) => self.buf.push_str(&String::from_utf8_lossy(&chunk)),
                Ok(Some(Err(_)) | None) => return None,
                Err(_) => panic!("no event for 20 s (have {:?})", self.buf),
            }
        }
    }

    /// Every event until the stream ends.
    async fn rest(mut self) -> Vec<Sse> {
        let mut all = Vec::new();
        while let Some(ev) = self.next().await {
            all.push(ev);
        }
        all
    }
}

/// Starts a native turn of conversation `id` on `at`; the run's id and its event stream.
async fn start_turn(at: &Instance, id: &str, question: &str) -> (String, SseReader) {
    let res = client()
        .post(at.at("/api/chat"))
        .json(
            &json!({"model": "mock-small", "conversation_id": id, "reply_id": "r1",
            "messages": [{"id": "u1", "role": "user", "content": question}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let run = res.headers()[RUN_ID_HEADER].to_str().unwrap().to_owned();
    (run, SseReader::new(res))
}

/// `POST /api/runs/{run}/stop` through `at` with `http`: the status code and the answer. A
/// timed stop builds `http` before its clock starts: building a client reads the system's root
/// certificates, which took 20–50 ms here.
async fn stop(http: &reqwest::Client, at: &Instance, run: &str) -> (u16, Value) {
    let res = http
        .post(at.at(&format!("/api/runs/{run}/stop")))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.json().await.unwrap())
}

/// Follows run `run` through `at` from its first event (`GET /api/runs/{run}/stream`).
async fn follow(at: &Instance, run: &str) -> SseReader {
    let res = client()
        .get(at.at(&format!("/api/runs/{run}/stream")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    SseReader::new(res)
}

/// The text of the `delta` events among `events`.
fn text_of(events: &[Sse]) -> String {
    events
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(&e.data).ok())
        .filter(|v| v["type"] == "delta")
        .map(|v| v["delta"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The stored reply (message `r1`) of conversation `id`, read through `at`.
async fn stored_reply(at: &Instance, id: &str) -> Option<Value> {
    let res = client()
        .get(at.at(&format!("/api/conversations/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let c: Value = res.json().await.unwrap();
    c["messages"]
        .as_array()?
        .iter()
        .find(|m| m["id"] == "r1")
        .cloned()
}

async fn a_save_through_b_reaches_a_tab_on_a(engine: Engine) {
    let Some(cluster) = Cluster::new(engine).await else {
        return;
    };
    let (a, b) = (cluster.instance(), cluster.instance());
    let res = client().get(a.at("/api/events")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let mut tab_on_a = SseReader::new(res);
    // Let A's subscription settle before the save (a save before it would be replayed
    // only with a Last-Event-ID).
    tokio::time::sleep(Duration::from_millis(300)).await;
    save_question(&b, "saved-on-b", "hello from b").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(Instant::now() < deadline, "the save never reached A");
        let ev = tab_on_a.next().await.expect("A's events ended");
        let v: Value = serde_json::from_str(&ev.data).unwrap();
        if v["id"] == "saved-on-b" {
            assert!(ev.id.is_some(), "events carry ids: {ev:?}");
            assert!(
                v["type"].as_str().unwrap().starts_with("conversation_"),
                "{v}"
            );
            break;
        }
    }
}

async fn a_run_started_on_a_is_followed_from_b_with_no_event_lost_or_twice(engine: Engine) {
    let Some(cluster) = Cluster::new(engine).await else {
        return;
    };
    let (a, b) = (cluster.instance(), cluster.instance());
    save_question(&a, "resumed", "paced please").await;
    let (run, mut on_a) = start_turn(&a, "resumed", "paced please").await;
    let mut seen = Vec::new();
    while seen.len() < 10 {
        seen.push(on_a.next().await.expect("A's stream ended early"));
    }
    drop(on_a); // the client's connection to A is cut
    let last = seen.last().and_then(|e| e.id).expect("events carry ids");

    let res = client()
        .get(b.at(&format!("/api/runs/{run}/stream")))
        .header("last-event-id", last.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let rest = SseReader::new(res).rest().await;
    let all: Vec<Sse> = seen.iter().chain(rest.iter()).cloned().collect();
    let ids: Vec<u64> = all.iter().map(|e| e.id.expect("an id")).collect();
    let expected: Vec<u64> = (1..=ids.len() as u64).collect();
    assert_eq!(ids, expected, "every event once, in order");
    let want: String = (0..100).map(|i| format!("p{i} ")).collect();
    assert_eq!(text_of(&all), want);
    let types: Vec<String> = rest
        .iter()
        .map(|e| serde_json::from_str::<Value>(&e.data).unwrap()["type"].to_string())
        .collect();
    assert!(types.contains(&"\"done\"".to_owned()), "{types:?}");
    let reply = stored_reply(&b, "resumed")
        .await
        .expect("the reply is saved");
    assert_eq!(reply["content"], want.as_str());
}

async fn a_stop_sent_to_b_stops_the_upstream_of_a_by_its_notice_not_the_lease_refresh(
    engine: Engine,
) {
    // Timed: no browser test runs meanwhile (lmchatkit_tests::quiet).
    let _quiet = tokio::task::spawn_blocking(lmchatkit_tests::quiet::exclusive)
        .await
        .unwrap();
    let Some(cluster) = Cluster::new(engine).await else {
        return;
    };
    let (a, b) = (cluster.instance(), cluster.instance());
    // The engine's notice is what is tested: without it the stop still arrives, with the lease
    // refresh (once a second), at a uniformly random 0 to 1,000 ms; four stops all within
    // 400 ms would then be a 0.4^4 = 2.6% chance. A notice takes a few ms (no latency target
    // here: the bench measures speed).
    let http = client();
    for n in 0..4 {
        let thread = format!("stopped-{n}");
        save_question(&a, &thread, "slow please").await;
        let (run, mut on_a) = start_turn(&a, &thread, "slow please").await;
        for _ in 0..5 {
            on_a.next().await.expect("A's stream ended early");
        }
        let dropped_before = cluster.mock.observed.dropped_at.lock().unwrap().len();
        let asked = Instant::now();
        let (code, info) = stop(&http, &b, &run).await;
        assert_eq!((code, &info["status"]), (200, &json!("stopped")), "{info}");
        // The mock notes the drop when its connection task sees it, which may be just after
        // the stop's answer: the time noted is what is measured.
        let mut dropped = None;
        for _ in 0..200 {
            dropped = cluster
                .mock
                .observed
                .dropped_at
                .lock()
                .unwrap()
                .get(dropped_before)
                .copied();
            if dropped.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let dropped = dropped.expect("the upstream saw its request dropped");
        let latency = dropped.saturating_duration_since(asked);
        println!("stop through B → A's upstream request dropped after {latency:?}");
        assert!(
            latency < Duration::from_millis(400),
            "A's upstream request was dropped {latency:?} after the stop"
        );
        assert_eq!(cluster.mock.observed.completed.load(Ordering::SeqCst), 0);
        let tail = on_a.rest().await;
        assert!(
            tail.iter().any(|e| e.data.contains("\"stopped\"")),
            "A's client is told: {tail:?}"
        );
        let reply = stored_reply(&b, &thread)
            .await
            .expect("the partial reply is kept");
        assert_eq!(reply["stopped"], true, "{reply}");
        assert!(
            reply["content"].as_str().unwrap().starts_with("t0 t1 t2 "),
            "{reply}"
        );
    }
}

async fn a_view_url_issued_by_a_loads_from_b_once(engine: Engine) {
    let Some(cluster) = Cluster::new(engine).await else {
        return;
    };
    let (a, b) = (cluster.instance(), cluster.instance());
    let res = client()
        .post(a.at("/api/apps/view"))
        .json(&json!({"via": "demo__show_clock", "uri": lmchatkit::mcp::DEMO_VIEW_URI}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let view: Value = res.json().await.unwrap();
    let path = view["url"].as_str().unwrap().to_owned();
    // `url` is the page's path under the prefix the instances share.
    let (origin_a, origin_b) = (a.origin(), b.origin());
    let page = client()
        .get(format!("{origin_b}{path}"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200, "the URL A issued loads from B");
    assert!(
        page.text().await.unwrap().contains("<html"),
        "the view's page"
    );
    for origin in [&origin_b, &origin_a] {
        let again = client()
            .get(format!("{origin}{path}"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            again.status(),
            404,
            "a view URL loads once, on any instance"
        );
    }
}

async fn killing_a_mid_run_leaves_the_partial_reply_saved_and_the_run_failed(engine: Engine) {
    let Some(cluster) = Cluster::new(engine).await else {
        return;
    };
    let (mut a, b) = (cluster.instance(), cluster.instance());
    save_question(&a, "killed", "slow please").await;
    let (run, mut on_a) = start_turn(&a, "killed", "slow please").await;
    let mut seen = Vec::new();
    // `slow` sends a delta every 20 ms: 3 s of reply is well past any periodic save.
    while seen.len() < 150 {
        seen.push(on_a.next().await.expect("A's stream ended early"));
    }
    a.kill_hard();
    drop(on_a);

    // B finds the run's owner gone and ends it as failed: its followers end too.
    let replay = follow(&b, &run).await.rest().await;
    let last: Value = serde_json::from_str(&replay.last().expect("events").data).unwrap();
    assert_eq!(last["type"], "error", "the run ends failed: {last}");
    let (_, info) = stop(&client(), &b, &run).await;
    assert_eq!(info["status"], "failed", "{info}");

    let reply = stored_reply(&b, "killed")
        .await
        .expect("the partial reply is saved");
    let saved = reply["content"].as_str().unwrap();
    let streamed = text_of(&seen);
    // A went on streaming between our last read and the kill: either may be the longer.
    let one_prefix_of_other = streamed.starts_with(saved) || saved.starts_with(&streamed);
    assert!(
        !saved.is_empty() && one_prefix_of_other,
        "saved {saved:?}, streamed {streamed:?}"
    );
    assert!(
        saved.len() * 2 >= streamed.len(),
        "at most a little of the reply is lost: saved {} of {} bytes",
        saved.len(),
        streamed.len()
    );
}

/// A `redis-server` of the test's own on a free loopback port, keeping nothing on disk (as the
/// machine's does), to stop and start again.
struct OwnRedis {
    port: u16,
    child: Option<std::process::Child>,
}

impl OwnRedis {
    /// `None` (a skip, printed) where `redis-server` is missing outside CI.
    fn start() -> Option<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let mut redis = Self { port, child: None };
        if let Err(e) = redis.spawn() {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI needs redis-server: {e}"
            );
            eprintln!("SKIPPED: cannot start redis-server: {e}");
            return None;
        }
        Some(redis)
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn spawn(&mut self) -> std::io::Result<()> {
        let child = std::process::Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not open its port"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Stops it (SIGKILL: what it held is gone).
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Redis stopped mid-reply and started again empty: see [`engine_away_mid_reply`].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restarted_mid_reply_loses_nothing_and_needs_no_restart() {
    let Some(mut redis) = OwnRedis::start() else {
        return;
    };
    let Some(cluster) = Cluster::with_redis(Engine::Redis, &redis.url()).await else {
        return;
    };
    engine_away_mid_reply(
        &cluster,
        &mut |up| {
            if up {
                redis.spawn().unwrap()
            } else {
                redis.stop()
            }
        },
        &[],
    )
    .await;
}

/// PostgreSQL, the history store and the engine both, cut off mid-reply (every connection cut,
/// new ones dropped, as in a restart) and let through again: see [`engine_away_mid_reply`];
/// reading the conversation list answers 503 too while it is away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_cut_off_mid_reply_loses_nothing_and_needs_no_restart() {
    let Some(mut cluster) = Cluster::new(Engine::Postgres).await else {
        return;
    };
    let gate = engines::Gate::start("127.0.0.1:5432").await;
    cluster.db = gate.url(&cluster.db);
    engine_away_mid_reply(
        &cluster,
        &mut |up| if up { gate.open() } else { gate.close() },
        &["/api/conversations"],
    )
    .await;
}

/// The engine goes away mid-reply and comes back (`engine(false)`, `engine(true)`): A's reply goes on for its
/// own client to its end and is saved whole; B's follower ends without an end that did not
/// come; while the engine is away a new turn, a follow and each of `also_busy` answer 503 with
/// `Retry-After`; once it is back, B follows the run from the start with every frame once, and
/// both instances run new turns and stops without a restart.
async fn engine_away_mid_reply(
    cluster: &Cluster,
    engine: &mut dyn FnMut(bool),
    also_busy: &[&str],
) {
    let (a, b) = (cluster.instance(), cluster.instance());
    // 200 deltas, one every 40 ms.
    save_question(&a, "outage", "unhurried please").await;
    save_question(&b, "during", "hello").await;
    let (run, mut on_a) = start_turn(&a, "outage", "unhurried please").await;
    let mut seen = Vec::new();
    while seen.len() < 20 {
        seen.push(on_a.next().await.expect("A's stream ended early"));
    }
    let res = client()
        .get(b.at(&format!("/api/runs/{run}/stream")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let following = tokio::spawn(SseReader::new(res).rest());
    tokio::time::sleep(Duration::from_millis(200)).await;

    engine(false);
    let before = seen.len();
    while seen.len() < before + 25 {
        seen.push(
            on_a.next()
                .await
                .expect("A's reply goes on while the engine is away"),
        );
    }
    let on_b = tokio::time::timeout(Duration::from_secs(20), following)
        .await
        .expect("B's follower ends while the engine is away")
        .unwrap();
    let kind = |e: &Sse| {
        serde_json::from_str::<Value>(&e.data).unwrap()["type"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        on_b.iter().all(|e| kind(e) != "done"),
        "B did not see an end that did not come"
    );
    let turn = client()
        .post(b.at("/api/chat"))
        .json(
            &json!({"model": "mock-small", "conversation_id": "during", "reply_id": "r1",
            "messages": [{"id": "u1", "role": "user", "content": "hello"}]}),
        )
        .send()
        .await
        .unwrap();
    let mut busy = vec![("a new turn", turn)];
    let follow_route = format!("/api/runs/{run}/stream");
    for route in std::iter::once(follow_route.as_str()).chain(also_busy.iter().copied()) {
        busy.push((route, client().get(b.at(route)).send().await.unwrap()));
    }
    for (what, res) in busy {
        assert_eq!(res.status(), 503, "{what}");
        assert!(res.headers().contains_key("retry-after"), "{what}: {res:?}");
    }

    engine(true);
    seen.extend(on_a.rest().await);
    let kinds: Vec<String> = seen.iter().map(kind).collect();
    assert!(
        kinds.iter().any(|k| k == "done") && !kinds.iter().any(|k| k == "error"),
        "A's reply ran to its end: {kinds:?}"
    );
    let streamed = text_of(&seen);
    assert_eq!(streamed.split_whitespace().count(), 200, "{streamed}");
    let reply = stored_reply(&b, "outage")
        .await
        .expect("the reply is saved");
    assert_eq!(reply["content"], streamed.as_str(), "saved whole");
    assert!(
        reply.get("failed").is_none() && reply.get("stopped").is_none(),
        "{reply}"
    );

    // The engine has the whole run (a Redis that came back empty was given it again): B
    // replays it all, each frame once.
    let replay = follow(&b, &run).await.rest().await;
    assert_eq!(replay, seen, "B's replay is A's stream");

    // Both instances work on without a restart: a turn on B, and a stop through A of a
    // reply running on B.
    let (_, on_b) = start_turn(&b, "during", "hello").await;
    assert_eq!(text_of(&on_b.rest().await), "Hello from the mock model.");
    save_question(&b, "late", "slow please").await;
    let (late, mut on_b) = start_turn(&b, "late", "slow please").await;
    on_b.next().await.expect("the slow reply starts");
    let (status, info) = stop(&client(), &a, &late).await;
    assert_eq!(
        (status, info["status"].as_str()),
        (200, Some("stopped")),
        "{info}"
    );
}

/// PostgreSQL out of reach for longer than a run's lease (5 s) mid-reply: once it is back, B,
/// looking at the run before A has refreshed the lease, may mark it failed (A may also win
/// that race); either way A's reply goes on for its own client to its end and is saved whole,
/// not marked failed, and B's view of the run ends (failed, or with the whole stream).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_away_past_the_lease_mid_reply_keeps_the_reply_going() {
    let Some(mut cluster) = Cluster::new(Engine::Postgres).await else {
        return;
    };
    let gate = engines::Gate::start("127.0.0.1:5432").await;
    cluster.db = gate.url(&cluster.db);
    let (a, b) = (cluster.instance(), cluster.instance());
    // 200 deltas, one every 40 ms: 8 s.
    save_question(&a, "long", "unhurried please").await;
    let (run, mut on_a) = start_turn(&a, "long", "unhurried please").await;
    let mut seen = Vec::new();
    while seen.len() < 20 {
        seen.push(on_a.next().await.expect("A's stream ended early"));
    }
    gate.close();
    // 150 deltas: 6 s, past the lease.
    let before = seen.len();
    while seen.len() < before + 150 {
        seen.push(on_a.next().await.expect("A's reply goes on"));
    }
    gate.open();
    let on_b = follow(&b, &run).await.rest().await;
    seen.extend(on_a.rest().await);
    let data: Vec<Value> = seen
        .iter()
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .collect();
    assert!(
        data.iter().any(|v| v["type"] == "done") && data.iter().all(|v| v["type"] != "error"),
        "A's reply ran to its end: {data:?}"
    );
    let streamed = text_of(&seen);
    assert_eq!(streamed.split_whitespace().count(), 200, "{streamed}");
    let last_on_b: Value = serde_json::from_str(&on_b.last().expect("B saw events").data).unwrap();
    assert!(
        last_on_b["type"] == "error" || on_b == seen,
        "B's view ends failed or whole: {last_on_b}"
    );
    // The save may wait out the store's return (back-off up to 5 s): poll for it.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let reply = stored_reply(&b, "long").await;
        let whole = reply
            .as_ref()
            .is_some_and(|r| r["content"] == streamed.as_str() && r.get("failed").is_none());
        if whole {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the reply was not saved whole: {reply:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
