//! UI benchmark (not a timed test: it reports, it does not assert targets). Run with
//!
//! ```sh
//! ./scripts/build-ui.sh && cargo test -p lmchatkit-tests --test browser ui_bench:: -- --ignored --nocapture
//! ```
//!
//! It measures, in headless Chromium against the real service and the mock upstream:
//! - the gzipped size of the embedded bundle (wasm + js + css), and apart from it that of the
//!   lazily loaded code highlighter and wasm chunks;
//! - main-thread time per stream frame while a 48 KB Markdown reply streams (p50/p95/max), and
//!   per batched HTML update;
//! - time to interactive of a 1,000-message conversation opened on reload (navigation start until
//!   the transcript has rendered).
//!
//! The UI records these through its opt-in probes (`frontend/src/bench.rs`, sessionStorage
//! `lmchatkit:bench = 1`).

use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::store::MemoryStore;
use lmchatkit::{ChatService, Config};
use lmchatkit_tests::browser::helpers::put_long_conversation;
use lmchatkit_tests::browser::launch;
use lmchatkit_tests::mock_upstream::MockUpstream;
use lmchatkit_tests::serve::serve;

fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn gz(path: &std::path::Path) -> usize {
    let out = std::process::Command::new("gzip")
        .arg("-9c")
        .arg(path)
        .output()
        .expect("gzip");
    out.stdout.len()
}

#[tokio::test]
#[ignore = "benchmark: run with --ignored --nocapture"]
async fn ui_benchmark() {
    let mock = MockUpstream::start().await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(mock.base_url()));
    let config = Config::builder(backend)
        .history(MemoryStore::new())
        .build()
        .unwrap();
    let server = serve(ChatService::new(config)).await;
    let Some(b) = launch().await else { return };

    // Bundle size: gzip -9 of each file (the issue's measure), and the brotli copy the service
    // sends to browsers that accept it (scripts/build-ui.sh writes `<file>.br`).
    let assets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../server/assets");
    let (mut total, mut total_br) = (0, 0);
    for entry in std::fs::read_dir(&assets).expect("server/assets (run ./scripts/build-ui.sh)") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if ![".wasm", ".js", ".css"].iter().any(|e| name.ends_with(e)) {
            continue; // the precompressed copies themselves, trunk's index.html
        }
        let raw = std::fs::metadata(&path).unwrap().len();
        let br = std::fs::metadata(assets.join(format!("{name}.br"))).map_or(raw, |m| m.len());
        let size = gz(&path);
        if name.starts_with("lmchatkit-highlight-") {
            // Lazily loaded on the first code block, budgeted on its own.
            println!(
                "bundle: {name}: {raw} bytes, {size} gzipped, {br} brotli (code highlighter, lazy; target <= 60 KB gz)"
            );
        } else if name.starts_with("lmchatkit-mermaid-") || name.starts_with("lmchatkit-diagram-") {
            // The diagram frame's scripts, loaded by the frame when a diagram appears.
            println!(
                "bundle: {name}: {raw} bytes, {size} gzipped, {br} brotli (diagram frame, lazy)"
            );
        } else if name.starts_with("split_") || name.starts_with("chunk_") {
            // A wasm chunk (frontend/src/lazy.rs), loaded when its part of the UI is first shown.
            println!("bundle: {name}: {raw} bytes, {size} gzipped, {br} brotli (lazy part)");
        } else {
            println!("bundle: {name}: {raw} bytes, {size} gzipped, {br} brotli");
            total += size;
            total_br += br;
        }
    }
    println!(
        "bundle: total {:.1} KB gzipped (target <= 200 KB), {:.1} KB as served with brotli",
        total as f64 / 1024.0,
        total_br as f64 / 1024.0
    );

    // Streaming a 48 KB reply.
    b.client.goto(&server.url("/chat")).await.unwrap();
    b.js("sessionStorage.setItem('lmchatkit:bench', '1'); return true;")
        .await;
    b.client.refresh().await.unwrap();
    b.wait_js(
        "the picker",
        "const s = document.querySelector('button.lmck-start'); return !!s && !s.disabled;",
    )
    .await;
    b.click("button.lmck-start").await;
    b.send_message("bench-48k please").await;
    b.wait_js("the reply to finish", "return !!document.querySelector('.lmck-send') && !document.querySelector('.lmck-streaming') && document.querySelectorAll('.lmck-assistant').length > 0;").await;
    let data = b.js("return window.__lmckBench || {};").await;
    eprintln!(
        "probe keys: {:?}",
        data.as_object().map(|o| o
            .iter()
            .map(|(k, v)| (k.clone(), v.as_array().map_or(0, Vec::len)))
            .collect::<Vec<_>>())
    );
    let mut deltas: Vec<f64> = serde_json::from_value(data["delta"].clone()).unwrap_or_default();
    let mut frames: Vec<f64> = serde_json::from_value(data["frame"].clone()).unwrap_or_default();
    let n = deltas.len();
    println!(
        "stream 48 KB: {n} frames handled; per frame p50 {:.3} ms, p95 {:.3} ms (target <= 1 ms), max {:.3} ms",
        percentile(&mut deltas, 0.5),
        percentile(&mut deltas, 0.95),
        percentile(&mut deltas, 1.0)
    );
    println!(
        "stream 48 KB: {} batched HTML updates; p50 {:.3} ms, p95 {:.3} ms, max {:.3} ms",
        frames.len(),
        percentile(&mut frames, 0.5),
        percentile(&mut frames, 0.95),
        percentile(&mut frames, 1.0)
    );

    // A 1,000-message conversation opened on reload.
    put_long_conversation(&server, "big", 1000).await;
    b.js("sessionStorage.setItem('lmchatkit:currentId', 'big'); return true;")
        .await;
    b.client.refresh().await.unwrap();
    // The transcript renders the latest 60 messages and the rest on scrolling up
    // (`frontend/src/components/transcript.rs`); the button tells how many wait above.
    b.wait_js("the big conversation", "return document.querySelectorAll('.lmck-msg').length >= 60 && !!(window.__lmckBench && window.__lmckBench.open);").await;
    b.wait_text(".lmck-earlier", "Show earlier messages (940)")
        .await;
    let open = b.js("return window.__lmckBench.open[0];").await;
    let open = open
        .as_f64()
        .unwrap_or_else(|| panic!("open probe: {open:?}"));
    println!(
        "1,000 messages: the latest 60 rendered {open:.0} ms after navigation start (target <= 300 ms)"
    );
    // Where that time goes: the resources' response ends, from the browser's resource timing.
    let marks = b
        .js("const r = performance.getEntriesByType('resource'); \
             const end = (p) => { const e = r.find((x) => p(x.name)); return e ? Math.round(e.responseEnd) : null; }; \
             return { wasm: end((n) => n.endsWith('_bg.wasm')), config: end((n) => n.endsWith('/api/config')), \
                      conversation: end((n) => n.endsWith('/api/conversations/big')) };")
        .await;
    println!(
        "1,000 messages: wasm received at {} ms, /api/config at {} ms, the conversation at {} ms",
        marks["wasm"], marks["config"], marks["conversation"]
    );
}
