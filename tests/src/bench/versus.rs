//! lmchatkit's AI SDK route (`/api/aisdk/chat`) side by side with the AI SDK's own Node relay
//! and with lmchatkit's native `/api/chat`, measure by measure. The route and the relay speak
//! the same protocol (the UI Message Stream) and are read by the same reader, so their numbers
//! compare directly.
//!
//! Decisions:
//! - The ratio is the route's value over the relay's: below 1 the route costs less (time, CPU,
//!   memory); for streams/s and events/s above 1 it is faster.
//! - Who writes what, which is part of the price: `lmchatkit` (`/api/chat`) and the AI SDK
//!   route (`lmchatkit-aisdk`) run on a relay without a history store and write nothing, as
//!   the AI SDK relay writes nothing, so those three compare like for like;
//!   `lmchatkit+history` adds the client's `PUT` of the conversation after each turn, as our UI
//!   does (one SQLite save, timed apart, not in the stream's time); `lmchatkit-aisdk+history`
//!   is the AI SDK route on the relay with SQLite history, which saves the thread itself on
//!   every request (each request names a fresh thread): a read and a write of the thread at
//!   the start, again after each step, and it waits for the last write before `[DONE]`, so
//!   that write is inside its stream time (not its TTFT). Those two compare like for like.
//! - Read TTFT at 50 and 500 streams with streams/s beside it: the load is a closed loop (each
//!   virtual user posts again when its stream ends), so a path whose streams end later (the
//!   route waits for its save) has fewer replies in flight when a stream starts, and its TTFT
//!   can read lower than the native route's, even below direct's.

use std::fmt::Write;

use serde::Serialize;

use super::point::Point;
use super::report::{AISDK_ROUTE, AISDK_ROUTE_HISTORY, OURS, Results};

/// The AI SDK relay's path name.
pub const RELAY: &str = "ai-sdk";
const NATIVE_HISTORY: &str = "lmchatkit+history";

/// One measure at one concurrency for the five paths.
#[derive(Debug, Clone, Serialize)]
pub struct Versus {
    /// What is measured, with its unit.
    pub measure: String,
    /// Concurrent streams.
    pub concurrency: usize,
    /// lmchatkit's `/api/chat`.
    pub native: Option<f64>,
    /// lmchatkit's `/api/chat` with the client's history `PUT` after each turn.
    pub native_history: Option<f64>,
    /// lmchatkit's `/api/aisdk/chat` without a history store.
    pub route: Option<f64>,
    /// lmchatkit's `/api/aisdk/chat` with SQLite history (saves its thread itself).
    #[serde(default)]
    pub route_history: Option<f64>,
    /// The AI SDK relay.
    pub relay: Option<f64>,
    /// `route / relay`.
    pub route_over_relay: Option<f64>,
}

type Measure = (&'static str, fn(&Point) -> Option<f64>);

const LATENCY: [Measure; 6] = [
    ("TTFT overhead p50 (ms)", |p| {
        p.ttft_overhead_ms.map(|o| o.p50)
    }),
    ("TTFT overhead p99 (ms)", |p| {
        p.ttft_overhead_ms.map(|o| o.p99)
    }),
    ("whole stream p50 (ms)", |p| Some(p.total_ms.p50)),
    ("streams/s", |p| Some(p.streams_per_s)),
    ("relay CPU ms/stream", |p| p.cpu_ms_per_stream),
    ("relay peak RSS (MiB)", |p| p.peak_rss_mib),
];

const THROUGHPUT: [Measure; 3] = [
    ("throughput events/s", |p| Some(p.events_per_s)),
    ("throughput relay CPU s", |p| p.cpu_s),
    ("throughput peak RSS (MiB)", |p| p.peak_rss_mib),
];

fn row<'a>(
    measure: &str,
    c: usize,
    f: fn(&Point) -> Option<f64>,
    at: impl Fn(&str) -> Option<&'a Point>,
) -> Versus {
    let get = |path: &str| at(path).and_then(f);
    let (route, relay) = (get(AISDK_ROUTE), get(RELAY));
    Versus {
        measure: measure.into(),
        concurrency: c,
        native: get(OURS),
        native_history: get(NATIVE_HISTORY),
        route,
        route_history: get(AISDK_ROUTE_HISTORY),
        relay,
        route_over_relay: route.zip(relay.filter(|r| *r > 0.0)).map(|(a, b)| a / b),
    }
}

