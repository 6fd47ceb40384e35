//! `bench`: the benchmark driver of issue 7 (see `lmchatkit_tests::bench`).
//!
//! `bench` runs everything and writes `results.json` and `results.md`; `bench --smoke` is the
//! seconds-long CI version; `bench --engines-only` measures only the relay on SQLite +
//! in-process against PostgreSQL + Redis; `bench serve mock|echo|lmchatkit` are the servers it
//! starts in their own processes (each prints `LISTEN addr`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use std::time::Duration;

use lmchatkit_tests::bench::workload::{Flavor, Workload};
use lmchatkit_tests::bench::{echo, engines, history, load, mock, pipeline, procs, relay, run};

/// The `lmchatkit` app's allocator: the relay measured is the one the app runs (the echo, the
/// mock and the load generator share it, being this binary). Feature `system-alloc` leaves the
/// system's, for heap profilers that hook `malloc`.
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Benchmarks lmchatkit against a direct connection, a bare echo and the peers.
#[derive(Debug, Parser)]
#[command(name = "bench")]
struct Args {
    #[command(subcommand)]
    serve: Option<Cmd>,
    /// Tiny phases, no peers: the CI smoke.
    #[arg(long)]
    smoke: bool,
    /// Where results.json and results.md go.
    #[arg(long, default_value = "bench-results")]
    out: PathBuf,
    /// Rounds of the latency matrix (medians are reported).
    #[arg(long)]
    rounds: Option<usize>,
    /// Folder holding the pinned AI SDK node_modules.
    #[arg(long)]
    aisdk_dir: Option<PathBuf>,
    /// The litellm CLI of the pinned venv.
    #[arg(long)]
    litellm_bin: Option<PathBuf>,
    /// Streams of the open-streams phase (default 10000; 200 with --smoke; 0 skips it).
    #[arg(long)]
    open_streams: Option<usize>,
    /// Only time the history store (sizes 10 to 5,000, then saves with synchronous=FULL and
    /// NORMAL) and print the points; for profiling.
    #[arg(long)]
    history_only: bool,
    /// Conversation sizes of `--history-only` (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [10, 100, 1000, 5000])]
    history_sizes: Vec<usize>,
    /// Saves per `synchronous` mode of `--history-only`.
    #[arg(long, default_value_t = 400)]
    sync_saves: usize,
    /// Only measure the relay on SQLite + in-process against PostgreSQL + Redis (at the
    /// matrix's concurrencies, `--rounds` rounds) and print the section; writes no results.
    #[arg(long)]
    engines_only: bool,
    /// Only time lmchatkit's per-event pipeline stages in-process and print them.
    #[arg(long)]
    pipeline_only: bool,
    /// Passes of the pipeline timing.
    #[arg(long, default_value_t = 400)]
    pipeline_passes: usize,
    /// Only draw `chart.svg` in `--out` from the `results.json` there (no measuring).
    #[arg(long)]
    chart_only: bool,
    /// A peer's install time, `name=seconds` (repeatable; recorded in the results).
    #[arg(long = "install-time")]
    install_time: Vec<String>,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Load one running server alone (for profiling it): prints the phase's numbers.
    Load {
        /// The server's address.
        #[arg(long)]
        addr: SocketAddr,
        /// `openai` (the mock, the echo), `lmchatkit` or `aisdk` (lmchatkit's AI SDK route).
        #[arg(long, default_value = "lmchatkit")]
        flavor: String,
        /// Concurrent streams.
        #[arg(long, default_value_t = 50)]
        concurrency: usize,
        /// Tokens per stream.
        #[arg(long, default_value_t = 500)]
        tokens: u32,
        /// Seconds.
        #[arg(long, default_value_t = 10.0)]
        secs: f64,
        /// Milliseconds the mock waits between tokens (0: none). With `--concurrency 10000
        /// --tokens 20 --interval-ms 500 --ramp-ms 4000` this is the open-streams phase alone.
        #[arg(long, default_value_t = 0)]
        interval_ms: u64,
        /// Milliseconds over which the streams are opened.
        #[arg(long, default_value_t = 0)]
        ramp_ms: u64,
        /// Streams started in all (default: as many as the time allows).
        #[arg(long)]
        max_requests: Option<usize>,
        /// After each turn, `PUT` it to the conversation as the UI does (the matrix's
        /// `lmchatkit+history`; `lmchatkit` flavor only).
        #[arg(long)]
        history: bool,
    },
    /// Serve one of the bench's servers.
    Serve {
        #[command(subcommand)]
        what: Server,
    },
}

