//! One benchmark run: start the mock, the echo, lmchatkit and the peers; warm them up; measure
//! the latency matrix (lmchatkit on two routes: its own `/api/chat`, and `/api/aisdk/chat`, which
//! speaks the AI SDK relay's protocol and so compares with it directly) (every path at 1, 50 and 500 concurrent streams, over several rounds
//! interleaved so drift hits every path alike), relay throughput against the bare echo, 10,000
//! open streams and the history store; the relay on SQLite + in-process against PostgreSQL +
//! Redis ([`super::engines`]); then write the results (see [`super::report`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::load::{self, Phase, Target};
use super::point::{Point, fold};
use super::procs::{self, Proc};
use super::report::{self, AISDK_ROUTE, AISDK_ROUTE_HISTORY, Results};
use super::sys::{Usage, raise_nofile};
use super::workload::{Body, Flavor, Workload};

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The CI smoke: tiny phases, no peers, seconds in all.
    pub smoke: bool,
    /// Where `results.json` and `results.md` go (scratch files go to a temporary folder).
    pub out_dir: PathBuf,
    /// Rounds of the latency matrix and the throughput phase (medians are reported).
    pub rounds: usize,
    /// Folder with the pinned AI SDK `node_modules` (skipped when `None`).
    pub aisdk_dir: Option<PathBuf>,
    /// The `litellm` CLI of the pinned venv (skipped when `None`).
    pub litellm_bin: Option<PathBuf>,
    /// Install times of the peers, s, as measured by the script that installed them.
    pub install_s: BTreeMap<String, f64>,
    /// Streams of the concurrency phase (10,000 in the full run).
    pub open_streams: usize,
}

#[cfg(test)]
impl Options {
    /// A smoke run's options, for unit tests that build [`super::report::Results`] by hand.
    pub fn for_tests() -> Self {
        Options {
            smoke: true,
            out_dir: std::env::temp_dir(),
            rounds: 1,
            aisdk_dir: None,
            litellm_bin: None,
            install_s: BTreeMap::new(),
            open_streams: 0,
        }
    }
}

/// A path of the matrix: a target, whether turns are followed by the history `PUT`, and the
/// process whose CPU and RSS are its cost.
struct PathUnderTest {
    name: String,
    target: Target,
    history: bool,
    pid: Option<u32>,
}

/// A target named `name` at `addr` + `path`, streaming `flavor` and taking its usual body.
pub fn target(name: &str, addr: std::net::SocketAddr, path: &str, flavor: Flavor) -> Target {
    Target {
        name: name.into(),
        addr,
        path: path.into(),
        flavor,
        body: Body::of(flavor),
        auth: None,
        history_prefix: None,
    }
}

