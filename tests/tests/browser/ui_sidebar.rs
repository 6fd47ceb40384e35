//! The conversation sidebar and the conversation-level features around it, in headless Chromium:
//! unread dots from another tab, the edit modal, delete with confirmation, export (JSON and
//! Markdown) and import, `/compact`, the floating-window mount mode, the `/api/events`
//! reconnect with `Last-Event-ID`, and saves that send only a turn's new messages. (Code blocks and the menus' keyboard a11y: `ui_code.rs`.)
//!
//! Skipped (with a message) only when Chromium is absent and `LMCHATKIT_EXPECT_BROWSER` is unset.

use std::time::Duration;

use fantoccini::elements::Element;
use lmchatkit_tests::browser::Browser;
use lmchatkit_tests::browser::app::{
    Env, ONE_AT_A_TIME, idle, saved_messages, setup, start_chat, wait_saved,
};
use lmchatkit_tests::browser::front::{FrontEnv, is_ui_part, setup_front};
use lmchatkit_tests::browser::helpers::{put_long_conversation, setup_with_personas, talk};
use serde_json::{Value, json};

/// Waits until no modal dialog is open.
async fn modal_closed(b: &Browser) {
    b.wait_js(
        "the dialog to close",
        "return document.querySelector('.lmck-modal') === null;",
    )
    .await;
}

async fn get_json(url: &str) -> Value {
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

/// Polls `done` every 50 ms for up to 5 s (what the front's probe saw arrives asynchronously);
/// whether it came true.
async fn settles(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..100 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}

/// The stored conversations of the service in `env`.
async fn list(env: &Env) -> Vec<Value> {
    get_json(&env.server.url("/chat/api/conversations"))
        .await
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Waits until `check` holds for the conversation list.
async fn wait_list(env: &Env, what: &str, check: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    for _ in 0..200 {
        let l = list(env).await;
        if check(&l) {
            return l;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the conversation list never showed {what}: {:?}",
        list(env).await
    );
}

#[tokio::test]
async fn a_conversation_saved_in_another_tab_gets_an_unread_dot() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    talk(b, "first tab talking").await;
    wait_saved(&env, 2).await;
    let first_tab = b.client.window().await.unwrap();
    // A second tab starts its own conversation.
    let second = b.client.new_window(true).await.unwrap();
    b.client.switch_to_window(second.handle).await.unwrap();
    b.client.goto(&env.server.url("/chat")).await.unwrap();
    start_chat(b).await;
    talk(b, "second tab talking").await;
    let l = wait_list(&env, "two conversations", |l| l.len() == 2).await;
    let other = l
        .iter()
        .find(|c| c["title"].as_str().unwrap_or("").contains("second tab"))
        .expect("the second tab's conversation")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    b.client.switch_to_window(first_tab).await.unwrap();
    let dot = format!(".lmck-conv[data-id='{other}'] .lmck-dot");
    b.wait_for(&dot).await;
    b.screenshot("20-unread-dot").await;
    let own_dots = b
        .js("return document.querySelectorAll('.lmck-conv.lmck-current .lmck-dot').length;")
        .await;
    assert_eq!(own_dots, json!(0), "the open chat gets no dot");
    // Opening it clears the dot and shows the other tab's messages.
    b.click(&format!(".lmck-conv[data-id='{other}'] .lmck-conv-open"))
        .await;
    b.wait_text(".lmck-user", "second tab talking").await;
    b.wait_js(
        "the dot to go",
        &format!("return document.querySelector(\"{dot}\") === null;"),
    )
    .await;
}

#[tokio::test]
async fn the_edit_modal_saves_title_persona_model_and_params() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_with_personas().await else {
        return;
    };
    let b = &env.browser;
    start_chat(b).await;
    talk(b, "edit me later").await;
    wait_saved(&env, 2).await;
    let id = list(&env).await[0]["id"].as_str().unwrap().to_owned();
    b.click(&format!(".lmck-conv[data-id='{id}'] button[title=Edit]"))
        .await;
    b.wait_for(".lmck-modal[aria-label='Edit conversation']")
        .await;
    let title = b.wait_for(".lmck-modal input.lmck-field").await;
    title.clear().await.unwrap();
    title.send_keys("Renamed chat").await.unwrap();
    // Persona: Coder (seeds its params and default model), then the model explicitly, then one
    // parameter changed by hand.
    b.js(
        "const s = document.querySelectorAll('.lmck-modal select')[0]; s.value = 'coder'; \
          s.dispatchEvent(new Event('change', {bubbles: true})); return true;",
    )
    .await;
    b.wait_js(
        "the persona's params",
        "return document.querySelectorAll('.lmck-modal input[type=number]')[0].value === '0.2';",
    )
    .await;
    b.js(
        "const s = document.querySelectorAll('.lmck-modal select')[1]; s.value = 'mock-small'; \
          s.dispatchEvent(new Event('change', {bubbles: true})); return true;",
    )
    .await;
    let max_tokens = b
        .client
        .find_all(fantoccini::Locator::Css(".lmck-modal input[type=number]"))
        .await
        .unwrap()
        .pop()
        .unwrap();
    max_tokens.send_keys("321").await.unwrap();
    b.screenshot("21-edit-modal").await;
    b.click(".lmck-modal .lmck-primary").await;
    modal_closed(b).await;
    let l = wait_list(&env, "the new title", |l| {
        l.first().is_some_and(|c| c["title"] == "Renamed chat")
    })
    .await;
    assert_eq!(l.len(), 1);
    let conv = get_json(&env.server.url(&format!("/chat/api/conversations/{id}"))).await;
    assert_eq!(conv["title"], "Renamed chat");
    assert_eq!(conv["persona_id"], "coder", "{conv}");
    assert_eq!(conv["model"], "mock-small", "{conv}");
    assert_eq!(conv["params"]["temperature"], json!(0.2), "{conv}");
    assert_eq!(conv["params"]["max_tokens"], json!(321), "{conv}");
    assert_eq!(conv["messages"].as_array().unwrap().len(), 2);
    b.wait_text(".lmck-conv", "Renamed chat").await;
    b.wait_text(".lmck-title", "Renamed chat").await;
    // The next turn uses the edited setup.
    b.send_message("after the edit").await;
    idle(b).await;
    let reqs = env.mock.observed.requests.lock().unwrap().clone();
    let last = reqs.last().unwrap();
    assert_eq!(last["model"], "mock-small");
    assert_eq!(last["max_tokens"], json!(321), "{last}");
    wait_saved(&env, 4).await;
    let conv = get_json(&env.server.url(&format!("/chat/api/conversations/{id}"))).await;
    assert_eq!(
        conv["title"], "Renamed chat",
        "a later save keeps the title"
    );
}

#[tokio::test]
async fn delete_asks_first_and_then_removes_the_conversation() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("doomed chat").await;
    idle(b).await;
    wait_saved(&env, 2).await;
    let id = list(&env).await[0]["id"].as_str().unwrap().to_owned();
    let delete = format!(".lmck-conv[data-id='{id}'] button[title=Delete]");
    // Cancel keeps it.
    b.click(&delete).await;
    b.wait_text(".lmck-modal[role=alertdialog]", "doomed chat")
        .await;
    b.screenshot("22-confirm-delete").await;
    b.click(".lmck-modal .lmck-btn:not(.lmck-danger)").await;
    modal_closed(b).await;
    assert_eq!(list(&env).await.len(), 1);
    // Escape cancels too.
    b.click(&delete).await;
    b.wait_for(".lmck-confirm")
        .await
        .send_keys("\u{E00C}")
        .await
        .unwrap();
    modal_closed(b).await;
    assert_eq!(list(&env).await.len(), 1);
    // Confirm deletes it on the server, from the list and closes the open chat.
    b.click(&delete).await;
    b.click(".lmck-confirm").await;
    wait_list(&env, "no conversation", <[Value]>::is_empty).await;
    b.wait_js(
        "the entry to go",
        &format!("return document.querySelector(\".lmck-conv[data-id='{id}']\") === null;"),
    )
    .await;
    b.wait_for(".lmck-picker").await;
    b.wait_text(".lmck-conv-list", "No saved conversations.")
        .await;
}