#[derive(Debug, Subcommand)]
enum Server {
    /// The mock OpenAI-compatible upstream.
    Mock,
    /// The bare hyper SSE echo in front of `upstream`.
    Echo {
        #[arg(long)]
        upstream: String,
    },
    /// lmchatkit with the OpenAI backend and SQLite history (or, with `--postgres`, history
    /// in PostgreSQL and runs through Redis, or through PostgreSQL without `--redis`; with
    /// `--no-history`, no history store at all).
    Lmchatkit {
        #[arg(long)]
        upstream: String,
        /// The SQLite file (required without `--postgres` or `--no-history`).
        #[arg(long, required_unless_present_any = ["postgres", "no_history"])]
        db: Option<PathBuf>,
        /// No history store: nothing is saved.
        #[arg(long, conflicts_with_all = ["db", "postgres"])]
        no_history: bool,
        /// History in the PostgreSQL at this URL, in `--schema` (created at start).
        #[arg(long, requires = "schema")]
        postgres: Option<String>,
        /// The PostgreSQL schema of `--postgres`.
        #[arg(long)]
        schema: Option<String>,
        /// Runs through the Redis at this URL (with `--postgres`; without it, runs go through
        /// PostgreSQL).
        #[arg(long, requires_all = ["postgres", "redis_prefix"])]
        redis: Option<String>,
        /// The prefix of every Redis key.
        #[arg(long)]
        redis_prefix: Option<String>,
        /// Speak HTTP/2 (prior knowledge) to the upstream.
        #[arg(long)]
        upstream_h2: bool,
        /// Leave TCP_NODELAY off on accepted connections (as the lmchatkit binary does today).
        #[arg(long)]
        no_nodelay: bool,
    },
}

/// The relay (`serve lmchatkit`) runs on the `lmchatkit` app's runtime, so the relay measured
/// is scheduled as the app's is; the mock, the echo, the load generator and the full run keep
/// tokio's defaults (what `#[tokio::main]` builds), the runtime a bare hyper server would have.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let relay = matches!(
        &args.serve,
        Some(Cmd::Serve {
            what: Server::Lmchatkit { .. }
        })
    );
    let mut builder = if relay {
        lmchatkit::runtime::builder()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.enable_all();
        b
    };
    builder.build()?.block_on(start(args))
}

