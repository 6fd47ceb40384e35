//! MCP App views in headless Chromium against the real service and an MCP hub: the rmcp test
//! server's probe view (which speaks MCP Apps by hand and writes what it was sent and what it
//! could reach) in both isolation modes — default (an opaque-origin iframe on the token URL) and
//! proxy (the sandbox proxy on `localhost`, the chat on `127.0.0.1`) — and the npm example
//! `server-basic-vanillajs` over stdio. Screenshots go to `target/ui-screenshots/`.
//!
//! Skipped (with a message) only when Chromium is absent and `LMCHATKIT_EXPECT_BROWSER` is unset.

use lmchatkit_tests::browser::Browser;
use lmchatkit_tests::browser::app::{ONE_AT_A_TIME, idle, start_chat};
use lmchatkit_tests::browser::apps::setup_apps;

/// Into the view's document: the iframe, and in proxy mode the proxy's inner iframe.
/// Stores a conversation of `messages` through the API, reloads and opens it.
async fn open_stored(
    env: &lmchatkit_tests::browser::app::Env,
    b: &Browser,
    id: &str,
    title: &str,
    messages: serde_json::Value,
) {
    let conv = serde_json::json!({"id": id, "title": title, "persona_id": "",
        "model": "mock-small", "created_at": 1, "updated_at": 1, "revision": 0, "messages": messages});
    let res = reqwest::Client::new()
        .put(env.server.url(&format!("/chat/api/conversations/{id}")))
        .json(&conv)
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.text().await.unwrap());
    b.client.refresh().await.unwrap();
    b.click(".lmck-conv").await;
}

async fn enter_view(b: &Browser, proxy: bool) {
    to_page(b).await;
    let frame = b.wait_for(".lmck-app-iframe").await;
    frame.enter_frame().await.unwrap();
    if proxy {
        b.wait_for("iframe").await.enter_frame().await.unwrap();
    }
    b.wait_for("#log").await;
}

/// Back to the chat page (switching to the parent at the top level does nothing).
async fn to_page(b: &Browser) {
    for _ in 0..3 {
        b.client.enter_parent_frame().await.unwrap();
    }
}

/// Asks the mock model to call `tool`, approves it and waits for the view's iframe.
async fn call_and_approve(b: &Browser, tool: &str) {
    start_chat(b).await;
    b.send_message(&format!("call tool {tool} {{}}")).await;
    b.click(".lmck-approval .lmck-allow").await;
    b.wait_for(".lmck-app-iframe").await;
}

