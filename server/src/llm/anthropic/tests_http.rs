//! [`AnthropicBackend`] against a tiny HTTP server on 127.0.0.1 (the OpenAI tests' servers):
//! the headers and body sent, streamed replies, error statuses, stalls, cut connections,
//! cancellation and model listing.

use std::time::Duration;

use futures_util::StreamExt;
use http::{Request, StatusCode};
use hyper::body::Incoming;
use lmchatkit_protocol::{Event, FinishReason, Message, Model, ToolCall, Usage};
use serde_json::json;
use tokio::sync::mpsc;

use super::tests_translate::{ev, text};
use super::{AnthropicBackend, AnthropicConfig};
use crate::host::{CompleteRequest, Host, HostError};
use crate::llm::openai::tests_http::{
    UNTIL_CLOSE, collect_turn, cx, endless, full, logs_of, noticing_close, recording_json, serve,
    serve_raw, stalling,
};

/// The end of a reply: the stop reason, its usage, and `message_stop`.
fn ending() -> String {
    [
        ev(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}})),
        ev(json!({"type": "message_stop"})),
    ]
    .concat()
}

fn chat() -> CompleteRequest {
    CompleteRequest {
        model: "claude-test".into(),
        messages: vec![Message::user("hi")],
        ..Default::default()
    }
}

async fn collect(backend: &AnthropicBackend, req: CompleteRequest) -> Vec<Event> {
    collect_turn(backend, req).await
}

#[tokio::test]
async fn a_tool_round_trip_with_an_effort_is_posted_with_the_anthropic_headers() {
    let sse = [text("Sunny"), text(" in Paris."), ending()].concat();
    let (base, mut seen) = recording_json(sse).await;
    let backend = AnthropicBackend::new(
        AnthropicConfig::new(format!("{base}/"))
            .with_api_key("sk-ant-test")
            .with_header("anthropic-beta", "tools-2099")
            .with_max_tokens(2000),
    );
    let mut req = chat();
    req.messages = vec![
        Message::system("Be brief."),
        Message::user("Weather in Paris?"),
        Message::assistant("").with_tool_calls(vec![ToolCall::new(
            "toolu_1",
            "weather",
            json!({"city": "Paris"}),
        )]),
        Message::tool("toolu_1", "weather", "sunny"),
        Message::assistant("Sunny."),
        Message::user("Why?"),
    ];
    req.params = json!({"reasoning_effort": "medium", "seed": 1})
        .as_object()
        .unwrap()
        .clone();
    let usage = Usage {
        prompt_tokens: None,
        completion_tokens: Some(2),
        total_tokens: Some(2),
        ..Default::default()
    };
    assert_eq!(
        collect(&backend, req).await,
        [
            Event::delta("Sunny"),
            Event::delta(" in Paris."),
            Event::done(FinishReason::Stop, Some(usage))
        ]
    );
    let (parts, body) = seen.recv().await.unwrap();
    assert_eq!(parts.method, http::Method::POST);
    assert_eq!(parts.uri.path(), "/v1/messages");
    assert_eq!(parts.headers["x-api-key"], "sk-ant-test");
    assert_eq!(parts.headers["anthropic-version"], "2023-06-01");
    assert_eq!(parts.headers["anthropic-beta"], "tools-2099");
    assert_eq!(parts.headers["content-type"], "application/json");
    assert!(!parts.headers.contains_key("authorization"));
    assert_eq!(
        body,
        json!({
            "model": "claude-test",
            "system": "Be brief.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}}
                ]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "Sunny."}]},
                {"role": "user", "content": [{"type": "text", "text": "Why?"}]}
            ],
            "stream": true,
            "thinking": {"type": "enabled", "budget_tokens": 4096},
            "max_tokens": 6096
        })
    );
}

#[tokio::test]
async fn a_custom_anthropic_version_replaces_the_default() {
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let base = serve(move |req: Request<Incoming>| {
        let seen_tx = seen_tx.clone();
        async move {
            let _ = seen_tx.send(req.headers().clone());
            full(StatusCode::OK, "text/event-stream", ending())
        }
    })
    .await;
    let backend = AnthropicBackend::new(
        AnthropicConfig::new(base).with_header("Anthropic-Version", "2099-01-01"),
    );
    collect(&backend, chat()).await;
    let headers = seen.recv().await.unwrap();
    let versions: Vec<_> = headers.get_all("anthropic-version").iter().collect();
    assert_eq!(versions, ["2099-01-01"]);
}