/// How many requests the page has made to each of `paths` (ends of URL paths).
async fn requests_to(b: &Browser, paths: &[&str]) -> Vec<u64> {
    let script = format!(
        "const paths = {}; const seen = performance.getEntriesByType('resource') \
         .map((e) => new URL(e.name).pathname); \
         return paths.map((p) => seen.filter((s) => s.endsWith(p)).length);",
        json!(paths)
    );
    let counts = b.js(&script).await;
    counts
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default()
}

/// A page's start asks for each catalog list once: the personas come with the config, not
/// again with the menus' lists.
#[tokio::test]
async fn the_page_asks_for_each_catalog_list_once_at_start() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    let lists = [
        "/api/personas",
        "/api/commands",
        "/api/prompts",
        "/api/resources",
    ];
    assert!(
        settles_async(|| async { requests_to(b, &lists).await.iter().all(|&n| n >= 1) }).await,
        "the catalog lists were asked for"
    );
    // Whatever was still on its way has landed.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(requests_to(b, &lists).await, [1, 1, 1, 1]);
}

/// Like [`settles`], for a check that is itself async.
async fn settles_async<F: Future<Output = bool>>(mut done: impl FnMut() -> F) -> bool {
    for _ in 0..100 {
        if done().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done().await
}

/// Captures downloads: every Blob given to `URL.createObjectURL` (its text lands in
/// `window.__lmckDownloads`) and the `download` name of every clicked anchor (which then does
/// not navigate).
const CAPTURE_DOWNLOADS: &str = "window.__lmckDownloads = []; window.__lmckNames = []; \
    const create = URL.createObjectURL.bind(URL); \
    URL.createObjectURL = (blob) => { blob.text().then((t) => window.__lmckDownloads.push({type: blob.type, text: t})); return create(blob); }; \
    HTMLAnchorElement.prototype.click = function () { window.__lmckNames.push(this.download); }; \
    return true;";

async fn next_download(b: &Browser, n: usize) -> (String, String, String) {
    b.wait_js(
        "a download",
        &format!(
            "return window.__lmckDownloads.length >= {n} && window.__lmckNames.length >= {n};"
        ),
    )
    .await;
    let d = b
        .js(&format!(
            "return [window.__lmckDownloads[{i}].type, window.__lmckDownloads[{i}].text, window.__lmckNames[{i}]];",
            i = n - 1
        ))
        .await;
    (
        d[0].as_str().unwrap().to_owned(),
        d[1].as_str().unwrap().to_owned(),
        d[2].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn export_json_and_markdown_then_import_round_trips() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    talk(b, "export this please").await;
    wait_saved(&env, 2).await;
    // A second version of the reply: the JSON export keeps both.
    b.click(".lmck-regenerate").await;
    b.wait_text(".lmck-assistant .lmck-version-at", "2 / 2")
        .await;
    let id = list(&env).await[0]["id"].as_str().unwrap().to_owned();
    b.js(CAPTURE_DOWNLOADS).await;
    b.click(".lmck-sidebar-foot .lmck-btn:nth-child(1)").await;
    let (mime, json_text, name) = next_download(b, 1).await;
    assert_eq!(mime, "application/json");
    assert_eq!(name, format!("{id}.json"));
    let exported: Value = serde_json::from_str(&json_text).unwrap();
    assert_eq!(exported["id"], id.as_str());
    let msgs = exported["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2, "{exported}");
    assert_eq!(
        exported["tree"]["nodes"].as_array().map(Vec::len),
        Some(3),
        "both replies: {exported}"
    );
    assert_eq!(msgs[0]["content"], "export this please");
    assert_eq!(msgs[1]["content"], "Hello from the mock model.");
    b.click(".lmck-sidebar-foot .lmck-btn:nth-child(2)").await;
    let (mime, md, name) = next_download(b, 2).await;
    assert_eq!(mime, "text/markdown");
    assert_eq!(name, format!("{id}.md"));
    assert!(md.starts_with("# "), "{md}");
    assert!(
        md.contains(
            "**User:**\n\nexport this please\n\n**Assistant:**\n\nHello from the mock model."
        ),
        "{md}"
    );
    // Import the JSON export: a new conversation with a fresh id and the same messages.
    let import = format!(
        "const dt = new DataTransfer(); dt.items.add(new File([{}], 'chat.json', {{type: 'application/json'}})); \
         const input = document.querySelector('.lmck-sidebar-foot input[type=file]'); input.files = dt.files; \
         input.dispatchEvent(new Event('change', {{bubbles: true}})); return true;",
        serde_json::to_string(&json_text).unwrap()
    );
    b.js(&import).await;
    b.wait_text(".lmck-notice", "Imported 1 conversation(s).")
        .await;
    let l = wait_list(&env, "the import", |l| l.len() == 2).await;
    let imported = l.iter().find(|c| c["id"] != id.as_str()).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let conv = get_json(
        &env.server
            .url(&format!("/chat/api/conversations/{imported}")),
    )
    .await;
    assert_eq!(conv["title"], exported["title"]);
    assert_eq!(
        conv["branches"][0]["versions"].as_array().map(Vec::len),
        Some(2),
        "the versions came along: {conv}"
    );
    let texts = |c: &Value| -> Vec<(String, String)> {
        c["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["role"].to_string(), m["content"].to_string()))
            .collect()
    };
    assert_eq!(texts(&conv), texts(&exported));
    b.wait_for(&format!(".lmck-conv[data-id='{imported}']"))
        .await;
    // A file that is not an export is refused with a message, and nothing is added.
    b.js(&import.replace(
        &serde_json::to_string(&json_text).unwrap(),
        "'not json at all'",
    ))
    .await;
    b.wait_text(".lmck-notice", "Import failed").await;
    assert_eq!(list(&env).await.len(), 2);
}

#[tokio::test]
async fn compact_replaces_the_transcript_with_a_summary() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("alpha question").await;
    idle(b).await;
    b.send_message("beta question").await;
    idle(b).await;
    wait_saved(&env, 4).await;
    let before = env.mock.observed.requests.lock().unwrap().len();
    let input = b.wait_for(".lmck-input").await;
    input.send_keys("/compact").await.unwrap();
    b.wait_text(".lmck-menu", "/compact").await;
    input.send_keys("\u{E007}").await.unwrap();
    b.wait_text(".lmck-info", "Conversation Compacted: 4 messages")
        .await;
    idle(b).await;
    let reqs = env.mock.observed.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), before + 1, "one summary request");
    let sent = reqs.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect::<Vec<_>>();
    assert_eq!(sent.len(), 1, "only the summary prompt: {sent:?}");
    assert!(
        sent[0].starts_with("Summarise the conversation"),
        "{sent:?}"
    );
    assert!(sent[0].contains("[User]: alpha question"), "{sent:?}");
    assert!(sent[0].contains("[User]: beta question"), "{sent:?}");
    assert!(sent[0].contains("[Assistant]: Hello from the mock model."));
    // The transcript is the summary (and the info card); the user turns are gone.
    assert_eq!(
        b.js("return document.querySelectorAll('.lmck-user').length;")
            .await,
        json!(0)
    );
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
    b.screenshot("23-compacted").await;
    // Saved as such.
    for _ in 0..200 {
        if saved_messages(&env).await < 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let id = list(&env).await[0]["id"].as_str().unwrap().to_owned();
    let conv = get_json(&env.server.url(&format!("/chat/api/conversations/{id}"))).await;
    let roles: Vec<&str> = conv["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert!(!roles.contains(&"user"), "{conv}");
    assert_eq!(conv["messages"][0]["content"], "Hello from the mock model.");
    // The conversation goes on from the summary.
    b.send_message("gamma question").await;
    idle(b).await;
    let last = env
        .mock
        .observed
        .requests
        .lock()
        .unwrap()
        .last()
        .cloned()
        .unwrap();
    let users: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(users.len(), 1, "{users:?}");
    assert!(users[0].contains("gamma"));
}

#[tokio::test]
async fn floating_window_mode_opens_over_the_host_page() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_front().await else {
        return;
    };
    let b = &env.browser;
    b.client.goto(&env.front.url("/host.html")).await.unwrap();
    let launcher = b.wait_for(".lmck-launcher").await;
    assert_eq!(
        launcher.attr("aria-expanded").await.unwrap().as_deref(),
        Some("false")
    );
    b.wait_for(".lmck-app.lmck-floating.lmck-closed").await;
    let hidden = b
        .js("const a = document.querySelector('.lmck-app'); return getComputedStyle(a).display === 'none' || a.getBoundingClientRect().height === 0;")
        .await;
    assert_eq!(hidden, json!(true), "closed window is not shown");
    // The host page keeps its own layout (no margin reset, content visible).
    assert_eq!(
        b.js("return getComputedStyle(document.body).marginTop;")
            .await,
        json!("24px")
    );
    b.wait_text("#host-heading", "The host's own page").await;
    launcher.click().await.unwrap();
    b.wait_js(
        "the window to open",
        "const a = document.querySelector('.lmck-app'); return !a.classList.contains('lmck-closed') && a.getBoundingClientRect().height > 100;",
    )
    .await;
    assert_eq!(
        b.wait_for(".lmck-launcher")
            .await
            .attr("aria-expanded")
            .await
            .unwrap()
            .as_deref(),
        Some("true")
    );
    let pos = b
        .js("return getComputedStyle(document.querySelector('.lmck-app')).position;")
        .await;
    assert_eq!(pos, json!("fixed"), "floats over the page");
    start_chat(b).await;
    b.send_message("hello from the widget").await;
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
    b.screenshot("24-floating").await;
    b.click(".lmck-launcher").await;
    b.wait_for(".lmck-app.lmck-closed").await;
    // Reopened, the chat is still there.
    b.click(".lmck-launcher").await;
    b.wait_text(".lmck-user", "hello from the widget").await;
}

#[tokio::test]
async fn the_event_stream_reconnects_with_last_event_id() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_front().await else {
        return;
    };
    let b = &env.browser;
    let http = reqwest::Client::new();
    b.client.goto(&env.front.url("/chat")).await.unwrap();
    b.wait_for(".lmck-picker").await;
    let probe = env.front.probe.clone();
    settles(|| !probe.event_requests().is_empty()).await;
    assert_eq!(probe.event_requests(), vec![None], "first connection");
    // Another client saves a conversation: this tab lists it with an unread dot.
    let put = |id: &'static str, text: &'static str| {
        let http = http.clone();
        let url = env.front.url(&format!("/chat/api/conversations/{id}"));
        async move {
            let body = json!({"id": id, "title": text, "revision": 0, "model": "mock-small",
                "persona_id": "default", "messages": [{"id": format!("{id}-m"), "role": "user", "content": text}]});
            let res = http.put(url).json(&body).send().await.unwrap();
            assert_eq!(res.status(), 200);
        }
    };
    put("conv-a", "saved while connected").await;
    b.wait_for(".lmck-conv[data-id='conv-a'] .lmck-dot").await;
    // The stream ends (a proxy or an instance going away); meanwhile another save happens.
    probe.cut_event_streams();
    put("conv-b", "saved while disconnected").await;
    for _ in 0..200 {
        if probe.event_requests().len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let seen = probe.event_requests();
    assert_eq!(seen.len(), 2, "reconnected once: {seen:?}");
    let last_id = seen[1].clone().expect("the reconnect sends Last-Event-ID");
    assert!(!last_id.is_empty());
    // The event missed while disconnected is replayed: conv-b gets its dot too.
    b.wait_for(".lmck-conv[data-id='conv-b'] .lmck-dot").await;
    // Still live afterwards.
    put("conv-c", "saved after the reconnect").await;
    b.wait_for(".lmck-conv[data-id='conv-c'] .lmck-dot").await;
    assert_eq!(probe.event_requests().len(), 2, "no extra reconnects");
}

#[tokio::test]
async fn a_long_chat_renders_its_latest_messages_first_and_earlier_ones_on_scroll() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    // The page must listen before the save, or the event passes it by.
    env.wait_listening().await;
    put_long_conversation(&env.server, "Long", 150).await;
    // Opened from the sidebar (the save reached this tab through /api/events).
    b.wait_text(".lmck-conv", "Long").await;
    b.js("[...document.querySelectorAll('.lmck-conv')].find((c) => c.textContent.includes('Long')).querySelector('.lmck-conv-open').click(); return true;")
        .await;
    // The last 60 are rendered, scrolled to the bottom; the 90 before wait behind a button.
    b.wait_text(".lmck-transcript", "Message number 149.").await;
    let count = "return document.querySelectorAll('.lmck-msg').length;";
    assert_eq!(b.js(count).await, json!(60));
    b.wait_text(".lmck-earlier", "Show earlier messages (90)")
        .await;
    let first = "return document.querySelector('.lmck-msg').textContent;";
    assert!(
        b.js(first)
            .await
            .as_str()
            .unwrap()
            .contains("Message number 90.")
    );

    // Scrolling near the top renders 60 more above, and what was on screen stays on screen.
    b.js("const t = document.querySelector('.lmck-transcript'); t.scrollTop = 0; \
          window.__top = [...document.querySelectorAll('.lmck-msg')].find((m) => m.textContent.includes('Message number 90.')).getBoundingClientRect().top; \
          t.dispatchEvent(new Event('scroll')); return true;")
        .await;
    b.wait_js(
        "60 more messages",
        "return document.querySelectorAll('.lmck-msg').length === 120;",
    )
    .await;
    b.wait_text(".lmck-earlier", "Show earlier messages (30)")
        .await;
    b.wait_js(
        "the view to stay put",
        "const m = [...document.querySelectorAll('.lmck-msg')].find((m) => m.textContent.includes('Message number 90.')); \
         return Math.abs(m.getBoundingClientRect().top - window.__top) < 2;",
    )
    .await;
    // The button renders the rest; then it goes away.
    b.js("document.querySelector('.lmck-earlier').click(); return true;")
        .await;
    b.wait_js("every message", "return document.querySelectorAll('.lmck-msg').length === 150 && !document.querySelector('.lmck-earlier');")
        .await;
    assert!(
        b.js(first)
            .await
            .as_str()
            .unwrap()
            .contains("Message number 0.")
    );

    // A new turn still renders and is followed.
    b.send_message("one more").await;
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
    idle(b).await;
    assert_eq!(b.js(count).await, json!(152));
}

#[tokio::test]
async fn a_chat_that_fails_to_load_does_not_forget_the_open_one() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    put_long_conversation(&env.server, "First", 4).await;
    put_long_conversation(&env.server, "Second", 6).await;
    let open = |title: &str| {
        format!(
            "[...document.querySelectorAll('.lmck-conv')].find((c) => c.textContent.includes('{title}')).querySelector('.lmck-conv-open').click(); return true;"
        )
    };
    b.wait_text(".lmck-conv", "Second").await;
    b.js(&open("First")).await;
    b.wait_text(".lmck-title", "First").await;
    // The network fails while another chat loads (as when a reload cuts the load short).
    b.js("window.fetch = () => Promise.reject(new TypeError('Failed to fetch')); return true;")
        .await;
    b.js(&open("Second")).await;
    b.wait_text(".lmck-notice", "Could not open the conversation")
        .await;
    // The reload (with a working fetch again) restores the chat that was open.
    b.client.refresh().await.unwrap();
    b.wait_text(".lmck-title", "First").await;
    b.wait_text(".lmck-transcript", "Message number 3.").await;
}

