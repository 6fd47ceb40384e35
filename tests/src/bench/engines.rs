//! SQLite + in-process against PostgreSQL + Redis and PostgreSQL alone (issue 17): the same
//! relay ([`super::relay`]) three times, once with history in a SQLite file and runs in its own
//! memory (one instance, the default), once with history in a `PostgresStore` and every turn a
//! Redis-backed run, once with history and runs both in PostgreSQL (the engine for deployments
//! without Redis; what several instances behind a load balancer run on), each in its own
//! process, at the matrix's concurrencies, interleaved round by round with the direct
//! connection their TTFT overhead is taken over.
//!
//! Decisions:
//! - **Both save as they go.** Every request names a fresh conversation ([`Body::ChatSaved`]),
//!   so the run appends the user message and the reply to the store itself (at the first text,
//!   once a second while text arrives, and at the end) on both variants; without a
//!   conversation neither would touch its store, and the comparison would only measure Redis.
//! - **The shared engines are the machine's own**: PostgreSQL at `127.0.0.1:5432` (user
//!   `postgres`, database `test`) and Redis at `127.0.0.1:6379`, or `LMCHATKIT_BENCH_POSTGRES`
//!   / `LMCHATKIT_BENCH_REDIS`. Each shared relay gets a fresh schema (`lmck_bench_…`, the
//!   store's default pool of 10 connections, and as many again for the PostgreSQL engine) and
//!   the Redis one a fresh key prefix (`lmck-bench-…:`); all are removed after the phase (the
//!   relays are killed first, so nothing holds the schemas' locks).
//! - **Unreachable engines skip the section, saying so** (a note in the results and
//!   [`Engines::skipped`]); the SQLite side is then not measured either, since it would compare
//!   with nothing.
//! - **Relay CPU is the relay process's only**: PostgreSQL's and Redis's own CPU is not in it
//!   (they are the machine's shared servers); streams/s and TTFT include their latency.

use std::fmt::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::load::{self, Phase, Target};
use super::point::{Point, fold};
use super::procs::{self, Proc};
use super::run::target;
use super::sys::Usage;
use super::workload::{Body, Flavor, Workload};

/// The path name of the relay on SQLite, runs in-process.
pub const SQLITE: &str = "sqlite+in-process";
/// The path name of the relay on PostgreSQL and Redis.
pub const SHARED: &str = "postgres+redis";
/// The path name of the relay on PostgreSQL alone (history and the engine).
pub const POSTGRES: &str = "postgres";
/// PostgreSQL unless `LMCHATKIT_BENCH_POSTGRES` says otherwise.
pub const POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
/// Redis unless `LMCHATKIT_BENCH_REDIS` says otherwise.
pub const REDIS_URL: &str = "redis://127.0.0.1:6379";

/// One measure at one concurrency, both variants side by side.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// What is measured, with its unit.
    pub measure: String,
    /// Concurrent streams.
    pub concurrency: usize,
    /// SQLite + in-process.
    pub sqlite: Option<f64>,
    /// PostgreSQL + Redis.
    pub shared: Option<f64>,
    /// PostgreSQL alone.
    pub postgres: Option<f64>,
    /// `shared / sqlite`.
    pub shared_over_sqlite: Option<f64>,
    /// `postgres / sqlite`.
    pub postgres_over_sqlite: Option<f64>,
}

/// The section's results.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Engines {
    /// Why the variants were not measured (`None` when they were).
    pub skipped: Option<String>,
    /// The workload of every stream.
    pub workload: Option<Workload>,
    /// `direct`, [`SQLITE`], [`SHARED`] and [`POSTGRES`] at every concurrency (medians of the
    /// rounds).
    pub points: Vec<Point>,
    /// The measures side by side.
    pub rows: Vec<Row>,
}

/// How the section runs.
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    /// `(concurrency, max requests, seconds)` of each level.
    pub levels: &'a [(usize, usize, f64)],
    /// Rounds (medians are reported).
    pub rounds: usize,
    /// A stream's deadline.
    pub timeout: Duration,
    /// Check every stream's exact sequence (the smoke).
    pub verify: bool,
    /// Warm-up requests per path.
    pub warm_up: usize,
}

