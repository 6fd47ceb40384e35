//! A reply is a run on the server, and the UI re-attaches to it (issue 17), in headless Chromium
//! against the real service (history in memory, events on) and the mock upstream streaming
//! slowly:
//! - a reload in the middle of a reply shows it continuing live in the same bubble (the
//!   message id the run writes), through a network drop between the browser and the service
//!   (a proxy cuts every connection; the tab resumes with `Last-Event-ID`), to the end, with no
//!   text twice; the model was asked once and never cut; the tab's next turn saves without a
//!   conflict;
//! - a second tab that opens the conversation from the sidebar sees the reply continue too; Stop
//!   in the reloaded tab stops the run (the mock upstream sees its request dropped), the partial
//!   reply stays in both tabs, marked stopped, and is saved so.
//!
//! Skipped (with a message) only when Chromium is absent and `LMCHATKIT_EXPECT_BROWSER` is unset.

use std::sync::atomic::Ordering;
use std::time::Duration;

use lmchatkit_tests::browser::Browser;
use lmchatkit_tests::browser::app::{ONE_AT_A_TIME, first_stored, idle, setup, start_chat};
use lmchatkit_tests::browser::cut_proxy::CutProxy;
use serde_json::{Value, json};

const REPLY: &str = ".lmck-assistant .lmck-md";

/// The words of `text`.
fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

/// Asserts that `text` is `{prefix}0 {prefix}1 …` with nothing missing or repeated; answers
/// how many words it has.
fn assert_in_order(prefix: &str, text: &str) -> usize {
    let got = words(text);
    let want: Vec<String> = (0..got.len()).map(|i| format!("{prefix}{i}")).collect();
    assert_eq!(got, want, "the reply lost or repeated text");
    got.len()
}

/// The `data-key` (message id) of the only assistant bubble.
async fn only_bubble(b: &Browser) -> String {
    let keys = b
        .js("return Array.from(document.querySelectorAll('.lmck-assistant')).map(e => e.dataset.key);")
        .await;
    let keys = keys.as_array().cloned().unwrap_or_default();
    assert_eq!(keys.len(), 1, "one assistant bubble: {keys:?}");
    keys[0].as_str().unwrap_or_default().to_owned()
}

/// Waits until the reply shows at least `n` words.
async fn wait_words(b: &Browser, n: usize) {
    b.wait_js(
        &format!("{n} words of the reply"),
        &format!(
            "const e = document.querySelector('.lmck-assistant .lmck-md'); \
             return !!e && e.textContent.trim().split(/\\s+/).length >= {n};"
        ),
    )
    .await;
}