#[tokio::test]
async fn each_turn_is_saved_with_only_its_new_messages() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_front().await else {
        return;
    };
    let b = &env.browser;
    b.client.goto(&env.front.url("/chat")).await.unwrap();
    start_chat(b).await;
    for (turn, text) in ["first question", "second question", "third question"]
        .into_iter()
        .enumerate()
    {
        b.send_message(text).await;
        let replies = turn + 1;
        b.wait_js(
            "the reply",
            &format!(
                "return document.querySelectorAll('.lmck-assistant .lmck-md').length === {replies};"
            ),
        )
        .await;
        idle(b).await;
    }
    // The stored copy ends up whole, in order, as the tab shows it.
    let probe = env.front.probe.clone();
    let id = probe.saves().first().expect("a save").id.clone();
    let url = env.front.url(&format!("/chat/api/conversations/{id}"));
    let mut stored = Value::Null;
    for _ in 0..200 {
        stored = get_json(&url).await;
        if stored["messages"].as_array().map_or(0, Vec::len) == 6 && probe.saves().len() >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let roles: Vec<&str> = stored["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["role"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(stored["messages"][4]["content"], "third question");
    let saves = probe.saves();
    assert!(saves.iter().all(|s| s.status == 200), "{saves:?}");
    // The first save creates the conversation whole; later ones keep what is stored and carry
    // the new messages only (a save that races the service's own save of a reply goes whole,
    // so the checks leave room for one).
    assert_eq!(saves[0].kept, None, "{saves:?}");
    assert!(
        saves
            .iter()
            .any(|s| s.kept.is_some_and(|k| k >= 4) && s.messages <= 2),
        "a late turn was saved whole: {saves:?}"
    );
    let carried: usize = saves.iter().map(|s| s.messages).sum();
    let whole: usize = saves
        .iter()
        .map(|s| s.messages + s.kept.unwrap_or(0) as usize)
        .sum();
    assert!(
        carried * 2 <= whole,
        "kept saves carry at most half of what whole ones would: {carried} of {whole}, {saves:?}"
    );
}

#[tokio::test]
async fn the_edit_dialog_loads_its_part_when_first_opened_and_a_failed_load_can_be_retried() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_front().await else {
        return;
    };
    let b = &env.browser;
    let probe = env.front.probe.clone();
    let parts = || {
        probe
            .assets()
            .into_iter()
            .filter(|(name, _)| is_ui_part(name))
            .collect::<Vec<_>>()
    };
    b.client.goto(&env.front.url("/chat")).await.unwrap();
    b.watch_csp_violations().await;
    start_chat(b).await;
    talk(b, "a chat to rename").await;
    let edit = ".lmck-conv button[title=Edit]";
    b.wait_for(edit).await;
    assert!(
        probe.assets().iter().any(|(n, _)| n.ends_with("_bg.wasm")),
        "the front saw the main module: {:?}",
        probe.assets()
    );
    // A turn loads its own part, the transcript's and the Markdown renderer's (the reply is
    // Markdown), and nothing else.
    b.wait_js(
        "the markdown part",
        "return performance.getEntriesByType('resource').some(e => e.name.includes('/split_markdown-'));",
    )
    .await;
    let after_turn = parts();
    assert!(
        after_turn
            .iter()
            .any(|(n, s)| n.starts_with("split_markdown-") && *s == 200)
            && after_turn
                .iter()
                .all(|(n, _)| n.starts_with("split_markdown-")
                    || n.starts_with("split_turn-")
                    || n.starts_with("split_transcript-")
                    || n.starts_with("chunk_")),
        "a turn loads the turn's, the transcript's and the markdown part only: {after_turn:?}"
    );
    let since_turn = || parts().split_off(after_turn.len());

    // The part's first fetch fails: the dialog says so instead of opening, and the page lives on.
    probe.fail_next_parts(1);
    b.click(edit).await;
    b.wait_text(".lmck-modal .lmck-load-failed", "could not be loaded")
        .await;
    let failed = since_turn();
    assert_eq!(
        failed.iter().filter(|(_, status)| *status == 503).count(),
        1,
        "{failed:?}"
    );
    assert!(
        failed
            .iter()
            .all(|(n, _)| n.starts_with("split_edit-") || n.starts_with("chunk_")),
        "only the edit dialog's part and what it shares are fetched: {failed:?}"
    );

    // Trying again fetches again, and the dialog opens.
    b.click(".lmck-load-failed .lmck-retry").await;
    b.wait_for(".lmck-modal[aria-label='Edit conversation'] input.lmck-field")
        .await;
    assert!(b.texts(".lmck-load-failed").await.is_empty());
    let loaded = since_turn();
    assert!(loaded.len() > failed.len(), "{loaded:?}");
    assert!(
        loaded
            .iter()
            .any(|(n, status)| n.starts_with("split_edit-") && *status == 200),
        "{loaded:?}"
    );
    let (refused, _) = &failed[failed.iter().position(|(_, s)| *s == 503).unwrap()];
    assert!(
        loaded.iter().any(|(n, s)| n == refused && *s == 200),
        "the part that failed was fetched again: {loaded:?}"
    );

    // Loaded once is loaded: closing and opening again fetches nothing more, and the page's
    // CSP allowed all of it.
    b.js("Array.from(document.querySelectorAll('.lmck-modal button')).find(x => x.textContent === 'Cancel').click(); return true;")
        .await;
    modal_closed(b).await;
    b.click(edit).await;
    b.wait_for(".lmck-modal[aria-label='Edit conversation']")
        .await;
    assert_eq!(since_turn(), loaded);
    assert_eq!(b.csp_violations().await, Vec::<String>::new());
}

