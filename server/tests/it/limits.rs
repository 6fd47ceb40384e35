//! What one client can make the service hold: opaque JSON measured before it is parsed, body
//! reads that time out, chat streams capped per principal and in total, and MCP server states
//! for the operator only.

use crate::support;

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use lmchatkit::Principal;
use lmchatkit::protocol::{Event, McpServerStatus, Model, SetupProblem};
use serde_json::json;
use support::*;
use tower::ServiceExt;

fn chat_body(extra: serde_json::Value) -> serde_json::Value {
    let mut body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    body
}

/// Before, `model_context` of any size was parsed into a tree and appended to the prompt.
#[tokio::test]
async fn a_model_context_over_its_cap_is_413_before_the_turn() {
    let host = FakeHost {
        models: vec![Model::new("m")],
        ..FakeHost::default()
    };
    let seen = host.seen.clone();
    let svc = service(config(host));
    let big = json!({"model_context": {"text": "x".repeat(70 << 10)}});
    let r = send(&svc, post("/chat/api/chat", &chat_body(big))).await;
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(r.error().contains("model_context"), "{}", r.error());
    assert!(seen.lock().unwrap().is_empty(), "no turn ran");

    let small = json!({"model_context": {"text": "x".repeat(60 << 10)}});
    let r = send(&svc, post("/chat/api/chat", &chat_body(small))).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

/// An array of small numbers costs ~30× its size as a tree: refused whole, unparsed.
#[tokio::test]
async fn tool_arguments_over_their_cap_are_413_and_the_cap_is_configurable() {
    let host = FakeHost {
        tools: vec![tool("t", &[])],
        unscoped: true,
        ..FakeHost::default()
    };
    let calls = host.calls.clone();
    let svc = service(config(host).body_limit(16 << 20));
    let numbers = vec![1u8; 600_000]; // "1," × 600k = 1.2 MB
    let r = send(
        &svc,
        post(
            "/chat/api/tools/call",
            &json!({"name": "t", "arguments": {"n": numbers}}),
        ),
    )
    .await;
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(r.error().contains("arguments"), "{}", r.error());
    assert!(calls.lock().unwrap().is_empty());

    let host = FakeHost {
        tools: vec![tool("t", &[])],
        unscoped: true,
        ..FakeHost::default()
    };
    let svc = service(config(host).max_arguments_bytes(32));
    let args = json!({"name": "t", "arguments": {"q": "a string of more than 32 bytes"}});
    let r = send(&svc, post("/chat/api/tools/call", &args)).await;
    assert_eq!(r.status, 413, "{}", r.text());
    let args = json!({"name": "t", "arguments": {"q": "short"}});
    let r = send(&svc, post("/chat/api/tools/call", &args)).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

/// A body that starts and then stops: 408 after the body timeout, not a request held open.
#[tokio::test]
async fn a_body_that_stops_arriving_is_408() {
    let svc = service(config(FakeHost::default()).body_timeout(Duration::from_millis(300)));
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(1);
    tx.send(Ok(Frame::data(Bytes::from_static(b"{\"model\":"))))
        .await
        .unwrap();
    let body = StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx));
    let req = Request::post("/chat/api/chat")
        .header("content-type", "application/json")
        .body(body)
        .unwrap();
    let started = std::time::Instant::now();
    let res = tokio::time::timeout(Duration::from_secs(5), svc.oneshot(req))
        .await
        .expect("answered before the test's own timeout")
        .unwrap();
    assert_eq!(res.status(), 408);
    assert!(started.elapsed() >= Duration::from_millis(250));
    drop(tx);
}

fn chat_as(who: &str) -> Request<http_body_util::Full<Bytes>> {
    let mut req = post("/chat/api/chat", &chat_body(json!({})));
    req.extensions_mut().insert(Principal::new(who));
    req
}

