//! The fixture of the browser tests (`tests/tests/browser/`): a host with a `get_weather` tool,
//! two MCP prompts (`greet`, `pair`) and a `docs://readme` resource over the mock upstream; the
//! real service (memory history or none, events and uploads on) served on loopback; a browser on
//! its page; and the waits the tests share.

use std::time::Duration;

use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::store::MemoryStore;
use lmchatkit::{ChatService, Config, Principal};
use serde_json::Value;

use crate::browser::{Browser, POLL, browser_expected, launch};
use crate::mock_upstream::MockUpstream;
use crate::serve::{Served, serve, serve_as};
use crate::test_host::TestHost;

/// How many browser tests of one binary run at a time.
///
/// Each test has its own server, mock upstream and Chromium (see [`crate::browser`]), so two
/// tests at a time share nothing but the CPU. On 2 cores a browser test mostly waits (WebDriver
/// round trips, the page's work, the mock's streams), and two interleave well; more would only
/// make each one slower.
pub const BROWSER_TESTS_AT_A_TIME: usize = 2;

/// Held by every browser test while it runs: at most [`BROWSER_TESTS_AT_A_TIME`] run at once.
/// (The name is older than the second slot; the tests of `tests/tests/it/` that drive a browser
/// take it too.)
pub static ONE_AT_A_TIME: BrowserSlots =
    BrowserSlots(tokio::sync::Semaphore::const_new(BROWSER_TESTS_AT_A_TIME));

/// The slots browser tests take turns on ([`ONE_AT_A_TIME`]).
pub struct BrowserSlots(tokio::sync::Semaphore);

/// A browser test's turn: its slot, and its share of [`crate::quiet`] (no timed test of another
/// binary runs meanwhile). Released when dropped.
#[must_use = "the slot is released when this is dropped"]
pub struct Slot {
    _permit: tokio::sync::SemaphorePermit<'static>,
    _quiet: crate::quiet::Held,
}

impl BrowserSlots {
    /// Waits for a slot, held until the guard is dropped.
    pub async fn lock(&'static self) -> Slot {
        let permit = self.0.acquire().await.expect("the slots are never closed");
        Slot {
            _permit: permit,
            _quiet: quiet_share().await,
        }
    }

    /// Waits for every slot: the test runs alone. For the heaviest tests (MCP App views: a
    /// real MCP server and several sandboxed iframes), which beside another test on 2 cores
    /// could miss an element's short life (one did, once in a full run).
    pub async fn alone(&'static self) -> Slot {
        let permit = self
            .0
            .acquire_many(BROWSER_TESTS_AT_A_TIME as u32)
            .await
            .expect("the slots are never closed");
        Slot {
            _permit: permit,
            _quiet: quiet_share().await,
        }
    }
}

/// [`crate::quiet::shared`], off the test's runtime (it may wait for a timed test).
async fn quiet_share() -> crate::quiet::Held {
    tokio::task::spawn_blocking(crate::quiet::shared)
        .await
        .expect("the lock's thread")
}

/// A running service, mock upstream and browser on the chat page.
pub struct Env {
    /// The mock upstream.
    pub mock: MockUpstream,
    /// The service.
    pub server: Served,
    /// The browser, on `{server}/chat`.
    pub browser: Browser,
    /// The service's `/api/events` broadcaster.
    pub events: lmchatkit::EventBroadcaster,
}