/// The HTML of the `n`th assistant reply on screen (0-based).
async fn reply_html(b: &Browser, n: usize) -> String {
    b.js(&format!(
        "const r = document.querySelectorAll('.lmck-assistant .lmck-md')[{n}]; return r ? r.innerHTML : '';"
    ))
    .await
    .as_str()
    .unwrap_or_default()
    .to_owned()
}

#[tokio::test]
async fn the_markdown_part_loads_with_the_first_reply_and_a_failed_load_leaves_replies_plain_until_a_later_one()
 {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_front().await else {
        return;
    };
    let b = &env.browser;
    let probe = env.front.probe.clone();
    let markdown_parts = || probe.part_statuses("markdown");
    b.client.goto(&env.front.url("/chat")).await.unwrap();
    b.watch_csp_violations().await;
    start_chat(b).await;
    assert!(
        probe.assets().iter().all(|(n, _)| !is_ui_part(n)),
        "the first paint of a new chat loads no part: {:?}",
        probe.assets()
    );

    // The renderer's first fetch fails: the reply still shows, as plain text, all of it.
    probe.fail_next_of("markdown", 1);
    b.send_message("mirror-back **bold words** and `code`")
        .await;
    b.wait_text(".lmck-assistant .lmck-md", "bold words").await;
    idle(b).await;
    settles(|| {
        probe
            .assets()
            .iter()
            .any(|(n, s)| is_ui_part(n) && *s == 503)
    })
    .await;
    assert!(
        probe
            .assets()
            .iter()
            .any(|(n, s)| is_ui_part(n) && *s == 503),
        "{:?}",
        probe.assets()
    );
    let plain = reply_html(b, 0).await;
    assert!(
        plain.contains("lmck-md-plain") && plain.contains("**bold words** and `code`"),
        "{plain}"
    );
    assert!(!plain.contains("<strong>"), "{plain}");

    // The next reply loads it again, and every reply on screen is rendered.
    b.send_message("mirror-back a _second_ reply").await;
    b.wait_js(
        "both replies rendered",
        "const r = document.querySelectorAll('.lmck-assistant .lmck-md'); \
         return r.length === 2 && !!r[0].querySelector('strong') && !!r[1].querySelector('em') \
           && !document.querySelector('.lmck-md-plain');",
    )
    .await;
    idle(b).await;
    assert!(
        reply_html(b, 0)
            .await
            .contains("<strong>bold words</strong>")
    );
    assert_eq!(markdown_parts().last(), Some(&200), "{:?}", probe.assets());

    assert_eq!(b.csp_violations().await, Vec::<String>::new());

    // A reload of the conversation loads the renderer with it and shows the replies rendered.
    b.client.refresh().await.unwrap();
    b.watch_csp_violations().await;
    b.wait_js(
        "the restored replies rendered",
        "const r = document.querySelectorAll('.lmck-assistant .lmck-md'); \
         return r.length === 2 && !!r[0].querySelector('strong') && !document.querySelector('.lmck-md-plain');",
    )
    .await;
    assert_eq!(b.csp_violations().await, Vec::<String>::new());
}

