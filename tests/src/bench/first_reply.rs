//! What Chromium fetches of the UI up to the first reply: headless Chromium (the browser tests'
//! harness, [`crate::browser`]) opens the page, and the files it has fetched once the UI is
//! ready and the network is quiet are the **first paint**; then one message is typed into the
//! composer and sent (Enter), the reply from the bench's mock upstream streams in, and the files
//! fetched after the first paint, once the turn has ended and the network is quiet again, are
//! what the **first message** loads (the turn's code, the transcript, the Markdown parser, the
//! chunks they share). The files are the page and everything below `{prefix}/assets/`, read
//! from the page's Resource Timing entries; the API's answers (`{prefix}/api/…`) are data, not
//! the UI, and are not counted. [`super::first_load`] then fetches each file as the service
//! sends it for gzip and for brotli.
//!
//! "Quiet" is no new Resource Timing entry for [`QUIET`]: a chunk is fetched right after the
//! code that asks for it runs, which on loopback is well within that.
//!
//! **What it measured** (issue 48, Chromium 156, the bundle of `scripts/build-ui.sh` with the
//! wasm's custom sections stripped): the first paint is 6 files, 293,912 B gzip and 247,268 B
//! brotli (the main wasm 272,694 B gzip of it); the first message loads 42 more (the three
//! parts `split_turn`, `split_transcript`, `split_markdown` and 39 chunks they share, 25 of
//! them under 500 B), 315,499 B gzip and 276,459 B brotli; the first reply is 609,411 B gzip
//! and 523,727 B brotli, against a target of 328,704 B gzip. Where the bytes are (function
//! sizes after `wasm-opt -Oz`, names kept for the profile): the transcript's part, 98.7 KB
//! gzip, is 223 KB of code, of which Leptos (tachys, reactive_graph, leptos) 77 KB and one
//! inlined view iterator (`Map::next`) 29 KB; the Markdown part, 84.4 KB gzip, is 128 KB of
//! code (pulldown-cmark 52 KB, our renderer and sanitiser 38 KB, unicase 7 KB) and 70 KB of
//! data, 51 KB of it pulldown-cmark's table of HTML entities; the turn's part, 54.8 KB gzip, is
//! 141 KB of code, 62 KB of it serde's (de)serialisation of the protocol's types; the two
//! largest shared chunks (transcript + export, 19.1 KB gzip; transcript + export + turn,
//! 12.9 KB) are nearly all that serde code too: about 150 KB of the 656 KB of code (and 98 KB
//! of data) the first message loads. The first paint alone is 89% of the first reply's target:
//! with the first paint as it is the first message may add 34.8 KB gzip, with the first paint
//! at its own target (256,000 B) 72.7 KB, against 315.5 KB now. That is a cut of three
//! quarters or more of the code, which no repacking of the same code reaches: merging the
//! three parts into one split point (16 files instead of 42) saved 6.5 KB gzip more.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::browser::{Browser, launch_once};

/// How long the page fetches nothing before a step counts as finished.
pub const QUIET: Duration = Duration::from_millis(1000);

/// How long a step may take in all: what is counted is bytes, not time, so only a broken page
/// should run out of it (the bench smoke, in a whole CI run on two cores, once waited over 30 s
/// for the UI to be ready).
const STEP: Duration = Duration::from_secs(90);

/// Whether the UI is ready: the composer is there and a model is chosen: the picker's start
/// button is enabled, or the page skipped the picker (one persona and one model: a new chat is
/// open).
pub(super) const READY: &str = "const s = document.querySelector('button.lmck-start'); \
     const open = !document.querySelector('div.lmck-start') \
       && !!document.querySelector('.lmck-transcript'); \
     return !!document.querySelector('.lmck-input') && (open || (!!s && !s.disabled));";

