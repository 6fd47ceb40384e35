//! `chart.svg`: the side-by-side figure of a run, drawn from `results.json` (so an older run's
//! file draws too: `bench --chart-only DIR`). The book's performance chapter inlines it.
//!
//! Two panels, each path a bar, lmchatkit's bars in one colour and the peers' in another:
//! - **TTFT p50 at 1, 50 and 500 concurrent streams**, on a log scale (the values span five
//!   orders of magnitude, 0.1 ms to 12 s), one group per concurrency;
//! - **relay throughput** (events/s, 500-token streams, 50 at once), linear, as a share of the
//!   bare echo's.
//!
//! Plain SVG with text labels (no script, no external font or style), so it renders the same in
//! the book, on GitHub and offline, and its numbers can be read without hovering.

use std::fmt::Write;

use serde_json::Value;

/// The paths drawn, in order, with their labels; a path the run lacks is left out.
const PATHS: &[(&str, &str)] = &[
    ("lmchatkit", "lmchatkit /api/chat"),
    ("lmchatkit-aisdk", "lmchatkit AI SDK route"),
    ("echo", "bare hyper SSE echo"),
    ("ai-sdk", "AI SDK Node relay"),
    ("litellm", "LiteLLM proxy"),
];
const CONCURRENCY: [u64; 3] = [1, 50, 500];

/// One bar: the path, its label, its value.
type Bar = (&'static str, &'static str, f64);

const WIDTH: f64 = 760.0;
const LABEL: f64 = 190.0;
const BAR: f64 = 16.0;
const GAP: f64 = 4.0;
const PLOT: f64 = WIDTH - LABEL - 110.0;

fn ours(path: &str) -> bool {
    path.starts_with("lmchatkit")
}

