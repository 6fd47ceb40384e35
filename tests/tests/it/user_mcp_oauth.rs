//! OAuth sign-in to a user's own MCP server end to end, in Chromium, through the "Tools &
//! servers" screen, against the MCP TypeScript SDK's example server and its demo authorization
//! server (`oauth_demo`): the user adds the server by URL, a refresh says a sign-in is needed
//! and the row offers Sign in; the button opens the authorization page in a new tab (without an
//! opener: the pages it goes through cannot reach the app's window), the demo
//! approves and sends it to our callback page, and the row in the first tab turns "signed in"
//! without a reload (the callback page's `BroadcastChannel` signal; window focus is kept from
//! the page meanwhile, so the signal alone must do it). Refresh, accept, and a chat turn where
//! the mock model calls the tool gets its result. A second server signed in outside the browser
//! turns "signed in" when the window gets focus back. A second user cannot end the first one's
//! sign-in.
//!
//! The operator's outbound policy allows `localhost`, where both demo servers listen, for this
//! test only.

use crate::oauth_demo;

use std::time::{Duration, Instant};

use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::mcp::OutboundPolicy;
use lmchatkit::secrets::sealing::{Keyring, SealingKey};
use lmchatkit::user_mcp::{MemoryUserMcpStore, UserMcp};
use lmchatkit::{ChatService, Config};
use lmchatkit_tests::browser::app::{ONE_AT_A_TIME, bundle_built, idle, start_chat};
use lmchatkit_tests::browser::{Browser, launch};
use lmchatkit_tests::mock_upstream::MockUpstream;
use lmchatkit_tests::test_host::TestHost;
use oauth_demo::{Demo, api, log_in, serve, sign_in_over_http};
use serde_json::{Value, json};

const ROW: &str = ".lmck-server[data-slug=demo]";
const ROW_TWO: &str = ".lmck-server[data-slug=demo-two]";

/// Adds a server named `name` at `url` through the screen's form; it needs a sign-in, which a
/// Refresh finds out and the row then shows.
async fn add_needing_sign_in(b: &Browser, row: &str, name: &str, url: &str) {
    b.click(".lmck-add-server").await;
    b.fill("input[name=name]", name).await;
    b.fill("input[name=url]", url).await;
    b.click(".lmck-save-server").await;
    b.wait_text(&format!("{row} .lmck-credentials"), "credentials: not set")
        .await;
    b.click(&format!("{row} .lmck-refresh")).await;
    b.wait_text(".lmck-servers-error", "sign in").await;
    b.wait_text(&format!("{row} .lmck-oauth-status"), "sign-in required")
        .await;
    b.wait_for(&format!("{row} .lmck-oauth")).await;
}

/// Whether the page is still the one loaded at the start (a reload drops the marker).
async fn not_reloaded(b: &Browser) -> bool {
    b.js("return window.__lmckNoReload === true;").await == Value::Bool(true)
}

