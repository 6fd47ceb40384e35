//! One measured point of the latency matrix (a path at a concurrency) and how the rounds of a
//! run are folded into one: the median of every number, the sum of every count.

use std::collections::BTreeMap;

use serde::Serialize;

use super::load::Outcome;
use super::stats::{Summary, median};

/// A path at one concurrency, over one round or (folded) all rounds.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Point {
    /// Path name.
    pub path: String,
    /// Concurrent streams.
    pub concurrency: usize,
    /// Rounds folded into this point.
    pub rounds: usize,
    /// Streams started.
    pub requests: usize,
    /// Streams completed with the right sequence.
    pub completed: usize,
    /// Failures by kind.
    pub errors: BTreeMap<String, usize>,
    /// Time to first token, ms.
    pub ttft_ms: Summary,
    /// Whole stream, ms.
    pub total_ms: Summary,
    /// History `PUT` after each turn, ms (history path only).
    pub put_ms: Option<Summary>,
    /// TTFT minus direct's TTFT in the same round, ms.
    pub ttft_overhead_ms: Option<Summary>,
    /// Completed streams (turns, with the `PUT` when on) per second.
    pub streams_per_s: f64,
    /// `data:` events received per second.
    pub events_per_s: f64,
    /// CPU seconds of the relay process tree during the phase.
    pub cpu_s: Option<f64>,
    /// CPU milliseconds of the relay per completed stream.
    pub cpu_ms_per_stream: Option<f64>,
    /// Peak RSS of the relay process tree during the phase, MiB.
    pub peak_rss_mib: Option<f64>,
}

impl Point {
    /// A point from one phase's outcome and the relay's usage (`None` for direct).
    pub fn new(path: &str, concurrency: usize, o: &Outcome, usage: Option<(f64, f64)>) -> Self {
        let secs = o.elapsed_s.max(1e-9);
        Point {
            path: path.into(),
            concurrency,
            rounds: 1,
            requests: o.requests,
            completed: o.completed,
            errors: o.errors.clone(),
            ttft_ms: Summary::of(&o.ttft_ms),
            total_ms: Summary::of(&o.total_ms),
            put_ms: (!o.put_ms.is_empty()).then(|| Summary::of(&o.put_ms)),
            ttft_overhead_ms: None,
            streams_per_s: o.completed as f64 / secs,
            events_per_s: o.events as f64 / secs,
            cpu_s: usage.map(|u| u.0),
            cpu_ms_per_stream: usage.map(|u| u.0 * 1e3 / o.completed.max(1) as f64),
            peak_rss_mib: usage.map(|u| u.1),
        }
    }

    /// Errors of every kind.
    pub fn error_count(&self) -> usize {
        self.errors.values().sum()
    }
}

fn fold_summary(xs: &[Summary]) -> Summary {
    let m = |f: fn(&Summary) -> f64| median(&xs.iter().map(f).collect::<Vec<_>>());
    Summary {
        n: xs.iter().map(|s| s.n).sum(),
        p50: m(|s| s.p50),
        p90: m(|s| s.p90),
        p99: m(|s| s.p99),
        mean: m(|s| s.mean),
        max: xs.iter().map(|s| s.max).fold(0.0, f64::max),
    }
}

fn fold_opt(xs: &[Option<Summary>]) -> Option<Summary> {
    let v: Vec<Summary> = xs.iter().flatten().copied().collect();
    (!v.is_empty()).then(|| fold_summary(&v))
}

fn fold_f64(xs: &[Option<f64>]) -> Option<f64> {
    let v: Vec<f64> = xs.iter().flatten().copied().collect();
    (!v.is_empty()).then(|| median(&v))
}

/// Folds the rounds of one point: medians of the numbers, sums of the counts.
pub fn fold(rounds: &[Point]) -> Point {
    let Some(first) = rounds.first() else {
        return Point::default();
    };
    let mut errors = BTreeMap::new();
    for p in rounds {
        for (k, v) in &p.errors {
            *errors.entry(k.clone()).or_default() += v;
        }
    }
    let col = |f: fn(&Point) -> f64| median(&rounds.iter().map(f).collect::<Vec<_>>());
    Point {
        path: first.path.clone(),
        concurrency: first.concurrency,
        rounds: rounds.len(),
        requests: rounds.iter().map(|p| p.requests).sum(),
        completed: rounds.iter().map(|p| p.completed).sum(),
        errors,
        ttft_ms: fold_summary(&rounds.iter().map(|p| p.ttft_ms).collect::<Vec<_>>()),
        total_ms: fold_summary(&rounds.iter().map(|p| p.total_ms).collect::<Vec<_>>()),
        put_ms: fold_opt(&rounds.iter().map(|p| p.put_ms).collect::<Vec<_>>()),
        ttft_overhead_ms: fold_opt(
            &rounds
                .iter()
                .map(|p| p.ttft_overhead_ms)
                .collect::<Vec<_>>(),
        ),
        streams_per_s: col(|p| p.streams_per_s),
        events_per_s: col(|p| p.events_per_s),
        cpu_s: fold_f64(&rounds.iter().map(|p| p.cpu_s).collect::<Vec<_>>()),
        cpu_ms_per_stream: fold_f64(
            &rounds
                .iter()
                .map(|p| p.cpu_ms_per_stream)
                .collect::<Vec<_>>(),
        ),
        peak_rss_mib: fold_f64(&rounds.iter().map(|p| p.peak_rss_mib).collect::<Vec<_>>()),
    }
}
