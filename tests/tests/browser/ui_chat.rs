//! The chat UI in headless Chromium against the real service (history in memory, events on) and
//! the mock OpenAI upstream: streaming, tool approval and denial, reload restore and a second tab,
//! Stop, `<think>` splitting, the `/` and `@` menus, XSS payloads that must not execute, a remote
//! image that must not be fetched (and a page that breaks none of its own CSP), and the 360 px
//! layout. Screenshots of the main states go to `target/ui-screenshots/`.
//!
//! Skipped (with a message) only when Chromium is absent and `LMCHATKIT_EXPECT_BROWSER` is unset.

use std::sync::atomic::Ordering;
use std::time::Duration;

use lmchatkit_tests::browser::app::{
    ONE_AT_A_TIME, first_stored, idle, setup, start_chat, wait_saved,
};
use serde_json::{Value, json};

#[tokio::test]
async fn first_message_streams_and_renders() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    b.wait_js("the default persona", "const i = document.querySelector('.lmck-combo-input'); return !!i && i.value === 'Default';").await;
    b.screenshot("01-start-screen").await;
    // The wasm came compressed (the service's precompressed copy, by Accept-Encoding).
    let wasm = b.js("const e = performance.getEntriesByType('resource').find((r) => r.name.endsWith('_bg.wasm')); return e ? [e.encodedBodySize, e.decodedBodySize] : null;").await;
    let [encoded, decoded] = [0, 1].map(|i| wasm[i].as_u64().expect("the wasm's resource timing"));
    assert!(
        encoded * 2 < decoded,
        "wasm sent with {encoded} bytes for {decoded}"
    );
    start_chat(b).await;
    b.send_message("hello there").await;
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
    idle(b).await;
    assert!(b.texts(".lmck-user").await.contains("hello there"));
    b.wait_text(".lmck-assistant .lmck-usage", "16 tokens")
        .await;
    b.wait_text(".lmck-title", "hello there").await;
    b.wait_text(".lmck-conv", "hello there").await;
    b.screenshot("02-first-reply").await;
    let focused = b.js("return document.activeElement && document.activeElement.classList.contains('lmck-input');").await;
    assert_eq!(
        focused,
        Value::Bool(true),
        "the composer has the focus after the turn"
    );
}

#[tokio::test]
async fn tool_call_is_approved_and_its_result_shows() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("please use the tool").await;
    b.wait_for(".lmck-approval .lmck-allow").await;
    b.wait_text(".lmck-approval", "get_weather").await;
    b.wait_text(".lmck-badge-pending", "pending").await;
    // Allow is focused: Enter approves.
    let focused = b.js("return document.activeElement && document.activeElement.classList.contains('lmck-allow');").await;
    assert_eq!(focused, Value::Bool(true), "Allow has the focus");
    // Each argument with what the tool's schema says of it: the service sent the hints of this
    // call only (the browser never gets tool lists), and a schema's text stays text.
    let args = b.wait_text(".lmck-approval .lmck-args", "Oslo").await;
    for part in ["city", "required", "The city to look up, e.g. <b>Oslo</b>"] {
        assert!(args.contains(part), "{part:?} in {args:?}");
    }
    assert!(
        !args.contains("units"),
        "an optional argument not given is left out: {args:?}"
    );
    let markup = b
        .js("return document.querySelectorAll('.lmck-arg-hint b').length;")
        .await;
    assert_eq!(markup, Value::from(0), "no markup from the schema");
    b.screenshot("03-approval").await;
    // A reload shows the same card: the hints are saved with the pending call.
    b.client.refresh().await.unwrap();
    b.wait_text(".lmck-approval .lmck-args", "The city to look up")
        .await;
    b.click(".lmck-allow").await;
    b.wait_text(".lmck-tool-result", "Oslo: sunny, 21 °C").await;
    b.wait_text(".lmck-assistant .lmck-md", "The weather in Oslo is sunny.")
        .await;
    idle(b).await;
    b.wait_text(".lmck-badge-ok", "ok").await;
    assert!(
        b.texts(".lmck-approval").await.is_empty(),
        "no approval left"
    );
    b.screenshot("04-tool-result").await;
    let reqs = env.mock.observed.requests.lock().unwrap().clone();
    let last = reqs.last().unwrap();
    let tool_msg = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("tool message sent");
    assert!(
        tool_msg["content"]
            .as_str()
            .unwrap()
            .contains("Oslo: sunny")
    );
}

