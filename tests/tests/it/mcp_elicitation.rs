//! Tools that ask the user for input (MCP 2026-07-28 elicitation through `input_required`),
//! against a real MCP server written with the Python `mcp` package
//! (`tests/python/elicit_server.py`, installed by `scripts/setup-test.sh`): the hub, the native
//! tool call route (a ticket, the answers, the checks), and the AI SDK route's server-side loop
//! (a `data-input-request` part, the answers in the next request, through another instance).
//! Progress reports of a running call, through the native route's events and the AI SDK's
//! `data-tool-progress` parts.
//! Skipped with a note when the Python package is missing.

use std::time::Duration;

use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::mcp::{McpHub, McpServerConfig};
use lmchatkit::protocol::{InputAction, InputAnswer, ToolDecision};
use lmchatkit::{
    ApprovalPolicy, ChatService, Config, Principal, RequestContext, Scope, StandardHost, ToolInput,
};
use lmchatkit_tests::aisdk::post_turn;
use lmchatkit_tests::mcp_server::python_bin;
use lmchatkit_tests::mock_upstream::MockUpstream;
use lmchatkit_tests::serve::{Served, serve_as};
use serde_json::{Value, json};

const SECRET: &[u8] = b"elicitation-test-secret-0123456789";

/// The hub's config of the Python server, or `None` (with a note) without Python's `mcp`.
fn server() -> Option<McpServerConfig> {
    let python = python_bin()?;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/elicit_server.py");
    Some(McpServerConfig::stdio(
        "elicit",
        python.to_string_lossy(),
        vec![script.to_string_lossy().into_owned()],
    ))
}

fn alice() -> Scope {
    Scope::user(RequestContext::new(Principal::new("alice")))
}

fn accept(content: Value) -> InputAnswer {
    InputAnswer::accept(content.as_object().cloned().unwrap_or_default())
}

#[tokio::test]
async fn the_hub_hands_on_a_servers_request_for_input_and_calls_again_with_the_answers() {
    let Some(cfg) = server() else { return };
    let hub = McpHub::new(vec![cfg]);
    hub.start().await;
    assert_eq!(
        hub.protocol_version("elicit").await.as_deref(),
        Some("2026-07-28")
    );
    let args = json!({"day": "monday"});
    let first = hub
        .call_tool(&alice(), "elicit__book_table", args.clone())
        .await
        .expect("a call");
    let req = first
        .input_required
        .clone()
        .expect("the tool asks for input");
    assert!(!first.is_error);
    assert_eq!(req.questions.len(), 1);
    assert_eq!(req.questions[0].key, "who");
    assert_eq!(req.questions[0].message, "Who is the table for?");
    let lmchatkit::protocol::InputKind::Form { schema } = &req.questions[0].kind else {
        panic!("a form: {:?}", req.questions[0]);
    };
    assert_eq!(schema["required"], json!(["name"]));
    assert_eq!(schema["properties"]["seats"]["type"], "integer");
    assert_eq!(
        schema["properties"]["size"]["enum"],
        json!(["small", "large"])
    );
    assert_eq!(req.request_state.as_deref(), Some("book:monday"));

    let mut input = ToolInput::default();
    input.answers.insert(
        "who".into(),
        accept(json!({"name": "Ada", "seats": 3, "vip": true, "size": "large"})),
    );
    input.request_state = req.request_state.clone();
    let done = hub
        .call_tool_with_input(&alice(), "elicit__book_table", args, input)
        .await
        .expect("the call again");
    assert!(done.input_required.is_none(), "{done:?}");
    assert_eq!(
        done.content,
        r#"booked for Ada on monday: {"name": "Ada", "seats": 3, "size": "large", "vip": true} (state book:monday)"#
    );

    let sampling = hub
        .call_tool(&alice(), "elicit__sampler", json!({}))
        .await
        .expect("a call");
    assert!(sampling.is_error, "{sampling:?}");
    assert!(
        sampling.content.contains("sampling"),
        "{}",
        sampling.content
    );
}

/// The service (native and AI SDK routes) over the mock upstream and the Python server, every
/// tool allowed, served as `who`, with a shared signing secret and `ttl`.
async fn service(ttl: Duration) -> Option<(MockUpstream, ChatService)> {
    let cfg = server()?;
    let mock = MockUpstream::start().await;
    let backend = OpenAiBackend::new(
        OpenAiConfig::new(mock.base_url()).with_idle_timeout(Duration::from_secs(5)),
    );
    // A route's listing waits for the Python server as long as a loaded machine needs (the
    // default 2 s, in one full run every call through the route found no tool while the
    // hub's own calls did: its listing came late).
    let hub = McpHub::new(vec![cfg]).with_listing_wait(Duration::from_secs(30));
    hub.start().await;
    let host = StandardHost::new(backend).with_mcp(hub);
    let config = Config::builder(host)
        .approval_policy(ApprovalPolicy::new(ToolDecision::Allow))
        .signing_secret(SECRET)
        .input_request_ttl(ttl)
        .build()
        .unwrap();
    Some((mock, ChatService::new(config)))
}

