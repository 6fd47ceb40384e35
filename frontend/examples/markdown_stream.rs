//! Measures the per-delta cost of the incremental markdown renderer while a 48 KB reply streams
//! (issue 4, "Measured"): `push` + `html` for each delta, natively.
//!
//! Run: `cargo run --release -p lmchatkit-web --example markdown_stream [reply_kb] [delta_bytes]`
//! (defaults 48 and 4, about one token per delta). Prints p50/p95/p99/max per delta for a mixed
//! reply and for replies that are one long code block, table or list (the worst cases: one block
//! that stays open), with a full re-render per delta for comparison.

use std::time::{Duration, Instant};

use lmchatkit_web::markdown::{Incremental, render};

#[path = "common/replies.rs"]
mod replies;

use replies::{code_reply, list_reply, mixed_reply, table_reply};

fn deltas(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let mut end = (at + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[at..end]);
        at = end;
    }
    out
}

fn report(name: &str, mut times: Vec<Duration>) {
    let total: Duration = times.iter().sum();
    times.sort();
    let pct = |p: f64| times[((times.len() - 1) as f64 * p) as usize].as_secs_f64() * 1e6;
    println!(
        "{name:<44} deltas {:>6}  p50 {:>8.1} µs  p95 {:>8.1} µs  p99 {:>8.1} µs  max {:>8.1} µs  total {:>8.1} ms",
        times.len(),
        pct(0.5),
        pct(0.95),
        pct(0.99),
        times.last().unwrap().as_secs_f64() * 1e6,
        total.as_secs_f64() * 1e3,
    );
}

fn incremental(text: &str, size: usize) -> (Vec<Duration>, u64) {
    let mut inc = Incremental::new();
    let mut times = Vec::new();
    let mut bytes = 0;
    for delta in deltas(text, size) {
        let start = Instant::now();
        inc.push(delta);
        let html = inc.html();
        times.push(start.elapsed());
        bytes += html.len();
    }
    assert_eq!(inc.html(), render(text));
    std::hint::black_box(bytes);
    (times, inc.render_count())
}

fn full(text: &str, size: usize) -> Vec<Duration> {
    let mut source = String::new();
    let mut times = Vec::new();
    for delta in deltas(text, size) {
        let start = Instant::now();
        source.push_str(delta);
        std::hint::black_box(render(&source));
        times.push(start.elapsed());
    }
    times
}

fn main() {
    let mut args = std::env::args().skip(1);
    let kb: usize = args
        .next()
        .map_or(48, |a| a.parse().expect("reply size in KB"));
    let size: usize = args
        .next()
        .map_or(4, |a| a.parse().expect("delta size in bytes"));
    for (name, text) in [
        ("mixed", mixed_reply(kb * 1024)),
        ("one code block", code_reply(kb * 1024)),
        ("one table", table_reply(kb * 1024)),
        ("one list", list_reply(kb * 1024)),
    ] {
        println!("{name} reply: {} bytes, {size}-byte deltas", text.len());
        let (times, renders) = incremental(&text, size);
        report(
            &format!("  incremental push+html ({renders} block renders)"),
            times,
        );
        // The same with one push per animation frame (~64 bytes at ~1,000 tokens/s).
        let (times, _) = incremental(&text, 64);
        report("  incremental push+html, 64-byte pushes", times);
        report("  full render per delta", full(&text, size));
    }
}
