//! Browser end-to-end harness: Debian's Chromium (headless) driven through Debian's chromedriver
//! with fantoccini (WebDriver). No browser is ever downloaded.
//!
//! [`launch`] returns `None` (and the test returns early, printing why) only when chromium or
//! chromedriver is absent **and** `LMCHATKIT_EXPECT_BROWSER` is unset; `scripts/test.sh` sets it,
//! so there a missing browser fails the run. Screenshots go to `$CARGO_TARGET_DIR/ui-screenshots/`
//! (default `target/ui-screenshots/`).
//!
//! # What the tests of one binary share, and what they do not
//!
//! Starting chromedriver and then a Chromium for every test, then a first navigation in that
//! fresh Chromium, cost about a second of each browser test's wall time on a 2-core machine
//! (launch about 0.6 s, first page load about 0.5 s instead of 0.15 s), so:
//!
//! - **One chromedriver per test binary**, started on the first [`launch`] and serving every
//!   test's WebDriver session. chromedriver runs concurrent sessions independently, so tests on
//!   several test threads share it safely.
//! - **One Chromium per test, started ahead of time.** Each test still gets a WebDriver session of
//!   its own on a Chromium of its own, with a fresh, empty profile directory: its cookies,
//!   `localStorage`, `sessionStorage`, IndexedDB, service workers, HTTP cache, windows and tabs
//!   are the test's alone, exactly as when every test started its own chromedriver. What is shared
//!   is the *waiting*: when a test takes a session, the next one (a new Chromium on a new profile)
//!   is started in the background, on the harness's own runtime, while that test runs, so the
//!   next test finds its browser up and settled. A started session goes to exactly one test:
//!   [`launch`] takes it out of the queue of spares (at most two, one per test that may run at a
//!   time, see [`app::BROWSER_TESTS_AT_A_TIME`]), and a test that finds the queue empty starts
//!   its own.
//!
//!   A single Chromium with a window (or a browser context) per test was considered and not
//!   taken: chromedriver lists every tab of the browser it drives as the session's windows, so a
//!   test that looks for "the other tab" (a second tab it opened, or a tab the page opened) would
//!   see the tabs of a concurrent test; and window size, focus, `delete_all_cookies` and the
//!   HTTP cache act on the whole browser (or profile), not on one tab.
//! - **Teardown.** Dropping a [`Browser`] ends its session in the background: chromedriver closes
//!   that Chromium, then the harness kills whatever still names the session's profile directory
//!   (never a process found by name) and removes the directory. When the test binary exits, a
//!   process-exit hook (`atexit`) kills chromedriver, then every process that names a profile
//!   directory of this process (`$TMPDIR/lmck-chromium-<pid>-<n>-profile`: spare sessions, and
//!   sessions still closing), and removes those directories, so no browser outlives the binary.
//! - **Waits** ([`Browser::wait_for`], [`Browser::wait_text`], [`Browser::wait_js`]) look in the
//!   page itself, every [`POLL`] (10 ms) and at every DOM change, inside one asynchronous script
//!   per few seconds, with the same deadlines as before. Polling from here (every 50 ms, or
//!   250 ms for fantoccini's `wait().for_element`) both answered late and cost a WebDriver round
//!   trip (about 3 ms of chromedriver and Chromium CPU) per look, CPU the page under test needs.

pub mod app;
pub mod apps;
pub mod cut_proxy;
pub mod front;
pub mod helpers;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

/// Environment variable that turns a missing browser into a failure.
pub const EXPECT_BROWSER: &str = "LMCHATKIT_EXPECT_BROWSER";

/// How long the helpers wait for the page by default: long, because only a failing test
/// waits it out, and a loaded machine (a whole CI run on two cores) once took over 20 s to show
/// an MCP App's frame or a drawn diagram that takes a second on an idle one.
pub const WAIT: Duration = Duration::from_secs(45);