/// Two instances of the service (each its own hub and Python server, one signing secret), both
/// serving `alice`.
async fn two_instances() -> Option<([MockUpstream; 2], Served, Served)> {
    let (mock_a, svc_a) = service(lmchatkit::DEFAULT_INPUT_TTL).await?;
    let (mock_b, svc_b) = service(lmchatkit::DEFAULT_INPUT_TTL).await?;
    let a = serve_as(svc_a, Principal::new("alice")).await;
    let b = serve_as(svc_b, Principal::new("alice")).await;
    Some(([mock_a, mock_b], a, b))
}

async fn post(served: &Served, path: &str, body: &Value) -> (u16, Value) {
    let res = reqwest::Client::new()
        .post(served.url(path))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn call(name: &str, args: Value) -> Value {
    json!({"name": name, "arguments": args, "call_id": "call_7"})
}

#[tokio::test]
async fn a_native_call_that_asks_gets_a_ticket_and_only_its_own_answers_complete_it() {
    let Some((_mock, svc)) = service(lmchatkit::DEFAULT_INPUT_TTL).await else {
        return;
    };
    let alice = serve_as(svc.clone(), Principal::new("alice")).await;
    let mallory = serve_as(svc, Principal::new("mallory")).await;
    let args = json!({"day": "friday"});

    let (status, first) = post(
        &alice,
        "/chat/api/tools/call",
        &call("elicit__book_table", args.clone()),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    let req = &first["input_required"];
    let ticket = req["ticket"].as_str().expect("a ticket").to_owned();
    assert!(req["expires_at_ms"].as_u64().is_some(), "{first}");
    assert_eq!(req["questions"][0]["mode"], "form", "{first}");
    assert!(
        !first.to_string().contains("book:friday"),
        "the server's requestState is never sent bare: {first}"
    );
    let answer = |ticket: &str, action: &str| {
        let mut body = call("elicit__book_table", args.clone());
        body["input"] = json!({"ticket": ticket, "answers": {"who": {"action": action, "content": {"name": "Ada"}}}});
        body
    };

    // Not another user's, not another call's, not other arguments', not an altered ticket.
    let (status, e) = post(&mallory, "/chat/api/tools/call", &answer(&ticket, "accept")).await;
    assert_eq!(status, 403, "another principal: {e}");
    let mut other_call = answer(&ticket, "accept");
    other_call["call_id"] = json!("call_8");
    assert_eq!(
        post(&alice, "/chat/api/tools/call", &other_call).await.0,
        403
    );
    let mut other_args = answer(&ticket, "accept");
    other_args["arguments"] = json!({"day": "saturday"});
    assert_eq!(
        post(&alice, "/chat/api/tools/call", &other_args).await.0,
        403
    );
    let mut tampered = ticket.clone();
    tampered.insert(5, 'x');
    assert_eq!(
        post(&alice, "/chat/api/tools/call", &answer(&tampered, "accept"))
            .await
            .0,
        403
    );
    // A view cannot answer for the user.
    let mut from_view = answer(&ticket, "accept");
    from_view["source"] = json!("app");
    from_view["via"] = json!("elicit__book_table");
    let (status, e) = post(&alice, "/chat/api/tools/call", &from_view).await;
    assert!(status == 403, "a view's answer: {status} {e}");

    let (status, done) = post(&alice, "/chat/api/tools/call", &answer(&ticket, "accept")).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(
        done["content"],
        r#"booked for Ada on friday: {"name": "Ada"} (state book:friday)"#
    );
    assert!(done.get("input_required").is_none(), "{done}");

    // Declined: the server's answer to that is the result.
    let (_, declined) = post(&alice, "/chat/api/tools/call", &answer(&ticket, "decline")).await;
    assert_eq!(
        declined["content"],
        "not booked: the user chose decline (state book:friday)"
    );
}

#[tokio::test]
async fn a_native_request_asked_through_one_instance_is_answered_through_another() {
    let Some((_mocks, a, b)) = two_instances().await else {
        return;
    };
    let args = json!({"day": "thursday"});
    let (_, first) = post(
        &a,
        "/chat/api/tools/call",
        &call("elicit__book_table", args.clone()),
    )
    .await;
    let ticket = first["input_required"]["ticket"]
        .as_str()
        .expect("a ticket")
        .to_owned();
    let mut answer = call("elicit__book_table", args);
    answer["input"] = json!({"ticket": ticket, "answers": {"who": {"action": "accept", "content": {"name": "Lin"}}}});
    let (status, done) = post(&b, "/chat/api/tools/call", &answer).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(
        done["content"],
        r#"booked for Lin on thursday: {"name": "Lin"} (state book:thursday)"#
    );
}

#[tokio::test]
async fn a_url_request_names_its_host_and_two_rounds_chain_through_new_tickets() {
    let Some((_mock, svc)) = service(lmchatkit::DEFAULT_INPUT_TTL).await else {
        return;
    };
    let alice = serve_as(svc, Principal::new("alice")).await;
    let (_, first) = post(
        &alice,
        "/chat/api/tools/call",
        &call("elicit__sign_in", json!({})),
    )
    .await;
    let q = &first["input_required"]["questions"][0];
    assert_eq!(q["mode"], "url", "{first}");
    assert_eq!(q["url"], "https://auth.example.com/start?session=abc");
    assert_eq!(q["host"], "auth.example.com");

    let (_, one) = post(
        &alice,
        "/chat/api/tools/call",
        &call("elicit__two_rounds", json!({})),
    )
    .await;
    let t1 = one["input_required"]["ticket"].as_str().unwrap().to_owned();
    let mut again = call("elicit__two_rounds", json!({}));
    again["input"] =
        json!({"ticket": t1, "answers": {"a": {"action": "accept", "content": {"x": "left"}}}});
    let (_, two) = post(&alice, "/chat/api/tools/call", &again).await;
    assert_eq!(two["input_required"]["questions"][0]["key"], "b", "{two}");
    let t2 = two["input_required"]["ticket"].as_str().unwrap().to_owned();
    assert_ne!(t1, t2);
    // The first ticket asked for `a` only: an answer for `b` with it is refused.
    let mut wrong = call("elicit__two_rounds", json!({}));
    wrong["input"] =
        json!({"ticket": t1, "answers": {"b": {"action": "accept", "content": {"y": "right"}}}});
    assert_eq!(post(&alice, "/chat/api/tools/call", &wrong).await.0, 400);
    let mut last = call("elicit__two_rounds", json!({}));
    last["input"] =
        json!({"ticket": t2, "answers": {"b": {"action": "accept", "content": {"y": "right"}}}});
    let (_, done) = post(&alice, "/chat/api/tools/call", &last).await;
    assert_eq!(
        done["content"], "both: first,second,a=left b=right",
        "{done}"
    );
}

#[tokio::test]
async fn an_answer_after_the_request_expired_reaches_the_server_as_cancel() {
    let Some((_mock, svc)) = service(Duration::from_millis(200)).await else {
        return;
    };
    let alice = serve_as(svc, Principal::new("alice")).await;
    let args = json!({"day": "sunday"});
    let (_, first) = post(
        &alice,
        "/chat/api/tools/call",
        &call("elicit__book_table", args.clone()),
    )
    .await;
    let ticket = first["input_required"]["ticket"]
        .as_str()
        .unwrap()
        .to_owned();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let mut late = call("elicit__book_table", args);
    late["input"] = json!({"ticket": ticket, "answers": {"who": {"action": "accept", "content": {"name": "Ada"}}}});
    let (status, done) = post(&alice, "/chat/api/tools/call", &late).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(
        done["content"],
        "not booked: the user chose cancel (state book:sunday)"
    );
    let _ = InputAction::Cancel;
}

#[tokio::test]
async fn an_ai_sdk_turn_waits_for_input_and_the_answer_through_another_instance_continues_it() {
    let Some((_mocks, a, b)) = two_instances().await else {
        return;
    };
    let user = json!({"id": "u1", "role": "user", "parts": [
        {"type": "text", "text": "call tool elicit__book_table {\"day\": \"tuesday\"}"}]});
    let body = json!({"id": "thread-el", "trigger": "submit-message", "model": "mock-small",
        "messages": [user]});
    let (status, first) = post_turn(&a, &body).await;
    assert_eq!(status, 200);
    let request = first
        .iter()
        .find(|c| c["type"] == "data-input-request")
        .unwrap_or_else(|| panic!("a request for input: {first:?}"));
    assert_eq!(request["id"], "call_mcp");
    assert_eq!(request["data"]["toolCallId"], "call_mcp");
    assert_eq!(request["data"]["questions"][0]["key"], "who");
    assert!(
        !first.iter().any(|c| c["type"] == "tool-output-available"),
        "the call has no output yet: {first:?}"
    );
    let finish = first.iter().find(|c| c["type"] == "finish").unwrap();
    assert_eq!(finish["finishReason"], "tool-calls");
    let message_id = first.iter().find(|c| c["type"] == "start").unwrap()["messageId"].clone();

    // The assistant's message as the client holds it, with the answers set on the data part.
    let mut data = request["data"].clone();
    data["answers"] =
        json!({"who": {"action": "accept", "content": {"name": "Grace", "seats": 4}}});
    let assistant = json!({"id": message_id, "role": "assistant", "parts": [
        {"type": "step-start"},
        {"type": "dynamic-tool", "toolName": "elicit__book_table", "toolCallId": "call_mcp",
         "state": "input-available", "input": {"day": "tuesday"}},
        {"type": "data-input-request", "id": "call_mcp", "data": data},
    ]});
    let again = json!({"id": "thread-el", "trigger": "submit-message", "model": "mock-small",
        "messages": [user, assistant]});

    // Tampered input: refused, nothing runs.
    let mut tampered = again.clone();
    tampered["messages"][1]["parts"][1]["input"] = json!({"day": "wednesday"});
    let (status, _) = post_turn(&b, &tampered).await;
    assert_eq!(status, 403);

    // Through instance B (the same signing secret): the call is made again and the turn goes on.
    let (status, second) = post_turn(&b, &again).await;
    assert_eq!(status, 200);
    let output = second
        .iter()
        .find(|c| c["type"] == "tool-output-available")
        .unwrap_or_else(|| panic!("the call's output: {second:?}"));
    assert_eq!(output["toolCallId"], "call_mcp");
    assert_eq!(
        output["output"],
        r#"booked for Grace on tuesday: {"name": "Grace", "seats": 4} (state book:tuesday)"#
    );
    let said: String = second
        .iter()
        .filter(|c| c["type"] == "text-delta")
        .filter_map(|c| c["delta"].as_str())
        .collect();
    assert!(said.starts_with("Tool said: booked for Grace"), "{said}");

    // Unanswered: a 400 naming the waiting call.
    let mut unanswered = again.clone();
    unanswered["messages"][1]["parts"][2]["data"] = request["data"].clone();
    let (status, _) = post_turn(&a, &unanswered).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn a_calls_progress_streams_to_the_native_route_and_the_ai_sdk_before_its_result() {
    let Some((_mock, svc)) = service(lmchatkit::DEFAULT_INPUT_TTL).await else {
        return;
    };
    let alice = serve_as(svc, Principal::new("alice")).await;
    let res = reqwest::Client::new()
        .post(alice.url("/chat/api/tools/call"))
        .header("accept", "text/event-stream")
        .json(&call("elicit__counter", json!({"n": 3, "ms": 100})))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    // The first report arrives while the call still runs.
    let mut stream = res.bytes_stream();
    let first = tokio::time::timeout(
        Duration::from_secs(5),
        futures_util::StreamExt::next(&mut stream),
    )
    .await
    .expect("a first frame")
    .unwrap()
    .unwrap();
    let first = String::from_utf8_lossy(&first).to_string();
    assert!(first.contains(r#""type":"progress""#), "{first}");
    let mut rest = first;
    while let Some(Ok(b)) = futures_util::StreamExt::next(&mut stream).await {
        rest.push_str(&String::from_utf8_lossy(&b));
    }
    let events: Vec<Value> = rest
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect();
    assert_eq!(
        events,
        [
            json!({"type": "progress", "progress": 1.0, "total": 3.0, "message": "counted 1"}),
            json!({"type": "progress", "progress": 2.0, "total": 3.0, "message": "counted 2"}),
            json!({"type": "progress", "progress": 3.0, "total": 3.0, "message": "counted 3"}),
            json!({"type": "result", "result": {"content": "counted to 3"}}),
        ]
    );

    let body = json!({"id": "thread-progress", "trigger": "submit-message", "model": "mock-small",
        "messages": [{"id": "u1", "role": "user", "parts": [
            {"type": "text", "text": "call tool elicit__counter {\"n\": 2, \"ms\": 50}"}]}]});
    let (_, out) = post_turn(&alice, &body).await;
    let progress: Vec<&Value> = out
        .iter()
        .filter(|c| c["type"] == "data-tool-progress")
        .collect();
    assert_eq!(progress.len(), 2, "{out:?}");
    assert_eq!(progress[1]["id"], "call_mcp");
    assert_eq!(
        progress[1]["data"],
        json!({"toolCallId": "call_mcp", "progress": 2.0, "total": 2.0, "message": "counted 2"})
    );
    let at = |t: &str| out.iter().position(|c| c["type"] == t).unwrap();
    assert!(at("data-tool-progress") < at("tool-output-available"));
}