type Measure = (&'static str, fn(&Point) -> Option<f64>);

const MEASURES: [Measure; 5] = [
    ("streams/s", |p| Some(p.streams_per_s)),
    ("TTFT overhead p50 (ms)", |p| {
        p.ttft_overhead_ms.map(|o| o.p50)
    }),
    ("TTFT overhead p99 (ms)", |p| {
        p.ttft_overhead_ms.map(|o| o.p99)
    }),
    ("whole stream p50 (ms)", |p| Some(p.total_ms.p50)),
    ("relay CPU ms/stream", |p| p.cpu_ms_per_stream),
];

fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.into())
}

/// A name no other run shares: the process id and the clock's nanoseconds.
fn unique() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{:x}_{nanos:08x}", std::process::id())
}

/// Whether PostgreSQL and Redis answer within 5 s each; why not otherwise.
async fn probe(postgres: &str, redis: &str) -> Result<(), String> {
    let pg = async {
        let (client, conn) = tokio_postgres::connect(postgres, tokio_postgres::NoTls).await?;
        let task = tokio::spawn(conn);
        client.simple_query("SELECT 1").await?;
        drop(client);
        let _ = task.await;
        Ok::<_, tokio_postgres::Error>(())
    };
    match tokio::time::timeout(Duration::from_secs(5), pg).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(format!("PostgreSQL at {postgres} is unreachable: {e}")),
        Err(_) => return Err(format!("PostgreSQL at {postgres} did not answer in 5 s")),
    }
    let r = lmchatkit::live::Redis::connect(redis);
    match tokio::time::timeout(Duration::from_secs(5), r).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(format!("Redis is unreachable: {e}")),
        Err(_) => Err(format!("Redis at {redis} did not answer in 5 s")),
    }
}

/// Drops `schema` (with everything in it); says why not.
async fn drop_schema(postgres: &str, schema: &str) -> Result<(), String> {
    let (client, conn) = tokio_postgres::connect(postgres, tokio_postgres::NoTls)
        .await
        .map_err(|e| e.to_string())?;
    let task = tokio::spawn(conn);
    let out = client
        .batch_execute(&format!(
            "SET lock_timeout = '10s'; DROP SCHEMA IF EXISTS {schema} CASCADE"
        ))
        .await
        .map_err(|e| e.to_string());
    drop(client);
    let _ = task.await;
    out
}