/// Opens a new chat in `env`'s browser (which loads no part), makes every fetch of `part` fail
/// and types the first keystroke, whose one fetch of it fails; the composer's input.
async fn first_keystroke_with_part_failing(env: &FrontEnv, part: &str) -> Element {
    let (b, probe) = (&env.browser, &env.front.probe);
    b.client.goto(&env.front.url("/chat")).await.unwrap();
    b.watch_csp_violations().await;
    start_chat(b).await;
    assert!(probe.part_statuses(part).is_empty(), "{:?}", probe.assets());
    probe.fail_next_of(part, 100);
    let input = b.wait_for(".lmck-input").await;
    input.send_keys("m").await.unwrap();
    settles(|| !probe.part_statuses(part).is_empty()).await;
    assert_eq!(probe.part_statuses(part), [503], "the keystroke's fetch");
    input
}

#[tokio::test]
async fn the_turn_part_loads_at_the_first_keystroke_and_a_failed_load_keeps_the_message_for_retry()
{
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_front().await else {
        return;
    };
    let b = &env.browser;
    let probe = env.front.probe.clone();
    let turn_parts = || probe.part_statuses("turn");
    // Every fetch of the turn's part fails. The first keystroke asks for it.
    let input = first_keystroke_with_part_failing(&env, "turn").await;

    // Sending asks again; the message stays (and is saved), the reply is an error with Retry.
    input
        .send_keys("irror-back through a flaky network\u{E007}")
        .await
        .unwrap();
    b.wait_text(".lmck-msg-error", "could not be loaded").await;
    assert!(
        b.texts(".lmck-user")
            .await
            .contains("mirror-back through a flaky network")
    );
    let failed = turn_parts();
    assert!(
        failed.len() >= 2 && failed.iter().all(|s| *s == 503),
        "{failed:?}"
    );
    let saved = settles(|| {
        probe
            .saves()
            .iter()
            .any(|s| s.status == 200 && s.messages >= 1)
    })
    .await;
    assert!(
        saved,
        "the user's message was saved without the turn's part"
    );
    // The composer is not left busy.
    idle(b).await;

    // Retry fetches the part again, and the turn runs.
    probe.fail_next_of("turn", 0);
    b.click(".lmck-msg-error .lmck-retry").await;
    b.wait_text(".lmck-assistant .lmck-md", "through a flaky network")
        .await;
    idle(b).await;
    assert!(b.texts(".lmck-msg-error").await.is_empty());
    assert_eq!(turn_parts().last(), Some(&200), "{:?}", probe.assets());
    assert_eq!(b.csp_violations().await, Vec::<String>::new());
}

