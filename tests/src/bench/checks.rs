//! The targets of issues 7, 19 and 48, checked against a run's numbers. They are reported, never
//! asserted: a shared 2-core machine is too noisy for a pass/fail gate.

use super::point::Point;
use super::report::{AISDK_ROUTE, AISDK_ROUTE_HISTORY, Check, OURS, PEERS, Results};

/// Issue 48's first paint, gzip: 250 KiB.
pub const FIRST_PAINT_GZIP: usize = 250 * 1024;
/// The first load's brotli budget (kept from before issue 48): 250 KB.
pub const FIRST_PAINT_BR: usize = 250_000;
/// Issue 48's first reply (first paint + what the first message loads), gzip: 321 KiB.
pub const FIRST_REPLY_GZIP: usize = 321 * 1024;
/// Issue 48's render of a streamed delta (p99 of the main-thread time per frame), ms.
pub const DELTA_MS: f64 = 1.0;
/// Issue 48's 1,000-message conversation interactive after a reload (median), ms.
pub const OPEN_1000_MS: f64 = 300.0;

fn check_of(target: &str, met: Option<bool>, detail: String) -> Check {
    Check {
        target: target.into(),
        met,
        detail,
    }
}

/// Every target, met, missed or not measured.
pub fn check(r: &Results) -> Vec<Check> {
    let mut out = Vec::new();
    let levels = r.levels(OURS);
    let lowest = levels.iter().copied().min().unwrap_or(1);
    let mid = levels.get(1).copied().unwrap_or(lowest);
    let highest = levels.iter().copied().max().unwrap_or(1);

    let o1 = r.point(OURS, lowest).and_then(|p| p.ttft_overhead_ms);
    out.push(check_of(
        "TTFT overhead <= 0.25 ms at 1 stream",
        o1.map(|o| o.p50 <= 0.25),
        o1.map_or("not measured".into(), |o| {
            let echo = r.point("echo", lowest).and_then(|p| p.ttft_overhead_ms);
            format!(
                "p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms over direct (the bare echo's own p50: {})",
                o.p50,
                o.p90,
                o.p99,
                echo.map_or("—".into(), |e| format!("{:.3} ms", e.p50))
            )
        }),
    ));

    out.push(check_of(
        "TTFT overhead at 1 stream <= 0.1 ms p50 and <= 1 ms p99 (issue 19)",
        o1.map(|o| o.p50 <= 0.1 && o.p99 <= 1.0),
        o1.map_or("not measured".into(), |o| {
            format!("p50 {:.3} ms, p99 {:.3} ms", o.p50, o.p99)
        }),
    ));

    let p50s: Vec<_> = r
        .ratios
        .iter()
        .filter(|x| x.path == OURS && x.percentile == "p50")
        .collect();
    let measured: Vec<&str> = PEERS
        .iter()
        .copied()
        .filter(|peer| p50s.iter().any(|x| x.peer == *peer))
        .collect();
    let all_10x = p50s.iter().all(|x| x.ratio.is_some_and(|v| v <= 0.1));
    let detail = p50s
        .iter()
        .map(|x| {
            format!(
                "{} c={}: {:.3} vs {:.3} ms",
                x.peer, x.concurrency, x.ours_ms, x.peer_ms
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    out.push(check_of(
        "TTFT overhead >= 10x lower than both peers at every concurrency (p50)",
        (!measured.is_empty()).then_some(all_10x && measured.len() == PEERS.len()),
        if detail.is_empty() {
            "peers not measured".into()
        } else {
            detail
        },
    ));

    let h = r.point("lmchatkit+history", mid);
    out.push(check_of(
        ">= 3,000 streams/s of 50 tokens with SQLite history on",
        h.map(|p| p.streams_per_s >= 3000.0),
        h.map_or("not measured".into(), |p| {
            format!(
                "{:.0} turns/s (stream + PUT) at {} concurrent; relay only {:.0}/s",
                p.streams_per_s,
                mid,
                r.point(OURS, mid).map_or(0.0, |q| q.streams_per_s)
            )
        }),
    ));

    out.push(per_core(
        r.point("lmchatkit+history", mid),
        r.point(OURS, mid),
        3000.0,
        "issue 19",
    ));

    let (o, d) = (r.point(OURS, highest), r.point("direct", highest));
    out.push(check_of(
        &format!("at {highest} concurrent streams no errors and TTFT p99 <= 2x direct's"),
        o.zip(d)
            .map(|(o, d)| o.error_count() == 0 && o.ttft_ms.p99 <= 2.0 * d.ttft_ms.p99),
        o.zip(d).map_or("not measured".into(), |(o, d)| {
            format!(
                "{} errors; p99 {:.2} ms vs direct {:.2} ms ({:.2}x)",
                o.error_count(),
                o.ttft_ms.p99,
                d.ttft_ms.p99,
                o.ttft_ms.p99 / d.ttft_ms.p99.max(1e-9)
            )
        }),
    ));

    let f = r.throughput.of_echo.get(OURS).copied();
    out.push(check_of(
        "relay throughput >= 70% of a bare hyper SSE echo",
        f.map(|f| f >= 0.7),
        f.map_or("not measured".into(), |f| {
            format!("{:.0}% of the echo's events/s", f * 100.0)
        }),
    ));

    let s = r.open_streams.as_ref();
    out.push(check_of(
        "10k open streams under 300 MiB RSS, all complete",
        s.map(|s| s.streams >= 10_000 && s.completed == s.streams && s.peak_rss_mib < 300.0),
        s.map_or("not measured".into(), |s| {
            format!(
                "{} streams, {} completed, {} open at once, peak RSS {:.1} MiB ({:.1} KiB/stream)",
                s.streams, s.completed, s.max_open, s.peak_rss_mib, s.kib_per_stream
            )
        }),
    ));

    let f = r.first_load.as_ref();
    out.push(check_of(
        "UI first paint <= 250 KiB gzip and <= 250 KB brotli, as sent (issue 48)",
        f.map(|f| f.paint.sums.gzip <= FIRST_PAINT_GZIP && f.paint.sums.br <= FIRST_PAINT_BR),
        f.map_or("not measured".into(), |f| {
            format!(
                "{:.1} KiB gzip, {:.1} KB brotli ({} files, {:.1} KiB uncompressed; {})",
                f.paint.sums.gzip as f64 / 1024.0,
                f.paint.sums.br as f64 / 1000.0,
                f.paint.files.len(),
                f.paint.sums.identity as f64 / 1024.0,
                f.measured_by
            )
        }),
    ));
    let reply = f.and_then(|f| f.first_reply.zip(f.first_message.as_ref()));
    out.push(check_of(
        "UI first reply (first paint + what the first message loads) <= 321 KiB gzip, as sent (issue 48)",
        reply.map(|(sums, _)| sums.gzip <= FIRST_REPLY_GZIP),
        match (f, reply) {
            (_, Some((sums, message))) => format!(
                "{:.1} KiB gzip, {:.1} KB brotli; the first message loads {} files, {:.1} KiB gzip",
                sums.gzip as f64 / 1024.0,
                sums.br as f64 / 1000.0,
                message.files.len(),
                message.sums.gzip as f64 / 1024.0
            ),
            (Some(f), None) => format!("not measured: {}", f.measured_by),
            (None, None) => "not measured".into(),
        },
    ));

    let t = r.ui_timings.as_ref();
    out.push(check_of(
        "UI: a streamed delta handled in <= 1 ms (p99, 48 KB Markdown reply, Chromium; issue 48)",
        t.map(|t| t.delta_ms.n > 0 && t.delta_ms.p99 <= DELTA_MS),
        t.map_or("not measured".into(), |t| t.stream_summary()),
    ));
    out.push(check_of(
        "UI: a 1,000-message conversation interactive <= 300 ms after a reload (median; issue 48)",
        t.map(|t| !t.open_1000_ms.is_empty() && t.open_1000_median_ms <= OPEN_1000_MS),
        t.map_or("not measured".into(), |t| {
            let each: Vec<String> = t.open_1000_ms.iter().map(|ms| format!("{ms:.0}")).collect();
            format!(
                "median {:.0} ms of {} reloads ({} ms), navigation start to the latest 60 messages rendered",
                t.open_1000_median_ms,
                t.open_1000_ms.len(),
                each.join(", ")
            )
        }),
    ));

    let at = |n: usize| r.history.iter().find(|h| h.messages == n);
    let flat = at(100).zip(r.history.iter().max_by_key(|h| h.messages));
    out.push(check_of(
        "load time per message flat from 100 to 5,000 messages",
        flat.filter(|(_, b)| b.messages >= 5000)
            .map(|(a, b)| b.load_us_per_message <= 1.5 * a.load_us_per_message),
        flat.map_or("not measured".into(), |(a, b)| {
            format!(
                "{:.2} µs/message at {} vs {:.2} µs/message at {}",
                a.load_us_per_message, a.messages, b.load_us_per_message, b.messages
            )
        }),
    ));
    // Flat: the longest conversation's save within 1.5x the 100-message one's (the points
    // are medians of a few dozen saves; 1.5x leaves room for their noise, not for O(n)).
    out.push(check_of(
        "saving one more turn (as the UI saves it) costs the same from 100 to 5,000 messages",
        flat.filter(|(_, b)| b.messages >= 5000)
            .map(|(a, b)| b.save_turn_ms <= 1.5 * a.save_turn_ms),
        flat.map_or("not measured".into(), |(a, b)| {
            format!(
                "{:.3} ms at {} vs {:.3} ms at {}",
                a.save_turn_ms, a.messages, b.save_turn_ms, b.messages
            )
        }),
    ));
    second_round(r, &levels, &mut out);
    out
}

/// Issue 48's targets: the AI SDK route against the native one (CPU, events/s, the tail at the
/// highest concurrency), memory per open stream, turns per relay CPU-second with history, and
/// the relay's own first-token overhead over the bare echo.
fn second_round(r: &Results, levels: &[usize], out: &mut Vec<Check>) {
    let cpu = |path: &str, c: usize| r.point(path, c).and_then(|p| p.cpu_ms_per_stream);
    for (route, native, what) in [
        (AISDK_ROUTE, OURS, "without history"),
        (
            AISDK_ROUTE_HISTORY,
            "lmchatkit+history",
            "with SQLite history",
        ),
    ] {
        out.push(cpu_ratio(
            &format!(
                "AI SDK route CPU per stream <= 1.3x the native route's, {what}, at every concurrency (issue 48)"
            ),
            levels
                .iter()
                .map(|&c| (c, cpu(route, c), cpu(native, c)))
                .collect(),
        ));
    }
    let tp = |path: &str| {
        r.throughput
            .points
            .iter()
            .find(|p| p.path == path)
            .map(|p| p.events_per_s)
    };
    let e = tp(AISDK_ROUTE).zip(tp(OURS));
    out.push(check_of(
        "AI SDK route events/s >= 80% of the native route's (issue 48)",
        e.map(|(a, n)| a >= 0.8 * n),
        e.map_or("not measured".into(), |(a, n)| {
            format!(
                "{a:.0} against {n:.0} events/s ({:.0}%)",
                100.0 * a / n.max(1e-9)
            )
        }),
    ));
    if let Some(&highest) = levels.iter().max() {
        let d = r.point("direct", highest).map(|p| p.ttft_ms.p99);
        let both: Vec<_> = [OURS, AISDK_ROUTE]
            .iter()
            .map(|path| (*path, r.point(path, highest).map(|p| p.ttft_ms.p99)))
            .collect();
        let measured = d.filter(|_| both.iter().all(|(_, p)| p.is_some()));
        out.push(check_of(
            &format!("TTFT p99 at {highest} streams <= 1.3x direct's, both routes (issue 48)"),
            measured.map(|d| both.iter().all(|(_, p)| p.is_some_and(|p| p <= 1.3 * d))),
            measured.map_or("not measured".into(), |d| {
                let each = both
                    .iter()
                    .filter_map(|(path, p)| {
                        p.map(|p| format!("{path} {p:.2} ms ({:.2}x)", p / d.max(1e-9)))
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                format!("{each}; direct {d:.2} ms")
            }),
        ));
    }
    let s = r.open_streams.as_ref();
    out.push(check_of(
        "10k open streams <= 150 MiB peak RSS, <= 15 KiB per stream (issue 48)",
        s.map(|s| {
            s.streams >= 10_000
                && s.completed == s.streams
                && s.peak_rss_mib <= 150.0
                && s.kib_per_stream <= 15.0
        }),
        s.map_or("not measured".into(), |s| {
            format!(
                "{} streams, {} completed, peak RSS {:.1} MiB ({:.1} KiB/stream)",
                s.streams, s.completed, s.peak_rss_mib, s.kib_per_stream
            )
        }),
    ));
    let mid = levels.get(1).or(levels.first()).copied().unwrap_or(1);
    out.push(per_core(
        r.point("lmchatkit+history", mid),
        r.point(OURS, mid),
        5000.0,
        "issue 48",
    ));
    let lowest = levels.iter().copied().min().unwrap_or(1);
    let over = |path: &str| r.point(path, lowest).and_then(|p| p.ttft_overhead_ms);
    let o = over(OURS).zip(over("echo"));
    out.push(check_of(
        "the relay's own first-token overhead at 1 stream <= 0.05 ms p50 over the bare echo, p99 <= 1 ms (issue 48)",
        o.map(|(o, e)| o.p50 - e.p50 <= 0.05 && o.p99 <= 1.0),
        o.map_or("not measured".into(), |(o, e)| {
            format!(
                "p50 {:.3} ms over the echo's ({:.3} against {:.3} ms over direct); p99 {:.3} ms",
                o.p50 - e.p50,
                o.p50,
                e.p50,
                o.p99
            )
        }),
    ));
}

/// Whether a route's CPU per stream stays within 1.3x its pair's at every concurrency
/// (`(concurrency, route, pair)`); not measured when any of them is missing.
fn cpu_ratio(target: &str, at: Vec<(usize, Option<f64>, Option<f64>)>) -> Check {
    let all: Option<Vec<(usize, f64, f64)>> = at
        .iter()
        .map(|&(c, a, n)| Some((c, a?, n.filter(|n| *n > 0.0)?)))
        .collect();
    let all = all.filter(|v| !v.is_empty());
    check_of(
        target,
        all.as_ref()
            .map(|v| v.iter().all(|&(_, a, n)| a <= 1.3 * n)),
        all.map_or("not measured".into(), |v| {
            v.iter()
                .map(|&(c, a, n)| format!("c={c}: {a:.3} vs {n:.3} ms ({:.2}x)", a / n))
                .collect::<Vec<_>>()
                .join("; ")
        }),
    )
}

/// Issue 19's streams per core (and issue 48's `floor` of 5,000): turns (stream + `PUT`) per
/// second of the relay's own CPU, as measured over the phase (its process: the async workers,
/// the blocking pool and the SQLite writer), so a relay that spread over both cores of the
/// machine is not counted as one. The bench does not pin processes: the turns per wall-clock
/// second are issue 7's target above.
fn per_core(history: Option<&Point>, plain: Option<&Point>, floor: f64, issue: &str) -> Check {
    let rate = |p: &Point| p.cpu_ms_per_stream.filter(|c| *c > 0.0).map(|c| 1e3 / c);
    let h = history.and_then(|p| rate(p).map(|r| (p, r)));
    check_of(
        &format!(">= {floor:.0} streams/s per core with SQLite history on ({issue})"),
        h.map(|(_, r)| r >= floor),
        h.map_or("not measured".into(), |(p, r)| {
            format!(
                "{r:.0} turns (stream + PUT) per relay CPU-second at {} concurrent ({:.3} ms each); without history {} per CPU-second",
                p.concurrency,
                1e3 / r,
                plain
                    .and_then(rate)
                    .map_or("—".into(), |r| format!("{r:.0}"))
            )
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(path: &str, streams_per_s: f64, cpu_ms_per_stream: Option<f64>) -> Point {
        Point {
            path: path.into(),
            concurrency: 50,
            streams_per_s,
            cpu_ms_per_stream,
            ..Point::default()
        }
    }

    #[test]
    fn streams_per_core_count_the_relays_cpu_not_the_wall_clock() {
        // 3,500 turns a second on a relay spending 0.476 ms of CPU on each: 1.7 cores busy,
        // 2,101 turns per core.
        let spread = point("lmchatkit+history", 3500.0, Some(0.476));
        let c = per_core(
            Some(&spread),
            Some(&point(OURS, 5000.0, Some(0.349))),
            3000.0,
            "issue 19",
        );
        assert_eq!(c.met, Some(false), "{}", c.detail);
        assert!(c.detail.starts_with("2101 turns"), "{}", c.detail);
        assert!(c.detail.contains("without history 2865"), "{}", c.detail);

        let lean = point("lmchatkit+history", 2900.0, Some(0.3));
        assert_eq!(per_core(Some(&lean), None, 3000.0, "").met, Some(true));
        // Issue 48 asks for 5,000: 0.3 ms a turn is 3,333.
        assert_eq!(per_core(Some(&lean), None, 5000.0, "").met, Some(false));
    }

    #[test]
    fn streams_per_core_are_not_measured_without_the_relays_cpu() {
        let c = per_core(
            Some(&point("lmchatkit+history", 3500.0, None)),
            None,
            3000.0,
            "",
        );
        assert_eq!(c.met, None);
        assert_eq!(per_core(None, None, 3000.0, "").met, None);
    }

    #[test]
    fn the_route_must_stay_within_the_ratio_at_every_concurrency_and_a_gap_is_not_measured() {
        let met = cpu_ratio(
            "t",
            vec![(1, Some(0.5), Some(0.4)), (50, Some(0.25), Some(0.2))],
        );
        assert_eq!(met.met, Some(true), "{}", met.detail);
        assert!(
            met.detail.contains("c=1: 0.500 vs 0.400 ms (1.25x)"),
            "{}",
            met.detail
        );
        let missed = cpu_ratio(
            "t",
            vec![(1, Some(0.5), Some(0.4)), (500, Some(0.7), Some(0.25))],
        );
        assert_eq!(missed.met, Some(false));
        let gap = cpu_ratio("t", vec![(1, Some(0.5), None)]);
        assert_eq!(gap.met, None);
        assert_eq!(cpu_ratio("t", Vec::new()).met, None);
    }

    fn ui_checks(t: Option<crate::bench::ui_timing::UiTimings>) -> Vec<Check> {
        let mut r = Results::new(&crate::bench::run::Options::for_tests(), 0);
        r.ui_timings = t;
        check(&r)
            .into_iter()
            .filter(|c| c.target.starts_with("UI: "))
            .collect()
    }

    #[test]
    fn the_ui_timings_are_met_under_their_targets_missed_over_and_unmeasured_without_chromium() {
        use crate::bench::ui_timing::UiTimings;
        let fast = UiTimings::of(
            "Chromium 1".into(),
            &[0.1; 100],
            &[0.5],
            vec![250.0, 280.0, 320.0],
        );
        let met = ui_checks(Some(fast));
        assert_eq!(met.len(), 2, "{met:?}");
        assert!(met.iter().all(|c| c.met == Some(true)), "{met:?}");
        assert!(met[1].detail.contains("median 280 ms"), "{}", met[1].detail);

        // Two slow frames in a hundred put the p99 over 1 ms; the median reload over 300 ms.
        let mut deltas = vec![0.1; 98];
        deltas.extend([4.0, 5.0]);
        let slow = UiTimings::of("Chromium 1".into(), &deltas, &[], vec![310.0, 290.0, 305.0]);
        let missed = ui_checks(Some(slow));
        assert!(missed.iter().all(|c| c.met == Some(false)), "{missed:?}");

        let none = ui_checks(None);
        assert!(
            none.iter()
                .all(|c| c.met.is_none() && c.detail == "not measured")
        );
        // A run whose probes recorded no reload is not a pass.
        let empty = UiTimings::of("Chromium 1".into(), &[0.1], &[], vec![]);
        assert_eq!(ui_checks(Some(empty))[1].met, Some(false));
    }
}