/// Deletes every Redis key under `prefix`; returns how many.
async fn delete_keys(redis: &str, prefix: &str) -> Result<usize, String> {
    let client = redis::Client::open(redis).map_err(|e| e.to_string())?;
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| e.to_string())?;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    if !keys.is_empty() {
        redis::cmd("DEL")
            .arg(&keys)
            .query_async::<i64>(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(keys.len())
}

/// Runs the section against the mock at `mock`; `work` holds the SQLite file. `notes` gets
/// what was skipped or could not be cleaned up.
pub async fn run(
    mock: SocketAddr,
    work: &Path,
    plan: Plan<'_>,
    notes: &mut Vec<String>,
) -> Engines {
    let postgres = env_or("LMCHATKIT_BENCH_POSTGRES", POSTGRES_URL);
    let redis = env_or("LMCHATKIT_BENCH_REDIS", REDIS_URL);
    if let Err(why) = probe(&postgres, &redis).await {
        let why = format!("{SQLITE} vs {SHARED} not measured: {why}");
        notes.push(why.clone());
        return Engines {
            skipped: Some(why),
            ..Engines::default()
        };
    }
    let id = unique();
    let schemas = [format!("lmck_bench_{id}"), format!("lmck_bench_pg_{id}")];
    let prefix = format!("lmck-bench-{id}:");
    let engines = Shared {
        postgres: &postgres,
        schemas: [&schemas[0], &schemas[1]],
        redis: &redis,
        prefix: &prefix,
    };
    let measured = measure(mock, work, plan, &engines).await;
    for schema in &schemas {
        if let Err(e) = drop_schema(&postgres, schema).await {
            notes.push(format!("PostgreSQL schema {schema} was not dropped: {e}"));
        }
    }
    if let Err(e) = delete_keys(&redis, &prefix).await {
        notes.push(format!("Redis keys {prefix}* were not deleted: {e}"));
    }
    match measured {
        Ok(points) => Engines {
            skipped: None,
            workload: Some(Workload::default()),
            rows: rows(&points),
            points,
        },
        Err(e) => {
            let why = format!("{SQLITE} vs {SHARED} not measured: {e}");
            notes.push(why.clone());
            Engines {
                skipped: Some(why),
                ..Engines::default()
            }
        }
    }
}

/// Where the shared relays keep their state: PostgreSQL (a schema for the Redis variant, one
/// for the PostgreSQL-only one) and Redis (under a key prefix).
struct Shared<'a> {
    postgres: &'a str,
    schemas: [&'a str; 2],
    redis: &'a str,
    prefix: &'a str,
}

/// Starts the three relays and measures them (they are killed when this returns).
async fn measure(
    mock: SocketAddr,
    work: &Path,
    plan: Plan<'_>,
    engines: &Shared<'_>,
) -> Result<Vec<Point>, String> {
    let v1 = format!("http://{mock}/v1");
    let db = work.join("engines.db");
    let _ = std::fs::remove_file(&db);
    let relay = |name: &str, storage: &[&str]| {
        let mut args = vec!["lmchatkit", "--upstream", &v1];
        args.extend_from_slice(storage);
        procs::serve_self(name, &args)
    };
    let db = db.to_string_lossy();
    let sqlite = relay(SQLITE, &["--db", &db])?;
    let on_postgres = |schema| ["--postgres", engines.postgres, "--schema", schema];
    let with_redis = ["--redis", engines.redis, "--redis-prefix", engines.prefix];
    let shared = relay(
        SHARED,
        &[&on_postgres(engines.schemas[0])[..], &with_redis].concat(),
    )?;
    let pg_only = relay(POSTGRES, &on_postgres(engines.schemas[1]))?;
    let saved = |name: &str, p: &Proc| {
        let mut t = target(name, p.addr, "/chat/api/chat", Flavor::Lmchatkit);
        t.body = Body::ChatSaved;
        (t, Some(p.pid()))
    };
    let paths: Vec<(Target, Option<u32>)> = vec![
        (
            target("direct", mock, "/v1/chat/completions", Flavor::OpenAi),
            None,
        ),
        saved(SQLITE, &sqlite),
        saved(SHARED, &shared),
        saved(POSTGRES, &pg_only),
    ];
    let base = Phase {
        concurrency: 4,
        max_requests: plan.warm_up,
        duration: Duration::from_secs(2),
        timeout: plan.timeout,
        workload: Workload::default(),
        history: false,
        verify: plan.verify,
        ramp: Duration::ZERO,
    };
    for (t, _) in &paths {
        let o = load::run(t, base).await;
        eprintln!(
            "warm-up {}: {}/{} completed",
            t.name, o.completed, o.requests
        );
    }
    let mut raw: Vec<Vec<Point>> = vec![Vec::new(); plan.levels.len() * paths.len()];
    for round in 0..plan.rounds.max(1) {
        for (l, &(c, max, secs)) in plan.levels.iter().enumerate() {
            let mut direct: Option<Point> = None;
            for (i, (t, pid)) in paths.iter().enumerate() {
                let phase = Phase {
                    concurrency: c,
                    max_requests: max,
                    duration: Duration::from_secs_f64(secs),
                    ..base
                };
                let usage = pid.map(Usage::start);
                let o = load::run(t, phase).await;
                let mut point = Point::new(&t.name, c, &o, usage.map(Usage::finish));
                match &direct {
                    Some(d) => point.ttft_overhead_ms = Some(point.ttft_ms.minus(&d.ttft_ms)),
                    None => direct = Some(point.clone()),
                }
                eprintln!(
                    "engines round {round} c={c} {}: {}/{} ok, ttft p50 {:.3} ms p99 {:.3} ms, {:.0} streams/s, errors {:?}",
                    t.name,
                    o.completed,
                    o.requests,
                    point.ttft_ms.p50,
                    point.ttft_ms.p99,
                    point.streams_per_s,
                    o.errors
                );
                raw[l * paths.len() + i].push(point);
            }
        }
    }
    Ok(raw.iter().map(|r| fold(r)).collect())
}

/// Every measure at every concurrency the SQLite variant was measured at, the others beside it.
pub fn rows(points: &[Point]) -> Vec<Row> {
    let at = |path: &str, c: usize| points.iter().find(|p| p.path == path && p.concurrency == c);
    let mut out = Vec::new();
    for c in points
        .iter()
        .filter(|p| p.path == SQLITE)
        .map(|p| p.concurrency)
    {
        for (name, f) in MEASURES {
            let sqlite = at(SQLITE, c).and_then(f);
            let shared = at(SHARED, c).and_then(f);
            let postgres = at(POSTGRES, c).and_then(f);
            let over = |v: Option<f64>| v.zip(sqlite.filter(|s| *s > 0.0)).map(|(a, b)| a / b);
            out.push(Row {
                measure: name.into(),
                concurrency: c,
                sqlite,
                shared,
                postgres,
                shared_over_sqlite: over(shared),
                postgres_over_sqlite: over(postgres),
            });
        }
    }
    out
}

/// The markdown section of `e`.
pub fn render(e: &Engines) -> String {
    let mut s = format!(
        "\n{SQLITE} vs {SHARED} vs {POSTGRES}: the same relay saving a fresh conversation per request as the run goes (runs in-process, Redis-backed or PostgreSQL-backed; history in SQLite or PostgreSQL); TTFT overhead over direct; relay CPU excludes PostgreSQL's and Redis's own:\n\n"
    );
    if let Some(why) = &e.skipped {
        let _ = writeln!(s, "Not measured: {why}");
        return s;
    }
    s.push_str(
        "| measure | streams | SQLite + in-process | PostgreSQL + Redis | PostgreSQL alone | PostgreSQL + Redis / SQLite | PostgreSQL alone / SQLite |\n|---|---|---|---|---|---|---|\n",
    );
    let cell = |v: Option<f64>| v.map_or("—".into(), |v| format!("{v:.3}"));
    for r in &e.rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.measure,
            r.concurrency,
            cell(r.sqlite),
            cell(r.shared),
            cell(r.postgres),
            cell(r.shared_over_sqlite),
            cell(r.postgres_over_sqlite)
        );
    }
    let errors: Vec<String> = e
        .points
        .iter()
        .filter(|p| p.error_count() > 0)
        .map(|p| format!("{} at {}: {:?}", p.path, p.concurrency, p.errors))
        .collect();
    if !errors.is_empty() {
        let _ = writeln!(s, "\nErrors: {}", errors.join("; "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::stats::Summary;

    fn point(path: &str, c: usize, rate: f64, overhead: f64) -> Point {
        Point {
            path: path.into(),
            concurrency: c,
            streams_per_s: rate,
            ttft_overhead_ms: (path != "direct").then(|| Summary {
                p50: overhead,
                p99: overhead * 3.0,
                ..Summary::default()
            }),
            ..Point::default()
        }
    }

    #[test]
    fn the_variants_are_set_side_by_side_at_each_concurrency_with_their_ratios() {
        let points = vec![
            point("direct", 1, 2000.0, 0.0),
            point(SQLITE, 1, 800.0, 0.25),
            point(SHARED, 1, 400.0, 0.5),
            point(POSTGRES, 1, 200.0, 1.0),
            point("direct", 50, 9000.0, 0.0),
            point(SQLITE, 50, 1000.0, 1.0),
            point(SHARED, 50, 250.0, 4.0),
            point(POSTGRES, 50, 100.0, 8.0),
        ];
        let e = Engines {
            rows: rows(&points),
            points,
            ..Engines::default()
        };
        let find = |m: &str, c: usize| {
            e.rows
                .iter()
                .find(|r| r.measure == m && r.concurrency == c)
                .unwrap()
        };
        let r = find("streams/s", 50);
        assert_eq!((r.sqlite, r.shared), (Some(1000.0), Some(250.0)));
        assert_eq!(r.shared_over_sqlite, Some(0.25));
        assert_eq!(
            (r.postgres, r.postgres_over_sqlite),
            (Some(100.0), Some(0.1))
        );
        let r = find("TTFT overhead p99 (ms)", 1);
        assert_eq!(
            (r.sqlite, r.shared, r.postgres),
            (Some(0.75), Some(1.5), Some(3.0))
        );
        assert!(e.rows.iter().all(|r| r.concurrency != 0));
        assert!(
            render(&e).contains(
                "| TTFT overhead p50 (ms) | 50 | 1.000 | 4.000 | 8.000 | 4.000 | 8.000 |"
            ),
            "{}",
            render(&e)
        );
    }

    #[test]
    fn a_skipped_section_says_why_and_has_no_table() {
        let e = Engines {
            skipped: Some("Redis is unreachable: refused".into()),
            ..Engines::default()
        };
        let md = render(&e);
        assert!(
            md.contains("Not measured: Redis is unreachable: refused"),
            "{md}"
        );
        assert!(!md.contains("| measure |"), "{md}");
    }
}
