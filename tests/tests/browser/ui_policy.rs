//! Our UI honours the operator's approval policy and the user's server-side "always" list, in
//! Chromium: an `allow` tool runs without the card, a `deny` tool never runs and the model is
//! told, and "Always allow → always" is kept on the server, for every chat.

use lmchatkit::ApprovalPolicy;
use lmchatkit::protocol::ToolDecision;
use lmchatkit::store::MemoryStore;
use lmchatkit_tests::browser::Browser;
use lmchatkit_tests::browser::app::{
    ONE_AT_A_TIME, idle, setup_configured, start_chat, wait_saved,
};
use serde_json::Value;

fn tool_messages(requests: &[Value]) -> Vec<String> {
    requests
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn an_allowed_tool_runs_without_asking() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_configured(|c| {
        c.history(MemoryStore::new())
            .approval_policy(ApprovalPolicy::new(ToolDecision::Ask).allow("get_*"))
    })
    .await
    else {
        return;
    };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("please use the tool").await;
    b.wait_text(".lmck-tool-result", "Oslo: sunny, 21 °C").await;
    b.wait_text(".lmck-assistant .lmck-md", "The weather in Oslo is sunny.")
        .await;
    idle(b).await;
    assert!(
        b.texts(".lmck-approval").await.is_empty(),
        "no card was shown"
    );
}

#[tokio::test]
async fn a_denied_tool_never_runs_and_the_model_is_told() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_configured(|c| {
        c.history(MemoryStore::new())
            .approval_policy(ApprovalPolicy::new(ToolDecision::Ask).deny("get_weather"))
    })
    .await
    else {
        return;
    };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("please use the tool").await;
    b.wait_text(".lmck-tool-result", "policy").await;
    idle(b).await;
    assert!(
        b.texts(".lmck-approval").await.is_empty(),
        "no card was shown"
    );
    let requests = env.mock.observed.requests.lock().unwrap().clone();
    let told = tool_messages(&requests);
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0].contains("policy"), "the model reads why: {told:?}");
    assert!(!told[0].contains("sunny"), "the tool never ran: {told:?}");
}

/// Chooses "always" on the pending card and clicks "Always allow".
async fn always_allow_everywhere(b: &Browser) {
    b.wait_for(".lmck-approval .lmck-always").await;
    b.js(
        "const s = document.querySelector('.lmck-approval select'); s.value = 'always'; \
          s.dispatchEvent(new Event('change', {bubbles: true})); return true;",
    )
    .await;
    b.click(".lmck-approval .lmck-always").await;
}

#[tokio::test]
async fn always_allow_for_every_chat_is_kept_on_the_server() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(env) = setup_configured(|c| c.history(MemoryStore::new())).await else {
        return;
    };
    let b = &env.browser;
    start_chat(b).await;
    b.send_message("please use the tool").await;
    always_allow_everywhere(b).await;
    b.wait_text(".lmck-tool-result", "Oslo: sunny, 21 °C").await;
    idle(b).await;
    // The UI saves the choice in the background: wait for it.
    let mut stored = Value::Null;
    for _ in 0..200 {
        stored = reqwest::get(env.server.url("/chat/api/tools/approvals"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if stored["always"] != serde_json::json!([]) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(stored["always"], serde_json::json!(["get_weather"]));

    // A new chat (after a reload) runs the tool without asking.
    wait_saved(&env, 4).await;
    b.client.refresh().await.unwrap();
    b.wait_text(".lmck-tool-result", "Oslo: sunny").await;
    b.click(".lmck-new").await;
    start_chat(b).await;
    b.send_message("please use the tool again").await;
    b.wait_text(".lmck-assistant .lmck-md", "The weather in Oslo is sunny.")
        .await;
    idle(b).await;
    assert!(
        b.texts(".lmck-approval").await.is_empty(),
        "no card was shown"
    );
}