/// Runs everything and writes the results; returns them.
pub async fn run(opts: &Options) -> Result<Results, String> {
    let work = std::env::temp_dir().join(format!("lmchatkit-bench-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let nofile = raise_nofile();
    let mut results = Results::new(opts, nofile);

    let mock = procs::serve_self("mock", &["mock"])?;
    let v1 = format!("http://{}/v1", mock.addr);
    let echo = procs::serve_self(
        "echo",
        &["echo", "--upstream", &format!("http://{}", mock.addr)],
    )?;
    let db = work.join("relay.db");
    let _ = std::fs::remove_file(&db);
    let ours = procs::serve_self(
        "lmchatkit",
        &[
            "lmchatkit",
            "--upstream",
            &v1,
            "--db",
            &db.to_string_lossy(),
        ],
    )?;
    // The same relay without a history store: what a turn costs when nothing is saved, on
    // both routes (a client that keeps its conversations itself).
    let bare = procs::serve_self(
        "lmchatkit-bare",
        &["lmchatkit", "--upstream", &v1, "--no-history"],
    )?;
    match super::first_load::measure(ours.addr, "/chat").await {
        Ok(f) => results.first_load = Some(f),
        Err(e) => results.note(format!("UI first load not measured: {e}")),
    }
    match super::ui_timing::measure(&format!("http://{}", ours.addr), "/chat").await {
        Ok(Some(t)) => results.ui_timings = Some(t),
        Ok(None) => results.note("UI timings not measured: Chromium not installed".into()),
        Err(e) => results.note(format!("UI timings not measured: {e}")),
    }
    let mut peers: Vec<Proc> = Vec::new();
    if let Some(dir) = &opts.aisdk_dir {
        match procs::aisdk(dir, &v1) {
            Ok(p) => peers.push(p),
            Err(e) => results.note(format!("AI SDK relay not measured: {e}")),
        }
    }
    if let Some(bin) = &opts.litellm_bin {
        match procs::litellm(bin, &work, &v1) {
            Ok(p) => peers.push(p),
            Err(e) => results.note(format!("LiteLLM not measured: {e}")),
        }
    }

    let mut ours_t = target("lmchatkit", ours.addr, "/chat/api/chat", Flavor::Lmchatkit);
    ours_t.history_prefix = Some("/chat/api/conversations".into());
    let mut paths = vec![
        path(
            "direct",
            target("direct", mock.addr, "/v1/chat/completions", Flavor::OpenAi),
            false,
            None,
        ),
        path(
            "echo",
            target("echo", echo.addr, "/v1/chat/completions", Flavor::OpenAi),
            false,
            Some(echo.pid()),
        ),
        // Without history: nothing saved on either route (the pair of issue 48's first target).
        path(
            "lmchatkit",
            target("lmchatkit", bare.addr, "/chat/api/chat", Flavor::Lmchatkit),
            false,
            Some(bare.pid()),
        ),
        // The AI SDK route: the UI Message Stream, read as the AI SDK relay's.
        path(AISDK_ROUTE, aisdk_route(bare.addr), false, Some(bare.pid())),
        // With SQLite history: our UI's turn (the stream, then the `PUT` of the turn) and the
        // AI SDK route's (a fresh thread per request, which the route saves itself).
        path("lmchatkit+history", ours_t, true, Some(ours.pid())),
        path(
            AISDK_ROUTE_HISTORY,
            Target {
                name: AISDK_ROUTE_HISTORY.into(),
                ..aisdk_route(ours.addr)
            },
            false,
            Some(ours.pid()),
        ),
    ];
    for p in &peers {
        let t = match p.name.as_str() {
            "ai-sdk" => target("ai-sdk", p.addr, "/api/chat", Flavor::AiSdk),
            _ => {
                let mut t = target("litellm", p.addr, "/v1/chat/completions", Flavor::OpenAi);
                t.auth = Some("Bearer sk-bench-master".into());
                t
            }
        };
        paths.push(path(&p.name, t, false, Some(p.pid())));
    }

    let w = Workload::default();
    let base = Phase {
        concurrency: 1,
        max_requests: 0,
        duration: Duration::ZERO,
        timeout: Duration::from_secs(if opts.smoke { 10 } else { 30 }),
        workload: w,
        history: false,
        verify: opts.smoke,
        ramp: Duration::ZERO,
    };
    // Warm-up: JITs, pools, SQLite pages.
    for p in &paths {
        let (n, secs) = if opts.smoke { (10, 1.0) } else { (400, 2.0) };
        let phase = Phase {
            concurrency: 4,
            max_requests: n,
            duration: Duration::from_secs_f64(secs),
            history: p.history,
            ..base
        };
        let o = load::run(&p.target, phase).await;
        eprintln!(
            "warm-up {}: {}/{} completed",
            p.name, o.completed, o.requests
        );
    }

    let levels = levels(opts);
    let mut raw: BTreeMap<(usize, usize), Vec<Point>> = BTreeMap::new();
    for round in 0..opts.rounds.max(1) {
        for &(c, max, secs) in levels {
            let mut direct: Option<Point> = None;
            for (i, p) in paths.iter().enumerate() {
                let phase = Phase {
                    concurrency: c,
                    max_requests: max,
                    duration: Duration::from_secs_f64(secs),
                    history: p.history,
                    ..base
                };
                let usage = p.pid.map(Usage::start);
                let o = load::run(&p.target, phase).await;
                let mut point = Point::new(&p.name, c, &o, usage.map(Usage::finish));
                if let Some(d) = &direct {
                    point.ttft_overhead_ms = Some(point.ttft_ms.minus(&d.ttft_ms));
                } else {
                    direct = Some(point.clone());
                }
                eprintln!(
                    "round {round} c={c} {}: {}/{} ok, ttft p50 {:.3} ms p99 {:.3} ms, {:.0} streams/s, errors {:?}",
                    p.name,
                    o.completed,
                    o.requests,
                    point.ttft_ms.p50,
                    point.ttft_ms.p99,
                    point.streams_per_s,
                    o.errors
                );
                raw.entry((c, i)).or_default().push(point);
            }
        }
    }
    results.latency = raw.values().map(|r| fold(r)).collect();

    // The same relay on SQLite + in-process runs against PostgreSQL + Redis.
    let mut notes = Vec::new();
    results.engines =
        super::engines::run(mock.addr, &work, engines_plan(opts, levels), &mut notes).await;
    for n in notes {
        results.note(n);
    }

    // The same relay as the `lmchatkit` binary accepts connections today: no TCP_NODELAY.
    {
        let db = work.join("nagle.db");
        let _ = std::fs::remove_file(&db);
        let nagle = procs::serve_self(
            "lmchatkit-nagle",
            &[
                "lmchatkit",
                "--upstream",
                &v1,
                "--db",
                &db.to_string_lossy(),
                "--no-nodelay",
            ],
        )?;
        let t = target(
            "lmchatkit-no-nodelay",
            nagle.addr,
            "/chat/api/chat",
            Flavor::Lmchatkit,
        );
        let (c, max, secs) = (levels[0].0, if opts.smoke { 10 } else { 200 }, 2.0);
        let phase = Phase {
            concurrency: c,
            max_requests: max,
            duration: Duration::from_secs_f64(secs),
            ..base
        };
        let usage = Usage::start(nagle.pid());
        let o = load::run(&t, phase).await;
        let point = Point::new(&t.name, c, &o, Some(usage.finish()));
        eprintln!("no TCP_NODELAY c={c}: ttft p50 {:.3} ms", point.ttft_ms.p50);
        results.note(format!(
            "Without TCP_NODELAY on accepted connections (which the lmchatkit binary sets), TTFT at {c} stream on a keep-alive connection: p50 {:.2} ms, p99 {:.2} ms (Nagle + delayed ACK); the matrix runs lmchatkit with TCP_NODELAY set, as the binary does.",
            point.ttft_ms.p50, point.ttft_ms.p99
        ));
        results.latency.push(point);
    }

    // Relay throughput: long 0-interval streams, events/s against the bare echo.
    let tw = Workload {
        tokens: if opts.smoke { 50 } else { 500 },
        ..w
    };
    let (tc, tmax, tsecs) = if opts.smoke {
        (4, 20, 1.0)
    } else {
        (50, 100_000, 4.0)
    };
    let mut traw: BTreeMap<usize, Vec<Point>> = BTreeMap::new();
    for _ in 0..opts.rounds.max(1) {
        // Nothing saved: the relay's own work on each route.
        let saved = |p: &PathUnderTest| p.history || p.name == AISDK_ROUTE_HISTORY;
        for (i, p) in paths.iter().enumerate().filter(|(_, p)| !saved(p)) {
            let phase = Phase {
                concurrency: tc,
                max_requests: tmax,
                duration: Duration::from_secs_f64(tsecs),
                workload: tw,
                ..base
            };
            let usage = p.pid.map(Usage::start);
            let o = load::run(&p.target, phase).await;
            let point = Point::new(&p.name, tc, &o, usage.map(Usage::finish));
            eprintln!(
                "throughput {}: {:.0} events/s, errors {:?}",
                p.name, point.events_per_s, o.errors
            );
            traw.entry(i).or_default().push(point);
        }
    }
    results.set_throughput(traw.values().map(|r| fold(r)).collect(), tw);
    drop(peers);

    // Open streams: slow upstream, every stream open at once.
    let n = opts.open_streams;
    if n > 0 {
        let db = work.join("open.db");
        let _ = std::fs::remove_file(&db);
        let ours_h2 = procs::serve_self(
            "lmchatkit-h2",
            &[
                "lmchatkit",
                "--upstream",
                &v1,
                "--db",
                &db.to_string_lossy(),
                "--upstream-h2",
            ],
        )?;
        let slow = if opts.smoke {
            Workload {
                tokens: 5,
                interval_us: 20_000,
                ..w
            }
        } else {
            Workload {
                tokens: 20,
                interval_us: 500_000,
                ..w
            }
        };
        let t = target(
            "lmchatkit",
            ours_h2.addr,
            "/chat/api/chat",
            Flavor::Lmchatkit,
        );
        let idle_rss = super::sys::peak_rss_mib(ours_h2.pid());
        let phase = Phase {
            concurrency: n,
            max_requests: n,
            duration: Duration::from_secs(60),
            timeout: Duration::from_secs(60),
            workload: slow,
            ramp: Duration::from_millis(if opts.smoke { 50 } else { 4000 }),
            ..base
        };
        let usage = Usage::start(ours_h2.pid());
        let o = load::run(&t, phase).await;
        let (cpu, rss) = usage.finish();
        eprintln!(
            "open streams: {}/{} ok, max open {}, peak RSS {rss:.1} MiB, errors {:?}",
            o.completed, n, o.max_open, o.errors
        );
        results.set_open_streams(&o, n, slow, idle_rss, rss, cpu);
    }
    drop(echo);
    drop(bare);
    drop(ours);
    drop(mock);

    let sizes: &[usize] = if opts.smoke {
        &[10, 100]
    } else {
        &[10, 100, 1000, 5000]
    };
    results.history = super::history::run(
        &work.join("history.db"),
        sizes,
        if opts.smoke { 3 } else { 25 },
    )
    .await?;
    results.durability =
        super::history::sync_cost(&work, if opts.smoke { 20 } else { 400 }).await?;
    results.pipeline = Some(super::pipeline::run(500, if opts.smoke { 5 } else { 400 }).await);
    let _ = std::fs::remove_dir_all(&work);
    results.finish();
    report::write(&results, &opts.out_dir)?;
    Ok(results)
}

/// The levels of the matrix (`(concurrency, max requests, seconds)`) for `opts`.
pub fn levels(opts: &Options) -> &'static [(usize, usize, f64)] {
    if opts.smoke {
        &[(1, 10, 2.0), (4, 40, 2.0), (8, 40, 2.0)]
    } else {
        &[(1, 3000, 3.0), (50, 30_000, 4.0), (500, 30_000, 5.0)]
    }
}

/// How the SQLite vs PostgreSQL + Redis section runs for `opts` at the matrix's `levels`.
pub fn engines_plan<'a>(
    opts: &Options,
    levels: &'a [(usize, usize, f64)],
) -> super::engines::Plan<'a> {
    super::engines::Plan {
        levels,
        rounds: opts.rounds.max(1),
        timeout: Duration::from_secs(if opts.smoke { 10 } else { 30 }),
        verify: opts.smoke,
        warm_up: if opts.smoke { 10 } else { 400 },
    }
}

/// lmchatkit's AI SDK route at `addr`.
pub fn aisdk_route(addr: std::net::SocketAddr) -> Target {
    let mut t = target(AISDK_ROUTE, addr, "/chat/api/aisdk/chat", Flavor::AiSdk);
    t.body = Body::UiMessages;
    t
}

fn path(name: &str, target: Target, history: bool, pid: Option<u32>) -> PathUnderTest {
    PathUnderTest {
        name: name.into(),
        target,
        history,
        pid,
    }
}