fn colour(path: &str) -> &'static str {
    match path {
        p if ours(p) => "#2563eb",
        "echo" => "#9ca3af",
        _ => "#f97316",
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `ms` as the tables write it: 3 significant digits below 10, whole numbers above.
fn ms(v: f64) -> String {
    match v {
        v if v >= 1000.0 => format!("{:.1} s", v / 1000.0),
        v if v >= 10.0 => format!("{v:.0} ms"),
        v if v >= 1.0 => format!("{v:.1} ms"),
        v => format!("{v:.3} ms"),
    }
}

/// The TTFT p50 of `path` at `concurrency`, from `latency`.
fn ttft(results: &Value, path: &str, concurrency: u64) -> Option<f64> {
    results["latency"].as_array()?.iter().find_map(|p| {
        (p["path"] == path && p["concurrency"] == concurrency)
            .then(|| p["ttft_ms"]["p50"].as_f64())
            .flatten()
    })
}

/// The events/s of `path` in the throughput phase.
fn events_per_s(results: &Value, path: &str) -> Option<f64> {
    results["throughput"]["points"]
        .as_array()?
        .iter()
        .find_map(|p| {
            (p["path"] == path)
                .then(|| p["events_per_s"].as_f64())
                .flatten()
        })
}

/// One bar at `y`: the path's label left of the axis, a bar `width` long (at least 1) in the
/// path's colour, and `value` after it (also the bar's tooltip).
fn bar(body: &mut String, y: f64, path: &str, label: &str, width: f64, value: &str) {
    let width = width.max(1.0);
    let (label, value) = (escape(label), escape(value));
    let _ = writeln!(
        body,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{label}</text><rect x="{LABEL}" y="{y:.1}" width="{width:.1}" height="{BAR}" fill="{}"><title>{label}: {value}</title></rect><text x="{:.1}" y="{:.1}" font-size="12">{value}</text>"#,
        LABEL - 6.0,
        y + 12.5,
        colour(path),
        LABEL + width + 5.0,
        y + 12.5,
    );
}

/// The chart of `results` (a parsed `results.json`); an error when it has no latency point of
/// any drawn path.
pub fn render(results: &Value) -> Result<String, String> {
    let groups: Vec<(u64, Vec<Bar>)> = CONCURRENCY
        .iter()
        .map(|&c| {
            let bars = PATHS
                .iter()
                .filter_map(|&(p, label)| Some((p, label, ttft(results, p, c)?)))
                .collect();
            (c, bars)
        })
        .collect();
    let all: Vec<f64> = groups
        .iter()
        .flat_map(|(_, b)| b.iter().map(|x| x.2))
        .filter(|v| *v > 0.0)
        .collect();
    if all.is_empty() {
        return Err("results.json has no TTFT of any drawn path".into());
    }
    // Log scale over whole decades around the values.
    let lo = all.iter().cloned().fold(f64::MAX, f64::min).log10().floor();
    let hi = all
        .iter()
        .cloned()
        .fold(f64::MIN, f64::max)
        .log10()
        .ceil()
        .max(lo + 1.0);
    let x_log = |v: f64| LABEL + PLOT * ((v.max(10f64.powf(lo)).log10() - lo) / (hi - lo));

    let throughput: Vec<Bar> = PATHS
        .iter()
        .filter_map(|&(p, label)| Some((p, label, events_per_s(results, p)?)))
        .collect();
    let echo = events_per_s(results, "echo");

    let mut body = String::new();
    let mut y = 56.0;
    let title = |s: &mut String, y: f64, text: &str| {
        let _ = writeln!(
            s,
            r#"<text x="10" y="{y}" font-size="15" font-weight="bold">{}</text>"#,
            escape(text)
        );
    };
    title(
        &mut body,
        y - 20.0,
        "Time to first token, p50 (log scale; shorter is better)",
    );
    let top = y;
    // The grid goes under the bars: written here once their extent is known.
    let grid_at = body.len();
    for (c, bars) in &groups {
        if bars.is_empty() {
            continue;
        }
        let _ = writeln!(
            body,
            r##"<text x="10" y="{:.1}" font-size="12" fill="#374151">{c} concurrent stream{}</text>"##,
            y + 12.0,
            if *c == 1 { "" } else { "s" }
        );
        y += 18.0;
        for (path, label, v) in bars {
            bar(&mut body, y, path, label, x_log(*v) - LABEL, &ms(*v));
            y += BAR + GAP;
        }
        y += 8.0;
    }
    // Decade grid lines and their labels.
    let mut grid = String::new();
    for d in (lo as i32)..=(hi as i32) {
        let x = LABEL + PLOT * ((d as f64 - lo) / (hi - lo));
        let _ = writeln!(
            grid,
            r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{y:.1}" stroke="#e5e7eb"/><text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle" fill="#6b7280">{}</text>"##,
            y + 12.0,
            ms(10f64.powi(d))
        );
    }
    body.insert_str(grid_at, &grid);
    y += 50.0;
    if let Some(max) = throughput
        .iter()
        .map(|t| t.2)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
    {
        title(
            &mut body,
            y - 14.0,
            "Relay throughput, events/s (500-token streams, 50 at once; longer is better)",
        );
        y += 4.0;
        for (path, label, v) in &throughput {
            // Room after the longest bar for its label.
            let width = (PLOT - 150.0) * v / max;
            let share = echo
                .filter(|e| *e > 0.0)
                .map(|e| format!(" ({:.0}% of the echo)", 100.0 * v / e))
                .unwrap_or_default();
            bar(&mut body, y, path, label, width, &format!("{v:.0}{share}"));
            y += BAR + GAP;
        }
        y += 10.0;
    }
    let caption = format!(
        "{} run of {} ({} cores); blue: lmchatkit, orange: the peers, grey: the bare echo",
        results["mode"].as_str().unwrap_or("?"),
        results["date"].as_str().unwrap_or("?"),
        results["machine"]["cores"].as_str().unwrap_or("?"),
    );
    let _ = writeln!(
        body,
        r##"<text x="10" y="{:.1}" font-size="11" fill="#6b7280">{}</text>"##,
        y + 8.0,
        escape(&caption)
    );
    let height = y + 20.0;
    Ok(format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" font-family="sans-serif" role="img" aria-label="lmchatkit against the AI SDK relay and LiteLLM: time to first token and relay throughput">
<rect width="100%" height="100%" fill="white"/>
{body}</svg>
"#
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn point(path: &str, concurrency: u64, p50: f64) -> Value {
        json!({"path": path, "concurrency": concurrency, "ttft_ms": {"p50": p50}})
    }

    fn widths(svg: &str) -> Vec<f64> {
        svg.split("<rect x=\"190\"")
            .skip(1)
            .filter_map(|r| r.split("width=\"").nth(1)?.split('"').next()?.parse().ok())
            .collect()
    }

    #[test]
    fn bars_grow_with_the_value_on_a_log_scale_and_label_it() {
        let results = json!({
            "mode": "full", "date": "2026-12-05T03:15:13Z", "machine": {"cores": "2"},
            "latency": [point("lmchatkit", 1, 0.3), point("ai-sdk", 1, 3.0), point("litellm", 1, 30.0)],
            "throughput": {"points": []}
        });
        let svg = render(&results).unwrap();
        let w = widths(&svg);
        assert_eq!(w.len(), 3, "{svg}");
        // One decade apart each: equal steps on a log scale.
        assert!(w[0] < w[1] && w[1] < w[2], "{w:?}");
        assert!(((w[1] - w[0]) - (w[2] - w[1])).abs() < 0.5, "{w:?}");
        for label in ["0.300 ms", "3.0 ms", "30 ms", "1 concurrent stream<"] {
            assert!(svg.contains(label), "{label} missing: {svg}");
        }
        assert!(svg.contains("2026-12-05T03:15:13Z"));
        assert!(
            !svg.contains("Relay throughput"),
            "no throughput points, no panel"
        );
    }

    #[test]
    fn throughput_is_linear_and_given_as_a_share_of_the_echo() {
        let results = json!({
            "latency": [point("lmchatkit", 50, 3.0)],
            "throughput": {"points": [
                {"path": "echo", "events_per_s": 100000.0},
                {"path": "lmchatkit", "events_per_s": 250000.0},
                {"path": "litellm", "events_per_s": 1000.0}
            ]}
        });
        let svg = render(&results).unwrap();
        let w = widths(&svg);
        // The TTFT bar, then lmchatkit, echo, LiteLLM in PATHS order.
        assert_eq!(w.len(), 4, "{svg}");
        assert!((w[1] / w[2] - 2.5).abs() < 0.01, "{w:?}");
        assert!(svg.contains("250000 (250% of the echo)"), "{svg}");
        assert!(svg.contains("1000 (1% of the echo)"), "{svg}");
    }

    #[test]
    fn a_result_without_latency_is_an_error_not_an_empty_chart() {
        assert!(render(&json!({"latency": []})).is_err());
    }

    #[test]
    fn the_recorded_run_draws_every_path_at_every_concurrency() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../bench-results/results.json"
        ))
        .unwrap();
        let results: Value = serde_json::from_str(&text).unwrap();
        let svg = render(&results).unwrap();
        assert_eq!(widths(&svg).len(), PATHS.len() * 4, "{svg}");
        let recorded = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../bench-results/chart.svg"
        ))
        .unwrap_or_default();
        assert_eq!(
            recorded, svg,
            "bench-results/chart.svg is drawn from results.json (`bench --chart-only bench-results`)"
        );
    }
}