#[tokio::test]
async fn an_error_status_is_one_error_event_with_anthropics_message() {
    let base = serve(|_req| async {
        let body = json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "max_tokens: must be greater than thinking.budget_tokens"}});
        full(
            StatusCode::BAD_REQUEST,
            "application/json",
            body.to_string(),
        )
    })
    .await;
    let backend = AnthropicBackend::new(AnthropicConfig::new(base));
    assert_eq!(
        collect(&backend, chat()).await,
        [Event::error(
            "upstream returned 400 Bad Request: invalid_request_error: max_tokens: must be \
             greater than thinking.budget_tokens"
        )]
    );
    let base =
        serve(|_req| async { full(StatusCode::BAD_GATEWAY, "text/html", "<h1>bad gateway</h1>") })
            .await;
    let backend = AnthropicBackend::new(AnthropicConfig::new(base));
    assert_eq!(
        collect(&backend, chat()).await,
        [Event::error(
            "upstream returned 502 Bad Gateway: <h1>bad gateway</h1>"
        )]
    );
}

#[tokio::test]
async fn an_overloaded_error_after_a_200_is_an_error_event() {
    let base = serve(|_req| async {
        let sse = ev(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));
        full(StatusCode::OK, "text/event-stream", sse)
    })
    .await;
    let backend = AnthropicBackend::new(AnthropicConfig::new(base));
    assert_eq!(
        collect(&backend, chat()).await,
        [Event::error("upstream error: overloaded_error: Overloaded")]
    );
}

#[tokio::test]
async fn a_stalled_stream_ends_with_an_idle_timeout_error() {
    let base = stalling(text("before the stall")).await;
    let backend = AnthropicBackend::new(
        AnthropicConfig::new(base).with_idle_timeout(Duration::from_millis(300)),
    );
    assert_eq!(
        collect(&backend, chat()).await,
        [
            Event::delta("before the stall"),
            Event::error("the reply was cut off: upstream stalled: no data for 0.3 s")
        ]
    );
}

#[tokio::test]
async fn a_reply_that_never_ends_is_cut_off_at_the_total_timeout() {
    let base = endless(text("more ")).await;
    let backend = AnthropicBackend::new(
        AnthropicConfig::new(base).with_total_timeout(Duration::from_millis(400)),
    );
    let events = collect(&backend, chat()).await;
    assert_eq!(events[0], Event::delta("more "));
    assert_eq!(
        events.last(),
        Some(&Event::error(
            "the reply was cut off: upstream reply exceeded the turn's total timeout"
        ))
    );
}

#[tokio::test]
async fn a_connection_closed_before_the_stop_reason_is_a_cut_off_reply() {
    let base = serve_raw(UNTIL_CLOSE, vec![text("Hel"), text("lo")]).await;
    let backend = AnthropicBackend::new(AnthropicConfig::new(base));
    assert_eq!(
        collect(&backend, chat()).await,
        [
            Event::delta("Hel"),
            Event::delta("lo"),
            Event::error(
                "the reply was cut off: the upstream ended the stream before the reply was finished"
            )
        ]
    );
}

#[tokio::test]
async fn dropping_the_stream_closes_the_upstream_connection() {
    let ping = b"event: ping\ndata: {\"type\":\"ping\"}\n\n";
    let (base, mut closed) = noticing_close(text("tick"), ping).await;
    let backend = AnthropicBackend::new(AnthropicConfig::new(base));
    let mut events = backend.complete(&cx(), chat());
    assert_eq!(events.next().await, Some(Event::delta("tick")));
    drop(events);
    tokio::time::timeout(Duration::from_secs(10), closed.recv())
        .await
        .expect("the server sees the connection close")
        .unwrap();
}