async fn start(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let any: SocketAddr = "127.0.0.1:0".parse()?;
    if args.chart_only {
        let json = std::fs::read_to_string(args.out.join("results.json"))?;
        let svg = lmchatkit_tests::bench::chart::render(&serde_json::from_str(&json)?)?;
        std::fs::write(args.out.join("chart.svg"), svg)?;
        println!("wrote {}", args.out.join("chart.svg").display());
        return Ok(());
    }
    if let Some(Cmd::Load {
        addr,
        flavor,
        concurrency,
        tokens,
        secs,
        interval_ms,
        ramp_ms,
        max_requests,
        history,
    }) = args.serve
    {
        let mut target = match flavor.as_str() {
            "aisdk" => run::aisdk_route(addr),
            "openai" => run::target("load", addr, "/v1/chat/completions", Flavor::OpenAi),
            _ => run::target("load", addr, "/chat/api/chat", Flavor::Lmchatkit),
        };
        if history {
            target.history_prefix = Some("/chat/api/conversations".into());
        }
        let phase = load::Phase {
            concurrency,
            max_requests: max_requests.unwrap_or(usize::MAX),
            duration: Duration::from_secs_f64(secs),
            timeout: Duration::from_secs(60),
            workload: Workload {
                tokens,
                interval_us: interval_ms * 1000,
                ..Workload::default()
            },
            history,
            verify: false,
            ramp: Duration::from_millis(ramp_ms),
        };
        let o = load::run(&target, phase).await;
        let ttft = lmchatkit_tests::bench::stats::Summary::of(&o.ttft_ms);
        let put = lmchatkit_tests::bench::stats::Summary::of(&o.put_ms);
        println!(
            "{}/{} ok, {:.0} streams/s, {:.0} events/s, TTFT p50 {:.3} p90 {:.3} p99 {:.3} ms, PUT p50 {:.3} ms, max open {}, errors {:?}",
            o.completed,
            o.requests,
            o.completed as f64 / o.elapsed_s,
            o.events as f64 / o.elapsed_s,
            ttft.p50,
            ttft.p90,
            ttft.p99,
            put.p50,
            o.max_open,
            o.errors
        );
        return Ok(());
    }
    if let Some(Cmd::Serve { what }) = args.serve {
        let addr = match what {
            Server::Mock => mock::serve(any).await?,
            Server::Echo { upstream } => echo::serve(any, upstream).await?,
            Server::Lmchatkit {
                upstream,
                db,
                no_history,
                postgres,
                schema,
                redis,
                redis_prefix,
                upstream_h2,
                no_nodelay,
            } => {
                // Logging as the `lmchatkit` binary does by default (`info`, redacted, to
                // stderr), so the relay measured pays for its subscriber as the app does.
                {
                    use tracing_subscriber::layer::SubscriberExt;
                    use tracing_subscriber::util::SubscriberInitExt;
                    let filter = lmchatkit::logs::LogFilter::parse("info")?;
                    tracing_subscriber::registry()
                        .with(filter.into_layer())
                        .with(tracing_subscriber::fmt::layer().with_writer(|| {
                            lmchatkit::secrets::RedactingWriter::new(std::io::stderr())
                        }))
                        .init();
                }
                let redis = redis.as_deref().zip(redis_prefix.as_deref());
                let storage = match (&postgres, &schema, &db) {
                    (Some(postgres), Some(schema), _) => relay::Storage::Shared {
                        postgres,
                        schema,
                        redis,
                    },
                    (_, _, Some(db)) => relay::Storage::Sqlite(db),
                    _ if no_history => relay::Storage::None,
                    _ => return Err("serve lmchatkit: give --db or --postgres".into()),
                };
                relay::serve(any, &upstream, storage, upstream_h2, !no_nodelay).await?
            }
        };
        println!("LISTEN {addr}");
        std::future::pending::<()>().await;
        return Ok(());
    }
    if args.pipeline_only {
        let stages = pipeline::run(500, args.pipeline_passes).await;
        println!("{}", serde_json::to_string_pretty(&stages)?);
        return Ok(());
    }
    if args.history_only {
        let db = std::env::temp_dir().join(format!("lmchatkit-history-{}.db", std::process::id()));
        let points = history::run(&db, &args.history_sizes, 25).await?;
        history::remove_db(&db);
        println!("{}", serde_json::to_string_pretty(&points)?);
        let sync = history::sync_cost(&std::env::temp_dir(), args.sync_saves).await?;
        println!("{}", serde_json::to_string_pretty(&sync)?);
        return Ok(());
    }
    let install_s: BTreeMap<String, f64> = args
        .install_time
        .iter()
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k.to_owned(), v.parse().ok()?)))
        .collect();
    let opts = run::Options {
        smoke: args.smoke,
        out_dir: args.out,
        rounds: args.rounds.unwrap_or(if args.smoke { 1 } else { 3 }),
        aisdk_dir: args.aisdk_dir.filter(|_| !args.smoke),
        litellm_bin: args.litellm_bin.filter(|_| !args.smoke),
        install_s,
        open_streams: args
            .open_streams
            .unwrap_or(if args.smoke { 200 } else { 10_000 }),
    };
    if args.engines_only {
        lmchatkit_tests::bench::sys::raise_nofile();
        let work = std::env::temp_dir().join(format!("lmchatkit-engines-{}", std::process::id()));
        std::fs::create_dir_all(&work)?;
        let mock = procs::serve_self("mock", &["mock"])?;
        let plan = run::engines_plan(&opts, run::levels(&opts));
        let mut notes = Vec::new();
        let section = engines::run(mock.addr, &work, plan, &mut notes).await;
        let _ = std::fs::remove_dir_all(&work);
        println!("{}", serde_json::to_string_pretty(&section)?);
        println!("{}", engines::render(&section));
        for n in notes {
            eprintln!("note: {n}");
        }
        return Ok(());
    }
    let results = run::run(&opts).await?;
    println!(
        "{}",
        std::fs::read_to_string(opts.out_dir.join("results.md"))?
    );
    let missed = results
        .targets
        .iter()
        .filter(|c| c.met == Some(false))
        .count();
    eprintln!(
        "{} targets met, {missed} missed",
        results
            .targets
            .iter()
            .filter(|c| c.met == Some(true))
            .count()
    );
    Ok(())
}
