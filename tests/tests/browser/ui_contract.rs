//! The kit keeps its own contract, in headless Chromium against the real service and the mock
//! upstream: `/compact` offers the model no tools; a file command's `allowed-tools` stay approved
//! for the rest of the session; "Always allow" for the session survives a reload of the tab and
//! "Always allow" in a chat is saved with the conversation; and a tool result belongs to the call
//! of its own assistant message, so a provider that numbers calls per response (the mock answers
//! every `call tool …` with the id `call_mcp`) gets each call run and shown with its own result
//! and view (opened while the call streams, before it is approved).
//!
//! Skipped (with a message) only when Chromium is absent and `LMCHATKIT_EXPECT_BROWSER` is unset.

use std::time::Duration;

use lmchatkit::presets::StaticCommands;
use lmchatkit::protocol::SlashCommand;
use lmchatkit::store::MemoryStore;
use lmchatkit_tests::browser::Browser;
use lmchatkit_tests::browser::app::{
    Env, ONE_AT_A_TIME, first_stored, idle, setup, setup_configured, start_chat, wait_saved,
};
use lmchatkit_tests::browser::apps::setup_apps;
use serde_json::{Value, json};

/// The mock calls `get_weather` for `city` (with the id `call_mcp`, every time).
fn weather_call(city: &str) -> String {
    format!("call tool get_weather {{\"city\": \"{city}\"}}")
}

/// The open conversation as the service stores it (the first one listed).
async fn stored(env: &Env) -> Value {
    first_stored(env).await.expect("a stored conversation")
}

/// Asserts that the call runs without asking: its result shows and no approval card came up.
async fn runs_without_asking(b: &Browser, city: &str) {
    b.send_message(&weather_call(city)).await;
    b.wait_text(
        ".lmck-assistant .lmck-md",
        &format!("Tool said: {city}: sunny"),
    )
    .await;
    idle(b).await;
    assert!(
        b.texts(".lmck-approval").await.is_empty(),
        "no approval was asked for"
    );
}

/// Chooses the scope of "Always allow" on the pending card and clicks it.
async fn always_allow(b: &Browser, scope: &str) {
    b.wait_for(".lmck-approval .lmck-always").await;
    b.js(&format!(
        "const s = document.querySelector('.lmck-approval select'); s.value = '{scope}'; \
         s.dispatchEvent(new Event('change', {{bubbles: true}})); return true;"
    ))
    .await;
    b.click(".lmck-approval .lmck-always").await;
}

#[tokio::test]
async fn compact_offers_the_model_no_tools() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("alpha question").await;
    idle(b).await;
    let first = env.mock.observed.requests.lock().unwrap()[0].clone();
    assert!(
        first["tools"].as_array().is_some_and(|t| !t.is_empty()),
        "a normal turn offers the tools"
    );
    b.send_message("/compact").await;
    b.wait_text(".lmck-info", "Conversation Compacted").await;
    idle(b).await;
    let summary = env.mock.observed.requests.lock().unwrap().clone();
    let summary = summary.last().unwrap();
    assert!(
        summary["messages"][1]["content"]
            .as_str()
            .is_some_and(|t| t.starts_with("Summarise the conversation")),
        "{summary}"
    );
    assert_eq!(
        summary.get("tools"),
        None,
        "the summary request offers no tools: {summary}"
    );
}

#[tokio::test]
async fn a_commands_allowed_tools_stay_approved_for_the_rest_of_the_session() {
    let _one = ONE_AT_A_TIME.lock().await;
    let cmd: SlashCommand = serde_json::from_value(json!({
        "id": "weather", "name": "weather", "body": "use the tool for $ARGUMENTS",
        "allowed_tools": ["get_weather"]
    }))
    .unwrap();
    let Some(env) = setup_configured(|c| {
        c.history(MemoryStore::new())
            .commands(StaticCommands(vec![cmd]))
    })
    .await
    else {
        return;
    };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("/weather Oslo").await;
    b.wait_text(".lmck-tool-result", "Oslo: sunny").await;
    idle(b).await;
    assert!(b.texts(".lmck-approval").await.is_empty());
    // A later turn, not run by the command, still calls the tool without asking.
    runs_without_asking(b, "Paris").await;
}

#[tokio::test]
async fn always_allow_for_the_session_survives_a_reload_and_reaches_new_chats() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message(&weather_call("Oslo")).await;
    always_allow(b, "session").await;
    b.wait_text(".lmck-assistant .lmck-md", "Tool said: Oslo: sunny")
        .await;
    idle(b).await;
    wait_saved(&env, 4).await;
    b.client.refresh().await.unwrap();
    b.wait_text(".lmck-tool-result", "Oslo: sunny").await;
    b.click(".lmck-new").await;
    start_chat(b).await;
    runs_without_asking(b, "Paris").await;
}