/// Stores `messages` as conversation `id` through the front, then opens it from the sidebar in a
/// browser that has not run a turn (so the turn's part has not been fetched).
async fn open_stored(env: &FrontEnv, id: &str, messages: Value) {
    let conv = json!({"id": id, "title": id, "model": "mock-small", "revision": 0,
        "messages": messages});
    let res = reqwest::Client::new()
        .put(env.front.url(&format!("/chat/api/conversations/{id}")))
        .json(&conv)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    env.browser
        .client
        .goto(&env.front.url("/chat"))
        .await
        .unwrap();
    env.browser.click(".lmck-conv-open").await;
}

#[tokio::test]
async fn a_decision_the_turn_part_cannot_be_loaded_for_stays_pending_and_can_be_made_again() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_front().await else {
        return;
    };
    let b = &env.browser;
    let probe = env.front.probe.clone();
    // A conversation whose reply waits for a decision.
    let messages = json!([
        {"id": "u1", "role": "user", "content": "please use the tool"},
        {"id": "a1", "role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "name": "get_weather", "arguments": {"city": "Oslo"},
             "approval": "pending"}]}]);
    open_stored(&env, "pending-call", messages).await;
    b.wait_for(".lmck-approval .lmck-allow").await;
    let turn_parts = || probe.part_statuses("turn");
    assert!(turn_parts().is_empty(), "{:?}", probe.assets());

    probe.fail_next_of("turn", 100);
    b.click(".lmck-approval .lmck-allow").await;
    b.wait_text(".lmck-notice", "could not be loaded").await;
    b.wait_for(".lmck-approval .lmck-allow").await;
    assert!(b.texts(".lmck-tool-result").await.is_empty());
    let failed = turn_parts();
    assert!(
        !failed.is_empty() && failed.iter().all(|s| *s == 503),
        "{failed:?}"
    );
    idle(b).await;

    probe.fail_next_of("turn", 0);
    b.click(".lmck-approval .lmck-allow").await;
    b.wait_text(".lmck-tool-result", "Oslo: sunny").await;
    idle(b).await;
    assert_eq!(turn_parts().last(), Some(&200));
}

