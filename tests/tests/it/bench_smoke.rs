//! The benchmark's CI smoke: `bench --smoke` (seconds, no Node or Python peers) must finish,
//! every stream of every path must complete with the right event sequence (the smoke verifies
//! each stream strictly), and `results.json` must keep its schema — so the bench never rots.
//! It also times history saves with `synchronous=FULL` and `NORMAL` (the `durability` points),
//! and runs lmchatkit's AI SDK route (`lmchatkit-aisdk`) beside its native route, set against
//! the AI SDK relay in `versus_aisdk` (the relay's column stays empty without the peers), and
//! the relay on SQLite + in-process against PostgreSQL + Redis and PostgreSQL alone in `engines` (measured when the
//! machine's PostgreSQL and Redis answer; otherwise the section says why it was skipped).

use std::process::Command;

use serde_json::Value;

fn keys(v: &Value, path: &str, want: &[&str]) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{path} is not an object: {v}"));
    for k in want {
        assert!(obj.contains_key(*k), "{path} lacks {k}: {v}");
    }
}

#[test]
fn smoke_run_completes_every_stream_and_keeps_the_schema() {
    let out = std::env::temp_dir().join(format!("lmchatkit-bench-smoke-{}", std::process::id()));
    let status = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["--smoke", "--open-streams", "100", "--out"])
        .arg(&out)
        .status()
        .expect("run bench");
    assert!(status.success(), "bench --smoke failed");
    let json = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let md = std::fs::read_to_string(out.join("results.md")).expect("results.md");
    let chart = std::fs::read_to_string(out.join("chart.svg")).expect("chart.svg");
    assert!(
        chart.starts_with("<svg") && chart.contains("lmchatkit /api/chat"),
        "{chart}"
    );
    let r: Value = serde_json::from_str(&json).expect("valid JSON");
    let _ = std::fs::remove_dir_all(&out);

    keys(
        &r,
        "results",
        &[
            "schema",
            "mode",
            "date",
            "machine",
            "rounds",
            "workload",
            "notes",
            "latency",
            "throughput",
            "open_streams",
            "first_load",
            "ui_timings",
            "history",
            "durability",
            "pipeline",
            "ratios",
            "versus_aisdk",
            "targets",
            "engines",
            "install_s",
        ],
    );
    assert_eq!(r["schema"], "lmchatkit-bench/1");
    assert_eq!(r["mode"], "smoke");
    keys(
        &r["workload"],
        "workload",
        &[
            "tokens",
            "first_token_delay_us",
            "token_interval_us",
            "chunk_chars",
        ],
    );

    let latency = r["latency"].as_array().expect("latency array");
    for name in [
        "direct",
        "echo",
        "lmchatkit",
        "lmchatkit+history",
        "lmchatkit-aisdk",
    ] {
        let points: Vec<&Value> = latency.iter().filter(|p| p["path"] == name).collect();
        assert!(points.len() >= 3, "{name}: {} points", points.len());
        for p in points {
            keys(
                p,
                name,
                &[
                    "concurrency",
                    "requests",
                    "completed",
                    "errors",
                    "ttft_ms",
                    "total_ms",
                    "streams_per_s",
                    "cpu_ms_per_stream",
                    "peak_rss_mib",
                    "ttft_overhead_ms",
                ],
            );
            keys(
                &p["ttft_ms"],
                "ttft_ms",
                &["n", "p50", "p90", "p99", "mean", "max"],
            );
            // Every stream completed with the right sequence, and every PUT succeeded.
            assert_eq!(p["errors"], serde_json::json!({}), "{name}: {p}");
            assert_eq!(p["completed"], p["requests"], "{name}: {p}");
            assert!(p["completed"].as_u64().unwrap() > 0, "{name}: {p}");
        }
    }
    let history_put = latency
        .iter()
        .find(|p| p["path"] == "lmchatkit+history")
        .unwrap();
    assert!(history_put["put_ms"]["n"].as_u64().unwrap() > 0);

    let tp = &r["throughput"];
    keys(tp, "throughput", &["workload", "points", "of_echo"]);
    assert!(tp["of_echo"]["lmchatkit"].as_f64().unwrap() > 0.0);
    assert!(tp["of_echo"]["lmchatkit-aisdk"].as_f64().unwrap() > 0.0);

    // The AI SDK route beside the native one, in every latency and throughput measure.
    let versus = r["versus_aisdk"].as_array().expect("versus_aisdk array");
    for m in [
        "TTFT overhead p50 (ms)",
        "TTFT overhead p99 (ms)",
        "relay CPU ms/stream",
        "relay peak RSS (MiB)",
        "streams/s",
        "throughput events/s",
    ] {
        let rows: Vec<&Value> = versus.iter().filter(|v| v["measure"] == m).collect();
        assert!(!rows.is_empty(), "no {m} row: {versus:?}");
        for v in rows {
            keys(
                v,
                m,
                &[
                    "concurrency",
                    "native",
                    "native_history",
                    "route",
                    "relay",
                    "route_over_relay",
                ],
            );
            assert!(v["route"].is_f64() && v["native"].is_f64(), "{v}");
        }
    }
    assert!(md.contains("AI SDK route"), "{md}");
    for p in tp["points"].as_array().unwrap() {
        assert_eq!(p["errors"], serde_json::json!({}), "throughput: {p}");
    }

    let open = &r["open_streams"];
    keys(
        open,
        "open_streams",
        &[
            "streams",
            "completed",
            "max_open",
            "errors",
            "peak_rss_mib",
            "kib_per_stream",
        ],
    );
    assert_eq!(open["completed"], open["streams"], "{open}");

    let history = r["history"].as_array().unwrap();
    assert!(!history.is_empty());
    for h in history {
        keys(
            h,
            "history",
            &[
                "messages",
                "load_ms",
                "load_us_per_message",
                "save_turn_ms",
                "repeats",
            ],
        );
    }
    // The cost of synchronous=FULL: both modes timed, every save counted.
    let modes: Vec<&Value> = r["durability"].as_array().unwrap().iter().collect();
    let names: Vec<&str> = modes
        .iter()
        .map(|d| d["synchronous"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["full", "normal"]);
    for d in modes {
        keys(
            d,
            "durability",
            &["synchronous", "saves", "saves_per_s", "save_ms"],
        );
        assert!(d["saves"].as_u64().unwrap() > 0 && d["saves_per_s"].as_f64().unwrap() > 0.0);
        keys(
            &d["save_ms"],
            "save_ms",
            &["n", "p50", "p90", "p99", "mean", "max"],
        );
    }
    assert!(md.contains("synchronous"), "{md}");
    keys(
        &r["pipeline"],
        "pipeline",
        &[
            "events",
            "translate_and_frame_ns",
            "value_parse_ns",
            "typed_parse_ns",
        ],
    );
    // The UI's first load, as sent: with the bundle built (as ./scripts/test.sh does) every
    // file is there, and each compressed copy is smaller than the plain one.
    if std::env::var_os("LMCHATKIT_EXPECT_BUNDLE").is_some() {
        let f = &r["first_load"];
        keys(f, "first_load", &["files", "identity", "gzip", "br"]);
        let files = f["files"].as_array().expect("first_load files");
        assert!(
            files
                .iter()
                .any(|f| f["path"].as_str().unwrap().ends_with(".wasm")),
            "{f}"
        );
        let n = |k: &str| f[k].as_u64().unwrap();
        assert!(n("br") < n("gzip") && n("gzip") < n("identity"), "{f}");
        assert!(md.contains("UI first paint"), "{md}");
        // With Chromium, the first reply too: the first message loads the turn's chunks.
        if lmchatkit_tests::browser::browser_expected() {
            let m = &f["first_message"];
            keys(m, "first_message", &["files", "identity", "gzip", "br"]);
            assert!(m["files"].as_array().is_some_and(|f| !f.is_empty()), "{f}");
            assert_eq!(
                f["first_reply"]["gzip"].as_u64(),
                Some(n("gzip") + m["gzip"].as_u64().unwrap()),
                "{f}"
            );
            assert!(md.contains("UI first reply"), "{md}");
            // And the UI's timings: every frame of the 48 KB reply probed, each reload timed.
            let t = &r["ui_timings"];
            keys(
                t,
                "ui_timings",
                &[
                    "measured_by",
                    "delta_ms",
                    "render_ms",
                    "open_1000_ms",
                    "streaming",
                ],
            );
            keys(
                &t["streaming"],
                "streaming",
                &["ms", "animation_frames", "long_tasks_ms"],
            );
            assert!(t["streaming"]["ms"].as_f64().unwrap() > 0.0, "{t}");
            assert!(t["delta_ms"]["n"].as_u64().unwrap() > 100, "{t}");
            assert_eq!(t["open_1000_ms"].as_array().map(Vec::len), Some(3), "{t}");
            assert!(md.contains("UI timings"), "{md}");
        }
    }
    for t in r["targets"].as_array().unwrap() {
        keys(t, "target", &["target", "met", "detail"]);
    }
    assert!(r["targets"].as_array().unwrap().len() >= 7);

    // SQLite + in-process against PostgreSQL + Redis and PostgreSQL alone: every stream of each
    // saved as it went.
    let engines = &r["engines"];
    keys(
        engines,
        "engines",
        &["skipped", "workload", "points", "rows"],
    );
    assert!(
        md.contains("sqlite+in-process vs postgres+redis vs postgres"),
        "{md}"
    );
    if let Some(why) = engines["skipped"].as_str() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs PostgreSQL and Redis: {why}"
        );
        eprintln!("skipped the engines section: {why}");
        assert!(md.contains("Not measured"), "{md}");
    } else {
        let points = engines["points"].as_array().unwrap();
        for name in ["direct", "sqlite+in-process", "postgres+redis", "postgres"] {
            let of: Vec<&Value> = points.iter().filter(|p| p["path"] == name).collect();
            assert_eq!(of.len(), 3, "{name}: {points:?}");
            for p in of {
                assert_eq!(p["errors"], serde_json::json!({}), "{name}: {p}");
                assert_eq!(p["completed"], p["requests"], "{name}: {p}");
                assert!(p["completed"].as_u64().unwrap() > 0, "{name}: {p}");
            }
        }
        let rows = engines["rows"].as_array().unwrap();
        for m in [
            "streams/s",
            "TTFT overhead p50 (ms)",
            "TTFT overhead p99 (ms)",
        ] {
            let of: Vec<&Value> = rows.iter().filter(|v| v["measure"] == m).collect();
            assert_eq!(of.len(), 3, "{m}: {rows:?}");
            for v in of {
                assert!(
                    v["sqlite"].is_f64() && v["shared"].is_f64() && v["postgres"].is_f64(),
                    "{v}"
                );
            }
        }
        assert!(md.contains("| streams/s | 1 |"), "{md}");
    }
    assert!(md.contains("| path |") && md.contains("Targets:"), "{md}");
}
