//! The AI SDK routes through the service, with a scripted host: the UI Message Stream, the
//! server-side tool loop and its approval round trip, bound approvals, threads and models.
//! (The real `ai` client drives the same routes in the tests crate.)

use crate::support;

use std::sync::Arc;

use lmchatkit::protocol::*;
use lmchatkit::store::{HistoryStore, MemoryStore};
use lmchatkit::{ApprovalPolicy, ChatService, Principal};
use serde_json::{Value, json};
use support::*;

const CHAT: &str = "/chat/api/aisdk/chat";

fn weather_call() -> Event {
    Event::ToolCall {
        tool_call: ToolCall::new("call_1", "weather", json!({"city": "Paris"})),
        decision: None,
    }
}

/// A host that asks for `weather` once, then answers with text.
fn tool_then_text() -> FakeHost {
    FakeHost {
        models: vec![
            Model::new("m"),
            Model {
                reasoning: true,
                ..Model::new("thinker")
            },
        ],
        tools: vec![Tool::new("weather"), Tool::new("rm")],
        steps: vec![
            vec![weather_call(), Event::done(FinishReason::ToolCalls, None)],
            vec![
                Event::delta("It is sunny."),
                Event::done(
                    FinishReason::Stop,
                    Some(Usage {
                        prompt_tokens: Some(30),
                        completion_tokens: Some(4),
                        total_tokens: None,
                        ..Default::default()
                    }),
                ),
            ],
        ],
        ..FakeHost::default()
    }
}

fn text_host() -> FakeHost {
    FakeHost {
        models: vec![Model::new("m")],
        events: vec![
            Event::delta("Hello"),
            Event::delta(" there"),
            Event::done(FinishReason::Stop, None),
        ],
        ..FakeHost::default()
    }
}

struct Setup {
    svc: ChatService,
    seen: Arc<std::sync::Mutex<Vec<lmchatkit::CompleteRequest>>>,
    calls: Arc<std::sync::Mutex<Vec<(String, Value)>>>,
    store: Arc<MemoryStore>,
}

fn setup(host: FakeHost, policy: ApprovalPolicy) -> Setup {
    let (seen, calls) = (host.seen.clone(), host.calls.clone());
    let store = Arc::new(MemoryStore::new());
    let svc = service(
        config(host)
            .approval_policy(policy)
            .history_arc(store.clone() as Arc<dyn HistoryStore>),
    );
    Setup {
        svc,
        seen,
        calls,
        store,
    }
}

fn user(id: &str, text: &str) -> Value {
    json!({"id": id, "role": "user", "parts": [{"type": "text", "text": text}]})
}

fn body(thread: &str, messages: Vec<Value>) -> Value {
    json!({"id": thread, "messages": messages, "trigger": "submit-message"})
}

/// The chunks of a UI Message Stream body, checking it ends with `[DONE]`.
fn chunks(reply: &Reply) -> Vec<Value> {
    let text = reply.text();
    assert!(
        text.ends_with("data: [DONE]\n\n"),
        "no [DONE] at the end: {text}"
    );
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn types(chunks: &[Value]) -> Vec<String> {
    chunks
        .iter()
        .map(|c| c["type"].as_str().unwrap().to_owned())
        .collect()
}

fn find<'a>(chunks: &'a [Value], kind: &str) -> &'a Value {
    chunks
        .iter()
        .find(|c| c["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} chunk in {chunks:?}"))
}

/// The assistant message the client builds from a first reply that asked for approval.
fn approval_asked(message_id: &str, approval_id: &str, input: Value) -> Value {
    json!({"id": message_id, "role": "assistant", "parts": [
        {"type": "step-start"},
        {"type": "dynamic-tool", "toolName": "weather", "toolCallId": "call_1",
         "state": "approval-requested", "input": input, "approval": {"id": approval_id}},
    ]})
}

fn answered(mut asked: Value, approved: bool, reason: Option<&str>) -> Value {
    let part = &mut asked["parts"][1];
    part["state"] = json!("approval-responded");
    part["approval"]["approved"] = json!(approved);
    if let Some(r) = reason {
        part["approval"]["reason"] = json!(r);
    }
    asked
}