#[tokio::test]
async fn compact_without_the_turn_part_says_it_failed_and_keeps_the_transcript() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_front().await else {
        return;
    };
    let b = &env.browser;
    let probe = env.front.probe.clone();
    let messages = json!([
        {"id": "u1", "role": "user", "content": "alpha question"},
        {"id": "a1", "role": "assistant", "content": "alpha answer"}]);
    open_stored(&env, "to-compact", messages).await;
    b.wait_text(".lmck-user", "alpha question").await;

    let compact = async || {
        let input = b.wait_for(".lmck-input").await;
        input.send_keys("/compact").await.unwrap();
        b.wait_text(".lmck-menu", "/compact").await;
        input.send_keys("\u{E007}").await.unwrap();
    };
    probe.fail_next_of("turn", 100);
    compact().await;
    b.wait_text(".lmck-info", "Compaction Failed").await;
    idle(b).await;
    assert_eq!(
        b.js("return document.querySelectorAll('.lmck-user').length;")
            .await,
        json!(1)
    );
    let failed = probe.part_statuses("turn");
    assert!(
        !failed.is_empty() && failed.iter().all(|s| *s == 503),
        "{failed:?}"
    );

    probe.fail_next_of("turn", 0);
    compact().await;
    b.wait_text(".lmck-info", "Conversation Compacted: 2 messages")
        .await;
    idle(b).await;
    assert_eq!(
        b.js("return document.querySelectorAll('.lmck-user').length;")
            .await,
        json!(0)
    );
    assert_eq!(probe.part_statuses("turn").last(), Some(&200));
}

#[tokio::test]
async fn the_transcript_part_loads_at_the_first_keystroke_and_a_failed_load_keeps_the_conversation_for_try_again()
 {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_front().await else {
        return;
    };
    let b = &env.browser;
    let probe = env.front.probe.clone();
    let transcript_parts = || probe.part_statuses("transcript");
    // Every fetch of the transcript's part fails. The first keystroke asks for it.
    let input = first_keystroke_with_part_failing(&env, "transcript").await;

    // The message is sent and the reply runs and is saved; the transcript says it cannot show.
    input
        .send_keys("irror-back behind a missing transcript\u{E007}")
        .await
        .unwrap();
    b.wait_text(".lmck-main .lmck-load-failed", "could not be loaded")
        .await;
    idle(b).await;
    assert!(b.texts(".lmck-user").await.is_empty());
    let listed = get_json(&env.front.url("/chat/api/conversations")).await;
    let id = listed[0]["id"]
        .as_str()
        .expect("the conversation was saved");
    let stored = get_json(&env.front.url(&format!("/chat/api/conversations/{id}"))).await;
    assert_eq!(
        stored["messages"][1]["content"], "Mirror: mirror-back behind a missing transcript",
        "the question and the reply were saved: {stored}"
    );

    // Trying again shows the whole conversation.
    probe.fail_next_of("transcript", 0);
    b.click(".lmck-main .lmck-load-failed .lmck-retry").await;
    b.wait_text(".lmck-assistant .lmck-md", "behind a missing transcript")
        .await;
    assert!(
        b.texts(".lmck-user")
            .await
            .contains("mirror-back behind a missing transcript")
    );
    assert!(b.texts(".lmck-load-failed").await.is_empty());
    assert_eq!(transcript_parts().last(), Some(&200));
    assert_eq!(b.csp_violations().await, Vec::<String>::new());
}

