//! A `Providers` host over two real backends, each against its mock upstream: an
//! OpenAI-compatible one (`oa`) and Anthropic's Messages API (`an`). A turn's reasoning effort
//! reaches each upstream in its own form — OpenAI's top-level `reasoning_effort`, Anthropic's
//! `thinking.budget_tokens` (the budget documented in `request::THINKING_BUDGETS`) — and a
//! model the catalog does not mark as reasoning gets neither (the route drops the effort). A
//! tool call's arguments stream from both as `tool_call_delta` pieces before the complete call.

use lmchatkit::llm::Providers;
use lmchatkit::llm::anthropic::request::THINKING_BUDGETS;
use lmchatkit::llm::anthropic::{AnthropicBackend, AnthropicConfig};
use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::models::{Catalog, ModelSpec};
use lmchatkit::{ChatService, Config};
use lmchatkit_tests::mock_anthropic::{self, MockAnthropic};
use lmchatkit_tests::mock_upstream::MockUpstream;
use lmchatkit_tests::serve::{Served, serve};
use serde_json::{Value, json};

struct Setup {
    openai: MockUpstream,
    anthropic: MockAnthropic,
    server: Served,
}

/// `oa/mock-small` and `an/claude-think` are reasoning models, `oa/mock-large` and
/// `an/claude-plain` are not.
async fn setup() -> Setup {
    let openai = MockUpstream::start().await;
    let anthropic = MockAnthropic::start().await;
    let host = Providers::new()
        .with_backend(
            "oa",
            OpenAiBackend::new(OpenAiConfig::new(openai.base_url()).with_api_key("sk-oa")),
        )
        .unwrap()
        .with_backend(
            "an",
            AnthropicBackend::new(AnthropicConfig::new(anthropic.base_url()).with_api_key("sk-an")),
        )
        .unwrap();
    let mut catalog = Catalog::new()
        .with_provider("oa", true, None)
        .with_provider("an", true, None);
    for (id, reasoning) in [
        ("oa/mock-small", true),
        ("oa/mock-large", false),
        ("an/claude-think", true),
        ("an/claude-plain", false),
    ] {
        catalog = catalog
            .with_model(ModelSpec::new(id).with_reasoning(reasoning))
            .unwrap();
    }
    let config = Config::builder(host)
        .model_catalog(catalog)
        .build()
        .unwrap();
    let server = serve(ChatService::new(config)).await;
    Setup {
        openai,
        anthropic,
        server,
    }
}

/// One turn on `model` with effort `high`; the SSE events.
async fn turn(server: &Served, model: &str) -> Vec<Value> {
    let res = reqwest::Client::new()
        .post(server.url("/chat/api/chat"))
        .json(&json!({
            "model": model,
            "messages": [{"role": "user", "content": "hi"}],
            "params": {"reasoning_effort": "high"}
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "{model}");
    let text = res.text().await.unwrap();
    let events = lmchatkit_tests::serve::sse_data(&text);
    assert!(
        events.iter().any(|e| e["type"] == "done"),
        "{model}: {events:?}"
    );
    events
}

#[tokio::test]
async fn the_menu_lists_both_providers_models_under_their_names() {
    let s = setup().await;
    let models: Value = reqwest::get(s.server.url("/chat/api/models"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<(&str, &str, bool)> = models
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap(),
                m["provider"].as_str().unwrap(),
                m["reasoning"] == true,
            )
        })
        .collect();
    assert_eq!(
        ids,
        [
            ("oa/mock-large", "oa", false),
            ("oa/mock-small", "oa", true),
            ("an/claude-think", "an", true),
            ("an/claude-plain", "an", false),
        ]
    );
}

#[tokio::test]
async fn a_high_effort_reaches_openai_as_reasoning_effort_and_anthropic_as_a_thinking_budget() {
    let s = setup().await;
    let high = THINKING_BUDGETS
        .iter()
        .find(|(level, _)| *level == "high")
        .map(|(_, budget)| *budget)
        .unwrap();

    turn(&s.server, "oa/mock-small").await;
    let events = turn(&s.server, "an/claude-think").await;
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "delta")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert_eq!(text, mock_anthropic::REPLY);

    let oa = s.openai.observed.requests.lock().unwrap().clone();
    assert_eq!(oa.len(), 1);
    assert_eq!(
        oa[0]["model"], "mock-small",
        "the provider prefix is stripped"
    );
    assert_eq!(oa[0]["reasoning_effort"], "high", "{}", oa[0]);
    assert_eq!(oa[0].get("thinking"), None);

    let an = s.anthropic.observed.requests.lock().unwrap().clone();
    assert_eq!(an.len(), 1);
    assert_eq!(
        an[0]["model"], "claude-think",
        "the provider prefix is stripped"
    );
    assert_eq!(
        an[0]["thinking"],
        json!({"type": "enabled", "budget_tokens": high}),
        "{}",
        an[0]
    );
    assert!(an[0]["max_tokens"].as_u64().unwrap() > high, "{}", an[0]);
    assert_eq!(an[0].get("reasoning_effort"), None, "{}", an[0]);
    let keys = s.anthropic.observed.keys.lock().unwrap().clone();
    assert!(
        keys.iter().all(|k| k.as_deref() == Some("sk-an")),
        "{keys:?}"
    );
}