#[tokio::test]
async fn deny_sends_the_deny_message() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("use the tool now").await;
    b.click(".lmck-approval .lmck-deny").await;
    b.wait_text(".lmck-badge-denied", "denied").await;
    idle(b).await;
    let reqs = env.mock.observed.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), 2, "the turn resumed once after the denial");
    let tool_msg = reqs[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("tool message sent")
        .clone();
    assert!(tool_msg["content"].as_str().unwrap().starts_with(
        "The user denied this tool call. Do not attempt to call 'get_weather' again."
    ));
    b.wait_text(".lmck-tool-result", "The user denied this tool call")
        .await;
    b.screenshot("05-denied").await;
}

#[tokio::test]
async fn reload_restores_and_a_second_tab_sees_the_save() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("remember me").await;
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
    idle(b).await;
    wait_saved(&env, 2).await;
    b.client.refresh().await.unwrap();
    b.wait_text(".lmck-user", "remember me").await;
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
    b.screenshot("06-after-reload").await;

    // A second tab opens the conversation from the sidebar and follows the first tab's saves.
    let first = b.client.window().await.unwrap();
    let second = b.client.new_window(true).await.unwrap();
    b.client.switch_to_window(second.handle).await.unwrap();
    b.client.goto(&env.server.url("/chat")).await.unwrap();
    b.wait_text(".lmck-conv", "remember me").await;
    b.click(".lmck-conv .lmck-conv-open").await;
    b.wait_text(".lmck-user", "remember me").await;
    let second = b.client.window().await.unwrap();
    b.client.switch_to_window(first).await.unwrap();
    b.send_message("and one more mirror-back").await;
    b.wait_text(".lmck-assistant .lmck-md", "Mirror: and one more")
        .await;
    idle(b).await;
    wait_saved(&env, 4).await;
    b.client.switch_to_window(second).await.unwrap();
    b.wait_text(".lmck-user", "and one more mirror-back").await;
    b.wait_text(".lmck-assistant .lmck-md", "Mirror: and one more")
        .await;
    b.screenshot("07-second-tab").await;
}

#[tokio::test]
async fn stop_keeps_the_partial_reply() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("go slow please").await;
    b.wait_text(".lmck-assistant .lmck-md", "t5").await;
    b.click(".lmck-stop").await;
    idle(b).await;
    let partial = b.texts(".lmck-assistant .lmck-md").await;
    assert!(
        partial.contains("t5") && !partial.contains("t1499"),
        "{partial}"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        b.texts(".lmck-assistant .lmck-md").await,
        partial,
        "nothing streams after Stop"
    );
    assert!(
        b.texts(".lmck-msg-error").await.is_empty(),
        "Stop is not an error"
    );
    for _ in 0..100 {
        if env.mock.observed.dropped_early.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        env.mock.observed.dropped_early.load(Ordering::SeqCst) > 0,
        "the upstream request was cancelled"
    );
    wait_saved(&env, 2).await;
    b.wait_text(".lmck-assistant .lmck-stopped", "Stopped")
        .await;
    let mut stopped = Value::Null;
    for _ in 0..100 {
        stopped = first_stored(&env).await.unwrap_or_default()["messages"][1]["stopped"].clone();
        if stopped == Value::Bool(true) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        stopped,
        Value::Bool(true),
        "the reply is saved marked stopped"
    );
    b.screenshot("08-stopped").await;
}

#[tokio::test]
async fn model_xss_payloads_execute_nothing() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("show the xss-payload").await;
    b.wait_text(".lmck-assistant .lmck-md", "end-of-payloads")
        .await;
    idle(b).await;
    // Click every link the reply produced, then look for the canary.
    b.js("document.querySelectorAll('.lmck-md a').forEach(a => { try { a.click(); } catch (e) {} }); return true;").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let canary = b.js("return typeof window.__xss;").await;
    assert_eq!(canary, json!("undefined"), "a payload executed");
    let dangerous = b.js("const md = document.querySelector('.lmck-assistant .lmck-md'); return md.querySelectorAll('script, iframe, svg, [onerror], [onload], a[href^=\"javascript:\"], a[href^=\"data:\"]').length;").await;
    assert_eq!(dangerous, json!(0));
    b.screenshot("09-xss").await;
}