/// Runs the first request of an ask round trip: the message id and approval id it hands out.
async fn ask(s: &Setup, thread: &str) -> (String, String) {
    let reply = send(
        &s.svc,
        post(CHAT, &body(thread, vec![user("u1", "weather?")])),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let c = chunks(&reply);
    let message_id = find(&c, "start")["messageId"].as_str().unwrap().to_owned();
    let approval = find(&c, "tool-approval-request")["approvalId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(find(&c, "finish")["finishReason"], "tool-calls");
    (message_id, approval)
}

#[tokio::test]
async fn a_text_reply_is_a_ui_message_stream_with_the_v1_header() {
    let s = setup(text_host(), ApprovalPolicy::default());
    let reply = send(&s.svc, post(CHAT, &body("t1", vec![user("u1", "hi")]))).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.headers["x-vercel-ai-ui-message-stream"], "v1");
    assert_eq!(reply.headers["content-type"], "text/event-stream");
    let c = chunks(&reply);
    assert_eq!(
        types(&c),
        [
            "start",
            "start-step",
            "text-start",
            "text-delta",
            "text-delta",
            "text-end",
            "finish-step",
            "message-metadata",
            "finish"
        ]
    );
    assert_eq!(c[8], json!({"type": "finish", "finishReason": "stop"}));
    assert_eq!(c[7]["messageMetadata"]["model"], "m");
    // The system prompt is the server's, never the client's.
    let seen = s.seen.lock().unwrap();
    assert_eq!(seen[0].messages[0].role, Role::System);
    assert_eq!(seen[0].messages[1].content.as_text(), Some("hi"));
}

#[tokio::test]
async fn the_configured_system_prompt_reaches_the_model() {
    let host = text_host();
    let seen = host.seen.clone();
    let svc = service(config(host).system_prompt("You are terse."));
    send(&svc, post(CHAT, &body("t1", vec![user("u1", "hi")]))).await;
    assert_eq!(
        seen.lock().unwrap()[0].messages[0].content.as_text(),
        Some("You are terse.")
    );
}

#[tokio::test]
async fn an_unknown_model_is_a_400_naming_the_menu() {
    let s = setup(tool_then_text(), ApprovalPolicy::default());
    let mut b = body("t1", vec![user("u1", "hi")]);
    b["model"] = json!("gpt-9");
    let reply = send(&s.svc, post(CHAT, &b)).await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.error(),
        r#"unknown model "gpt-9"; the model menu: m, thinker"#
    );
}

#[tokio::test]
async fn a_reasoning_effort_is_validated_and_sent_to_reasoning_models_only() {
    let s = setup(text_host(), ApprovalPolicy::default());
    let mut b = body("t1", vec![user("u1", "hi")]);
    b["reasoningEffort"] = json!("extreme");
    assert_eq!(send(&s.svc, post(CHAT, &b)).await.status, 400);

    let s = setup(tool_then_text(), ApprovalPolicy::new(ToolDecision::Allow));
    for model in ["thinker", "m"] {
        let mut b = body("t1", vec![user("u1", "hi")]);
        b["reasoningEffort"] = json!("high");
        b["model"] = json!(model);
        assert_eq!(send(&s.svc, post(CHAT, &b)).await.status, 200);
    }
    let seen = s.seen.lock().unwrap();
    assert_eq!(seen[0].params.get("reasoning_effort"), Some(&json!("high")));
    let plain = seen.iter().find(|r| r.model == "m").unwrap();
    assert_eq!(plain.params.get("reasoning_effort"), None);
}