#[tokio::test]
async fn always_allow_in_a_chat_is_saved_with_it_and_stays_in_that_chat() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message(&weather_call("Oslo")).await;
    always_allow(b, "chat").await;
    b.wait_text(".lmck-assistant .lmck-md", "Tool said: Oslo: sunny")
        .await;
    idle(b).await;
    wait_saved(&env, 4).await;
    let mut conv = stored(&env).await;
    for _ in 0..100 {
        if conv.get("allowed_tools").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        conv = stored(&env).await;
    }
    assert_eq!(
        conv["allowed_tools"],
        json!(["get_weather"]),
        "saved with the conversation: {conv}"
    );
    // After a reload (as in another tab, which loads the same copy) the chat still allows it.
    b.client.refresh().await.unwrap();
    b.wait_text(".lmck-tool-result", "Oslo: sunny").await;
    runs_without_asking(b, "Paris").await;
    // Another chat asks again.
    b.click(".lmck-new").await;
    start_chat(b).await;
    b.send_message(&weather_call("Rome")).await;
    b.wait_for(".lmck-approval .lmck-allow").await;
}

#[tokio::test]
async fn a_later_call_with_a_reused_id_runs_and_shows_its_own_result() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup().await else { return };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message(&weather_call("Oslo")).await;
    b.click(".lmck-approval .lmck-allow").await;
    b.wait_text(".lmck-assistant .lmck-md", "Tool said: Oslo: sunny")
        .await;
    idle(b).await;
    b.send_message(&weather_call("Paris")).await;
    b.wait_for(".lmck-approval .lmck-allow").await;
    // Not answered yet: the second card shows no result (not the first call's).
    assert_eq!(
        b.js("return document.querySelectorAll('.lmck-tool-result').length;")
            .await,
        json!(1),
        "only the first call has a result"
    );
    b.click(".lmck-approval .lmck-allow").await;
    b.wait_text(".lmck-assistant .lmck-md", "Tool said: Paris: sunny")
        .await;
    idle(b).await;
    let results = || async {
        b.js("return Array.from(document.querySelectorAll('.lmck-tool-result')).map(e => e.textContent);")
            .await
    };
    assert_eq!(
        results().await,
        json!(["Oslo: sunny, 21 °C", "Paris: sunny, 21 °C"])
    );
    // Each result is linked to its own call again when the chat is loaded.
    wait_saved(&env, 8).await;
    b.client.refresh().await.unwrap();
    b.wait_text(".lmck-tool-result", "Paris: sunny").await;
    assert_eq!(
        results().await,
        json!(["Oslo: sunny, 21 °C", "Paris: sunny, 21 °C"])
    );
}

#[tokio::test]
async fn a_later_app_call_with_a_reused_id_gets_its_own_view_and_its_own_result() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(apps) = setup_apps(false).await else {
        return;
    };
    let b = &apps.env.browser;
    let views = "return document.querySelectorAll('.lmck-app-iframe').length;";
    start_chat(b).await;
    b.send_message("call tool test__show_app {}").await;
    b.click(".lmck-approval .lmck-allow").await;
    b.wait_for(".lmck-app-iframe").await;
    b.wait_text(".lmck-assistant .lmck-md", "Tool said: rendered in app")
        .await;
    idle(b).await;
    b.send_message("call tool test__legacy_app {}").await;
    b.wait_for(".lmck-approval .lmck-allow").await;
    // The pending call's view is open (since its arguments streamed) and is its own: it has
    // the call's input, and no result (not the first call's).
    b.wait_js(
        "the second call's own view",
        "return document.querySelectorAll('.lmck-app-iframe').length === 2;",
    )
    .await;
    let second_view = || async {
        let frames = b
            .client
            .find_all(fantoccini::Locator::Css(".lmck-app-iframe"))
            .await
            .unwrap();
        frames[1].clone().enter_frame().await.unwrap();
        b.wait_for("#log").await;
    };
    second_view().await;
    b.wait_text("#log", "ui/notifications/tool-input;").await;
    assert!(
        !b.texts("#log").await.contains("tool-result"),
        "the pending call has no result (not the first call's)"
    );
    b.client.enter_parent_frame().await.unwrap();
    b.click(".lmck-approval .lmck-allow").await;
    b.wait_text(".lmck-assistant .lmck-md", "Tool said: legacy")
        .await;
    second_view().await;
    b.wait_text("#log", "ui/notifications/tool-result;").await;
    b.client.enter_parent_frame().await.unwrap();
    assert_eq!(b.js(views).await, json!(2), "one view per call");
    assert_eq!(
        b.js("return Array.from(document.querySelectorAll('.lmck-tool-result')).map(e => e.textContent);")
            .await,
        json!(["rendered in app", "legacy"])
    );
}