/// Waits for a second window and switches to it; answers the first one's handle.
async fn switch_to_new_tab(b: &Browser) -> fantoccini::wd::WindowHandle {
    let app = b.client.window().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let windows = b.client.windows().await.unwrap();
        if let Some(tab) = windows.into_iter().find(|w| *w != app) {
            b.client.switch_to_window(tab).await.unwrap();
            return app;
        }
        assert!(
            Instant::now() < deadline,
            "the Sign in button opened no tab"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_sign_in_from_the_screen_turns_the_row_signed_in_without_a_reload_and_its_tool_runs() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(demo) = Demo::start().await else {
        return;
    };
    let mock = MockUpstream::start().await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(mock.base_url()).with_api_key("sk-test"));
    let keyring = Keyring::new(SealingKey::generate("k1").unwrap());
    // Both demo servers listen on localhost: allowed for this test only.
    let policy = OutboundPolicy::new().with_allowed_host("localhost");
    let user_mcp = UserMcp::new(MemoryUserMcpStore::default(), keyring, policy);
    let config = Config::builder(TestHost(backend))
        .user_mcp(user_mcp)
        .build()
        .unwrap();
    let (base, _server) = serve(ChatService::new(config)).await;
    if !bundle_built(&format!("{base}/chat/assets/lmchatkit.js")).await {
        return;
    }
    let Some(b) = launch().await else {
        return;
    };
    let servers = "/chat/api/mcp/servers";
    let started = Instant::now();

    // Alice opens the app; a marker tells a reload, and focus events are kept from the page.
    log_in(&b, &base, "alice").await;
    b.wait_for(".lmck-servers-btn").await;
    b.watch_csp_violations().await;
    b.js("window.__lmckNoReload = true; \
          window.__lmckBlockFocus = (e) => e.stopImmediatePropagation(); \
          window.addEventListener('focus', window.__lmckBlockFocus, true); return true;")
        .await;

    // Tools & servers: add the server by URL; a refresh says it needs a sign-in.
    b.click(".lmck-servers-btn").await;
    add_needing_sign_in(&b, ROW, "Demo", &demo.url()).await;
    let (_, server) = api(&base, "alice", "GET", &format!("{servers}/demo"), None).await;
    assert_eq!(server["oauth"], "sign_in_required");
    b.screenshot("user_mcp_oauth-01-sign-in-required").await;

    // Sign in: the tab it opens goes through the demo's authorization page to our callback.
    b.click(&format!("{ROW} .lmck-oauth")).await;
    let app = switch_to_new_tab(&b).await;
    b.wait_text("h1", "Signed in to Demo").await;
    assert_eq!(
        b.js("return window.opener === null;").await,
        Value::Bool(true),
        "the authorization tab was opened without an opener"
    );
    let at = b.client.current_url().await.unwrap();
    assert!(
        at.as_str()
            .starts_with(&format!("{base}/chat/api/mcp/oauth/callback?")),
        "{at}"
    );
    b.watch_csp_violations().await;
    assert_eq!(
        b.csp_violations().await,
        Vec::<String>::new(),
        "callback page"
    );
    b.client.close_window().await.unwrap();
    b.client.switch_to_window(app).await.unwrap();

    // Back in the app: the row says signed in, and the page was not reloaded.
    b.wait_text(&format!("{ROW} .lmck-oauth-status"), "signed in")
        .await;
    assert!(b.texts(&format!("{ROW} .lmck-oauth")).await.is_empty());
    assert!(
        b.texts(".lmck-servers-error").await.is_empty(),
        "the failed refresh's message stays"
    );
    assert!(not_reloaded(&b).await, "the page was reloaded");
    b.screenshot("user_mcp_oauth-02-signed-in").await;

    // Refresh (with the token now) and accept `greet`, always allowed, through the screen.
    b.click(&format!("{ROW} .lmck-refresh")).await;
    let greet = ".lmck-review [data-tool=greet][data-kind=added]";
    b.wait_for(greet).await;
    b.fill("[data-tool=greet] .lmck-approval-select", "always")
        .await;
    b.click("[data-tool=greet] .lmck-review-tick").await;
    b.click(".lmck-accept").await;
    b.wait_for(&format!("{ROW} .lmck-server-tool[data-tool=greet]"))
        .await;
    let (_, server) = api(&base, "alice", "GET", &format!("{servers}/demo"), None).await;
    assert_eq!(server["tools"][0]["approval"], "always", "{server}");
    b.click(".lmck-servers .lmck-close").await;

    // A turn: the mock model calls the tool, the result comes back and reaches the reply.
    start_chat(&b).await;
    b.send_message(r#"call tool demo__greet {"name": "Ada"}"#)
        .await;
    b.wait_text(".lmck-tool-result", "Hello, Ada!").await;
    b.wait_text(".lmck-assistant .lmck-md", "Tool said: Hello, Ada!")
        .await;
    idle(&b).await;

    // A second server, signed in outside this browser: the row turns signed in when the
    // window gets focus back (no signal reaches this page).
    b.click(".lmck-servers-btn").await;
    add_needing_sign_in(&b, ROW_TWO, "Demo two", &demo.url()).await;
    let (status, page) = sign_in_over_http(&base, "alice", "demo-two").await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Signed in to Demo two"), "{page}");
    assert!(
        b.texts(&format!("{ROW_TWO} .lmck-oauth-status"))
            .await
            .contains("sign-in required")
    );
    b.js(
        "window.removeEventListener('focus', window.__lmckBlockFocus, true); \
          window.dispatchEvent(new FocusEvent('focus')); return true;",
    )
    .await;
    b.wait_text(&format!("{ROW_TWO} .lmck-oauth-status"), "signed in")
        .await;
    assert!(not_reloaded(&b).await, "the page was reloaded");
    assert_eq!(b.csp_violations().await, Vec::<String>::new(), "app page");
    eprintln!("the screen's sign-in flow took {:?}", started.elapsed());

    // A second user cannot end alice's sign-in: alice starts another, bob's browser ends it.
    let (status, start) = api(
        &base,
        "alice",
        "POST",
        &format!("{servers}/demo/oauth"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{start}");
    log_in(&b, &base, "bob").await;
    b.client
        .goto(start["authorization_url"].as_str().unwrap())
        .await
        .unwrap();
    b.wait_text("h1", "Sign-in not completed").await;
    b.wait_text("p", "started by another user").await;
    let (status, list) = api(&base, "bob", "GET", servers, None).await;
    assert_eq!((status, list), (200, json!([])));
    let (_, server) = api(&base, "alice", "GET", &format!("{servers}/demo"), None).await;
    assert_eq!(server["oauth"], "signed_in");
    b.screenshot("user_mcp_oauth").await;
}