#[tokio::test]
async fn an_allowed_tool_runs_on_the_server_and_the_reply_goes_on() {
    let s = setup(tool_then_text(), ApprovalPolicy::new(ToolDecision::Allow));
    let reply = send(
        &s.svc,
        post(CHAT, &body("t1", vec![user("u1", "weather?")])),
    )
    .await;
    let c = chunks(&reply);
    assert_eq!(
        *find(&c, "tool-output-available"),
        json!({"type": "tool-output-available", "toolCallId": "call_1", "output": "weather:{\"city\":\"Paris\"}", "dynamic": true})
    );
    assert_eq!(find(&c, "text-delta")["delta"], "It is sunny.");
    assert_eq!(types(&c).iter().filter(|t| *t == "start-step").count(), 2);
    assert_eq!(s.calls.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn an_approved_call_runs_in_the_same_message_after_the_client_answers() {
    let s = setup(tool_then_text(), ApprovalPolicy::default());
    let (message_id, approval) = ask(&s, "t1").await;
    assert!(
        s.calls.lock().unwrap().is_empty(),
        "nothing runs before the answer"
    );

    let asked = approval_asked(&message_id, &approval, json!({"city": "Paris"}));
    let messages = vec![user("u1", "weather?"), answered(asked, true, None)];
    let reply = send(&s.svc, post(CHAT, &body("t1", messages))).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let c = chunks(&reply);
    assert_eq!(find(&c, "start")["messageId"], message_id.as_str());
    assert_eq!(find(&c, "tool-output-available")["toolCallId"], "call_1");
    assert_eq!(find(&c, "text-delta")["delta"], "It is sunny.");
    assert_eq!(
        *s.calls.lock().unwrap(),
        vec![("weather".to_owned(), json!({"city": "Paris"}))]
    );
}

#[tokio::test]
async fn a_denied_call_is_reported_and_the_model_is_told_why() {
    let s = setup(tool_then_text(), ApprovalPolicy::default());
    let (message_id, approval) = ask(&s, "t1").await;
    let asked = approval_asked(&message_id, &approval, json!({"city": "Paris"}));
    let messages = vec![
        user("u1", "weather?"),
        answered(asked, false, Some("not now")),
    ];
    let reply = send(&s.svc, post(CHAT, &body("t1", messages))).await;
    let c = chunks(&reply);
    assert_eq!(
        *find(&c, "tool-output-denied"),
        json!({"type": "tool-output-denied", "toolCallId": "call_1"})
    );
    assert!(s.calls.lock().unwrap().is_empty());
    let seen = s.seen.lock().unwrap();
    let told = seen.last().unwrap().messages.last().unwrap();
    assert_eq!(told.role, Role::Tool);
    assert!(
        told.content.as_text().unwrap().contains("not now"),
        "{told:?}"
    );
}

#[tokio::test]
async fn a_deny_rule_never_runs_the_tool_and_tells_the_model() {
    let s = setup(
        tool_then_text(),
        ApprovalPolicy::new(ToolDecision::Allow).deny("weather"),
    );
    let reply = send(
        &s.svc,
        post(CHAT, &body("t1", vec![user("u1", "weather?")])),
    )
    .await;
    let c = chunks(&reply);
    // Nobody was asked: an error result, not a declined approval (which needs an approval).
    let err = find(&c, "tool-output-error");
    assert!(
        err["errorText"]
            .as_str()
            .unwrap()
            .contains("operator's policy blocks"),
        "{err}"
    );
    assert!(!types(&c).contains(&"tool-approval-request".to_owned()));
    assert!(s.calls.lock().unwrap().is_empty());
    assert_eq!(find(&c, "text-delta")["delta"], "It is sunny.");
}

#[tokio::test]
async fn an_approval_whose_input_was_changed_is_refused_and_nothing_runs() {
    let s = setup(tool_then_text(), ApprovalPolicy::default());
    let (message_id, approval) = ask(&s, "t1").await;
    let tampered = approval_asked(&message_id, &approval, json!({"city": "Oslo"}));
    let messages = vec![user("u1", "weather?"), answered(tampered, true, None)];
    let reply = send(&s.svc, post(CHAT, &body("t1", messages))).await;
    assert_eq!(reply.status, 403);
    assert!(
        reply.error().contains("does not match the call"),
        "{}",
        reply.error()
    );
    assert!(s.calls.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_approval_replayed_on_another_thread_or_tool_is_refused() {
    let s = setup(tool_then_text(), ApprovalPolicy::default());
    let (message_id, approval) = ask(&s, "t1").await;
    let asked = approval_asked(&message_id, &approval, json!({"city": "Paris"}));
    let messages = vec![user("u1", "weather?"), answered(asked.clone(), true, None)];
    let reply = send(&s.svc, post(CHAT, &body("t2", messages))).await;
    assert_eq!(reply.status, 403);

    let mut other_tool = answered(asked, true, None);
    other_tool["parts"][1]["toolName"] = json!("rm");
    let reply = send(
        &s.svc,
        post(CHAT, &body("t1", vec![user("u1", "weather?"), other_tool])),
    )
    .await;
    assert_eq!(reply.status, 403);
    assert!(s.calls.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_approval_answered_twice_runs_once() {
    let s = setup(tool_then_text(), ApprovalPolicy::default());
    let (message_id, approval) = ask(&s, "t1").await;
    let asked = approval_asked(&message_id, &approval, json!({"city": "Paris"}));
    let messages = vec![user("u1", "weather?"), answered(asked, true, None)];
    assert_eq!(
        send(&s.svc, post(CHAT, &body("t1", messages.clone())))
            .await
            .status,
        200
    );
    saved(&s, "t1", |c| {
        c.messages.iter().any(|m| m.role == Role::Tool)
    })
    .await;
    let again = send(&s.svc, post(CHAT, &body("t1", messages))).await;
    assert_eq!(again.status, 409, "{}", again.text());
    assert_eq!(s.calls.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_continuation_with_an_unanswered_approval_is_a_400() {
    let s = setup(tool_then_text(), ApprovalPolicy::default());
    let (message_id, approval) = ask(&s, "t1").await;
    let asked = approval_asked(&message_id, &approval, json!({"city": "Paris"}));
    let reply = send(
        &s.svc,
        post(CHAT, &body("t1", vec![user("u1", "weather?"), asked])),
    )
    .await;
    assert_eq!(reply.status, 400);
}

/// Waits until the stored thread satisfies `ok` (saves run off the reply's path).
async fn saved(
    s: &Setup,
    id: &str,
    ok: impl Fn(&StoredConversation) -> bool,
) -> StoredConversation {
    for _ in 0..500 {
        if let Some(c) = s.store.get(&Principal::anonymous(), id).await.unwrap()
            && ok(&c)
        {
            return c;
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    panic!("thread {id} never reached the expected state");
}

#[tokio::test]
async fn a_thread_is_saved_listed_and_read_back_as_the_client_built_it() {
    let s = setup(tool_then_text(), ApprovalPolicy::new(ToolDecision::Allow));
    let reply = send(
        &s.svc,
        post(CHAT, &body("t1", vec![user("u1", "weather in Paris?")])),
    )
    .await;
    let c = chunks(&reply);
    let message_id = find(&c, "start")["messageId"].as_str().unwrap().to_owned();
    saved(&s, "t1", |c| c.messages.len() >= 4).await;

    let list = send(&s.svc, get("/chat/api/aisdk/threads")).await.json();
    assert_eq!(list[0]["id"], "t1");
    assert_eq!(list[0]["title"], "weather in Paris?");
    assert_eq!(list[0]["totalInputTokens"], 30);
    assert_eq!(list[0]["totalOutputTokens"], 4);
    assert!(
        list[0].get("totalCostUsd").is_none(),
        "no price, no cost: {list}"
    );

    let thread = send(&s.svc, get("/chat/api/aisdk/threads/t1")).await.json();
    let messages = thread["messages"].as_array().unwrap();
    assert_eq!(messages[0], user("u1", "weather in Paris?"));
    assert_eq!(messages[1]["id"], message_id.as_str());
    let parts: Vec<&str> = messages[1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["type"].as_str().unwrap())
        .collect();
    assert_eq!(parts, ["step-start", "dynamic-tool", "step-start", "text"]);
    assert_eq!(messages[1]["parts"][1]["state"], "output-available");
    assert_eq!(messages[1]["parts"][3]["text"], "It is sunny.");
    // The same thread is a conversation of our own UI.
    let conv = send(&s.svc, get("/chat/api/conversations/t1")).await.json();
    assert_eq!(conv["messages"][0]["content"], "weather in Paris?");
}

#[tokio::test]
async fn another_principal_cannot_read_a_thread() {
    let s = setup(text_host(), ApprovalPolicy::default());
    send(&s.svc, post(CHAT, &body("t1", vec![user("u1", "hi")]))).await;
    saved(&s, "t1", |c| c.messages.len() == 2).await;
    let mut req = get("/chat/api/aisdk/threads/t1");
    req.extensions_mut().insert(Principal::new("mallory"));
    assert_eq!(send(&s.svc, req).await.status, 404);
}

#[tokio::test]
async fn resume_is_204_while_nothing_runs_and_refuses_dot_ids() {
    let s = setup(text_host(), ApprovalPolicy::default());
    let ok = send(&s.svc, get("/chat/api/aisdk/chat/t1/stream")).await;
    assert_eq!(ok.status, 204);
    for bad in ["%2E", "%2E%2E"] {
        let r = send(&s.svc, get(&format!("/chat/api/aisdk/chat/{bad}/stream"))).await;
        assert_eq!(r.status, 400, "{bad}");
    }
}

#[tokio::test]
async fn models_are_listed_in_the_ai_sdk_apps_shape() {
    let s = setup(tool_then_text(), ApprovalPolicy::default());
    let list = send(&s.svc, get("/chat/api/aisdk/models")).await.json();
    assert_eq!(
        list[1],
        json!({"id": "thinker", "provider": "", "label": "thinker", "reasoning": true, "configured": true, "contextWindow": 0})
    );
}

#[tokio::test]
async fn a_bad_body_is_a_400_json_error() {
    let s = setup(text_host(), ApprovalPolicy::default());
    for b in [
        json!({"id": "t1"}),
        json!({"id": "t1", "messages": []}),
        json!({"id": "../x", "messages": [user("u", "hi")]}),
    ] {
        let r = send(&s.svc, post(CHAT, &b)).await;
        assert_eq!(r.status, 400, "{b}");
        assert!(!r.error().is_empty());
    }
}

#[tokio::test]
async fn the_catalog_tells_which_host_models_reason_and_only_they_get_the_effort() {
    let host = FakeHost {
        models: vec![Model::new("o3"), Model::new("my-llama")],
        events: vec![Event::delta("ok"), Event::done(FinishReason::Stop, None)],
        ..FakeHost::default()
    };
    let s = setup(host, ApprovalPolicy::default());
    let list = send(&s.svc, get("/chat/api/aisdk/models")).await.json();
    assert_eq!(list[0]["reasoning"], true, "{list}");
    assert!(list[0]["contextWindow"].as_u64().unwrap() > 0, "{list}");
    assert_eq!(list[1]["reasoning"], false);
    assert_eq!(list[1]["contextWindow"], 0, "unknown, as the host said");
    let native = send(&s.svc, get("/chat/api/models")).await.json();
    assert_eq!(native[0]["reasoning"], true, "{native}");
    for model in ["o3", "my-llama"] {
        let mut b = body("t1", vec![user("u1", "hi")]);
        b["reasoningEffort"] = json!("low");
        b["model"] = json!(model);
        assert_eq!(send(&s.svc, post(CHAT, &b)).await.status, 200);
    }
    let seen = s.seen.lock().unwrap();
    assert_eq!(seen[0].params.get("reasoning_effort"), Some(&json!("low")));
    assert_eq!(seen[1].params.get("reasoning_effort"), None);
}

#[tokio::test]
async fn the_model_cannot_run_a_tool_only_views_may_call() {
    let host = FakeHost {
        models: vec![Model::new("m")],
        tools: vec![tool("panel_refresh", &[Visibility::App])],
        steps: vec![
            vec![
                Event::ToolCall {
                    tool_call: ToolCall::new("c1", "panel_refresh", json!({})),
                    decision: None,
                },
                Event::done(FinishReason::ToolCalls, None),
            ],
            vec![Event::delta("ok"), Event::done(FinishReason::Stop, None)],
        ],
        ..FakeHost::default()
    };
    let s = setup(host, ApprovalPolicy::new(ToolDecision::Allow));
    let reply = send(&s.svc, post(CHAT, &body("t1", vec![user("u1", "go")]))).await;
    let c = chunks(&reply);
    let err = find(&c, "tool-output-error");
    assert!(
        err["errorText"].as_str().unwrap().contains("not callable"),
        "{err}"
    );
    assert!(
        s.calls.lock().unwrap().is_empty(),
        "the app-only tool never ran"
    );
}

fn as_user(
    mut req: http::Request<http_body_util::Full<bytes::Bytes>>,
    who: &str,
) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    req.extensions_mut().insert(Principal::new(who));
    req
}

#[tokio::test]
async fn another_principal_can_neither_list_a_thread_nor_answer_its_approval() {
    let s = setup(tool_then_text(), ApprovalPolicy::default());
    let first = post(CHAT, &body("t1", vec![user("u1", "weather?")]));
    let reply = send(&s.svc, as_user(first, "alice")).await;
    let c = chunks(&reply);
    let message_id = find(&c, "start")["messageId"].as_str().unwrap().to_owned();
    let approval = find(&c, "tool-approval-request")["approvalId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Alice's thread is saved (in the background) before bob looks.
    for _ in 0..500 {
        let mine = send(&s.svc, as_user(get("/chat/api/aisdk/threads"), "alice"))
            .await
            .json();
        if mine.as_array().is_some_and(|l| !l.is_empty()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let mine = send(&s.svc, as_user(get("/chat/api/aisdk/threads"), "alice"))
        .await
        .json();
    assert_eq!(mine[0]["id"], "t1");
    let list = send(&s.svc, as_user(get("/chat/api/aisdk/threads"), "bob"))
        .await
        .json();
    assert_eq!(list, json!([]), "bob sees none of alice's threads");

    let asked = approval_asked(&message_id, &approval, json!({"city": "Paris"}));
    let messages = vec![user("u1", "weather?"), answered(asked, true, None)];
    let replay = send(&s.svc, as_user(post(CHAT, &body("t1", messages)), "bob")).await;
    assert_eq!(replay.status, 403, "{}", replay.text());
    assert!(s.calls.lock().unwrap().is_empty());
}
