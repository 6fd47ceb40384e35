//! The chat route over a real hyper server on loopback, against the mock OpenAI-compatible
//! upstream: tool-call round trip (the call's arguments streamed as `tool_call_delta`s first),
//! reasoning, usage, upstream failures (a reply cut off ends in
//! `error`, not `done`), and a stop (not a client disconnect) cancelling the upstream request.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::StreamExt;
use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::{ChatService, Config};
use lmchatkit_tests::mock_upstream::MockUpstream;
use lmchatkit_tests::serve::{Served, serve};
use lmchatkit_tests::test_host::TestHost;
use serde_json::{Value, json};

async fn setup() -> (MockUpstream, Served) {
    let mock = MockUpstream::start().await;
    let backend = OpenAiBackend::new(
        OpenAiConfig::new(mock.base_url())
            .with_api_key("sk-test")
            .with_idle_timeout(Duration::from_millis(800)),
    );
    let svc = ChatService::new(Config::builder(TestHost(backend)).build().unwrap());
    (mock, serve(svc).await)
}

async fn chat(server: &Served, messages: Value) -> Vec<Value> {
    let res = reqwest::Client::new()
        .post(server.url("/chat/api/chat"))
        .json(&json!({"model": "mock-small", "messages": messages}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let text = res.text().await.unwrap();
    lmchatkit_tests::serve::sse_data(&text)
}

#[tokio::test]
async fn models_come_from_the_upstream() {
    let (_mock, server) = setup().await;
    let models: Value = reqwest::get(server.url("/chat/api/models"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // Sorted by id.
    assert_eq!(
        models,
        json!([{"id": "mock-large", "provider": "mock", "configured": true},
               {"id": "mock-small", "provider": "mock", "configured": true}])
    );
}

#[tokio::test]
async fn tool_call_round_trip_with_usage() {
    let (mock, server) = setup().await;
    let mut messages = json!([{"role": "user", "content": "please use the tool for Oslo"}]);
    let events = chat(&server, messages.clone()).await;
    let piece = |delta: &str| json!({"type": "tool_call_delta", "id": "call_1", "name": "get_weather", "arguments_delta": delta});
    assert_eq!(
        events,
        vec![
            // The arguments stream as the upstream sent them (split over three chunks), the
            // call known from its first chunk on; the tool has no view, so no `ui`.
            piece(""),
            piece("{\"ci"),
            piece("ty\": \"Os"),
            piece("lo\"}"),
            // A call the user is asked about carries its schema's hints for the card.
            json!({"type": "tool_call", "decision": "ask", "tool_call": {"id": "call_1", "name": "get_weather", "arguments": {"city": "Oslo"},
                "hints": [{"name": "city", "description": "The city to look up, e.g. <b>Oslo</b>", "required": true},
                          {"name": "units", "description": "Celsius or Fahrenheit"}]}}),
            json!({"type": "done", "finish_reason": "tool_calls"}),
        ]
    );
    // The upstream got the system prompt, the tool schema, stream options and the bearer token.
    let first = mock.observed.requests.lock().unwrap()[0].clone();
    assert_eq!(
        first["messages"][0],
        json!({"role": "system", "content": "You are a helpful assistant."})
    );
    assert_eq!(first["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(first["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        mock.observed.auth.lock().unwrap()[0].as_deref(),
        Some("Bearer sk-test")
    );

    // The browser approves and runs the call, then posts the next turn.
    let call = events[4]["tool_call"].clone();
    let result: Value = reqwest::Client::new()
        .post(server.url("/chat/api/tools/call"))
        .json(&json!({"name": call["name"], "arguments": call["arguments"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(result, json!({"content": "Oslo: sunny, 21 °C"}));
    let arr = messages.as_array_mut().unwrap();
    arr.push(json!({"role": "assistant", "content": "", "tool_calls": [call]}));
    arr.push(json!({"role": "tool", "tool_call_id": "call_1", "tool_name": "get_weather", "content": result["content"]}));
    let events = chat(&server, messages).await;
    let text: String = events.iter().filter_map(|e| e["delta"].as_str()).collect();
    assert_eq!(text, "The weather in Oslo is sunny.");
    assert_eq!(
        events.last().unwrap(),
        &json!({"type": "done", "finish_reason": "stop", "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}})
    );
    let second = mock.observed.requests.lock().unwrap()[1].clone();
    assert_eq!(
        second["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{\"city\":\"Oslo\"}"
    );
    assert_eq!(
        second["messages"][3],
        json!({"role": "tool", "content": "Oslo: sunny, 21 °C", "tool_call_id": "call_1"})
    );
}

#[tokio::test]
async fn reasoning_streams_before_text() {
    let (_mock, server) = setup().await;
    let events = chat(&server, json!([{"role": "user", "content": "think first"}])).await;
    assert_eq!(
        events,
        vec![
            json!({"type": "reasoning", "reasoning": "Let me "}),
            json!({"type": "reasoning", "reasoning": "think."}),
            json!({"type": "delta", "delta": "Thought it through."}),
            json!({"type": "done", "finish_reason": "stop"}),
        ]
    );
}

#[tokio::test]
async fn upstream_failures_become_error_events_and_the_service_stays_up() {
    let (_mock, server) = setup().await;
    let events = chat(&server, json!([{"role": "user", "content": "fail500"}])).await;
    assert_eq!(events.len(), 1);
    let err = events[0]["error"].as_str().unwrap();
    assert!(
        err.contains("500") && err.contains("mock exploded"),
        "{err}"
    );

    let events = chat(&server, json!([{"role": "user", "content": "cut me off"}])).await;
    let text: String = events.iter().filter_map(|e| e["delta"].as_str()).collect();
    assert_eq!(
        text, "partial reply",
        "what streamed before the cut is kept"
    );
    let err = events.last().unwrap()["error"].as_str().unwrap_or_default();
    assert!(err.starts_with("the reply was cut off: "), "{events:?}");

    let events = chat(&server, json!([{"role": "user", "content": "stall now"}])).await;
    assert_eq!(events[0], json!({"type": "delta", "delta": "waiting"}));
    assert!(
        events[1]["error"].as_str().unwrap().contains("stalled"),
        "{:?}",
        events[1]
    );

    // Still serving.
    let events = chat(&server, json!([{"role": "user", "content": "hello"}])).await;
    assert_eq!(events.last().unwrap()["finish_reason"], "stop");
}

#[tokio::test]
async fn a_reply_the_upstream_ends_early_keeps_its_deltas_and_ends_in_an_error_not_done() {
    let (_mock, server) = setup().await;
    let events = chat(
        &server,
        json!([{"role": "user", "content": "truncated please"}]),
    )
    .await;
    assert_eq!(
        events,
        vec![
            json!({"type": "delta", "delta": "partial "}),
            json!({"type": "delta", "delta": "reply"}),
            json!({"type": "error", "error": "the reply was cut off: the upstream ended the stream before the reply was finished"}),
        ]
    );
}

#[tokio::test]
async fn refused_upstream_is_an_error_event() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let backend = OpenAiBackend::new(OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1")));
    let server = serve(ChatService::new(Config::builder(backend).build().unwrap())).await;
    let events = chat(&server, json!([{"role": "user", "content": "hi"}])).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["type"], "error");
    let res = reqwest::get(server.url("/chat/api/models")).await.unwrap();
    assert_eq!(res.status(), 502);
}

#[tokio::test]
async fn a_client_that_leaves_stops_nothing_and_a_stop_cancels_the_upstream_request() {
    let (mock, server) = setup().await;
    let res = reqwest::Client::new()
        .post(server.url("/chat/api/chat"))
        .json(&json!({"model": "mock-small", "messages": [{"role": "user", "content": "slow please"}]}))
        .send()
        .await
        .unwrap();
    let run = res.headers()[lmchatkit::protocol::RUN_ID_HEADER]
        .to_str()
        .unwrap()
        .to_owned();
    let mut body = res.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert!(first.starts_with(b"id: 1\ndata: {\"type\":\"delta\""));
    drop(body);
    let observed = Arc::clone(&mock.observed);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        observed.dropped_early.load(Ordering::SeqCst),
        0,
        "the run goes on without its client"
    );

    let asked = tokio::time::Instant::now();
    let stop = reqwest::Client::new()
        .post(server.url(&format!("/chat/api/runs/{run}/stop")))
        .send()
        .await
        .unwrap();
    assert_eq!(stop.status(), 200);
    while observed.dropped_early.load(Ordering::SeqCst) == 0 {
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "the upstream never saw the request cancelled"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    println!("stop → upstream stream dropped: {:?}", asked.elapsed());
    assert_eq!(observed.completed.load(Ordering::SeqCst), 0);
}