/// Whether the reply is shown and the turn has ended.
pub(super) const TURN_ENDED: &str = "const md = document.querySelector('.lmck-assistant .lmck-md'); \
     return !!md && md.textContent.trim().length > 0 \
       && !!document.querySelector('.lmck-send') && !document.querySelector('.lmck-streaming');";

/// The message sent (the mock upstream's default workload: 50 short tokens).
pub const MESSAGE: &str = "hello there";

/// The UI's files Chromium fetched, in the order it fetched them (paths below the origin).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fetched {
    /// Up to the first paint (the page, ready, then quiet).
    pub paint: Vec<String>,
    /// Fetched after that, up to the first reply shown (the turn ended, then quiet).
    pub first_message: Vec<String>,
    /// The browser, e.g. `Chromium 156.0.8078.129`.
    pub browser: String,
}

/// The UI's files among the URLs a page fetched: the page (`{prefix}` or `{prefix}/`) and what
/// is below `{prefix}/assets/`, as paths without query or fragment, each once, in the order
/// given. Anything else (the API, other origins) is left out.
pub fn ui_files(urls: &[String], origin: &str, prefix: &str) -> Vec<String> {
    let assets = format!("{prefix}/assets/");
    let mut out: Vec<String> = Vec::new();
    for url in urls {
        let Some(path) = url.strip_prefix(origin) else {
            continue;
        };
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let page = path == prefix || path.strip_prefix(prefix) == Some("/");
        if (page || path.starts_with(&assets)) && !out.iter().any(|p| p == path) {
            out.push(path.to_owned());
        }
    }
    out
}

/// The files of `later` not already in `earlier` (a file fetched again, e.g. from the cache, is
/// counted once, at its first fetch).
pub fn added(earlier: &[String], later: &[String]) -> Vec<String> {
    later
        .iter()
        .filter(|p| !earlier.contains(p))
        .cloned()
        .collect()
}

/// Opens `{origin}{prefix}` in headless Chromium, sends one message and lists what was fetched.
/// `Ok(None)` when Chromium (or chromedriver) is not installed.
pub async fn browse(origin: &str, prefix: &str) -> Result<Option<Fetched>, String> {
    let Some(b) = launch_once().await else {
        return Ok(None);
    };
    let out = steps(&b, origin, prefix).await;
    drop(b);
    out.map(Some)
}

async fn steps(b: &Browser, origin: &str, prefix: &str) -> Result<Fetched, String> {
    b.client
        .goto(&format!("{origin}{prefix}"))
        .await
        .map_err(|e| format!("open {prefix}: {e}"))?;
    until(b, "the UI to be ready", READY).await?;
    let paint_urls = quiet(b).await?;
    let browser = version(b).await;
    let paint = ui_files(&paint_urls, origin, prefix);

    send(b, MESSAGE).await?;
    until(b, "the reply to be shown and the turn to end", TURN_ENDED).await?;
    let all = ui_files(&quiet(b).await?, origin, prefix);
    Ok(Fetched {
        first_message: added(&paint, &all),
        paint,
        browser,
    })
}

/// The browser and its full version, e.g. `Chromium 156.0.8078.129` (the user agent string
/// says only the major one).
pub(super) async fn version(b: &Browser) -> String {
    let version = b
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1]; \
             navigator.userAgentData.getHighEntropyValues(['fullVersionList']) \
               .then((v) => done((v.fullVersionList.find((b) => /Chrom/.test(b.brand)) || {}).version || '')) \
               .catch(() => done(''));",
            vec![],
        )
        .await
        .ok();
    match version.as_ref().and_then(Value::as_str) {
        Some(v) if !v.is_empty() => format!("Chromium {v}"),
        _ => "Chromium".to_owned(),
    }
}

/// Types `text` into the composer and sends it (Enter).
pub(super) async fn send(b: &Browser, text: &str) -> Result<(), String> {
    let input = b
        .client
        .find(fantoccini::Locator::Css(".lmck-input"))
        .await
        .map_err(|e| format!("the composer: {e}"))?;
    input
        .send_keys(text)
        .await
        .map_err(|e| format!("type: {e}"))?;
    input
        .send_keys("\u{E007}")
        .await
        .map_err(|e| format!("send: {e}"))
}