impl Env {
    /// Waits until the page listens on `/api/events`, so a save made now reaches it.
    pub async fn wait_listening(&self) {
        for _ in 0..1000 {
            if self.events.subscribers() > 0 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the page never subscribed to /api/events");
    }
}

/// Server-mode history; `None` when the test must be skipped.
pub async fn setup() -> Option<Env> {
    setup_with(true).await
}

/// Like [`setup`]; `server_history`: a memory store (server mode), else none (this tab's sessionStorage).
pub async fn setup_with(server_history: bool) -> Option<Env> {
    setup_configured(|builder| {
        if server_history {
            builder.history(MemoryStore::new())
        } else {
            builder
        }
    })
    .await
}

/// Like [`setup`] without history, with the config adjusted by `configure`.
pub async fn setup_configured(
    configure: impl FnOnce(lmchatkit::ConfigBuilder) -> lmchatkit::ConfigBuilder,
) -> Option<Env> {
    setup_hosted(|host| host, configure).await
}

/// Like [`setup_hosted`], serving the host `wrap` makes of the [`TestHost`] (e.g. one
/// that lists other models).
pub async fn setup_hosted<H: lmchatkit::Host>(
    wrap: impl FnOnce(TestHost) -> H,
    configure: impl FnOnce(lmchatkit::ConfigBuilder) -> lmchatkit::ConfigBuilder,
) -> Option<Env> {
    setup_full(wrap, configure, None).await
}

/// Like [`setup_configured`], with every request signed in as `principal` (as a host's auth
/// layer would do; e.g. users' own MCP servers answer the anonymous user 401).
pub async fn setup_signed_in(
    principal: &str,
    configure: impl FnOnce(lmchatkit::ConfigBuilder) -> lmchatkit::ConfigBuilder,
) -> Option<Env> {
    setup_full(|host| host, configure, Some(Principal::new(principal))).await
}

async fn setup_full<H: lmchatkit::Host>(
    wrap: impl FnOnce(TestHost) -> H,
    configure: impl FnOnce(lmchatkit::ConfigBuilder) -> lmchatkit::ConfigBuilder,
    principal: Option<Principal>,
) -> Option<Env> {
    let mock = MockUpstream::start().await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(mock.base_url()).with_api_key("sk-test"));
    let builder = Config::builder(wrap(TestHost(backend)))
        .events(true)
        .file_upload(true);
    let config = configure(builder).build().unwrap();
    let svc = ChatService::new(config);
    let events = svc.events().cloned().unwrap_or_default();
    let server = match principal {
        Some(p) => serve_as(svc, p).await,
        None => serve(svc).await,
    };
    if !bundle_built(&server.url("/chat/assets/lmchatkit.js")).await {
        return None;
    }
    let browser = launch().await?;
    browser.client.goto(&server.url("/chat")).await.unwrap();
    Some(Env {
        mock,
        server,
        browser,
        events,
    })
}

/// Whether the service whose loader is at `loader_url` embeds the UI bundle. When it does not,
/// the test is skipped (with a message), or fails where a browser is expected.
pub async fn bundle_built(loader_url: &str) -> bool {
    let loader = reqwest::get(loader_url)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    if loader.contains("not built") {
        assert!(
            !browser_expected(),
            "the UI bundle is not built: run ./scripts/build-ui.sh"
        );
        eprintln!("SKIPPED: the UI bundle is not built (./scripts/build-ui.sh)");
        return false;
    }
    true
}

/// From the start screen into an open chat.
pub async fn start_chat(b: &Browser) {
    b.wait_js("the model to be chosen", "const s = document.querySelector('.lmck-start button.lmck-start'); return !!s && !s.disabled;").await;
    b.click("button.lmck-start").await;
    b.wait_for(".lmck-transcript").await;
}

/// Waits until no turn is running.
pub async fn idle(b: &Browser) {
    b.wait_js("the turn to end", "return !!document.querySelector('.lmck-send') && !document.querySelector('.lmck-streaming');").await;
}

/// The first listed conversation as the service stores it, if there is one.
pub async fn first_stored(env: &Env) -> Option<Value> {
    let list: Value = reqwest::get(env.server.url("/chat/api/conversations"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = list.as_array()?.first()?["id"].as_str()?.to_owned();
    let conv = reqwest::get(env.server.url(&format!("/chat/api/conversations/{id}")))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    Some(conv)
}

/// Messages stored in the first listed conversation.
pub async fn saved_messages(env: &Env) -> usize {
    first_stored(env)
        .await
        .and_then(|c| c["messages"].as_array().map(Vec::len))
        .unwrap_or(0)
}

/// Waits (up to 10 s) until the first listed conversation has `n` stored messages.
pub async fn wait_saved(env: &Env, n: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if saved_messages(env).await >= n {
            return;
        }
        tokio::time::sleep(POLL).await;
    }
    if saved_messages(env).await >= n {
        return;
    }
    panic!("the conversation was never saved with {n} messages");
}
