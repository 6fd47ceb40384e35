//! The results of a run: the JSON document (`results.json`, schema `lmchatkit-bench/1`), the
//! overhead ratios against the peers, the check of every target of issue 7, and the markdown
//! tables (`results.md`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::history::{HistoryPoint, SyncPoint};
use super::load::Outcome;
use super::point::Point;
use super::run::Options;
use super::workload::Workload;

/// The schema tag of `results.json`.
pub const SCHEMA: &str = "lmchatkit-bench/1";
/// The path whose overhead is "ours" (lmchatkit without a history store, `/api/chat`).
pub const OURS: &str = "lmchatkit";
/// lmchatkit without a history store on its AI SDK route (`/api/aisdk/chat`), beside
/// [`OURS`] on the same process.
pub const AISDK_ROUTE: &str = "lmchatkit-aisdk";
/// The AI SDK route with server-side history: it saves each request's thread itself.
pub const AISDK_ROUTE_HISTORY: &str = "lmchatkit-aisdk+history";
/// The peers ours is compared with.
pub const PEERS: [&str; 2] = ["ai-sdk", "litellm"];

/// Relay throughput against the bare echo.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Throughput {
    /// What each stream carried.
    pub workload: Option<Workload>,
    /// One point per path (events/s, CPU, RSS).
    pub points: Vec<Point>,
    /// Each path's events/s as a fraction of the echo's.
    pub of_echo: BTreeMap<String, f64>,
}

/// Many streams open at once through lmchatkit.
#[derive(Debug, Clone, Serialize)]
pub struct OpenStreams {
    /// Streams asked for (all at once).
    pub streams: usize,
    /// Streams that completed with the right sequence.
    pub completed: usize,
    /// Most streams open at the same time.
    pub max_open: usize,
    /// Failures by kind.
    pub errors: BTreeMap<String, usize>,
    /// The slow upstream's workload.
    pub workload: Workload,
    /// lmchatkit's RSS before the phase, MiB.
    pub idle_rss_mib: f64,
    /// lmchatkit's peak RSS during the phase, MiB.
    pub peak_rss_mib: f64,
    /// (peak − idle) per stream, KiB.
    pub kib_per_stream: f64,
    /// lmchatkit's CPU seconds during the phase.
    pub cpu_s: f64,
    /// Wall time, s.
    pub elapsed_s: f64,
}

/// Our TTFT overhead over a peer's, at one concurrency and percentile.
#[derive(Debug, Clone, Serialize)]
pub struct Ratio {
    /// Which of ours: [`OURS`] or [`AISDK_ROUTE`].
    pub path: String,
    /// The peer.
    pub peer: String,
    /// Concurrent streams.
    pub concurrency: usize,
    /// `p50`, `p90` or `p99`.
    pub percentile: String,
    /// Our overhead over direct, ms.
    pub ours_ms: f64,
    /// The peer's overhead over direct, ms.
    pub peer_ms: f64,
    /// `max(ours, 0) / peer` (lower is better; the target is ≤ 0.1).
    pub ratio: Option<f64>,
}

/// One target of issue 7.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// The target as the issue states it.
    pub target: String,
    /// Met, missed, or not measured (`null`).
    pub met: Option<bool>,
    /// The numbers behind the verdict.
    pub detail: String,
}

/// Everything a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Results {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// `smoke` or `full`.
    pub mode: String,
    /// UTC time the run started.
    pub date: String,
    /// Cores, kernel, load average at the start, open-files limit.
    pub machine: BTreeMap<String, String>,
    /// Rounds folded into each latency point.
    pub rounds: usize,
    /// The latency matrix's workload.
    pub workload: Workload,
    /// Anything skipped or worth knowing.
    pub notes: Vec<String>,
    /// Every path at every concurrency.
    pub latency: Vec<Point>,
    /// Relay throughput.
    pub throughput: Throughput,
    /// Many open streams.
    pub open_streams: Option<OpenStreams>,
    /// The UI's first load, bytes as sent.
    pub first_load: Option<super::first_load::FirstLoad>,
    /// The UI's render of a streamed delta and a 1,000-message conversation's open, in Chromium.
    pub ui_timings: Option<super::ui_timing::UiTimings>,
    /// History store costs by size.
    pub history: Vec<HistoryPoint>,
    /// History save cost with `synchronous=FULL` and `NORMAL`.
    pub durability: Vec<SyncPoint>,
    /// lmchatkit's per-event CPU by stage, in-process (profiling evidence).
    pub pipeline: Option<super::pipeline::Stages>,
    /// Our overhead / the peers'.
    pub ratios: Vec<Ratio>,
    /// lmchatkit's two routes and the AI SDK relay, measure by measure.
    pub versus_aisdk: Vec<super::versus::Versus>,
    /// The targets, met or not.
    pub targets: Vec<Check>,
    /// The relay on SQLite + in-process runs against PostgreSQL + Redis.
    pub engines: super::engines::Engines,
    /// Install times of the peers, s.
    pub install_s: BTreeMap<String, f64>,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .trim()
        .to_owned()
}