#[tokio::test]
async fn export_and_import_without_their_part_say_so_and_work_once_it_loads() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_front().await else {
        return;
    };
    let b = &env.browser;
    let probe = env.front.probe.clone();
    let transfer_parts = || probe.part_statuses("transfer");
    let messages = json!([
        {"id": "u1", "role": "user", "content": "carry me over"},
        {"id": "a1", "role": "assistant", "content": "carried"}]);
    open_stored(&env, "to-export", messages).await;
    b.wait_text(".lmck-user", "carry me over").await;
    b.watch_csp_violations().await;
    b.js(CAPTURE_DOWNLOADS).await;
    assert!(transfer_parts().is_empty(), "{:?}", probe.assets());
    let export_json = ".lmck-sidebar-foot .lmck-btn:nth-child(1)";
    let import = |json: &str| {
        format!(
            "const dt = new DataTransfer(); dt.items.add(new File([{}], 'chat.json', {{type: 'application/json'}})); \
             const input = document.querySelector('.lmck-sidebar-foot input[type=file]'); input.files = dt.files; \
             input.dispatchEvent(new Event('change', {{bubbles: true}})); return true;",
            serde_json::to_string(json).unwrap()
        )
    };

    // Without the part, Export and Import say so, and nothing is downloaded or added.
    probe.fail_next_of("transfer", 100);
    b.click(export_json).await;
    b.wait_text(".lmck-notice", "could not be loaded").await;
    b.js(&import(
        r#"{"id": "x", "title": "imported", "messages": []}"#,
    ))
    .await;
    settles(|| transfer_parts().len() >= 2).await;
    let failed = transfer_parts();
    assert!(
        failed.len() >= 2 && failed.iter().all(|s| *s == 503),
        "{failed:?}"
    );
    assert_eq!(
        b.js("return window.__lmckDownloads.length;").await,
        json!(0)
    );
    let listed = get_json(&env.front.url("/chat/api/conversations")).await;
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");

    // Once it loads, both work.
    probe.fail_next_of("transfer", 0);
    b.click(export_json).await;
    let (mime, text, name) = next_download(b, 1).await;
    assert_eq!(
        (mime.as_str(), name.as_str()),
        ("application/json", "to-export.json")
    );
    let exported: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(exported["messages"][1]["content"], "carried");
    b.js(&import(&text)).await;
    b.wait_text(".lmck-notice", "Imported 1 conversation(s).")
        .await;
    assert_eq!(transfer_parts().last(), Some(&200));
    assert_eq!(b.csp_violations().await, Vec::<String>::new());
}

#[tokio::test]
async fn an_attachment_the_turn_part_cannot_be_loaded_for_is_not_added_and_the_notice_says_why() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_front().await else {
        return;
    };
    let b = &env.browser;
    let probe = env.front.probe.clone();
    let turn_parts = || probe.part_statuses("turn");
    b.client.goto(&env.front.url("/chat")).await.unwrap();
    b.watch_csp_violations().await;
    start_chat(b).await;
    b.wait_for(".lmck-attach").await;
    assert!(turn_parts().is_empty(), "{:?}", probe.assets());
    let drop_file = "const dt = new DataTransfer(); dt.items.add(new File(['kiwi'], 'notes.txt', {type: 'text/plain'})); \
        document.querySelector('.lmck-input').dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true})); return true;";

    probe.fail_next_of("turn", 100);
    b.js(drop_file).await;
    b.wait_text(".lmck-notice", "Upload failed").await;
    let notice = b.texts(".lmck-notice").await;
    assert!(notice.contains("could not be loaded"), "{notice}");
    assert!(b.texts(".lmck-chips").await.is_empty());
    let failed = turn_parts();
    assert!(
        !failed.is_empty() && failed.iter().all(|s| *s == 503),
        "{failed:?}"
    );

    probe.fail_next_of("turn", 0);
    b.js(drop_file).await;
    b.wait_text(".lmck-chips .lmck-chip-name", "notes.txt")
        .await;
    assert_eq!(turn_parts().last(), Some(&200));
    assert_eq!(b.csp_violations().await, Vec::<String>::new());
}

#[tokio::test]
async fn search_finds_message_text_and_opens_the_conversation_at_that_message() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    put_long_conversation(&env.server, "First", 4).await;
    put_long_conversation(&env.server, "Second", 30).await;
    b.wait_text(".lmck-conv", "Second").await;

    // Words of one message, in another order and case: its conversation and snippet show,
    // the matched words marked.
    b.fill(".lmck-search", "27 NUMBER").await;
    b.wait_text(".lmck-search-hit .lmck-search-title", "Second")
        .await;
    assert_eq!(
        b.js("return document.querySelectorAll('.lmck-search-hit').length")
            .await,
        json!(1)
    );
    let snippet = b.texts(".lmck-search-snippet").await;
    assert!(
        snippet.contains("Message number 27. With some **markdown** and `code`."),
        "the snippet is the message's text as written: {snippet}"
    );
    assert_eq!(
        b.js("return [...document.querySelectorAll('.lmck-search-snippet mark')].map((m) => m.textContent)")
            .await,
        json!(["number", "27"])
    );
    // No title holds the words: the title filter says so above the message hits.
    b.wait_text(".lmck-conv-list .lmck-muted", "No title matches.")
        .await;

    b.click(".lmck-search-hit").await;
    b.wait_text(".lmck-title", "Second").await;
    b.wait_js(
        "the message found is outlined",
        "return document.querySelector('.lmck-msg.lmck-search-target')?.dataset.key === 'm27'",
    )
    .await;

    // A query with no word in it finds nothing and breaks nothing.
    b.fill(".lmck-search", "*\"").await;
    b.wait_js(
        "no message hits",
        "return document.querySelectorAll('.lmck-search-hit').length === 0",
    )
    .await;
}