/// Runs `script` (a function body) in the page.
pub(super) async fn run(b: &Browser, script: &str) -> Result<Value, String> {
    b.client
        .execute(script, vec![])
        .await
        .map_err(|e| e.to_string())
}

/// Waits until `script` returns `true`.
pub(super) async fn until(b: &Browser, what: &str, script: &str) -> Result<(), String> {
    let deadline = Instant::now() + STEP;
    loop {
        if run(b, script).await? == Value::Bool(true) {
            return Ok(());
        }
        if Instant::now() > deadline {
            // What the page shows instead, so the report says why.
            let seen = run(
                b,
                "const s = document.querySelector('button.lmck-start'); \
                 return `composer: ${!!document.querySelector('.lmck-input')}, start button: \
                   ${s ? (s.disabled ? 'disabled' : 'enabled') : 'absent'}, page: \
                   ${document.body.innerText.replace(/\\s+/g, ' ').slice(0, 300)}`;",
            )
            .await
            .unwrap_or_default();
            return Err(format!("timed out waiting for {what} ({seen})"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the page has fetched nothing new for [`QUIET`]; returns every URL it fetched
/// (the document first, then its resources in the order they were fetched).
async fn quiet(b: &Browser) -> Result<Vec<String>, String> {
    const LIST: &str = "return performance.getEntriesByType('navigation')\
        .concat(performance.getEntriesByType('resource')).map((e) => e.name);";
    let deadline = Instant::now() + STEP;
    let mut last: Vec<String> = Vec::new();
    let mut since = Instant::now();
    loop {
        let now: Vec<String> =
            serde_json::from_value(run(b, LIST).await?).map_err(|e| e.to_string())?;
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() >= QUIET {
            return Ok(last);
        }
        if Instant::now() > deadline {
            return Err("the page never stopped fetching".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_ui_files_are_the_page_and_its_assets_each_once_without_the_api() {
        let o = "http://127.0.0.1:4000";
        let urls = s(&[
            "http://127.0.0.1:4000/chat",
            "http://127.0.0.1:4000/chat/assets/lmchatkit.js",
            "http://127.0.0.1:4000/chat/assets/style-0a.css",
            "http://127.0.0.1:4000/chat/api/config",
            "http://127.0.0.1:4000/chat/assets/lmchatkit-web-0a_bg.wasm?v=2",
            "http://127.0.0.1:4000/chat/assets/lmchatkit.js",
            "http://127.0.0.1:4000/chatter/assets/x.js",
            "https://elsewhere.example/chat/assets/y.js",
        ]);
        assert_eq!(
            ui_files(&urls, o, "/chat"),
            [
                "/chat",
                "/chat/assets/lmchatkit.js",
                "/chat/assets/style-0a.css",
                "/chat/assets/lmchatkit-web-0a_bg.wasm"
            ]
        );
        assert_eq!(
            ui_files(&s(&["http://127.0.0.1:4000/chat/"]), o, "/chat"),
            ["/chat/"]
        );
    }

    #[test]
    fn what_the_first_message_loads_is_what_was_not_fetched_for_the_first_paint() {
        let paint = s(&["/chat", "/chat/assets/a.wasm"]);
        let all = s(&[
            "/chat",
            "/chat/assets/a.wasm",
            "/chat/assets/split_turn-0a.wasm",
            "/chat/assets/chunk_3-0a.wasm",
        ]);
        assert_eq!(
            added(&paint, &all),
            [
                "/chat/assets/split_turn-0a.wasm",
                "/chat/assets/chunk_3-0a.wasm"
            ]
        );
        assert!(added(&all, &paint).is_empty());
    }
}
