//! The `lmchatkit` binary with `[[providers]]`: two named upstreams, one configured (an
//! OpenAI-compatible mock) and one whose key is missing (Anthropic's kind). The menu lists
//! both, the second disabled with the reason; a turn reaches the first with its model id
//! stripped of the provider; a turn on the second is refused with the reason.

use crate::support;

use serde_json::{Value, json};
use support::{chat_upstream, get_json, http_client, post, start};

fn config(dir: &std::path::Path, base_url: &str) -> String {
    let path = dir.join("lmchatkit.toml");
    std::fs::write(
        &path,
        format!(
            r#"
[[providers]]
name = "mock"
kind = "openai"
base_url = "{base_url}"
api_key_env = "LMCK_BIN_MOCK_KEY"

[[providers]]
name = "anthropic"
kind = "anthropic"
api_key_env = "LMCK_BIN_NEVER_SET_ANTHROPIC_KEY"
"#
        ),
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

/// The `data:` events of an SSE body, parsed.
fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

#[tokio::test]
async fn two_providers_list_together_and_a_turn_reaches_only_the_configured_one() {
    let upstream = chat_upstream();
    let dir = tempfile::tempdir().unwrap();
    let file = config(dir.path(), &upstream.base_url);
    let app = start(
        &["--config", &file, "--no-demo-mcp"],
        &[("LMCK_BIN_MOCK_KEY", "sk-mock-key")],
    );

    let models = get_json(&format!("{}/api/models", app.url)).await;
    let models = models.as_array().unwrap();
    let mock = models
        .iter()
        .find(|m| m["id"] == "mock/mock-small")
        .unwrap_or_else(|| panic!("{models:?}"));
    assert_eq!(mock["provider"], "mock", "{mock}");
    assert_ne!(mock["configured"], false, "{mock}");
    assert_eq!(mock.get("unavailable_reason"), None, "{mock}");
    let claude: Vec<&Value> = models
        .iter()
        .filter(|m| m["provider"] == "anthropic")
        .collect();
    assert!(
        claude
            .iter()
            .any(|m| m["id"] == "anthropic/claude-sonnet-4-5"),
        "{models:?}"
    );
    for m in &claude {
        assert_eq!(m["configured"], false, "{m}");
        assert_eq!(
            m["unavailable_reason"], "LMCK_BIN_NEVER_SET_ANTHROPIC_KEY is not set",
            "{m}"
        );
    }
    // Nothing but the configured provider is listed or asked.
    assert!(
        models
            .iter()
            .all(|m| m["provider"] == "mock" || m["provider"] == "anthropic"),
        "{models:?}"
    );

    let res = http_client()
        .post(format!("{}/api/chat", app.url))
        .json(&json!({"model": "mock/mock-small", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let evs = events(&res.text().await.unwrap());
    let text: String = evs
        .iter()
        .filter(|e| e["type"] == "delta")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert_eq!(text, "Hello from the mock.", "{evs:?}");
    let done = evs.iter().find(|e| e["type"] == "done").unwrap();
    assert_eq!(done["finish_reason"], "stop", "{done}");
    // An unknown model has no price: no cost, never 0.
    assert_eq!(done.get("cost_usd"), None, "{done}");

    let seen = upstream.seen.lock().unwrap().clone();
    let chats: Vec<_> = seen
        .iter()
        .filter(|s| s.head.starts_with("post /v1/chat/completions"))
        .collect();
    assert_eq!(chats.len(), 1, "{seen:?}");
    assert_eq!(
        chats[0].body["model"], "mock-small",
        "the prefix is stripped"
    );
    assert!(
        chats[0].head.contains("authorization: bearer sk-mock-key"),
        "{}",
        chats[0].head
    );

    let (status, body) = post(
        &format!("{}/api/chat", app.url),
        json!({"model": "anthropic/claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    let error = error["error"].as_str().unwrap();
    assert!(
        error.contains("anthropic/claude-sonnet-4-5")
            && error.contains("LMCK_BIN_NEVER_SET_ANTHROPIC_KEY is not set"),
        "{error}"
    );
    let chats_after = upstream
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.head.starts_with("post "))
        .count();
    assert_eq!(chats_after, 1, "the refused turn reached no upstream");
}

#[tokio::test]
async fn a_malformed_provider_stops_the_app_with_a_message_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lmchatkit.toml");
    std::fs::write(
        &path,
        "[[providers]]\nname = \"local/x\"\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\nkey_required = false\n",
    )
    .unwrap();
    let out = support::command(&["--config", &path.to_string_lossy()], &[])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("providers[0] (\"local/x\")") && stderr.contains("must not contain '/'"),
        "{stderr}"
    );
}