impl Results {
    /// Empty results for a run with `opts`.
    pub fn new(opts: &Options, nofile: u64) -> Self {
        let date = std::process::Command::new("date")
            .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
        let machine = BTreeMap::from([
            ("cores".into(), cores.to_string()),
            ("kernel".into(), read("/proc/sys/kernel/osrelease")),
            ("loadavg_at_start".into(), read("/proc/loadavg")),
            ("nofile".into(), nofile.to_string()),
        ]);
        Results {
            schema: SCHEMA.into(),
            mode: if opts.smoke { "smoke" } else { "full" }.into(),
            date,
            machine,
            rounds: opts.rounds.max(1),
            workload: Workload::default(),
            notes: Vec::new(),
            latency: Vec::new(),
            throughput: Throughput::default(),
            open_streams: None,
            first_load: None,
            ui_timings: None,
            history: Vec::new(),
            durability: Vec::new(),
            pipeline: None,
            ratios: Vec::new(),
            versus_aisdk: Vec::new(),
            targets: Vec::new(),
            engines: Default::default(),
            install_s: opts.install_s.clone(),
        }
    }

    /// Adds a note (also printed).
    pub fn note(&mut self, s: String) {
        eprintln!("note: {s}");
        self.notes.push(s);
    }

    /// Stores the throughput points and their fractions of the echo's events/s.
    pub fn set_throughput(&mut self, points: Vec<Point>, w: Workload) {
        let echo = points
            .iter()
            .find(|p| p.path == "echo")
            .map(|p| p.events_per_s);
        let of_echo = points
            .iter()
            .filter_map(|p| Some((p.path.clone(), p.events_per_s / echo.filter(|e| *e > 0.0)?)))
            .collect();
        self.throughput = Throughput {
            workload: Some(w),
            points,
            of_echo,
        };
    }

    /// Stores the open-streams phase.
    pub fn set_open_streams(
        &mut self,
        o: &Outcome,
        streams: usize,
        workload: Workload,
        idle: f64,
        peak: f64,
        cpu_s: f64,
    ) {
        self.open_streams = Some(OpenStreams {
            streams,
            completed: o.completed,
            max_open: o.max_open,
            errors: o.errors.clone(),
            workload,
            idle_rss_mib: idle,
            peak_rss_mib: peak,
            kib_per_stream: (peak - idle).max(0.0) * 1024.0 / streams.max(1) as f64,
            cpu_s,
            elapsed_s: o.elapsed_s,
        });
    }

    /// The latency point of `path` at `c` streams.
    pub fn point(&self, path: &str, c: usize) -> Option<&Point> {
        self.latency
            .iter()
            .find(|p| p.path == path && p.concurrency == c)
    }

    /// The concurrencies `path` was measured at, in the matrix's order.
    pub fn levels(&self, path: &str) -> Vec<usize> {
        self.latency
            .iter()
            .filter(|p| p.path == path)
            .map(|p| p.concurrency)
            .collect()
    }

    /// Computes the ratios and the target checks.
    pub fn finish(&mut self) {
        let levels = self.levels(OURS);
        for (ours_path, peer) in [OURS, AISDK_ROUTE]
            .into_iter()
            .flat_map(|o| PEERS.map(|p| (o, p)))
        {
            for &c in &levels {
                let (Some(o), Some(p)) = (self.point(ours_path, c), self.point(peer, c)) else {
                    continue;
                };
                let (Some(oo), Some(po)) = (o.ttft_overhead_ms, p.ttft_overhead_ms) else {
                    continue;
                };
                for (name, ours, theirs) in [
                    ("p50", oo.p50, po.p50),
                    ("p90", oo.p90, po.p90),
                    ("p99", oo.p99, po.p99),
                ] {
                    self.ratios.push(Ratio {
                        path: ours_path.into(),
                        peer: peer.into(),
                        concurrency: c,
                        percentile: name.into(),
                        ours_ms: ours,
                        peer_ms: theirs,
                        ratio: (theirs > 0.0).then(|| ours.max(0.0) / theirs),
                    });
                }
            }
        }
        self.versus_aisdk = super::versus::compare(self);
        self.targets = super::checks::check(self);
    }
}

/// Writes `results.json`, `results.md` and `chart.svg` into `dir`.
pub fn write(r: &Results, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let value = serde_json::to_value(r).map_err(|e| e.to_string())?;
    let json = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("results.json"), json).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("results.md"), super::markdown::render(r))
        .map_err(|e| e.to_string())?;
    let chart = super::chart::render(&value)?;
    std::fs::write(dir.join("chart.svg"), chart).map_err(|e| e.to_string())
}
