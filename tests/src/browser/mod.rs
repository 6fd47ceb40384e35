//! Browser end-to-end harness: Debian's Chromium (headless) driven through Debian's chromedriver
//! with fantoccini (WebDriver). No browser is ever downloaded.
//!
//! [`launch`] returns `None` (and the test returns early, printing why) only when chromium or
//! chromedriver is absent **and** `LMCHATKIT_EXPECT_BROWSER` is unset; `scripts/test.sh` sets it,
//! so there a missing browser fails the run. Screenshots go to `$CARGO_TARGET_DIR/ui-screenshots/`
//! (default `target/ui-screenshots/`).

pub mod app;
pub mod apps;
pub mod cut_proxy;
pub mod front;
pub mod helpers;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// Environment variable that turns a missing browser into a failure.
pub const EXPECT_BROWSER: &str = "LMCHATKIT_EXPECT_BROWSER";

/// How long the helpers wait for the page by default.
pub const WAIT: Duration = Duration::from_secs(20);

/// A WebDriver session on headless Chromium. Dropping it kills chromedriver and the Chromium
/// processes of this session (found by the session's own profile directory, never by name) and
/// removes that directory.
pub struct Browser {
    /// The WebDriver client.
    pub client: Client,
    driver: Child,
    profile: PathBuf,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        kill_profile_processes(&self.profile);
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Kills the processes whose command line names `profile` (this session's Chromium).
fn kill_profile_processes(profile: &std::path::Path) {
    let needle = profile.to_string_lossy().into_owned();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(&needle) && pid != std::process::id() {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
    }
}

fn which(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for n in names {
            let p = dir.join(n);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Whether the run must have a browser (`LMCHATKIT_EXPECT_BROWSER` set and not `0`).
pub fn browser_expected() -> bool {
    std::env::var(EXPECT_BROWSER).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Starts chromedriver and a headless Chromium session, or `None` (with a message) when they are
/// not installed and not expected.
pub async fn launch() -> Option<Browser> {
    let chromium = which(&["chromium", "chromium-browser"]);
    let driver = which(&["chromedriver"]);
    let (Some(chromium), Some(driver)) = (chromium, driver) else {
        assert!(
            !browser_expected(),
            "{EXPECT_BROWSER} is set but chromium/chromedriver are missing: run ./scripts/setup-browser.sh"
        );
        eprintln!(
            "SKIPPED: chromium/chromedriver not installed (./scripts/setup-browser.sh installs them)"
        );
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromedriver");
    let mut browser_guard = DriverGuard(Some(child));
    let profile = std::env::temp_dir().join(format!("lmck-chromium-{}-{port}", std::process::id()));
    let caps = json!({
        "goog:chromeOptions": {
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--no-first-run", "--window-size=1200,900",
                     format!("--user-data-dir={}", profile.display())],
        }
    });
    let Value::Object(caps) = caps else {
        unreachable!()
    };
    let url = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let client = loop {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector)
            .capabilities(caps.clone())
            .connect(&url)
            .await
        {
            Ok(c) => break c,
            Err(e) if Instant::now() > deadline => panic!("cannot start a Chromium session: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    Some(Browser {
        client,
        driver: browser_guard.0.take().unwrap(),
        profile,
    })
}

struct DriverGuard(Option<Child>);

impl Drop for DriverGuard {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Where screenshots are written.
pub fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("ui-screenshots")
}

impl Browser {
    /// Saves a PNG screenshot as `ui-screenshots/{name}.png`.
    pub async fn screenshot(&self, name: &str) {
        let dir = screenshot_dir();
        let _ = std::fs::create_dir_all(&dir);
        if let Ok(png) = self.client.screenshot().await {
            let _ = std::fs::write(dir.join(format!("{name}.png")), png);
        }
    }

    /// Runs JavaScript (a function body; `return` gives the value).
    pub async fn js(&self, script: &str) -> Value {
        self.client
            .execute(script, vec![])
            .await
            .expect("execute script")
    }

    /// Waits for an element matching `css`.
    pub async fn wait_for(&self, css: &str) -> Element {
        self.client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css}: {e}"))
    }

    /// The `textContent` of every element matching `css`, joined with newlines.
    pub async fn texts(&self, css: &str) -> String {
        let script = format!(
            "return Array.from(document.querySelectorAll({})).map(e => e.textContent).join('\\n');",
            serde_json::to_string(css).unwrap()
        );
        self.js(&script)
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Waits until the text of the elements matching `css` contains `needle`; returns that text.
    pub async fn wait_text(&self, css: &str, needle: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let t = self.texts(css).await;
            if t.contains(needle) {
                return t;
            }
            if Instant::now() > deadline {
                self.screenshot("failure").await;
                panic!("{css} never contained {needle:?}; it has {t:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until `script` (a function body) returns `true`.
    pub async fn wait_js(&self, what: &str, script: &str) {
        let deadline = Instant::now() + WAIT;
        while self.js(script).await != Value::Bool(true) {
            if Instant::now() > deadline {
                self.screenshot("failure").await;
                panic!("timed out waiting for {what}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Clicks the element matching `css` (waiting for it).
    ///
    /// The click waits until the element stands still (the same box in two reads 50 ms apart):
    /// WebDriver clicks at coordinates, and a card that has just appeared can still be moving
    /// (the chat keeps to its bottom as content grows), so an early click lands beside it.
    pub async fn click(&self, css: &str) {
        let el = self.wait_for(css).await;
        self.wait_still(css).await;
        el.click()
            .await
            .unwrap_or_else(|e| panic!("click {css}: {e}"));
    }

    /// Waits until the first element matching `css` has the same box in two reads 50 ms apart.
    async fn wait_still(&self, css: &str) {
        let script = format!(
            "const e = document.querySelector({}); if (!e) return null; \
             const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height];",
            serde_json::to_string(css).unwrap()
        );
        let deadline = Instant::now() + WAIT;
        let mut last = Value::Null;
        loop {
            let now = self.js(&script).await;
            if !now.is_null() && now == last {
                return;
            }
            if Instant::now() > deadline {
                panic!("{css} kept moving: {now}");
            }
            last = now;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Starts recording the page's Content-Security-Policy violations: those already reported
    /// since the page loaded (a buffered `ReportingObserver`) and every later
    /// `securitypolicyviolation` event. Call again after a navigation; read with
    /// [`csp_violations`](Self::csp_violations).
    pub async fn watch_csp_violations(&self) {
        self.js(
            "if (!window.__lmckCsp) { \
               const seen = window.__lmckCsp = []; \
               document.addEventListener('securitypolicyviolation', (e) => \
                 seen.push(`${e.effectiveDirective} ${e.blockedURI} (${e.sourceFile}:${e.lineNumber})`)); \
               if (window.ReportingObserver) { \
                 const o = new ReportingObserver((rs) => rs.forEach((r) => \
                   seen.push(`${r.body.effectiveDirective} ${r.body.blockedURL} (report)`)), \
                   {types: ['csp-violation'], buffered: true}); \
                 o.observe(); window.__lmckCspObserver = o; \
               } \
             } return true;",
        )
        .await;
    }

    /// The CSP violations recorded since [`watch_csp_violations`](Self::watch_csp_violations)
    /// (directive, blocked URL, source), each once or twice (event and report).
    pub async fn csp_violations(&self) -> Vec<String> {
        let seen = self
            .js("const o = window.__lmckCspObserver, seen = window.__lmckCsp; \
                 if (!seen) return null; \
                 if (o) o.takeRecords().forEach((r) => seen.push(`${r.body.effectiveDirective} ${r.body.blockedURL} (report)`)); \
                 return seen;")
            .await;
        let list = seen
            .as_array()
            .expect("watch_csp_violations was not called on this page");
        list.iter()
            .map(|v| v.as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// Sets the value of the field (input or select) matching `css` (waiting for it) and fires
    /// its `input` and `change` events, as typing or picking would.
    pub async fn fill(&self, css: &str, value: &str) {
        self.wait_for(css).await;
        let script = format!(
            "const e = document.querySelector({}); e.value = {}; \
             e.dispatchEvent(new Event('input', {{bubbles: true}})); \
             e.dispatchEvent(new Event('change', {{bubbles: true}})); return true;",
            serde_json::to_string(css).unwrap(),
            serde_json::to_string(value).unwrap()
        );
        self.js(&script).await;
    }

    /// Puts `text` (may hold newlines) into the composer at once and presses Enter.
    pub async fn send_text(&self, text: &str) {
        let input = self.wait_for(".lmck-input").await;
        let script = format!(
            "const t = document.querySelector('.lmck-input'); t.value = {}; \
             t.dispatchEvent(new Event('input', {{bubbles: true}})); return true;",
            serde_json::to_string(text).unwrap()
        );
        self.js(&script).await;
        input.send_keys("\u{E007}").await.expect("enter");
    }

    /// Types into the composer and presses Enter.
    pub async fn send_message(&self, text: &str) {
        let input = self.wait_for(".lmck-input").await;
        input.send_keys(text).await.expect("type");
        input.send_keys("\u{E007}").await.expect("enter");
    }
}
