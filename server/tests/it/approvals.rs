//! The approval policy through the routes: the per-principal "always allow" list
//! (`/api/tools/approvals`), a model's call of a denied tool refused by `/api/tools/call`, and
//! the policy's decision on every `tool_call` event of the chat stream.

use crate::support;

use std::sync::Arc;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use lmchatkit::protocol::ToolDecision::Ask;
use lmchatkit::protocol::*;
use lmchatkit::store::SqliteStore;
use lmchatkit::{ApprovalPolicy, ChatService, Principal};
use serde_json::{Value, json};
use support::{FakeHost, Reply, config, get, post, put, send, service, tool};

const APPROVALS: &str = "/chat/api/tools/approvals";

fn as_user(who: &str, mut req: Request<Full<Bytes>>) -> Request<Full<Bytes>> {
    req.extensions_mut().insert(Principal::new(who));
    req
}

/// Tools `fs__read`, `fs__rm` and `web__fetch`, visible to the model and to views of `fs`.
fn host() -> FakeHost {
    let both = [Visibility::Model, Visibility::App];
    let mut h = FakeHost {
        models: vec![Model::new("m")],
        tools: vec![
            tool("fs__read", &both),
            tool("fs__rm", &both),
            tool("fs__show", &both),
            tool("web__fetch", &both),
        ],
        ..Default::default()
    };
    for (t, s) in [
        ("fs__read", "fs"),
        ("fs__rm", "fs"),
        ("fs__show", "fs"),
        ("web__fetch", "web"),
    ] {
        h.sources.insert(t.into(), s.into());
    }
    h
}

fn policy() -> ApprovalPolicy {
    ApprovalPolicy::new(Ask).allow("fs__*").deny("*__rm")
}