/// Every measure at every concurrency the AI SDK route was measured at, then its throughput.
pub fn compare(r: &Results) -> Vec<Versus> {
    let mut out = Vec::new();
    for c in r.levels(AISDK_ROUTE) {
        for (name, f) in LATENCY {
            out.push(row(name, c, f, |path| r.point(path, c)));
        }
    }
    let tp = &r.throughput.points;
    if let Some(c) = tp
        .iter()
        .find(|p| p.path == AISDK_ROUTE)
        .map(|p| p.concurrency)
    {
        for (name, f) in THROUGHPUT {
            out.push(row(name, c, f, |path| tp.iter().find(|p| p.path == path)));
        }
    }
    out
}

/// The markdown table of [`compare`]'s rows.
pub fn render(rows: &[Versus]) -> String {
    let mut s = String::from(
        "\nlmchatkit's AI SDK route vs the AI SDK relay (same protocol, same reader; route / relay below 1 costs less, above 1 is faster for streams/s and events/s). `lmchatkit+history` PUTs after each turn; the AI SDK route with history saves a fresh thread per request (awaited before `[DONE]`); the others write nothing:\n\n| measure | streams | lmchatkit /api/chat | lmchatkit+history | AI SDK route | AI SDK route + history | ai-sdk relay | route / relay |\n|---|---|---|---|---|---|---|---|\n",
    );
    let cell = |v: Option<f64>| v.map_or("—".into(), |v| format!("{v:.3}"));
    for v in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            v.measure,
            v.concurrency,
            cell(v.native),
            cell(v.native_history),
            cell(v.route),
            cell(v.route_history),
            cell(v.relay),
            cell(v.route_over_relay)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::stats::Summary;

    fn point(path: &str, c: usize, overhead: f64, cpu: f64) -> Point {
        Point {
            path: path.into(),
            concurrency: c,
            ttft_overhead_ms: Some(Summary {
                p50: overhead,
                p99: overhead * 2.0,
                ..Summary::default()
            }),
            cpu_ms_per_stream: Some(cpu),
            ..Point::default()
        }
    }

    #[test]
    fn the_route_is_set_against_the_relay_at_each_concurrency_with_the_native_paths_beside() {
        let mut r = Results::new(&crate::bench::run::Options::for_tests(), 0);
        r.latency = vec![
            point(OURS, 1, 0.3, 0.7),
            point(AISDK_ROUTE, 1, 0.5, 1.5),
            point(AISDK_ROUTE_HISTORY, 1, 0.6, 2.0),
            point(RELAY, 1, 5.0, 10.0),
            point(AISDK_ROUTE, 50, 4.0, 1.0),
        ];
        let rows = compare(&r);
        let find = |m: &str, c: usize| {
            rows.iter()
                .find(|v| v.measure == m && v.concurrency == c)
                .unwrap()
        };
        let o = find("TTFT overhead p50 (ms)", 1);
        assert_eq!(
            (o.native, o.route, o.relay),
            (Some(0.3), Some(0.5), Some(5.0))
        );
        assert_eq!(o.route_over_relay, Some(0.1));
        assert_eq!(o.route_history, Some(0.6));
        assert_eq!(find("relay CPU ms/stream", 1).route_over_relay, Some(0.15));
        // No relay at 50 streams: no ratio, the route's own number stays.
        let o = find("TTFT overhead p99 (ms)", 50);
        assert_eq!(
            (o.route, o.relay, o.route_over_relay),
            (Some(8.0), None, None)
        );
        assert!(render(&rows).contains(
            "| TTFT overhead p50 (ms) | 1 | 0.300 | — | 0.500 | 0.600 | 5.000 | 0.100 |"
        ));
    }
}