#[tokio::test]
async fn think_tags_split_across_deltas_go_to_the_thinking_block() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("inline-think please").await;
    b.wait_text(".lmck-assistant .lmck-md", "The answer is 42.")
        .await;
    idle(b).await;
    assert_eq!(b.texts(".lmck-thinking-text").await, "Pondering deeply");
    assert!(
        !b.texts(".lmck-assistant .lmck-md")
            .await
            .contains("Pondering")
    );
    b.send_message("think hard").await;
    b.wait_text(".lmck-assistant .lmck-md", "Thought it through.")
        .await;
    b.wait_text(".lmck-thinking-text", "Let me think.").await;
    b.screenshot("10-thinking").await;
}

#[tokio::test]
async fn slash_prompt_and_at_resource() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    let input = b.wait_for(".lmck-input").await;
    input.send_keys("/gr").await.unwrap();
    b.wait_text(".lmck-menu", "/greet").await;
    b.screenshot("11-slash-menu").await;
    input.send_keys("\u{E007}").await.unwrap(); // picks /greet (takes an argument)
    b.wait_js(
        "the draft to be /greet",
        "return document.querySelector('.lmck-input').value === '/greet ';",
    )
    .await;
    input.send_keys("Ada\u{E007}").await.unwrap();
    b.wait_text(
        ".lmck-assistant .lmck-md",
        "Mirror: mirror-back greeting for Ada",
    )
    .await;
    idle(b).await;
    input.send_keys("mirror-back see @doc").await.unwrap();
    b.wait_text(".lmck-menu", "@docs://readme").await;
    input.send_keys("\u{E004}").await.unwrap(); // Tab picks
    b.wait_js(
        "the resource inserted",
        "return document.querySelector('.lmck-input').value === 'mirror-back see @docs://readme ';",
    )
    .await;
    // The reference shows as a chip above the composer, and on the sent message.
    let chip = b
        .wait_text(".lmck-chips .lmck-ref-chip .lmck-chip-name", "@ ")
        .await;
    assert!(
        !chip.contains("docs://"),
        "the resource's name, not its URI: {chip}"
    );
    input.send_keys("\u{E007}").await.unwrap();
    b.wait_text(".lmck-assistant .lmck-md", "pineapple").await;
    idle(b).await;
    b.wait_text(".lmck-user .lmck-ref-chip", &chip).await;
    // Removing a chip removes its reference from the draft.
    input.send_keys("keep @docs://readme this").await.unwrap();
    b.click(".lmck-chips .lmck-ref-chip .lmck-icon-btn").await;
    b.wait_js(
        "the reference removed",
        "return document.querySelector('.lmck-input').value === 'keep this';",
    )
    .await;
    input.clear().await.unwrap();
    b.js("const i = document.querySelector('.lmck-input'); i.dispatchEvent(new Event('input', {bubbles: true})); return true;").await;
    b.send_message("/list-prompts").await;
    b.wait_text(".lmck-info", "Available MCP Prompts").await;
    b.wait_text(".lmck-info", "/greet who*").await;
}

#[tokio::test]
async fn narrow_layout_uses_a_drawer() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    b.client.set_window_size(360, 740).await.unwrap();
    start_chat(b).await;
    b.send_message("hello small screen").await;
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
    idle(b).await;
    let overflow = b
        .js("return document.documentElement.scrollWidth <= window.innerWidth;")
        .await;
    assert_eq!(
        overflow,
        Value::Bool(true),
        "no horizontal scroll at 360 px"
    );
    b.screenshot("12-narrow").await;
    b.click(".lmck-menu-btn").await;
    b.wait_js("the drawer to open", "const r = document.querySelector('.lmck-sidebar').getBoundingClientRect(); return r.left >= -1 && r.right > 100;").await;
    b.screenshot("13-narrow-drawer").await;
}