async fn always(svc: &ChatService, who: &str) -> Value {
    let r = send(svc, as_user(who, get(APPROVALS))).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

async fn set_always(svc: &ChatService, who: &str, body: Value) -> Reply {
    send(svc, as_user(who, put(APPROVALS, &body))).await
}

#[tokio::test]
async fn each_principal_reads_and_replaces_only_their_own_list() {
    let svc = service(config(host()));
    assert_eq!(always(&svc, "alice").await, json!({"always": []}));
    let r = set_always(
        &svc,
        "alice",
        json!({"always": [" web__fetch ", "", "fs__read", "web__fetch"]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    // The answer is the list as stored: trimmed, without blanks and repeats.
    assert_eq!(r.json(), json!({"always": ["web__fetch", "fs__read"]}));
    assert_eq!(
        always(&svc, "alice").await,
        json!({"always": ["web__fetch", "fs__read"]})
    );
    assert_eq!(always(&svc, "bob").await, json!({"always": []}));
    set_always(&svc, "bob", json!({"always": ["x"]})).await;
    // A PUT replaces the list.
    set_always(&svc, "alice", json!({"always": ["fs__read"]})).await;
    assert_eq!(always(&svc, "alice").await, json!({"always": ["fs__read"]}));
    assert_eq!(always(&svc, "bob").await, json!({"always": ["x"]}));
}

#[tokio::test]
async fn a_bad_list_is_a_4xx_json_error_and_changes_nothing() {
    let svc = service(config(host()));
    set_always(&svc, "alice", json!({"always": ["keep"]})).await;
    let too_many: Vec<String> = (0..1001).map(|i| format!("t{i}")).collect();
    for (body, status) in [
        (json!({"always": too_many}), 400),
        (json!({"always": ["x".repeat(257)]}), 400),
        (json!({"always": ["a\u{7}b"]}), 400),
        (json!({"always": "fs__read"}), 400),
        (json!({"always": [1, 2]}), 400),
    ] {
        let r = set_always(&svc, "alice", body.clone()).await;
        assert_eq!(r.status.as_u16(), status, "{body}: {}", r.text());
        assert!(!r.error().is_empty(), "{body}");
    }
    let r = send(
        &svc,
        Request::put(APPROVALS)
            .header("content-type", "text/plain")
            .body(Full::new(Bytes::from(r#"{"always":[]}"#)))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 415);
    assert_eq!(always(&svc, "alice").await, json!({"always": ["keep"]}));
}

#[tokio::test]
async fn a_cross_origin_put_is_refused_and_a_principal_is_required_when_configured() {
    let svc = service(config(host()).allowed_host("chat.example"));
    let r = send(
        &svc,
        Request::put(APPROVALS)
            .header("content-type", "application/json")
            .header("host", "chat.example:8080")
            .header("origin", "https://evil.example")
            .body(Full::new(Bytes::from(r#"{"always":["fs__read"]}"#)))
            .unwrap(),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.error().contains("cross-origin")),
        (403, true)
    );
    assert_eq!(always(&svc, "").await, json!({"always": []}));
    let strict = service(config(host()).require_principal(true));
    assert_eq!(send(&strict, get(APPROVALS)).await.status, 401);
    let r = send(&strict, put(APPROVALS, &json!({"always": []}))).await;
    assert_eq!(r.status, 401);
}

fn model_call(name: &str) -> Request<Full<Bytes>> {
    post(
        "/chat/api/tools/call",
        &json!({"name": name, "arguments": {"p": 1}}),
    )
}

#[tokio::test]
async fn a_denied_tool_is_refused_to_the_model_and_to_views() {
    let h = host();
    let calls = h.calls.clone();
    let svc = service(config(h).approval_policy(policy()));
    let r = send(&svc, model_call("fs__rm")).await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.error(),
        r#"tool "fs__rm" is blocked by the operator's policy"#
    );
    assert!(calls.lock().unwrap().is_empty(), "the tool never ran");
    // Allowed and asked tools run (the UI asked the user before posting).
    assert_eq!(send(&svc, model_call("fs__read")).await.status, 200);
    assert_eq!(send(&svc, model_call("web__fetch")).await.status, 200);
    // A view of `fs` is not asked about its calls, but a denied tool is refused to it too.
    let r = send(
        &svc,
        post(
            "/chat/api/tools/call",
            &json!({"name": "fs__rm", "arguments": {}, "source": "app", "via": "fs__show"}),
        ),
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text());
    let ran: Vec<String> = calls.lock().unwrap().iter().map(|c| c.0.clone()).collect();
    assert_eq!(ran, ["fs__read", "web__fetch"]);
}

#[tokio::test]
async fn a_stored_always_of_a_denied_tool_is_accepted_but_the_tool_stays_denied() {
    let svc = service(config(host()).approval_policy(policy()));
    let r = set_always(&svc, "alice", json!({"always": ["fs__rm"]})).await;
    assert_eq!(r.status, 200);
    assert_eq!(always(&svc, "alice").await, json!({"always": ["fs__rm"]}));
    let r = send(&svc, as_user("alice", model_call("fs__rm"))).await;
    assert_eq!(r.status, 403);
}

fn call_event(id: &str, name: &str) -> Event {
    Event::tool_call(ToolCall::new(id, name, json!({})))
}

async fn decisions(svc: &ChatService, who: &str) -> Vec<Value> {
    let r = send(
        svc,
        as_user(
            who,
            post(
                "/chat/api/chat",
                &json!({"model": "m", "messages": [{"role": "user", "content": "go"}]}),
            ),
        ),
    )
    .await;
    assert_eq!(r.status, 200);
    r.sse()
        .into_iter()
        .filter(|e| e["type"] == "tool_call")
        .map(|e| json!([e["tool_call"]["name"], e["decision"]]))
        .collect()
}

fn chatty_host() -> FakeHost {
    let mut h = host();
    h.events = vec![
        Event::delta("working"),
        call_event("c1", "fs__read"),
        call_event("c2", "web__fetch"),
        call_event("c3", "fs__rm"),
        Event::done(FinishReason::ToolCalls, None),
    ];
    h
}

#[tokio::test]
async fn the_chat_stream_tells_each_call_s_decision_for_the_caller() {
    let svc = service(config(chatty_host()).approval_policy(policy()));
    set_always(&svc, "alice", json!({"always": ["web__fetch", "fs__rm"]})).await;
    assert_eq!(
        decisions(&svc, "bob").await,
        [
            json!(["fs__read", "allow"]),
            json!(["web__fetch", "ask"]),
            json!(["fs__rm", "deny"])
        ]
    );
    // Alice always allows web__fetch; her "always" for fs__rm changes nothing.
    assert_eq!(
        decisions(&svc, "alice").await,
        [
            json!(["fs__read", "allow"]),
            json!(["web__fetch", "allow"]),
            json!(["fs__rm", "deny"])
        ]
    );
}

#[tokio::test]
async fn without_a_policy_every_call_asks_and_other_events_are_untouched() {
    let svc = service(config(chatty_host()));
    let r = send(
        &svc,
        post(
            "/chat/api/chat",
            &json!({"model": "m", "messages": [{"role": "user", "content": "go"}]}),
        ),
    )
    .await;
    let events = r.sse();
    assert_eq!(events[0], json!({"type": "delta", "delta": "working"}));
    assert_eq!(events[1]["decision"], "ask");
    assert_eq!(events.len(), 5);
    assert_eq!(
        decisions(&svc, "x")
            .await
            .iter()
            .map(|d| d[1].clone())
            .collect::<Vec<_>>(),
        [json!("ask"), json!("ask"), json!("ask")]
    );
}

#[tokio::test]
async fn the_sqlite_history_file_keeps_the_lists() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let svc = service(config(host()).approval_store(store));
    set_always(&svc, "alice", json!({"always": ["web__fetch"]})).await;
    drop(svc);
    let svc = service(config(host()).approval_store(Arc::new(SqliteStore::open(&path).unwrap())));
    assert_eq!(
        always(&svc, "alice").await,
        json!({"always": ["web__fetch"]})
    );
}
