//! The `lmchatkit` app as a first-time user meets it: the built binary started with nothing
//! configured (a fresh data directory, no upstream, no MCP servers) and opened in headless
//! Chromium. "hello" streams the demo model's reply; asking for the clock calls the built-in
//! demo MCP server's app tool, which after approval shows its MCP App view, whose own button
//! calls back through the bridge.
//!
//! Needs the binary (`cargo test --workspace` builds it) and the UI bundle; skipped with a
//! message only when Chromium is absent and `LMCHATKIT_EXPECT_BROWSER` is unset.

use std::process::Stdio;

use lmchatkit_tests::app_binary::{self, App, binary};
use lmchatkit_tests::browser::app::{ONE_AT_A_TIME, idle, start_chat};
use lmchatkit_tests::browser::{browser_expected, launch};

/// Starts the binary with `args` on a fresh data directory; `None` when it is not built.
fn start(args: &[&str]) -> Option<(App, String, tempfile::TempDir)> {
    let bin = binary();
    if !bin.exists() {
        assert!(
            !browser_expected(),
            "{} is not built (cargo test --workspace builds it)",
            bin.display()
        );
        eprintln!("SKIPPED: {} is not built", bin.display());
        return None;
    }
    let data = tempfile::tempdir().unwrap();
    let mut cmd = app_binary::command();
    cmd.args(["--listen", "127.0.0.1:0"])
        .args(args)
        .env("XDG_DATA_HOME", data.path())
        .env("HOME", data.path())
        .stderr(Stdio::null());
    let app = app_binary::spawn(cmd);
    let url = app.url.clone();
    Some((app, url, data))
}

/// "hello", then the clock tool's view, whose own button calls back through the bridge.
async fn demo_reply_and_view(b: &lmchatkit_tests::browser::Browser) {
    start_chat(b).await;
    b.wait_text(".lmck-demo-banner", "built-in demo model")
        .await;
    b.send_message("hello").await;
    b.wait_text(
        ".lmck-assistant .lmck-md",
        "This is the built-in demo model",
    )
    .await;
    idle(b).await;
    b.wait_js(
        "a table in the reply",
        "return !!document.querySelector('.lmck-assistant .lmck-md table');",
    )
    .await;

    b.send_message("show me the clock").await;
    b.click(".lmck-approval .lmck-allow").await;
    let frame = b.wait_for(".lmck-app-iframe").await;
    frame.enter_frame().await.unwrap();
    b.wait_js("the tool result in the view", "const r = document.getElementById('tool-result'); return !!r && r.textContent !== '(waiting)';").await;
    b.click("#call-tool").await;
    b.wait_text("#call-result", "Server time").await;
    for _ in 0..2 {
        b.client.enter_parent_frame().await.unwrap();
    }
    idle(b).await;
}

#[tokio::test]
async fn first_run_with_nothing_configured() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some((_app, url, data)) = start(&[]) else {
        return;
    };
    let Some(b) = launch().await else { return };
    b.client.goto(&url).await.unwrap();
    demo_reply_and_view(&b).await;
    b.screenshot("app-first-run-demo-view").await;
    assert!(
        data.path().join("lmchatkit/history.db").exists(),
        "history in a SQLite file in the platform data directory"
    );
}

/// Behind a token the same first run works from the printed URL: it sets the cookie, leaves
/// the address bar without the token, and the page, its API calls, the events stream and the
/// view (in its sandboxed frame) all pass.
#[tokio::test]
async fn the_printed_url_with_its_token_opens_the_whole_app() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some((_app, url, _data)) = start(&["--auth-token", "t0ken-for-the-browser"]) else {
        return;
    };
    assert!(url.ends_with("?token=t0ken-for-the-browser"), "{url}");
    let Some(b) = launch().await else { return };
    b.client.goto(&url).await.unwrap();
    let now = b.client.current_url().await.unwrap();
    assert!(
        !now.as_str().contains("token"),
        "the token left the address bar: {now}"
    );
    demo_reply_and_view(&b).await;
    // Without the cookie nothing answers.
    let plain = url.split('?').next().unwrap().to_owned();
    b.client.delete_all_cookies().await.unwrap();
    b.client.goto(&plain).await.unwrap();
    let body = b
        .client
        .find(fantoccini::Locator::Css("body"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(body.contains("token is required"), "{body}");
}