/// A loopback HTTP server that only counts the requests it gets (each answered 404): where a
/// leaked image request would land.
struct CountingServer {
    port: u16,
    requests: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl CountingServer {
    async fn start() -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = requests.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let count = count.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    if matches!(conn.read(&mut buf).await, Ok(n) if n > 0) {
                        count.fetch_add(1, Ordering::SeqCst);
                        let _ = conn
                            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                            .await;
                    }
                });
            }
        });
        Self {
            port,
            requests,
            task,
        }
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for CountingServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test]
async fn a_remote_image_in_a_reply_is_a_placeholder_that_fetches_nothing_and_the_page_keeps_its_csp()
 {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    b.watch_csp_violations().await;
    let leak = CountingServer::start().await;
    let port = leak.port;
    start_chat(b).await;
    // A reply with a remote image carrying a "secret", a fenced code block (the lazy
    // highlighter) and an aligned table.
    b.send_text(&format!(
        "mirror-back ![x](http://127.0.0.1:{port}/p.png?d=secret)\n\n```rust\nfn main() {{}}\n```\n\n\
         | a | b |\n|:--|--:|\n| 1 | 2 |\n"
    ))
    .await;
    b.wait_text(".lmck-assistant .lmck-remote-image-host", "127.0.0.1")
        .await;
    b.wait_for(".lmck-assistant code.language-rust .hljs-keyword")
        .await;
    idle(b).await;
    let placeholder = b
        .js(
            "const a = document.querySelector('.lmck-assistant a.lmck-remote-image'); \
             return a && [a.getAttribute('href'), a.target, a.rel, a.referrerPolicy, \
                          a.querySelector('.lmck-remote-image-alt').textContent];",
        )
        .await;
    assert_eq!(
        placeholder,
        json!([
            format!("http://127.0.0.1:{port}/p.png?d=secret"),
            "_blank",
            "noopener noreferrer nofollow",
            "no-referrer",
            "x"
        ])
    );
    assert_eq!(
        b.js("return document.querySelectorAll('img[src^=\"http\"]').length;")
            .await,
        json!(0)
    );
    assert_eq!(
        b.js("return getComputedStyle(document.querySelector('.lmck-assistant td.lmck-align-right')).textAlign;")
            .await,
        json!("right"),
        "table alignment without style attributes"
    );
    b.screenshot("27-remote-image-placeholder").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(leak.requests(), 0, "the image was fetched");
    let violations = b.csp_violations().await;
    assert!(violations.is_empty(), "{violations:?}");

    // The policy is in force: an image injected anyway is blocked, and reported.
    b.js(&format!(
        "const i = document.createElement('img'); i.src = 'http://127.0.0.1:{port}/injected.png'; \
         document.body.appendChild(i); return true;"
    ))
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !b
        .csp_violations()
        .await
        .iter()
        .any(|v| v.starts_with("img-src") && v.contains(&format!("127.0.0.1:{port}")))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            b.csp_violations().await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(leak.requests(), 0, "the CSP let an injected image load");
}

#[tokio::test]
async fn a_picked_resource_is_read_at_once_and_one_that_cannot_be_read_says_so_on_its_chip() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    let input = b.wait_for(".lmck-input").await;
    input
        .send_keys("compare @docs://readme with @docs://no-such-page ")
        .await
        .unwrap();
    // Both are read before anything is sent: one was, the other says why not.
    b.wait_for(".lmck-chips .lmck-ref-chip.lmck-ref-read").await;
    let error = b
        .wait_text(
            ".lmck-chips .lmck-ref-chip.lmck-ref-failed .lmck-ref-error",
            "could not be read",
        )
        .await;
    let failed = b
        .js(
            "const c = document.querySelector('.lmck-chips .lmck-ref-failed'); \
             return [c.title, c.querySelector('.lmck-chip-name').textContent];",
        )
        .await;
    assert!(
        failed[0]
            .as_str()
            .is_some_and(|t| t.starts_with("docs://no-such-page: could not be read")),
        "{failed} / {error}"
    );
    assert_eq!(
        b.js("return document.querySelectorAll('.lmck-chips .lmck-ref-chip').length;")
            .await,
        json!(2)
    );
    // Removing it leaves the readable one, and its reference leaves the draft.
    b.click(".lmck-chips .lmck-ref-failed .lmck-icon-btn").await;
    b.wait_js(
        "the failed reference removed",
        "return !document.querySelector('.lmck-ref-failed') && !document.querySelector('.lmck-input').value.includes('no-such-page');",
    )
    .await;
    assert_eq!(
        b.js(
            "return document.querySelectorAll('.lmck-chips .lmck-ref-chip.lmck-ref-read').length;"
        )
        .await,
        json!(1)
    );
    // Reading a reference asks the service, never the model.
    assert!(
        env.mock.observed.requests.lock().unwrap().is_empty(),
        "nothing was sent to the model"
    );
}