/// How often the helpers' waits look again (in the page: see [`Browser::wait_js`]; at the
/// service: see [`app::wait_saved`]).
pub const POLL: Duration = Duration::from_millis(10);

/// The longest one in-page wait runs before it reports back (see [`Browser::wait_js`]).
const LOOK_SLICE: Duration = Duration::from_secs(5);

/// The asynchronous script of an in-page wait: calls `__LOOK__` (a function body) every
/// `__POLL__` ms and at every DOM change until it returns neither `null` nor `undefined`
/// (`{value}`), throws (`{error}`) or `__SLICE__` ms passed (`{}`).
const LOOK_SCRIPT: &str = "const done = arguments[arguments.length - 1]; \
    const look = function () { __LOOK__ }; \
    const until = performance.now() + __SLICE__; \
    let over = false, timer = 0, observer = null; \
    const finish = (r) => { if (over) return; over = true; clearTimeout(timer); \
      if (observer) observer.disconnect(); done(r); }; \
    const once = () => { if (over) return; let v; \
      try { v = look(); } catch (e) { finish({error: String(e)}); return; } \
      if (v !== null && v !== undefined) finish({value: v}); \
      else if (performance.now() >= until) finish({}); }; \
    const tick = () => { once(); if (!over) timer = setTimeout(tick, __POLL__); }; \
    try { observer = new MutationObserver(once); observer.observe(document, \
      {subtree: true, childList: true, characterData: true, attributes: true}); } catch (e) {} \
    tick();";

/// A WebDriver session on a headless Chromium of its own (see the [module docs](self)). Dropping
/// it ends the session and kills that Chromium (found by the session's own profile directory,
/// never by name), and removes that directory.
pub struct Browser {
    /// The WebDriver client.
    pub client: Client,
    session: Option<Session>,
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let (Some(session), Some(driver)) =
            (self.session.take(), DRIVER.get().and_then(Option::as_ref))
        {
            runtime().spawn(session.end(driver.url.clone()));
        }
    }
}

/// A WebDriver session the harness started (on its Chromium, with its own profile directory).
struct Session {
    id: String,
    profile: PathBuf,
}

impl Session {
    /// Ends the session (chromedriver closes its Chromium), kills what is left of that Chromium
    /// and removes its profile directory.
    async fn end(self, driver_url: String) {
        let url = format!("{driver_url}/session/{}", self.id);
        let _ = reqwest::Client::new()
            .delete(url)
            .timeout(Duration::from_secs(10))
            .send()
            .await;
        kill_processes_naming(&self.profile.to_string_lossy());
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// The chromedriver shared by the tests of this binary.
struct Driver {
    /// `http://127.0.0.1:<port>`.
    url: String,
    chromium: PathBuf,
}

/// Set once the chromedriver was started (or found missing: `None`).
static DRIVER: OnceLock<Option<Driver>> = OnceLock::new();

/// The shared chromedriver's process, for the process-exit hook.
static DRIVER_PROCESS: Mutex<Option<Child>> = Mutex::new(None);

/// The next tests' sessions, being started or ready (at most [`SPARES`]).
static SPARE: Mutex<VecDeque<JoinHandle<Result<Session, String>>>> = Mutex::new(VecDeque::new());

/// How many sessions are kept started ahead: one per test that may run at a time.
const SPARES: usize = 2;

/// Numbers the profile directories of this process.
static PROFILES: AtomicU64 = AtomicU64::new(0);

/// The harness's own runtime: it starts the spare sessions and ends the dropped ones, outliving
/// every test's runtime.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("lmck-browser")
            .enable_all()
            .build()
            .expect("the browser harness's runtime")
    })
}

/// The prefix of the profile directories of this process: `lmck-chromium-<pid>-`.
fn profile_prefix() -> String {
    format!("lmck-chromium-{}-", std::process::id())
}