#[tokio::test]
async fn models_come_from_the_models_endpoint_or_the_configuration() {
    let base = serve(|req: Request<Incoming>| async move {
        let keyed = req.headers().get("x-api-key").map(|v| v.as_bytes()) == Some(b"sk-m".as_slice());
        match (req.uri().path(), req.uri().query(), keyed) {
            ("/v1/models", Some("limit=1000"), true) => full(
                StatusCode::OK,
                "application/json",
                json!({"data": [
                    {"type": "model", "id": "claude-new", "display_name": "Claude New", "created_at": "2026-01-01T00:00:00Z"},
                    {"type": "model", "id": "claude-old", "display_name": ""}
                ], "has_more": false}).to_string(),
            ),
            _ => full(
                StatusCode::UNAUTHORIZED,
                "application/json",
                json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}).to_string(),
            ),
        }
    })
    .await;
    let backend = AnthropicBackend::new(AnthropicConfig::new(&base).with_api_key("sk-m"));
    let mut new = Model::new("claude-new");
    new.label = Some("Claude New".into());
    new.provider = Some("anthropic".into());
    let mut old = Model::new("claude-old");
    old.provider = Some("anthropic".into());
    assert_eq!(backend.models(&cx()).await.unwrap(), [new, old]);

    let unkeyed = AnthropicBackend::new(AnthropicConfig::new(&base));
    assert_eq!(
        unkeyed.models(&cx()).await,
        Err(HostError::Upstream(
            "cannot list models: upstream returned 401 Unauthorized: authentication_error: invalid x-api-key".into()
        ))
    );
    let listed = vec![Model::new("claude-configured")];
    let configured = AnthropicBackend::new(AnthropicConfig::new(&base).with_models(listed.clone()));
    assert_eq!(configured.models(&cx()).await.unwrap(), listed);
}

#[tokio::test]
async fn the_model_list_is_read_once_per_ttl_and_the_last_one_serves_while_the_upstream_fails() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = hits.clone();
    let base = serve(move |_req: Request<Incoming>| {
        let n = seen.fetch_add(1, Ordering::SeqCst);
        async move {
            match n {
                0 | 1 => full(
                    StatusCode::OK,
                    "application/json",
                    json!({"data": [{"id": format!("claude-{n}")}]}).to_string(),
                ),
                _ => full(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "application/json",
                    json!({"type": "error", "error": {"type": "overloaded_error", "message": "down"}}).to_string(),
                ),
            }
        }
    })
    .await;
    let model = |id: &str| Model {
        provider: Some("anthropic".into()),
        ..Model::new(id)
    };
    let cached = AnthropicBackend::new(AnthropicConfig::new(&base));
    assert_eq!(cached.models(&cx()).await.unwrap(), [model("claude-0")]);
    assert_eq!(cached.models(&cx()).await.unwrap(), [model("claude-0")]);
    assert_eq!(
        hits.load(Ordering::SeqCst),
        1,
        "the second list came from the cache"
    );

    let expiring =
        AnthropicBackend::new(AnthropicConfig::new(&base).with_models_ttl(Duration::ZERO));
    assert_eq!(expiring.models(&cx()).await.unwrap(), [model("claude-1")]);
    // The upstream fails now: the last list is served, not an error.
    assert_eq!(expiring.models(&cx()).await.unwrap(), [model("claude-1")]);
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    let fresh = AnthropicBackend::new(AnthropicConfig::new(&base));
    let Err(HostError::Upstream(msg)) = fresh.models(&cx()).await else {
        panic!("no list yet: the error shows")
    };
    assert!(msg.contains("overloaded_error: down"), "{msg}");
}

#[test]
fn the_translators_warnings_carry_the_upstream_span() {
    let logs = logs_of(async {
        let base = serve(|_req| async {
            let sse = [
                "event: ping\ndata: not json\n\n".into(),
                text("ok"),
                ending(),
            ]
            .concat();
            full(StatusCode::OK, "text/event-stream", sse)
        })
        .await;
        let backend = AnthropicBackend::new(AnthropicConfig::new(base));
        let got = collect(&backend, chat()).await;
        assert_eq!(got[0], Event::delta("ok"), "{got:?}");
    });
    let line = logs
        .lines()
        .find(|l| l.contains("skipping an upstream event that is not a JSON object"))
        .unwrap_or_else(|| panic!("no warning: {logs}"));
    assert!(
        line.contains("upstream{url=") && line.contains("model=claude-test"),
        "{line}"
    );
}
