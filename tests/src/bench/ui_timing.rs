//! The UI's two timings of issue 48's fifth target, in the bench's own run: how long the UI's
//! main thread spends on one streamed delta, and how soon a 1,000-message conversation is
//! interactive after a reload. Headless Chromium (the browser tests' harness, [`crate::browser`])
//! opens the UI of the bench's lmchatkit with its opt-in probes on (sessionStorage
//! `lmchatkit:bench = 1`, `frontend/src/bench.rs`), which append their timings to
//! `window.__lmckBench`:
//!
//! 1. **A streamed delta.** One message asks the bench's mock for its 48 KB Markdown reply
//!    ([`super::mock::markdown_48k`]: headings, paragraphs, lists, code, tables, in 8-character
//!    deltas as fast as the socket takes them); the `delta` probe is the main-thread time the UI
//!    spends on each stream frame (parse, append, schedule the render), the `frame` probe each
//!    batched HTML update of the Markdown shown. The target is a delta's p99 ≤ 1 ms. Beside
//!    it, from the page's own clock and the Long Tasks API: how long the reply took to show
//!    whole, how many animation frames the page ran meanwhile and its tasks of over 50 ms
//!    ([`Streaming`]): a UI whose every delta is cheap can still hold the main thread for the
//!    whole burst, and paint nothing until its end.
//! 2. **A 1,000-message conversation.** It is stored through the service's `PUT` (the browser
//!    tests' [`long_conversation`]), made the open one (sessionStorage `lmchatkit:currentId`) and
//!    the page reloaded, [`RELOADS`] times; the `open` probe is the time from navigation start
//!    until the transcript has rendered its latest 60 messages (the rest wait behind "Show
//!    earlier messages (940)", which is checked). The median of the reloads is the figure; the
//!    target is ≤ 300 ms. The UI's files come from the browser's cache after the first load, as
//!    they do for a user who comes back.
//!
//! Like every number of the bench this is reported, not asserted. It runs in its own browser
//! after the first-load bytes ([`super::first_reply`]) are counted, so nothing here changes
//! what the first load fetched.

use serde::Serialize;

use super::first_reply::{READY, TURN_ENDED, run, send, until, version};
use super::mock::MARKDOWN_48K;
use super::stats::{Summary, median};
use crate::browser::helpers::long_conversation;
use crate::browser::{Browser, launch_once};

/// How many reloads of the 1,000-message conversation the median is taken over.
pub const RELOADS: usize = 3;

/// Messages in the long conversation.
pub const MESSAGES: usize = 1000;

/// The UI's timings, milliseconds of the page's clock (`performance.now()`).
#[derive(Debug, Clone, Serialize)]
pub struct UiTimings {
    /// The browser, e.g. `Chromium 156.0.8078.129`.
    pub measured_by: String,
    /// Main-thread time per stream frame of the 48 KB reply.
    pub delta_ms: Summary,
    /// Each batched HTML update of the Markdown shown, during that reply.
    pub render_ms: Summary,
    /// Navigation start until the 1,000-message conversation's latest messages rendered, per
    /// reload.
    pub open_1000_ms: Vec<f64>,
    /// The median of [`Self::open_1000_ms`].
    pub open_1000_median_ms: f64,
    /// The page while the 48 KB reply streamed.
    pub streaming: Streaming,
}

/// Whether the page could paint and answer input while a reply streamed: from sending the
/// message until the turn was seen to end (the harness looks every 50 ms).
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct Streaming {
    /// Milliseconds from sending until the end was seen.
    pub ms: f64,
    /// Animation frames the page ran in that time (about 60 a second when it never stalls).
    pub animation_frames: u32,
    /// The main thread's tasks of over 50 ms in that time (the Long Tasks API), ms each.
    pub long_tasks_ms: Vec<f64>,
}

impl Streaming {
    /// The longest of [`Self::long_tasks_ms`] (0 when none was over 50 ms).
    pub fn longest_task_ms(&self) -> f64 {
        self.long_tasks_ms.iter().copied().fold(0.0, f64::max)
    }
}

impl UiTimings {
    /// The timings from the probes' arrays: `deltas` and `renders` of the streamed reply, `opens`
    /// of the reloads.
    pub fn of(measured_by: String, deltas: &[f64], renders: &[f64], opens: Vec<f64>) -> Self {
        UiTimings {
            measured_by,
            delta_ms: Summary::of(deltas),
            render_ms: Summary::of(renders),
            open_1000_median_ms: median(&opens),
            open_1000_ms: opens,
            streaming: Streaming::default(),
        }
    }

    /// The streamed reply's figures in words (the report's and the check's).
    pub fn stream_summary(&self) -> String {
        let (d, r, s) = (&self.delta_ms, &self.render_ms, &self.streaming);
        format!(
            "{} frames: main-thread time per frame p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms; {} batched renders of the Markdown, p50 {:.3} ms, p99 {:.3} ms; shown whole {:.0} ms after it was sent, the page running {} animation frames meanwhile, its longest task {:.0} ms ({} over 50 ms)",
            d.n,
            d.p50,
            d.p90,
            d.p99,
            d.max,
            r.n,
            r.p50,
            r.p99,
            s.ms,
            s.animation_frames,
            s.longest_task_ms(),
            s.long_tasks_ms.len()
        )
    }
}

/// Measures the UI mounted at `prefix` on `origin` (e.g. `http://127.0.0.1:4000`, `/chat`),
/// which must keep conversations on the server (the bench's lmchatkit with `--db`). `Ok(None)`
/// when Chromium (or chromedriver) is not installed.
pub async fn measure(origin: &str, prefix: &str) -> Result<Option<UiTimings>, String> {
    let Some(b) = launch_once().await else {
        return Ok(None);
    };
    let out = steps(&b, origin, prefix).await;
    drop(b);
    out.map(Some)
}

