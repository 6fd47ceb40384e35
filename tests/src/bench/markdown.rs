//! `results.md`: the short tables of a run, ending with the ratios.

use std::fmt::Write;

use super::point::Point;
use super::report::Results;

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("—".into(), |v| format!("{v:.digits$}"))
}

fn errors(p: &Point) -> String {
    if p.errors.is_empty() {
        "0".into()
    } else {
        p.errors
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A direct stream's TTFT p50 at one stream in the book's published run (2026-12-07 18:27
/// UTC): how fast that machine was.
const REFERENCE_DIRECT_TTFT_MS: f64 = 0.106;

/// How much slower than the reference run's machine this one ran, past which a run's absolute
/// figures do not compare with the published ones.
const SLOWER_THAN_PUBLISHED: f64 = 1.5;

/// The machine's speed, read off a direct stream's TTFT p50 at one stream (the mock alone, no
/// relay), against the published run's: a run on a slower machine is for its ratios only (the
/// run of 2026-12-07 15:09 UTC ran 2.9x slower than the one of 2026-12-05 and was not
/// published).
fn machine_speed(r: &Results) -> Option<String> {
    let direct = r.point("direct", 1)?.ttft_ms.p50;
    let times = direct / REFERENCE_DIRECT_TTFT_MS;
    let verdict = if times > SLOWER_THAN_PUBLISHED {
        "this machine is slower than that one: compare ratios within this run only, not its \
         absolute figures with the published ones"
    } else if times > 1.0 {
        "slower than that one, within 1.5x: its figures compare with the published ones, the \
         ratios within this run best"
    } else {
        "as fast as that one or faster: its figures compare with the published ones"
    };
    Some(format!(
        "Machine speed: a direct stream's TTFT p50 at one stream is {direct:.3} ms, {times:.1}x \
         the {REFERENCE_DIRECT_TTFT_MS} ms of the run the book publishes (2026-12-07 18:27 UTC); \
         {verdict}.\n"
    ))
}

/// Renders the markdown report.
pub fn render(r: &Results) -> String {
    let mut s = String::new();
    let w = &r.workload;
    let _ = writeln!(
        s,
        "Run {} ({} mode, {} cores, load at start {}), medians of {} rounds; workload {} tokens × {} chars, no delay.\n",
        r.date,
        r.mode,
        r.machine.get("cores").map_or("?", String::as_str),
        r.machine
            .get("loadavg_at_start")
            .map_or("?", String::as_str),
        r.rounds,
        w.tokens,
        w.chunk
    );
    // The smoke's debug build says nothing of the machine.
    if let Some(speed) = machine_speed(r).filter(|_| r.mode != "smoke") {
        let _ = writeln!(s, "{speed}");
    }
    s.push_str("| path | streams | TTFT p50 / p90 / p99 (ms) | overhead p50 / p99 (ms) | streams/s | PUT p50 (ms) | errors | relay CPU ms/stream | relay peak RSS (MiB) |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for p in &r.latency {
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} / {:.3} / {:.3} | {} | {:.0} | {} | {} | {} | {} |",
            p.path,
            p.concurrency,
            p.ttft_ms.p50,
            p.ttft_ms.p90,
            p.ttft_ms.p99,
            p.ttft_overhead_ms
                .map_or("—".into(), |o| format!("{:.3} / {:.3}", o.p50, o.p99)),
            p.streams_per_s,
            opt(p.put_ms.map(|x| x.p50), 3),
            errors(p),
            opt(p.cpu_ms_per_stream, 3),
            opt(p.peak_rss_mib, 0),
        );
    }
    if let Some(tw) = &r.throughput.workload {
        let _ = writeln!(
            s,
            "\nRelay throughput ({} tokens per stream, 0 interval):\n\n| path | streams | events/s | of echo | relay CPU s | peak RSS (MiB) |\n|---|---|---|---|---|---|",
            tw.tokens
        );
        for p in &r.throughput.points {
            let _ = writeln!(
                s,
                "| {} | {} | {:.0} | {} | {} | {} |",
                p.path,
                p.concurrency,
                p.events_per_s,
                r.throughput
                    .of_echo
                    .get(&p.path)
                    .map_or("—".into(), |f| format!("{:.0}%", f * 100.0)),
                opt(p.cpu_s, 2),
                opt(p.peak_rss_mib, 0),
            );
        }
    }
    if let Some(o) = &r.open_streams {
        let _ = writeln!(
            s,
            "\nOpen streams: {} at once through lmchatkit ({} tokens every {} ms): {} completed, {} open at the same time, RSS {:.1} MiB idle → {:.1} MiB peak ({:.1} KiB per stream), {:.1} CPU s.",
            o.streams,
            o.workload.tokens,
            o.workload.interval_us / 1000,
            o.completed,
            o.max_open,
            o.idle_rss_mib,
            o.peak_rss_mib,
            o.kib_per_stream,
            o.cpu_s
        );
    }
    if let Some(f) = &r.first_load {
        let _ = writeln!(
            s,
            "\nUI first paint, bytes as sent (files found by {}; the highlighter, loaded at the first code block, not counted):\n",
            f.measured_by
        );
        files_table(&mut s, &f.paint);
        if let (Some(m), Some(reply)) = (&f.first_message, f.first_reply) {
            let _ = writeln!(
                s,
                "\nWhat the first sent message loads after the first paint (typed and sent in Chromium, the reply from the mock shown):\n"
            );
            files_table(&mut s, m);
            let _ = writeln!(
                s,
                "\nUI first reply (first paint + first message, {} + {} files): {} B gzip ({:.1} KiB), {} B brotli ({:.1} KiB), {} B plain.",
                f.paint.files.len(),
                m.files.len(),
                reply.gzip,
                reply.gzip as f64 / 1024.0,
                reply.br,
                reply.br as f64 / 1024.0,
                reply.identity
            );
        }
    }
    if let Some(t) = &r.ui_timings {
        let each: Vec<String> = t.open_1000_ms.iter().map(|ms| format!("{ms:.0}")).collect();
        let _ = writeln!(
            s,
            "\nUI timings ({}, the UI's own probes): a 48 KB Markdown reply streamed in {}; a 1,000-message conversation opened on reload, its latest 60 messages rendered {:.0} ms after navigation start (median of {} ms).",
            t.measured_by,
            t.stream_summary(),
            t.open_1000_median_ms,
            each.join(", ")
        );
    }
    s.push_str("\nHistory (SQLite file; one more turn saved as the UI saves it, keeping the stored messages, and as a whole-conversation save; in the store, then as the service's `PUT` with its body size):\n\n| messages | load (ms) | load per message (µs) | load the last 64 (ms) | save one more turn (ms) | whole save of it (ms) | `PUT` of the turn (ms, bytes) | whole `PUT` (ms, bytes) |\n|---|---|---|---|---|---|---|---|\n");
    for h in &r.history {
        let _ = writeln!(
            s,
            "| {} | {:.3} | {:.2} | {:.3} | {:.3} | {:.3} | {:.3} ({}) | {:.3} ({}) |",
            h.messages,
            h.load_ms,
            h.load_us_per_message,
            h.tail_ms,
            h.save_turn_ms,
            h.save_turn_whole_ms,
            h.put_turn_ms,
            h.put_turn_bytes,
            h.put_turn_whole_ms,
            h.put_turn_whole_bytes
        );
    }
    if !r.durability.is_empty() {
        s.push_str("\nHistory saves by `synchronous` mode (a new two-message conversation per save, one after another):\n\n| synchronous | saves | saves/s | p50 (ms) | p99 (ms) |\n|---|---|---|---|---|\n");
        for d in &r.durability {
            let _ = writeln!(
                s,
                "| {} | {} | {:.0} | {:.3} | {:.3} |",
                d.synchronous, d.saves, d.saves_per_s, d.save_ms.p50, d.save_ms.p99
            );
        }
    }
    if let Some(p) = &r.pipeline {
        let _ = writeln!(
            s,
            "\nlmchatkit's per-event CPU in-process ({} events per stream): translate + frame {:.0} ns, of which parsing the chunk into a `serde_json::Value` {:.0} ns (a typed borrowed parse: {:.0} ns) and framing {:.0} ns.",
            p.events, p.translate_and_frame_ns, p.value_parse_ns, p.typed_parse_ns, p.frame_ns
        );
    }
    s.push_str("\nTargets:\n\n");
    for c in &r.targets {
        let mark = match c.met {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "not measured",
        };
        let _ = writeln!(s, "- {} — **{mark}**: {}", c.target, c.detail);
    }
    if !r.notes.is_empty() {
        s.push_str("\nNotes:\n\n");
        for n in &r.notes {
            let _ = writeln!(s, "- {n}");
        }
    }
    if !r.install_s.is_empty() {
        let list: Vec<String> = r
            .install_s
            .iter()
            .map(|(k, v)| format!("{k} {v:.0} s"))
            .collect();
        let _ = writeln!(s, "\nPeer install times: {}.", list.join(", "));
    }
    if !r.versus_aisdk.is_empty() {
        s.push_str(&super::versus::render(&r.versus_aisdk));
    }
    s.push_str(&super::engines::render(&r.engines));
    s.push_str("\nTTFT overhead, ours / peer (lower is better; target ≤ 0.1, for `lmchatkit`):\n\n| ours | peer | streams | p50 | p90 | p99 |\n|---|---|---|---|---|---|\n");
    let mut rows: Vec<(String, String, usize)> = r
        .ratios
        .iter()
        .map(|x| (x.path.clone(), x.peer.clone(), x.concurrency))
        .collect();
    rows.dedup();
    for (ours, peer, c) in rows {
        let cell = |pc: &str| {
            r.ratios
                .iter()
                .find(|x| {
                    x.path == ours && x.peer == peer && x.concurrency == c && x.percentile == pc
                })
                .map_or("—".into(), |x| {
                    format!(
                        "{:.3} ms / {:.3} ms = {}",
                        x.ours_ms,
                        x.peer_ms,
                        opt(x.ratio, 3)
                    )
                })
        };
        let _ = writeln!(
            s,
            "| {ours} | {peer} | {c} | {} | {} | {} |",
            cell("p50"),
            cell("p90"),
            cell("p99")
        );
    }
    s
}

/// A table of `f`'s files and their sums.
fn files_table(s: &mut String, f: &super::first_load::Files) {
    s.push_str("| file | plain | gzip | brotli |\n|---|---|---|---|\n");
    for file in &f.files {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} |",
            file.path, file.identity, file.gzip, file.br
        );
    }
    let t = f.sums;
    let _ = writeln!(
        s,
        "| **all** | {} ({:.1} KiB) | {} ({:.1} KiB) | {} ({:.1} KiB) |",
        t.identity,
        t.identity as f64 / 1024.0,
        t.gzip,
        t.gzip as f64 / 1024.0,
        t.br,
        t.br as f64 / 1024.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::point::Point;

    fn with_direct(p50: f64) -> Results {
        let mut r = Results::new(&crate::bench::run::Options::for_tests(), 0);
        let mut direct = Point {
            path: "direct".into(),
            concurrency: 1,
            ..Point::default()
        };
        direct.ttft_ms.p50 = p50;
        r.latency.push(direct);
        r
    }

    #[test]
    fn a_run_on_a_slower_machine_says_to_read_its_ratios_only() {
        let slow = machine_speed(&with_direct(0.249)).unwrap();
        assert!(slow.contains("0.249 ms, 2.3x"), "{slow}");
        assert!(
            slow.contains("compare ratios within this run only"),
            "{slow}"
        );
        let near = machine_speed(&with_direct(0.138)).unwrap();
        assert!(
            near.contains("1.3x") && near.contains("within 1.5x"),
            "{near}"
        );
        assert!(!near.contains("or faster"), "{near}");
        let fast = machine_speed(&with_direct(0.1)).unwrap();
        assert!(fast.contains("as fast as that one or faster"), "{fast}");
        let mut none = with_direct(0.249);
        none.latency.clear();
        assert_eq!(machine_speed(&none), None);
        let mut full = with_direct(0.249);
        full.mode = "full".into();
        assert!(render(&full).contains("Machine speed:"));
        assert!(!render(&with_direct(0.249)).contains("Machine speed:"));
    }
}