/// The stored conversation at `url` once no run writes it and two reads 300 ms apart agree.
async fn settled(url: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..100 {
        let res = reqwest::get(url).await.unwrap();
        let running = res
            .headers()
            .contains_key(lmchatkit_protocol::RUN_ID_HEADER);
        let now: Value = res.json().await.unwrap();
        if !running && now == last {
            return now;
        }
        last = now;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    panic!("the conversation never settled: {last}");
}

/// The stored conversations' titles.
async fn titles(url: &str) -> Vec<String> {
    let list: Value = reqwest::get(url).await.unwrap().json().await.unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .map(|c| c["title"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_reload_mid_reply_continues_in_the_same_bubble_through_a_network_drop_to_the_end() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    let proxy = CutProxy::start(env.server.addr).await;
    b.client.goto(&proxy.url("/chat")).await.unwrap();
    start_chat(b).await;
    b.send_message("an unhurried reply please").await;
    wait_words(b, 10).await;
    let key = only_bubble(b).await;

    b.client.refresh().await.unwrap();
    let bubble = format!(".lmck-assistant[data-key=\"{key}\"]");
    b.wait_for(&format!("{bubble}.lmck-streaming")).await;
    b.wait_for(".lmck-stop").await;
    b.wait_text(".lmck-user", "an unhurried reply please").await;
    wait_words(b, 40).await;
    assert_in_order("u", &b.texts(REPLY).await);
    b.screenshot("ui_runs-01-reattached").await;

    // The network drops: the tab reads on after the last event it showed.
    assert!(proxy.cut_all() > 0, "the page had connections open");
    let before = words(&b.texts(REPLY).await).len();
    wait_words(b, before + 20).await;
    assert_in_order("u", &b.texts(REPLY).await);

    b.wait_text(REPLY, "u199").await;
    idle(b).await;
    assert_eq!(assert_in_order("u", &b.texts(REPLY).await), 200);
    assert_eq!(only_bubble(b).await, key, "the same bubble to the end");
    assert!(b.texts(".lmck-msg-error").await.is_empty());
    let reqs = env.mock.observed.requests.lock().unwrap().len();
    assert_eq!(reqs, 1, "the model was asked once");
    assert_eq!(
        env.mock.observed.dropped_early.load(Ordering::SeqCst),
        0,
        "neither the reload nor the drop cut the model's reply"
    );
    let stored = first_stored(&env)
        .await
        .expect("the conversation is stored");
    let reply = &stored["messages"][1];
    assert_eq!(reply["id"], key.as_str(), "{stored}");
    assert_eq!(
        assert_in_order("u", reply["content"].as_str().unwrap_or_default()),
        200
    );
    b.screenshot("ui_runs-02-to-the-end").await;

    // The next turn of the reloaded tab saves on top of the service's save: no conflict copy.
    b.send_message("and now hello").await;
    b.wait_text(REPLY, "Hello from the mock model.").await;
    idle(b).await;
    let list = env.server.url("/chat/api/conversations");
    for _ in 0..100 {
        let n = first_stored(&env)
            .await
            .and_then(|c| c["messages"].as_array().map(Vec::len));
        if n == Some(4) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stored = first_stored(&env).await.expect("stored");
    assert_eq!(
        stored["messages"].as_array().map(Vec::len),
        Some(4),
        "{stored}"
    );
    assert_eq!(titles(&list).await.len(), 1, "no conflict copy");
    assert!(b.texts(".lmck-notice").await.is_empty(), "no notice");
}

#[tokio::test]
async fn a_second_tab_sees_the_reply_continue_and_stop_in_the_reloaded_tab_keeps_it_marked_stopped()
{
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("go slow please").await;
    wait_words(b, 10).await;
    let key = only_bubble(b).await;
    b.client.refresh().await.unwrap();
    let bubble = format!(".lmck-assistant[data-key=\"{key}\"]");
    b.wait_for(&format!("{bubble}.lmck-streaming")).await;
    let first = b.client.window().await.unwrap();

    // A second tab opens the conversation from the sidebar: the reply goes on there too.
    let second = b.client.new_window(true).await.unwrap();
    b.client.switch_to_window(second.handle).await.unwrap();
    b.client.goto(&env.server.url("/chat")).await.unwrap();
    b.wait_text(".lmck-conv", "go slow please").await;
    b.click(".lmck-conv .lmck-conv-open").await;
    b.wait_for(&format!("{bubble}.lmck-streaming")).await;
    b.wait_for(".lmck-stop").await;
    let now = assert_in_order("t", &b.texts(REPLY).await);
    wait_words(b, now + 15).await;
    assert_in_order("t", &b.texts(REPLY).await);
    b.screenshot("ui_runs-03-second-tab").await;
    let second = b.client.window().await.unwrap();

    // Stop in the reloaded tab.
    b.client.switch_to_window(first.clone()).await.unwrap();
    wait_words(b, now + 15).await;
    b.click(".lmck-stop").await;
    idle(b).await;
    for _ in 0..100 {
        if env.mock.observed.dropped_early.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        env.mock.observed.dropped_early.load(Ordering::SeqCst),
        1,
        "the stop cut the model's reply"
    );
    b.wait_text(&format!("{bubble} .lmck-stopped"), "Stopped")
        .await;
    assert!(
        b.texts(".lmck-msg-error").await.is_empty(),
        "Stop is not an error"
    );

    // The service saved the partial reply, marked stopped (read once the run is over and the
    // saves have settled); both tabs end up showing it.
    let stored = settled(&env.server.url(&format!(
        "/chat/api/conversations/{}",
        first_stored(&env).await.expect("stored")["id"].as_str().unwrap_or_default()
    )))
    .await;
    let reply = &stored["messages"][1];
    assert_eq!(reply["stopped"], true, "{stored}");
    assert_eq!(reply["id"], key.as_str());
    let saved = reply["content"].as_str().unwrap_or_default().to_owned();
    let n = assert_in_order("t", &saved);
    assert!(n > now && n < 1500, "a partial reply of {n} words");
    for (tab, name) in [(first, "reloaded"), (second, "second")] {
        b.client.switch_to_window(tab).await.unwrap();
        idle(b).await;
        b.wait_js(
            &format!("the {name} tab to show the saved reply"),
            &format!(
                "const e = document.querySelector('.lmck-assistant .lmck-md'); \
                 return !!e && e.textContent.trim() === {};",
                serde_json::to_string(saved.trim()).unwrap()
            ),
        )
        .await;
        b.wait_text(&format!("{bubble} .lmck-stopped"), "Stopped")
            .await;
        assert_eq!(only_bubble(b).await, key, "{name} tab");
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        b.texts(REPLY).await.trim(),
        saved.trim(),
        "nothing streams after Stop"
    );
    assert_eq!(
        titles(&env.server.url("/chat/api/conversations"))
            .await
            .len(),
        1,
        "no conflict copy"
    );
    b.screenshot("ui_runs-04-stopped").await;
}

/// The messages queued under the composer, in order.
async fn queued(b: &Browser) -> Value {
    b.js("return [...document.querySelectorAll('.lmck-queue .lmck-queued-text')].map((e) => e.textContent);")
        .await
}

/// The user messages of the open chat, in order.
async fn user_texts(b: &Browser) -> Value {
    b.js("return [...document.querySelectorAll('.lmck-user .lmck-user-text')].map((e) => e.textContent.trim());")
        .await
}

#[tokio::test]
async fn messages_sent_while_a_reply_streams_wait_in_a_queue_that_survives_a_reload_and_go_when_it_ends()
 {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    // The reply waits at the mock's gate after ten words until the test opens it: it is still
    // streaming at the reload, however long the steps before took.
    b.send_message("a held reply please").await;
    wait_words(b, 5).await;
    for text in ["first queued", "second queued", "to edit"] {
        b.send_message(text).await;
    }
    assert_eq!(
        queued(b).await,
        json!(["first queued", "second queued", "to edit"])
    );
    assert_eq!(
        b.js("return document.querySelector('.lmck-input').value;")
            .await,
        json!(""),
        "each went from the composer to the queue"
    );
    // One removed, one taken back into the composer, edited and queued again.
    b.click(".lmck-queued:nth-child(2) .lmck-queued-remove")
        .await;
    b.click(".lmck-queued:nth-child(2) .lmck-queued-edit").await;
    assert_eq!(
        b.js("return document.querySelector('.lmck-input').value;")
            .await,
        json!("to edit")
    );
    assert_eq!(queued(b).await, json!(["first queued"]));
    b.send_text("edited").await;
    assert_eq!(queued(b).await, json!(["first queued", "edited"]));
    assert_eq!(user_texts(b).await, json!(["a held reply please"]));
    b.screenshot("29-queued-messages").await;

    // A reload keeps the queue; the reply carries on, and its end sends the queue, one message
    // per reply.
    b.client.refresh().await.unwrap();
    b.wait_for(".lmck-stop").await;
    b.wait_js(
        "the queue after the reload",
        "return [...document.querySelectorAll('.lmck-queue .lmck-queued-text')].map((e) => e.textContent).join('|') === 'first queued|edited';",
    )
    .await;
    assert_eq!(
        user_texts(b).await,
        json!(["a held reply please"]),
        "nothing was sent while the reply streamed"
    );
    env.mock.open_gate();
    b.wait_text(REPLY, "h19").await;
    b.wait_js(
        "the queue to be sent",
        "return !document.querySelector('.lmck-queue') && [...document.querySelectorAll('.lmck-user .lmck-user-text')].length === 3;",
    )
    .await;
    idle(b).await;
    assert_eq!(
        user_texts(b).await,
        json!(["a held reply please", "first queued", "edited"])
    );
    for _ in 0..100 {
        if first_stored(&env)
            .await
            .and_then(|c| c["messages"].as_array().map(Vec::len))
            == Some(6)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stored = first_stored(&env).await.expect("stored");
    let said: Vec<_> = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].clone(), m["content"].clone()))
        .filter(|(role, _)| role == "user")
        .map(|(_, content)| content)
        .collect();
    assert_eq!(
        said,
        [
            json!("a held reply please"),
            json!("first queued"),
            json!("edited")
        ],
        "each queued message got its own reply: {stored}"
    );
    assert_eq!(
        b.js("return Object.keys(sessionStorage).filter((k) => k.startsWith('lmchatkit:queue:')).length;")
            .await,
        json!(0),
        "an empty queue leaves nothing stored"
    );
}

#[tokio::test]
async fn stop_keeps_the_queue_paused_until_send_at_a_phone_width() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    b.client.set_window_size(360, 740).await.unwrap();
    start_chat(b).await;
    b.send_message("a held reply please").await;
    wait_words(b, 5).await;
    b.send_message("a long message queued after a stop, longer than the phone is wide")
        .await;
    b.click(".lmck-stop").await;
    idle(b).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        queued(b).await,
        json!(["a long message queued after a stop, longer than the phone is wide"]),
        "Stop keeps the queue"
    );
    assert_eq!(
        user_texts(b).await,
        json!(["a held reply please"]),
        "and sends nothing"
    );
    b.wait_text(".lmck-queue-note", "Stopped").await;
    assert_eq!(
        b.js("return document.documentElement.scrollWidth <= window.innerWidth;")
            .await,
        json!(true),
        "the queue fits the phone's width"
    );
    // Send with an empty draft sends the next queued message.
    b.click(".lmck-send").await;
    b.wait_js(
        "the queued message to go",
        "return !document.querySelector('.lmck-queue') && [...document.querySelectorAll('.lmck-user .lmck-user-text')].length === 2;",
    )
    .await;
    b.wait_text(REPLY, "Hello from the mock model.").await;
    idle(b).await;
}