/// Streams are counted while their bodies are open; one more than the cap is 429 with
/// `Retry-After`, per principal and in total, and an ended stream frees its place.
#[tokio::test]
async fn chat_streams_are_capped_per_principal_and_in_total() {
    let host = FakeHost {
        models: vec![Model::new("m")],
        events: vec![Event::delta("hello")],
        ..FakeHost::default()
    };
    let svc = service(config(host).max_streams(2, 3));
    let open = |who: &'static str| {
        let svc = svc.clone();
        async move { svc.oneshot(chat_as(who)).await.unwrap() }
    };
    let a1 = open("alice").await;
    let a2 = open("alice").await;
    assert_eq!((a1.status().as_u16(), a2.status().as_u16()), (200, 200));
    let a3 = open("alice").await;
    assert_eq!(a3.status(), 429);
    assert!(
        a3.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= 1
    );
    let b1 = open("bob").await;
    assert_eq!(b1.status(), 200, "bob has his own allowance");
    let c1 = open("carol").await;
    assert_eq!(c1.status(), 429, "the total is reached");

    // Reading a stream to its end frees its place.
    a1.into_body().collect().await.unwrap();
    assert_eq!(open("carol").await.status(), 200);
    // So does a client going away mid-stream (the body is dropped).
    drop(a2);
    assert_eq!(open("alice").await.status(), 200);
}

/// The AI SDK route counts its streams the same way: a reply that has ended still holds its
/// place until its client has read it or left.
#[tokio::test]
async fn ai_sdk_streams_are_capped_until_their_bodies_are_done() {
    let host = FakeHost {
        models: vec![Model::new("m")],
        events: vec![Event::delta("hello")],
        ..FakeHost::default()
    };
    let svc = service(config(host).max_streams(1, 4));
    let open = |thread: &'static str| {
        let svc = svc.clone();
        let mut req = post(
            "/chat/api/aisdk/chat",
            &json!({"id": thread, "model": "m", "trigger": "submit-message", "messages": [
                {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}),
        );
        req.extensions_mut().insert(Principal::new("alice"));
        async move { svc.oneshot(req).await.unwrap() }
    };
    let first = open("t1").await;
    assert_eq!(first.status(), 200);
    assert_eq!(open("t2").await.status(), 429);
    first.into_body().collect().await.unwrap();
    assert_eq!(open("t2").await.status(), 200);
}

fn config_as(who: &str) -> Request<http_body_util::Full<Bytes>> {
    let mut req = get("/chat/api/config");
    req.extensions_mut().insert(Principal::new(who));
    req
}

/// Connection errors and set-up problems can carry server names, URLs and commands: with an
/// operator configured, only they see the MCP server states and the host's problems.
#[tokio::test]
async fn mcp_states_and_setup_problems_are_shown_to_the_operator_only() {
    let statuses = || {
        vec![McpServerStatus::new(
            "files",
            "error",
            Some("refused".into()),
        )]
    };
    let host = || FakeHost {
        problems: vec![SetupProblem::new(
            "provider claude",
            "listing models at http://10.0.0.7/models failed: 404",
            "set `base_url` to http://10.0.0.7/v1",
        )],
        ..FakeHost::default()
    };
    let count = |r: &Reply, key: &str| r.json()[key].as_array().map_or(0, Vec::len);
    let svc = service(config(host()).mcp_status(statuses).operator("alice"));
    let r = send(&svc, config_as("alice")).await;
    assert_eq!(
        (count(&r, "mcp"), count(&r, "problems")),
        (1, 1),
        "{}",
        r.text()
    );
    assert_eq!(r.json()["problems"][0]["subject"], "provider claude");
    let r = send(&svc, config_as("bob")).await;
    assert_eq!(
        (count(&r, "mcp"), count(&r, "problems")),
        (0, 0),
        "{}",
        r.text()
    );
    assert!(!r.text().contains("10.0.0.7"), "{}", r.text());

    let open = service(config(host()).mcp_status(statuses));
    let r = send(&open, config_as("bob")).await;
    assert_eq!(
        (count(&r, "mcp"), count(&r, "problems")),
        (1, 1),
        "no operator: everyone"
    );
}

/// An upload that stops sending: 408 once nothing came for the body timeout.
#[tokio::test]
async fn an_upload_that_stops_arriving_is_408() {
    let svc = service(
        config(FakeHost::default())
            .file_upload(true)
            .body_timeout(Duration::from_millis(300)),
    );
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(1);
    let head = "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\
                Content-Type: text/plain\r\n\r\npartial";
    tx.send(Ok(Frame::data(Bytes::from(head)))).await.unwrap();
    let body = StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx));
    let req = Request::post("/chat/api/upload")
        .header("content-type", "multipart/form-data; boundary=b")
        .body(body)
        .unwrap();
    let res = tokio::time::timeout(Duration::from_secs(5), svc.oneshot(req))
        .await
        .expect("answered before the test's own timeout")
        .unwrap();
    assert_eq!(res.status(), 408);
    drop(tx);
}
