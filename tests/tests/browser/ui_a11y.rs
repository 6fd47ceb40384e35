//! Accessibility as a test: axe-core (npm, pinned; WCAG 2.0 and 2.1, levels A and AA) run in
//! the page over the start screen, a reply holding code, a table, a task list and math, the
//! branch switcher of a regenerated reply, the search results, an approval card, a tool card, a
//! streaming reply with a queued message, in the light and the dark theme, and at a phone's
//! width with the drawer closed and open: no violation. A failure lists each element with what
//! axe says to fix. (Diagrams join when they exist.)
//!
//! Skipped (with a message) only when Chromium is absent and `LMCHATKIT_EXPECT_BROWSER` is unset.

use lmchatkit_tests::browser::Browser;
use lmchatkit_tests::browser::app::{ONE_AT_A_TIME, idle, setup, start_chat};
use lmchatkit_tests::browser::helpers::talk;

/// Adds what axe-core finds on the page to `found` (`what` names the screen).
async fn check(b: &Browser, found: &mut Vec<String>, what: &str) {
    for v in b.axe_violations().await {
        found.push(format!("{what}: {v}"));
    }
}

/// Switches the theme (System → light → dark → System) until the app is `dark` or not.
async fn theme(b: &Browser, dark: bool) {
    b.wait_for(".lmck-app .lmck-theme").await;
    for _ in 0..3 {
        let is_dark = b
            .js("return document.querySelector('.lmck-app').classList.contains('lmck-dark');")
            .await;
        if is_dark == serde_json::Value::Bool(dark) {
            return;
        }
        b.click(".lmck-theme").await;
    }
    panic!(
        "the theme did not become {}",
        if dark { "dark" } else { "light" }
    );
}

#[tokio::test]
async fn every_screen_meets_wcag_2_1_aa_in_both_themes_and_on_a_phone() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    let mut found = Vec::new();
    for dark in [false, true] {
        theme(b, dark).await;
        check(b, &mut found, &format!("the start screen (dark: {dark})")).await;
    }
    theme(b, false).await;
    start_chat(b).await;
    talk(b, "a first message to search for").await;
    b.send_text(
        "mirror-back\n## A reply\n\nSome `inline code` and a [link](https://example.com).\n\n```rust\nfn main() {}\n```\n\n\
         | a | b |\n|---|---|\n| 1 | 2 |\n\nEnergy $E = mc^2$ and\n\n$$\\frac{1}{2}$$\n\n- [x] done\n- [ ] to do\n",
    )
    .await;
    b.wait_for(".lmck-assistant code.language-rust .hljs-keyword")
        .await;
    b.wait_for(".lmck-assistant .lmck-math math").await;
    idle(b).await;
    for dark in [false, true] {
        theme(b, dark).await;
        check(
            b,
            &mut found,
            &format!("a reply with code, a table and math (dark: {dark})"),
        )
        .await;
    }
    // The branch switcher: the reply regenerated, so it has two versions.
    b.click(".lmck-regenerate").await;
    b.wait_text(".lmck-assistant .lmck-version-at", "2 / 2")
        .await;
    idle(b).await;
    for dark in [true, false] {
        theme(b, dark).await;
        check(
            b,
            &mut found,
            &format!("the branch switcher (dark: {dark})"),
        )
        .await;
    }
    // The sidebar's search results.
    b.js(
        "const i = document.querySelector('.lmck-search'); i.value = 'first'; \
          i.dispatchEvent(new Event('input', {bubbles: true})); return true;",
    )
    .await;
    b.wait_for(".lmck-search-results mark").await;
    for dark in [true, false] {
        theme(b, dark).await;
        check(b, &mut found, &format!("the search results (dark: {dark})")).await;
    }
    b.js(
        "const i = document.querySelector('.lmck-search'); i.value = ''; \
          i.dispatchEvent(new Event('input', {bubbles: true})); return true;",
    )
    .await;
    // A tool call waiting for approval, then its card with the result.
    b.send_message("please use the tool").await;
    b.wait_for(".lmck-approval .lmck-allow").await;
    for dark in [true, false] {
        theme(b, dark).await;
        check(b, &mut found, &format!("an approval card (dark: {dark})")).await;
    }
    b.click(".lmck-allow").await;
    b.wait_text(".lmck-tool-result", "Oslo: sunny").await;
    idle(b).await;
    for dark in [false, true] {
        theme(b, dark).await;
        check(b, &mut found, &format!("a tool card (dark: {dark})")).await;
    }
    // A reply streaming (Stop) with a message queued under the composer.
    b.send_message("a held reply please").await;
    b.wait_for(".lmck-stop").await;
    b.send_message("queued while it streams").await;
    b.wait_for(".lmck-queued").await;
    for dark in [true, false] {
        theme(b, dark).await;
        check(
            b,
            &mut found,
            &format!("a streaming reply and the queue (dark: {dark})"),
        )
        .await;
    }
    b.click(".lmck-stop").await;
    idle(b).await;
    // A phone's width: the drawer closed, then open.
    b.client.set_window_size(360, 740).await.unwrap();
    check(b, &mut found, "a phone's width").await;
    b.click(".lmck-menu-btn").await;
    check(b, &mut found, "a phone's width, the drawer open").await;
    assert!(
        found.is_empty(),
        "{} violations:\n{}",
        found.len(),
        found.join("\n")
    );
}