#[tokio::test]
async fn a_model_that_does_not_reason_gets_no_effort_on_either_provider() {
    let s = setup().await;
    turn(&s.server, "oa/mock-large").await;
    turn(&s.server, "an/claude-plain").await;

    let oa = s.openai.observed.requests.lock().unwrap().clone();
    assert_eq!(oa.len(), 1);
    assert_eq!(oa[0]["model"], "mock-large");
    assert_eq!(oa[0].get("reasoning_effort"), None, "{}", oa[0]);

    let an = s.anthropic.observed.requests.lock().unwrap().clone();
    assert_eq!(an.len(), 1);
    assert_eq!(an[0]["model"], "claude-plain");
    assert_eq!(an[0].get("thinking"), None, "{}", an[0]);
}

/// A tool call's arguments reach the native stream in the pieces each upstream sent them in
/// (OpenAI's `tool_calls[].function.arguments` chunks, Anthropic's `input_json_delta`s), each
/// piece naming the call, before the complete call, which they add up to.
#[tokio::test]
async fn a_tool_calls_arguments_stream_in_pieces_from_both_upstreams() {
    let s = setup().await;
    for (model, id) in [
        ("oa/mock-large", "call_1"),
        ("an/claude-plain", mock_anthropic::TOOL_USE_ID),
    ] {
        let res = reqwest::Client::new()
            .post(s.server.url("/chat/api/chat"))
            .json(&json!({"model": model,
                "messages": [{"role": "user", "content": "please use the tool"}]}))
            .send()
            .await
            .unwrap();
        let events = lmchatkit_tests::serve::sse_data(&res.text().await.unwrap());
        let pieces: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "tool_call_delta")
            .collect();
        assert!(pieces.len() >= 3, "{model}: {events:?}");
        assert!(
            pieces
                .iter()
                .all(|p| p["id"] == id && p["name"] == "get_weather"),
            "{model}: {pieces:?}"
        );
        let text: String = pieces
            .iter()
            .filter_map(|p| p["arguments_delta"].as_str())
            .collect();
        assert_eq!(text, r#"{"city": "Oslo"}"#, "{model}");
        let call_at = events
            .iter()
            .position(|e| e["type"] == "tool_call")
            .unwrap_or_else(|| panic!("{model}: no tool_call in {events:?}"));
        assert!(
            events[call_at..]
                .iter()
                .all(|e| e["type"] != "tool_call_delta"),
            "{model}: every piece before the call"
        );
        assert_eq!(events[call_at]["tool_call"]["id"], id, "{model}");
        assert_eq!(
            events[call_at]["tool_call"]["arguments"],
            json!({"city": "Oslo"}),
            "{model}"
        );
        assert_eq!(
            events.last().unwrap()["finish_reason"],
            "tool_calls",
            "{model}"
        );
    }
}