/// The numbers in `window.__lmckBench[name]` (none when the probe recorded nothing).
async fn probe(b: &Browser, name: &str) -> Result<Vec<f64>, String> {
    let v = run(
        b,
        &format!("return (window.__lmckBench && window.__lmckBench['{name}']) || [];"),
    )
    .await?;
    serde_json::from_value(v).map_err(|e| format!("probe {name}: {e}"))
}

async fn steps(b: &Browser, origin: &str, prefix: &str) -> Result<UiTimings, String> {
    b.client
        .goto(&format!("{origin}{prefix}"))
        .await
        .map_err(|e| format!("open {prefix}: {e}"))?;
    run(
        b,
        "sessionStorage.setItem('lmchatkit:bench', '1'); return true;",
    )
    .await?;
    b.client
        .refresh()
        .await
        .map_err(|e| format!("reload: {e}"))?;
    until(b, "the UI to be ready", READY).await?;
    let measured_by = version(b).await;

    // The main thread's long tasks (over 50 ms) and the animation frames while the reply
    // streams: whether the page could paint and answer input between deltas.
    run(
        b,
        "window.__lmckLong = []; window.__lmckFrames = 0; \
         new PerformanceObserver((l) => { for (const e of l.getEntries()) \
           window.__lmckLong.push(e.duration); }).observe({ type: 'longtask' }); \
         const tick = () => { window.__lmckFrames++; requestAnimationFrame(tick); }; \
         requestAnimationFrame(tick); window.__lmckSent = performance.now(); return true;",
    )
    .await?;
    send(b, &format!("{MARKDOWN_48K} please")).await?;
    until(
        b,
        "the 48 KB reply to be shown and the turn to end",
        TURN_ENDED,
    )
    .await?;
    let shown = run(
        b,
        "return document.querySelector('.lmck-assistant .lmck-md').textContent.length;",
    )
    .await?;
    // The whole reply, not its first screen: the Markdown's text is most of the 48 KB.
    if shown.as_u64().unwrap_or(0) < 30_000 {
        return Err(format!("the 48 KB reply showed only {shown} characters"));
    }
    let seen = run(
        b,
        "return { long_tasks_ms: window.__lmckLong, animation_frames: window.__lmckFrames, \
                  ms: performance.now() - window.__lmckSent };",
    )
    .await?;
    let streaming: Streaming =
        serde_json::from_value(seen).map_err(|e| format!("the stream's long tasks: {e}"))?;
    let deltas = probe(b, "delta").await?;
    let renders = probe(b, "frame").await?;
    if deltas.is_empty() {
        return Err("the delta probe recorded nothing (is frontend/src/bench.rs built in?)".into());
    }

    let id = "bench-1000";
    let res = reqwest::Client::new()
        .put(format!("{origin}{prefix}/api/conversations/{id}"))
        .json(&long_conversation(id, MESSAGES))
        .send()
        .await
        .map_err(|e| format!("PUT the {MESSAGES}-message conversation: {e}"))?;
    if !res.status().is_success() {
        return Err(format!(
            "PUT the {MESSAGES}-message conversation: {}",
            res.status()
        ));
    }
    run(
        b,
        &format!("sessionStorage.setItem('lmchatkit:currentId', '{id}'); return true;"),
    )
    .await?;
    let mut opens = Vec::with_capacity(RELOADS);
    for _ in 0..RELOADS {
        b.client
            .refresh()
            .await
            .map_err(|e| format!("reload: {e}"))?;
        until(
            b,
            "the 1,000-message conversation to render",
            "return document.querySelectorAll('.lmck-msg').length >= 60 \
               && !!(window.__lmckBench && window.__lmckBench.open);",
        )
        .await?;
        let earlier = run(
            b,
            "const e = document.querySelector('.lmck-earlier'); return e ? e.textContent : '';",
        )
        .await?;
        let want = format!("({})", MESSAGES - 60);
        if !earlier.as_str().is_some_and(|t| t.contains(&want)) {
            return Err(format!(
                "the conversation did not open whole: the earlier-messages button reads {earlier}"
            ));
        }
        match probe(b, "open").await?.first() {
            Some(ms) => opens.push(*ms),
            None => return Err("the open probe recorded nothing".into()),
        }
    }
    let mut t = UiTimings::of(measured_by, &deltas, &renders, opens);
    t.streaming = streaming;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timings_summarise_the_probes_and_take_the_median_reload() {
        let t = UiTimings::of(
            "Chromium 1".into(),
            &[0.1, 0.3, 0.2],
            &[],
            vec![310.0, 250.0, 270.0],
        );
        assert_eq!(
            (t.delta_ms.n, t.delta_ms.p50, t.delta_ms.max),
            (3, 0.2, 0.3)
        );
        assert_eq!(t.render_ms.n, 0);
        assert_eq!(t.open_1000_median_ms, 270.0);
        assert_eq!(t.open_1000_ms, [310.0, 250.0, 270.0], "every reload kept");
    }

    #[test]
    fn the_longest_task_is_read_from_what_the_page_reported_and_none_is_zero() {
        let s: Streaming = serde_json::from_value(serde_json::json!(
            {"ms": 726.9, "animation_frames": 13, "long_tasks_ms": [60, 148, 74]}
        ))
        .unwrap();
        assert_eq!((s.animation_frames, s.longest_task_ms()), (13, 148.0));
        assert_eq!(Streaming::default().longest_task_ms(), 0.0);
    }
}