/// Process-exit hook: kills chromedriver and every Chromium of this process's profiles, and
/// removes those profiles.
extern "C" fn at_exit() {
    // chromedriver first, so that it starts no Chromium meanwhile; then the Chromium processes,
    // twice (one chromedriver was forking as it died would show its command line late).
    if let Ok(mut driver) = DRIVER_PROCESS.try_lock()
        && let Some(mut driver) = driver.take()
    {
        let _ = driver.kill();
        let _ = driver.wait();
    }
    let prefix = profile_prefix();
    kill_processes_naming(&prefix);
    std::thread::sleep(Duration::from_millis(50));
    kill_processes_naming(&prefix);
    if let Ok(dir) = std::fs::read_dir(std::env::temp_dir()) {
        for entry in dir.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// Kills (SIGKILL) the processes whose command line contains `needle`.
fn kill_processes_naming(needle: &str) {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(needle)
            && u32::try_from(pid).is_ok_and(|p| p != std::process::id())
        {
            // SAFETY: kill(2) on a process whose command line names this process's profile.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
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

/// The shared chromedriver, started on first use; `None` when chromium or chromedriver is not
/// installed.
fn driver() -> Option<&'static Driver> {
    DRIVER
        .get_or_init(|| {
            let chromium = which(&["chromium", "chromium-browser"])?;
            let driver = which(&["chromedriver"])?;
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port for chromedriver")
                .port();
            let child = Command::new(driver)
                .arg(format!("--port={port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start chromedriver");
            *DRIVER_PROCESS.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
            // SAFETY: registers a plain `extern "C"` function, once.
            unsafe {
                libc::atexit(at_exit);
            }
            Some(Driver {
                url: format!("http://127.0.0.1:{port}"),
                chromium,
            })
        })
        .as_ref()
}

impl Driver {
    /// Starts a new session (a new Chromium on a new profile directory) on the harness's runtime.
    fn start_session(&'static self) -> JoinHandle<Result<Session, String>> {
        runtime().spawn(self.new_session())
    }

    async fn new_session(&self) -> Result<Session, String> {
        // `…-<n>-profile`: no profile's path is a part of another's.
        let profile = std::env::temp_dir().join(format!(
            "{}{}-profile",
            profile_prefix(),
            PROFILES.fetch_add(1, Ordering::SeqCst)
        ));
        let caps = json!({
            "goog:chromeOptions": {
                "binary": self.chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--disable-background-networking", "--disable-component-update", "--disable-sync",
                         "--no-first-run", "--window-size=1200,900",
                         format!("--user-data-dir={}", profile.display())],
            }
        });
        let Value::Object(caps) = caps else {
            unreachable!()
        };
        // chromedriver may still be starting (the first session).
        let deadline = Instant::now() + Duration::from_secs(20);
        let client = loop {
            match ClientBuilder::new(HttpConnector::new())
                .capabilities(caps.clone())
                .connect(&self.url)
                .await
            {
                Ok(c) => break c,
                Err(e) if Instant::now() > deadline => {
                    kill_processes_naming(&profile.to_string_lossy());
                    return Err(e.to_string());
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        // A first navigation, so that the test's own is not this Chromium's first (which can
        // take seconds while the fresh browser finishes starting up).
        client
            .goto("data:text/html,<title>ready</title>")
            .await
            .map_err(|e| e.to_string())?;
        let id = client.session_id().await.map_err(|e| e.to_string())?;
        // Kept open when this client goes: the test's own client takes the session over.
        client.persist().await.map_err(|e| e.to_string())?;
        let id = id.ok_or("chromedriver gave no session id")?;
        Ok(Session { id, profile })
    }
}

/// Starts chromedriver and a headless Chromium session, or `None` (with a message) when they are
/// not installed and not expected. The session is the test's own (see the [module docs](self)).
pub async fn launch() -> Option<Browser> {
    launch_with(true).await
}

/// Like [`launch`], without starting the next session ahead: for a process that needs one
/// browser once (the bench's first reply, [`crate::bench::first_reply`]), where an idle spare
/// Chromium would only take memory and CPU from what is measured next.
pub async fn launch_once() -> Option<Browser> {
    launch_with(false).await
}

async fn launch_with(spare_ahead: bool) -> Option<Browser> {
    let Some(driver) = driver() else {
        assert!(
            !browser_expected(),
            "{EXPECT_BROWSER} is set but chromium/chromedriver are missing: run ./scripts/setup-browser.sh"
        );
        eprintln!(
            "SKIPPED: chromium/chromedriver not installed (./scripts/setup-browser.sh installs them)"
        );
        return None;
    };
    let spare = SPARE.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
    let session = match spare {
        Some(spare) => match spare.await {
            Ok(Ok(session)) => Some(session),
            // A spare that failed (or whose task died): start one now, as without a spare.
            _ => None,
        },
        None => None,
    };
    let session = match session {
        Some(s) => s,
        None => driver
            .start_session()
            .await
            .expect("the session task")
            .unwrap_or_else(|e| panic!("cannot start a Chromium session: {e}")),
    };
    // The next test's Chromium starts while this test runs.
    if spare_ahead {
        let mut spares = SPARE.lock().unwrap_or_else(|e| e.into_inner());
        if spares.len() < SPARES {
            spares.push_back(driver.start_session());
        }
    }
    let client = Client::with_existing_session(&driver.url, &session.id, HttpConnector::new())
        .await
        .unwrap_or_else(|e| panic!("cannot take over the Chromium session: {e}"));
    Some(Browser {
        client,
        session: Some(session),
    })
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
        let deadline = Instant::now() + WAIT;
        let look = format!(
            "return document.querySelector({}) ? true : null;",
            serde_json::to_string(css).unwrap()
        );
        loop {
            let seen = self.look_until(&look, deadline).await.is_some();
            match self.client.find(Locator::Css(css)).await {
                Ok(el) => return el,
                Err(e) if !seen || Instant::now() > deadline => {
                    self.screenshot("failure").await;
                    let page = self.page_text().await;
                    panic!("no element {css}: {e}\nthe page's text ends: {page}")
                }
                // Gone again between the page's look and WebDriver's: wait on.
                Err(_) => tokio::time::sleep(POLL).await,
            }
        }
    }

    /// The end of the page's visible text (its last 800 characters), for a failure's message.
    pub async fn page_text(&self) -> String {
        let text = self
            .client
            .execute(
                "return document.body ? document.body.innerText : '';",
                vec![],
            )
            .await
            .unwrap_or_default();
        let text = text.as_str().unwrap_or_default();
        let start = text.char_indices().rev().nth(799).map_or(0, |(i, _)| i);
        text[start..].to_owned()
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
        let look = format!(
            "const t = Array.from(document.querySelectorAll({})).map(e => e.textContent).join('\\n'); \
             return t.includes({}) ? t : null;",
            serde_json::to_string(css).unwrap(),
            serde_json::to_string(needle).unwrap()
        );
        if let Some(Value::String(t)) = self.look_until(&look, Instant::now() + WAIT).await
            && t.contains(needle)
        {
            return t;
        }
        let t = self.texts(css).await;
        if t.contains(needle) {
            return t;
        }
        self.screenshot("failure").await;
        panic!("{css} never contained {needle:?}; it has {t:?}");
    }

    /// Waits until `script` (a function body) returns `true`.
    pub async fn wait_js(&self, what: &str, script: &str) {
        let look = format!("return (function () {{ {script} }})() === true ? true : null;");
        if self.look_until(&look, Instant::now() + WAIT).await == Some(Value::Bool(true)) {
            return;
        }
        if self.js(script).await == Value::Bool(true) {
            return;
        }
        self.screenshot("failure").await;
        panic!("timed out waiting for {what}");
    }

    /// Looks at the page until `look` (a function body) returns something other than `null` or
    /// `undefined`, and returns that; `None` once `deadline` passed.
    ///
    /// The page looks by itself (every [`POLL`] and at every DOM change) inside one asynchronous
    /// script of up to [`LOOK_SLICE`], so a wait costs a WebDriver round trip per slice rather
    /// than per look (each round trip costs chromedriver and Chromium about 3 ms of CPU, which
    /// the page under test needs on a busy machine). When that script fails (the page navigated
    /// away, or `look` threw), one look is made as [`js`](Self::js) makes it, which panics on a
    /// script error as before, and the wait goes on.
    async fn look_until(&self, look: &str, deadline: Instant) -> Option<Value> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            let script = LOOK_SCRIPT
                .replace("__LOOK__", look)
                .replace("__SLICE__", &left.min(LOOK_SLICE).as_millis().to_string())
                .replace("__POLL__", &POLL.as_millis().to_string());
            match self.client.execute_async(&script, vec![]).await {
                Ok(Value::Object(mut r)) if r.contains_key("value") => {
                    return r.remove("value");
                }
                Ok(Value::Object(r)) if !r.contains_key("error") => {} // the slice ended
                _ => {
                    let v = self
                        .js(&format!("return (function () {{ {look} }})();"))
                        .await;
                    if !v.is_null() {
                        return Some(v);
                    }
                    tokio::time::sleep(POLL).await;
                }
            }
        }
    }

    /// Clicks the element matching `css` (waiting for it).
    ///
    /// The click waits until the element stands still (the same box in two reads 50 ms apart):
    /// WebDriver clicks at coordinates, and a card that has just appeared can still be moving
    /// (the chat keeps to its bottom as content grows), so an early click lands beside it.
    ///
    /// An element the page replaced meanwhile (a view that re-rendered it between the lookup
    /// and the click: a stale reference), or one another element covered at the moment of the
    /// click (Chromium's "element click intercepted": the page's layout moved after the
    /// element stood still, as an approval card's arguments rendering over its Allow button in
    /// a loaded run), is looked up again and waited still, up to three times.
    pub async fn click(&self, css: &str) {
        let mut tries = 0;
        loop {
            let el = self.wait_for(css).await;
            self.wait_still(css).await;
            match el.click().await {
                Ok(_) => return,
                Err(e)
                    if tries < 3
                        && (e.to_string().contains("stale element")
                            || e.to_string().contains("element click intercepted")) =>
                {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("click {css}: {e}"),
            }
        }
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

    /// Runs axe-core (npm `axe-core`, pinned and installed into `.tools/a11y` by
    /// `scripts/setup-test.sh`, or the file `LMCHATKIT_AXE` names) on the page as it is: the
    /// violations of WCAG 2.0 and 2.1, levels A and AA, one line per element (`rule: element:
    /// what to fix`). The script is given to the page through WebDriver, which the page's CSP
    /// does not govern. Panics when axe-core is not installed.
    pub async fn axe_violations(&self) -> Vec<String> {
        let path = std::env::var_os("LMCHATKIT_AXE").map_or_else(
            || {
                PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("../.tools/a11y/node_modules/axe-core/axe.min.js")
            },
            PathBuf::from,
        );
        let source = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "axe-core at {}: {e} (./scripts/setup-test.sh installs it)",
                path.display()
            )
        });
        self.client
            .execute(
                &format!("if (!window.axe) {{ {source}\n }} return !!window.axe;"),
                vec![],
            )
            .await
            .expect("load axe-core");
        let found = self
            .client
            .execute_async(
                "const done = arguments[arguments.length - 1]; \
                 axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}, \
                                    resultTypes: ['violations']}) \
                   .then((r) => done(r.violations.flatMap((v) => v.nodes.map((n) => \
                     `${v.id}: ${n.target.join(' ')}: ${(n.failureSummary || '').replace(/\\s+/g, ' ').slice(0, 240)}`)))) \
                   .catch((e) => done([`axe failed: ${e}`]));",
                vec![],
            )
            .await
            .expect("run axe-core");
        found
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|v| v.as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default()
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