async fn probe_view(proxy: bool) {
    let _one = ONE_AT_A_TIME.alone().await;
    let Some(apps) = setup_apps(proxy).await else {
        return;
    };
    let b = &apps.env.browser;
    b.watch_csp_violations().await;
    // Canaries the view must not reach, and a console the test can read.
    b.js("localStorage.setItem('lmck-canary', 'host-secret'); \
          document.cookie = 'lmck_canary=host-secret; path=/'; \
          window.__logs = []; const log = console.log; \
          console.log = function (...a) { window.__logs.push(a.join(' ')); log.apply(console, a); }; \
          return true;")
        .await;
    call_and_approve(b, "test__show_app").await;
    let frame = b.wait_for(".lmck-app-iframe").await;
    let sandbox = frame.attr("sandbox").await.unwrap().unwrap_or_default();
    let src = frame.attr("src").await.unwrap().unwrap_or_default();
    if proxy {
        assert_eq!(sandbox, "allow-scripts allow-same-origin allow-forms");
        assert!(
            src.starts_with("http://v-")
                && src.contains(".localhost:")
                && src.contains("/chat/apps/sandbox?t="),
            "the server's own sandbox host name: {src}"
        );
    } else {
        assert_eq!(
            sandbox, "allow-scripts allow-forms",
            "no allow-same-origin: an opaque origin"
        );
        assert!(src.starts_with("/chat/apps/view/"), "{src}");
    }
    b.wait_text(".lmck-app-domains", "https://api.example.com")
        .await;

    enter_view(b, proxy).await;
    b.wait_text("#tool-result", r#"{"value":42}"#).await;
    assert_eq!(
        b.texts("#log").await,
        "ui/notifications/tool-input;ui/notifications/tool-result;",
        "tool-input, then tool-result, nothing before initialized"
    );
    assert_eq!(b.texts("#tool-input").await, "{}");
    let init = b.texts("#init").await;
    assert!(
        init.starts_with("2026-01-26 ") && init.ends_with(" inline lmchatkit"),
        "{init}"
    );
    // Isolation: the chat page, its storage and its cookies are out of reach.
    assert!(
        b.texts("#probe-top").await.starts_with("blocked"),
        "top.document"
    );
    if !proxy {
        assert!(
            b.texts("#probe-parent").await.starts_with("blocked"),
            "parent.document"
        );
    }
    for probe in ["#probe-storage", "#probe-cookie"] {
        let seen = b.texts(probe).await;
        assert!(!seen.contains("host-secret"), "{probe}: {seen}");
    }
    // Calls back through the bridge, scoped to the view's server and its visibility.
    b.click("#call-app").await;
    b.wait_text("#call-app-result", "refreshed").await;
    b.click("#call-model").await;
    b.wait_text("#call-model-result", "error:").await;
    b.click("#call-other").await;
    b.wait_text("#call-other-result", "error:").await;
    b.click("#fullscreen").await;
    b.wait_text("#mode-result", "fullscreen").await;
    to_page(b).await;
    b.wait_for(".lmck-app-fullscreen").await;
    // Full screen leaves the chat's header in reach: its theme button and the view's exit
    // button are what a click at their centre hits.
    let reach = "const hit = (sel) => { const e = document.querySelector(sel); if (!e) return sel + ' absent'; \
        const r = e.getBoundingClientRect(); \
        const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2); \
        return at && (at === e || e.contains(at)) ? 'ok' : sel + ' covered by ' + (at ? at.className : 'nothing'); }; \
        return [hit('.lmck-theme'), hit('.lmck-app-exit')].join(',');";
    assert_eq!(b.js(reach).await, "ok,ok");
    b.screenshot(if proxy {
        "app-view-fullscreen-proxy"
    } else {
        "app-view-fullscreen"
    })
    .await;
    b.click(".lmck-app-exit").await;
    b.wait_js(
        "inline again",
        "return !document.querySelector('.lmck-app-fullscreen');",
    )
    .await;
    enter_view(b, proxy).await;
    b.wait_text("#init", r#"changed:{"displayMode":"inline"}"#)
        .await;

    // Theme changes reach the view; links open in a new tab after the user confirms.
    to_page(b).await;
    b.js("window.confirm = () => true; window.open = (u) => { window.__opened = u; return null; }; return true;").await;
    b.click(".lmck-theme").await; // auto (light here) → light
    b.click(".lmck-theme").await; // → dark
    enter_view(b, proxy).await;
    b.wait_text("#init", r#"changed:{"theme":"dark"}"#).await;
    b.click("#open-link").await;
    b.wait_text("#link-result", "{}").await;
    b.click("#open-bad").await;
    b.wait_text("#bad-link-result", "error:").await;
    to_page(b).await;
    assert_eq!(
        b.js("return window.__opened;").await,
        "https://example.com/docs"
    );
    enter_view(b, proxy).await;

    // A view taller than the window, its top in sight: the card asking about its message
    // shows where the user is looking, not under the view's bottom.
    b.click("#grow").await;
    to_page(b).await;
    b.wait_js(
        "the view grown to its cap",
        "return document.querySelector('.lmck-app-iframe').getBoundingClientRect().height >= 1500;",
    )
    .await;
    b.js(
        "document.querySelector('.lmck-app-iframe').scrollIntoView({block: 'start'}); return true;",
    )
    .await;
    enter_view(b, proxy).await;

    // ui/message: a card asks the user; nothing is sent until Send, and then literally.
    let literal = "/test__greet name=x mirror-back @test://static/hello.txt";
    let upstream = || apps.env.mock.observed.requests.lock().unwrap().clone();
    let before = upstream().len();
    b.click("#send-message").await;
    to_page(b).await;
    b.wait_text(".lmck-app-consent", "test wants to send:")
        .await;
    b.wait_text(".lmck-app-consent", literal).await;
    let in_sight = b
        .js(
            "const c = document.querySelector('.lmck-app-consent').getBoundingClientRect(); \
             const t = document.querySelector('.lmck-transcript').getBoundingClientRect(); \
             return c.top >= t.top && c.bottom <= Math.min(t.bottom, window.innerHeight) + 1 \
               ? 'in sight' : `card ${c.top}..${c.bottom}, transcript ${t.top}..${t.bottom}`;",
        )
        .await;
    assert_eq!(in_sight, "in sight");
    b.screenshot(if proxy {
        "app-message-consent-proxy"
    } else {
        "app-message-consent"
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(upstream().len(), before, "nothing sent before Send");
    assert!(!b.texts(".lmck-user").await.contains("mirror-back"));
    b.click(".lmck-app-consent-send").await;
    b.wait_text(".lmck-user", literal).await;
    b.wait_text(".lmck-user .lmck-from-app", "Sent by the test app")
        .await;
    b.wait_text(".lmck-assistant .lmck-md", &format!("Mirror: {literal}"))
        .await;
    idle(b).await;
    let sent = upstream().last().unwrap()["messages"].clone();
    let last_user = sent
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()
        .clone();
    assert_eq!(
        last_user["content"], literal,
        "no /prompt or @uri expansion"
    );
    for expanded in ["Resource test://", "Greet x"] {
        assert!(!sent.to_string().contains(expanded), "{sent}");
    }
    enter_view(b, proxy).await;
    b.wait_text("#message-result", "{}").await;
    b.click("#send-message").await;
    to_page(b).await;
    b.click(".lmck-app-consent-discard").await;
    enter_view(b, proxy).await;
    b.wait_text("#message-result", "error: the user discarded the message")
        .await;
    to_page(b).await;
    b.screenshot(if proxy { "app-view-proxy" } else { "app-view" })
        .await;

    // Model context: a labelled, untrusted user-side message, gone after the view's teardown.
    enter_view(b, proxy).await;
    b.click("#set-context").await;
    b.wait_text("#context-result", "{}").await;
    to_page(b).await;
    b.send_message("mirror-back with context").await;
    b.wait_text(
        ".lmck-assistant .lmck-md",
        "Mirror: mirror-back with context",
    )
    .await;
    idle(b).await;
    let sent = upstream().last().unwrap()["messages"].clone();
    let sent = sent.as_array().unwrap();
    assert!(
        !sent[0].to_string().contains("ctx-canary"),
        "never in the system prompt: {}",
        sent[0]
    );
    let n = sent.len();
    let note = sent[n - 2]["content"].to_string();
    assert_eq!(sent[n - 2]["role"], "user");
    assert!(
        note.contains("Context from the test app (untrusted") && note.contains("ctx-canary"),
        "{note}"
    );
    assert_eq!(sent[n - 1]["content"], "mirror-back with context");
    enter_view(b, proxy).await;
    b.click("#request-teardown").await;
    to_page(b).await;
    b.wait_for(".lmck-app-closed").await;
    b.send_message("mirror-back after teardown").await;
    b.wait_text(
        ".lmck-assistant .lmck-md",
        "Mirror: mirror-back after teardown",
    )
    .await;
    idle(b).await;
    let sent = upstream().last().unwrap()["messages"].to_string();
    assert!(!sent.contains("ctx-canary"), "cleared on teardown: {sent}");

    // The model never saw the app-only tool.
    let requests = upstream();
    let offered: Vec<String> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert!(
        offered.contains(&"test__show_app".to_owned()),
        "{offered:?}"
    );
    assert!(
        !offered.iter().any(|t| t.ends_with("app_refresh")),
        "{offered:?}"
    );

    // Framing the view (either mode) breaks none of the chat page's own CSP rules.
    let violations = b.csp_violations().await;
    assert!(violations.is_empty(), "{violations:?}");

    // A reload remounts the view from the saved tool message (a fresh URL, no re-run).
    b.client.refresh().await.unwrap();
    enter_view(b, proxy).await;
    b.wait_text("#tool-result", r#"{"value":42}"#).await;
    to_page(b).await;
    b.watch_csp_violations().await;
    let violations = b.csp_violations().await;
    assert!(violations.is_empty(), "after the reload: {violations:?}");
    b.js("window.__logs = []; const log = console.log; \
          console.log = function (...a) { window.__logs.push(a.join(' ')); log.apply(console, a); }; \
          return true;")
        .await;

    // Leaving the conversation tears the view down (its answer is awaited).
    b.click(".lmck-new").await;
    b.wait_js(
        "the teardown to reach the view",
        "return window.__logs.some(l => l.includes('teardown: '));",
    )
    .await;
}

/// While the model writes the arguments of a call to a tool with a view, the call's card is
/// there and its view is open and follows them (`ui/notifications/tool-input-partial`, each a
/// longer prefix of the final arguments, throttled), then gets the complete input, then, once
/// the user approved and the tool ran, the result: all in the one frame.
#[tokio::test]
async fn a_view_follows_a_calls_arguments_while_the_model_writes_them() {
    let _one = ONE_AT_A_TIME.alone().await;
    let Some(apps) = setup_apps(false).await else {
        return;
    };
    let b = &apps.env.browser;
    start_chat(b).await;
    // 50 pieces of 6 characters, one every 60 ms: about 3 s of streaming.
    let note = "the arguments grow while the model writes them; ".repeat(6);
    let args = serde_json::json!({"note": note.trim_end(), "n": 7});
    b.send_message(&format!("call tool slowly test__show_app {args}"))
        .await;
    b.wait_for(".lmck-tool-streaming").await;
    enter_view(b, false).await;
    b.wait_text("#tool-input", r#""n":7"#).await;
    let partials: Vec<serde_json::Value> =
        serde_json::from_str(&b.texts("#partials").await).expect("the partials, as JSON");
    assert!(
        !partials.is_empty(),
        "no tool-input-partial reached the view"
    );
    let notes: Vec<&str> = partials
        .iter()
        .map(|p| p["note"].as_str().unwrap_or(""))
        .collect();
    for pair in notes.windows(2) {
        assert!(
            pair[1].starts_with(pair[0]) && pair[1] != pair[0],
            "each partial grows the last: {notes:?}"
        );
    }
    assert!(
        notes.iter().all(|n| note.starts_with(n)),
        "only what the model wrote: {notes:?}"
    );
    assert!(
        partials.len() < 50,
        "throttled, not one per piece: {}",
        partials.len()
    );
    // Partials first, then the input once; nothing after it but the result.
    let log = b.texts("#log").await;
    let input_at = log
        .find("ui/notifications/tool-input;")
        .expect("tool-input in the log");
    assert!(
        log.rfind("ui/notifications/tool-input-partial;")
            .is_some_and(|at| at < input_at),
        "{log}"
    );
    assert_eq!(
        log.matches("ui/notifications/tool-input;").count(),
        1,
        "{log}"
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&b.texts("#tool-input").await).unwrap(),
        args
    );
    // Approved, the tool runs and its result reaches the same view.
    to_page(b).await;
    b.click(".lmck-approval .lmck-allow").await;
    enter_view(b, false).await;
    b.wait_text("#tool-result", r#"{"value":42}"#).await;
    assert!(
        b.texts("#log")
            .await
            .ends_with("ui/notifications/tool-result;")
    );
    to_page(b).await;
    let frames = b
        .js("return document.querySelectorAll('.lmck-app-iframe').length;")
        .await;
    assert_eq!(frames, 1, "one view for the call");
    b.screenshot("app-view-streamed-input").await;
}

/// A call stopped while its arguments stream never completes: its streaming card goes, no
/// approval is asked, and the view opened for it is told the call was cancelled, without ever
/// getting an input.
#[tokio::test]
async fn a_view_opened_for_a_call_stopped_mid_stream_is_told_it_was_cancelled() {
    let _one = ONE_AT_A_TIME.alone().await;
    let Some(apps) = setup_apps(false).await else {
        return;
    };
    let b = &apps.env.browser;
    start_chat(b).await;
    let args = serde_json::json!({"note": "stopped before the end; ".repeat(8)});
    // Half the arguments, then the mock waits at its gate (never opened): the call is still
    // streaming when Stop is clicked, however long the steps before took.
    b.send_message(&format!("call tool held test__show_app {args}"))
        .await;
    b.wait_for(".lmck-tool-streaming").await;
    enter_view(b, false).await;
    b.wait_text("#log", "ui/notifications/tool-input-partial;")
        .await;
    to_page(b).await;
    b.click(".lmck-stop").await;
    idle(b).await;
    b.wait_js(
        "the streaming card to go",
        "return !document.querySelector('.lmck-tool-streaming');",
    )
    .await;
    assert!(
        b.texts(".lmck-approval").await.is_empty(),
        "nothing to approve"
    );
    enter_view(b, false).await;
    b.wait_text("#log", "ui/notifications/tool-cancelled;")
        .await;
    let log = b.texts("#log").await;
    assert!(!log.contains("ui/notifications/tool-input;"), "{log}");
    assert!(log.ends_with("ui/notifications/tool-cancelled;"), "{log}");
    to_page(b).await;
}

#[tokio::test]
async fn probe_view_in_default_mode() {
    probe_view(false).await;
}

#[tokio::test]
async fn probe_view_in_proxy_mode() {
    probe_view(true).await;
}

/// Proxy mode: the views of two servers run on two sandbox origins, so the view of `test` can
/// neither read nor script the frames of `other`'s view (its proxy, or the view inside it).
#[tokio::test]
async fn views_of_two_servers_cannot_script_each_other_in_proxy_mode() {
    let _one = ONE_AT_A_TIME.alone().await;
    let Some(apps) = setup_apps(true).await else {
        return;
    };
    let b = &apps.env.browser;
    let call = |id: &str, tool: &str| serde_json::json!({"id": id, "name": tool, "arguments": {}});
    let result = |id: &str, tool: &str| {
        serde_json::json!({"id": format!("t-{id}"), "role": "tool", "content": "rendered",
            "tool_call_id": id, "tool_name": tool, "structured_content": {"value": 1},
            "ui": {"resourceUri": "ui://test/app.html"}})
    };
    let messages = serde_json::json!([
        {"id": "u1", "role": "user", "content": "show both"},
        {"id": "a1", "role": "assistant", "content": "", "tool_calls": [
            call("call_a", "test__show_app"), call("call_b", "other__show_app")]},
        result("call_a", "test__show_app"),
        result("call_b", "other__show_app"),
    ]);
    open_stored(&apps.env, b, "c-two", "two servers", messages).await;
    let frame = |id: &str| format!(".lmck-app-view[data-call-id='{id}'] .lmck-app-iframe");
    let src_a = b
        .wait_for(&frame("call_a"))
        .await
        .attr("src")
        .await
        .unwrap()
        .unwrap();
    let src_b = b
        .wait_for(&frame("call_b"))
        .await
        .attr("src")
        .await
        .unwrap()
        .unwrap();
    let origin = |s: &str| s.split("/chat/").next().unwrap().to_owned();
    assert_ne!(
        origin(&src_a),
        origin(&src_b),
        "each server's view on its own origin"
    );
    // Both views are up (B's inner view exists before A probes it).
    for id in ["call_b", "call_a"] {
        to_page(b).await;
        b.wait_for(&frame(id)).await.enter_frame().await.unwrap();
        b.wait_for("iframe").await.enter_frame().await.unwrap();
        b.wait_text("#tool-result", r#"{"value":1}"#).await;
    }
    // Inside A's view: every frame of the page that is not A's own is out of reach.
    let probe = b
        .js("const out = []; const me = window.parent;              for (let i = 0; i < top.frames.length; i++) {                const f = top.frames[i]; if (f === me) continue;                try { out.push('read proxy ' + f.document.title); } catch (e) { out.push('blocked ' + e.name); }                try { out.push('read view ' + f.frames[0].document.title); } catch (e) { out.push('blocked ' + e.name); }                try { f.frames[0].eval('1'); out.push('scripted'); } catch (e) { out.push('blocked ' + e.name); }                try { const w = window.open('', '_top'); out.push(w && w.document ? 'opened ' + w.document.title : 'blocked'); } catch (e) { out.push('blocked ' + e.name); }              }              return out.join(';');")
        .await;
    let probe = probe.as_str().unwrap_or_default().to_owned();
    assert!(!probe.is_empty(), "B's frame was found");
    assert!(
        probe.split(';').all(|p| p.starts_with("blocked")),
        "A reached B: {probe}"
    );
    let own = b.js("return location.origin;").await;
    assert_eq!(
        own.as_str().unwrap(),
        origin(&src_a),
        "A's view runs on A's origin"
    );
    to_page(b).await;
}

/// The npm example app: `get-time` mounts its view, which shows the tool result's time, and its
/// own button calls the tool again through the bridge.
async fn basic_vanillajs(proxy: bool) {
    let _one = ONE_AT_A_TIME.alone().await;
    let Some(apps) = setup_apps(proxy).await else {
        return;
    };
    if !apps.basic {
        return; // npm_bin said why
    }
    let b = &apps.env.browser;
    call_and_approve(b, "basic__get-time").await;
    to_page(b).await;
    b.wait_for(".lmck-app-iframe")
        .await
        .enter_frame()
        .await
        .unwrap();
    if proxy {
        b.wait_for("iframe").await.enter_frame().await.unwrap();
    }
    let time_of =
        "const t = document.getElementById('server-time'); return t ? t.textContent : '';";
    b.wait_js("the tool result in the view", &format!("{{ const f = () => {{ {time_of} }}; const t = f(); return /\\d{{4}}-\\d\\d-\\d\\dT/.test(t); }}")).await;
    let first = b.js(time_of).await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    b.click("#get-time-btn").await;
    b.wait_js(
        "a fresh time from the view's own call",
        &format!("{{ const f = () => {{ {time_of} }}; const t = f(); return /\\d{{4}}-/.test(t) && t !== {first}; }}"),
    )
    .await;
    to_page(b).await;
    b.screenshot(if proxy {
        "app-basic-vanillajs-proxy"
    } else {
        "app-basic-vanillajs"
    })
    .await;
}

#[tokio::test]
async fn basic_vanillajs_in_default_mode() {
    basic_vanillajs(false).await;
}

#[tokio::test]
async fn basic_vanillajs_in_proxy_mode() {
    basic_vanillajs(true).await;
}

/// A saved conversation of `n` calls of the app tool (with the arguments `args` makes of each
/// index), each with its result and view.
fn views_conversation(n: usize, args: impl Fn(usize) -> serde_json::Value) -> serde_json::Value {
    let calls: Vec<_> = (0..n)
        .map(|i| serde_json::json!({"id": format!("call_{i}"), "name": "test__show_app", "arguments": args(i)}))
        .collect();
    let mut messages = vec![
        serde_json::json!({"id": "u1", "role": "user", "content": format!("show the app {n} times")}),
        serde_json::json!({"id": "a1", "role": "assistant", "content": "", "tool_calls": calls}),
    ];
    for i in 0..n {
        messages.push(serde_json::json!({
            "id": format!("t{i}"), "role": "tool", "content": format!("rendered {i}"),
            "tool_call_id": format!("call_{i}"), "tool_name": "test__show_app",
            "structured_content": {"value": i}, "ui": {"resourceUri": "ui://test/app.html"}
        }));
    }
    messages.into()
}

/// Scrolls the view of `call_{i}` into sight; the scroll event stops the transcript from
/// following the bottom.
fn show_view(i: usize) -> String {
    format!(
        "document.querySelector(\".lmck-app-view[data-call-id='call_{i}']\").scrollIntoView(); \
         document.querySelector('.lmck-transcript').dispatchEvent(new Event('scroll')); return true;"
    )
}

/// Several views in one conversation, each with its own bridge: at most `MAX_MOUNTED` (6) stay
/// mounted; a view scrolled away is torn down when the cap is passed and remounts when it is
/// scrolled back into view.
#[tokio::test]
async fn many_views_are_capped_and_remount_on_demand() {
    const VIEWS: usize = 9;
    let _one = ONE_AT_A_TIME.alone().await;
    let Some(apps) = setup_apps(false).await else {
        return;
    };
    let b = &apps.env.browser;
    // A saved conversation with nine calls of the app tool, each with its result.
    let messages = views_conversation(VIEWS, |i| serde_json::json!({"n": i}));
    open_stored(&apps.env, b, "c-many", "many views", messages).await;
    b.wait_for(".lmck-app-view").await;
    let mounted = "return document.querySelectorAll('.lmck-app-iframe').length;";
    for i in 0..VIEWS {
        b.js(&show_view(i)).await;
        b.wait_for(&format!(
            ".lmck-app-view[data-call-id='call_{i}'] .lmck-app-iframe"
        ))
        .await;
        // An evicted view leaves once it answered its teardown (or after a second).
        b.wait_js(
            "at most 6 views mounted",
            &format!("{{ const n = () => {{ {mounted} }}; return n() <= 6; }}"),
        )
        .await;
    }
    // Reached: once the evicted views answered their teardown, exactly six stay. (A sample
    // taken right after a mount may still see the evicted one during its teardown window.)
    b.wait_js(
        "exactly 6 views mounted once teardowns settle",
        &format!("{{ const n = () => {{ {mounted} }}; return n() === 6; }}"),
    )
    .await;
    // The first view was torn down to make room; back on screen, it mounts again.
    b.wait_js("the first view torn down", "return !document.querySelector(\".lmck-app-view[data-call-id='call_0'] .lmck-app-iframe\");").await;
    b.js(&show_view(0)).await;
    b.wait_for(".lmck-app-view[data-call-id='call_0'] .lmck-app-iframe")
        .await;
    b.wait_for(".lmck-app-view[data-call-id='call_0'] .lmck-app-iframe")
        .await
        .enter_frame()
        .await
        .unwrap();
    b.wait_text("#tool-result", r#"{"value":0}"#).await;
    b.wait_text("#tool-input", r#"{"n":0}"#).await;
}

/// A view evicted by the cap and scrolled back on screen while its teardown is still pending
/// (this one answers none, so the host's one-second timeout ends it) mounts again when the
/// teardown ends: the intersection observer says nothing more to a view that stays on screen.
#[tokio::test]
async fn a_view_scrolled_back_during_its_teardown_mounts_again() {
    const VIEWS: usize = 9;
    let _one = ONE_AT_A_TIME.alone().await;
    let Some(apps) = setup_apps(false).await else {
        return;
    };
    let b = &apps.env.browser;
    let messages = views_conversation(
        VIEWS,
        |i| serde_json::json!({"n": i, "hold_teardown": i == 0}),
    );
    open_stored(&apps.env, b, "c-held", "held teardown", messages).await;
    b.wait_for(".lmck-app-view").await;
    let frame0 = ".lmck-app-view[data-call-id='call_0'] .lmck-app-iframe";
    // The moment view 0 hears its teardown (the host logs what the view sends), it is scrolled
    // back on screen: its teardown is pending for the host's timeout.
    b.js(&format!(
        "window.__first = null; const log = console.log; \
         console.log = function (...a) {{ \
           if (!window.__first && a.join(' ').includes('held teardown: ')) {{ \
             window.__first = document.querySelector(\"{frame0}\"); \
             {back} \
           }} \
           log.apply(console, a); \
         }}; return true;",
        back = show_view(0).replace("return true;", "")
    ))
    .await;
    // View 0 mounts and learns its input (so it holds its teardown); then the others, until the
    // cap evicts view 0, the one least recently on screen.
    b.js(&show_view(0)).await;
    b.wait_for(frame0).await.enter_frame().await.unwrap();
    b.wait_text("#tool-input", r#""hold_teardown":true"#).await;
    b.client.enter_parent_frame().await.unwrap();
    // The check and the scroll are one script: a teardown heard between the two would have its
    // scroll back undone by the next view's (seen once under load: the page stayed on view 8).
    for i in 1..VIEWS {
        let scrolled = b
            .js(&format!(
                "if (window.__first) return false; {}",
                show_view(i)
            ))
            .await;
        if scrolled != serde_json::json!(true) {
            break;
        }
        b.wait_for(&format!(
            ".lmck-app-view[data-call-id='call_{i}'] .lmck-app-iframe"
        ))
        .await;
    }
    b.wait_js(
        "view 0 evicted (its iframe was there when it heard the teardown)",
        "return !!window.__first;",
    )
    .await;
    b.wait_js(
        "view 0 torn down once its teardown timed out",
        "return !window.__first.isConnected;",
    )
    .await;
    b.wait_js(
        "view 0 mounted again, being on screen",
        &format!(
            "const f = document.querySelector(\"{frame0}\"); return !!f && f !== window.__first;"
        ),
    )
    .await;
    b.wait_for(frame0).await.enter_frame().await.unwrap();
    b.wait_text("#tool-result", r#"{"value":0}"#).await;
}
