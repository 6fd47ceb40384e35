//! Tool calls that run as tasks (the MCP tasks extension) against a real rmcp server with
//! rmcp's task runtime (`lmchatkit_tests::task_server`): the hub hands on the task and polls it;
//! the native route gives a ticket to poll and cancel with, bound like a request for input's;
//! the AI SDK loop follows the task, reports its states and goes on with its result; a stopped
//! AI SDK run cancels the task on the server; a task that asks the user from inside waits and
//! goes on with the answers (`tasks/update`), through both protocols.

use std::sync::atomic::Ordering;
use std::time::Duration;

use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::mcp::{McpHub, McpServerConfig};
use lmchatkit::protocol::{RUN_ID_HEADER, TaskState, ToolDecision};
use lmchatkit::{
    ApprovalPolicy, ChatService, Config, Principal, RequestContext, Scope, StandardHost,
};
use lmchatkit_tests::aisdk::post_turn;
use lmchatkit_tests::mock_upstream::MockUpstream;
use lmchatkit_tests::serve::{Served, serve_as};
use lmchatkit_tests::task_server::TaskServer;
use serde_json::{Value, json};

fn hub(server: &TaskServer) -> McpHub {
    McpHub::new(vec![McpServerConfig::in_process(
        "jobs",
        server.connector(),
    )])
}

#[tokio::test]
async fn the_hub_hands_on_a_task_and_polls_it_to_its_result() {
    let server = TaskServer::new();
    let hub = hub(&server);
    hub.start().await;
    let scope = Scope::user(RequestContext::new(Principal::new("alice")));
    let first = hub
        .call_tool(&scope, "jobs__long_job", json!({"steps": 2, "ms": 200}))
        .await
        .unwrap();
    let task = first.task.clone().expect("a task");
    assert_eq!(task.status, TaskState::Working);
    assert_eq!(task.status_message.as_deref(), Some("starting"));
    assert_eq!(task.poll_interval_ms, Some(100));
    assert!(!task.task_id.is_empty());
    let mut seen = Vec::new();
    let mut result = first;
    for _ in 0..50 {
        let Some(t) = result.task.take() else { break };
        seen.extend(t.status_message.clone());
        tokio::time::sleep(Duration::from_millis(60)).await;
        result = hub
            .poll_tool_task(&scope, "jobs__long_job", &t.task_id, false)
            .await
            .unwrap();
    }
    assert_eq!(result.content, "job done after 2 steps", "{seen:?}");
    assert!(!result.is_error);
    assert!(seen.iter().any(|m| m == "step 1 of 2"), "{seen:?}");
}

async fn service(server: &TaskServer) -> (MockUpstream, ChatService) {
    let mock = MockUpstream::start().await;
    let backend = OpenAiBackend::new(
        OpenAiConfig::new(mock.base_url()).with_idle_timeout(Duration::from_secs(5)),
    );
    let hub = hub(server);
    hub.start().await;
    let config = Config::builder(StandardHost::new(backend).with_mcp(hub))
        .approval_policy(ApprovalPolicy::new(ToolDecision::Allow))
        .signing_secret(b"task-test-secret-0123456789abcdef")
        .build()
        .unwrap();
    (mock, ChatService::new(config))
}

async fn post(served: &Served, body: &Value) -> (u16, Value) {
    let res = reqwest::Client::new()
        .post(served.url("/chat/api/tools/call"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_native_call_that_runs_as_a_task_is_polled_with_its_ticket_and_only_its_own() {
    let server = TaskServer::new();
    let (_mock, svc) = service(&server).await;
    let alice = serve_as(svc.clone(), Principal::new("alice")).await;
    let mallory = serve_as(svc, Principal::new("mallory")).await;
    let call =
        json!({"name": "jobs__long_job", "arguments": {"steps": 2, "ms": 200}, "call_id": "c1"});
    let (status, first) = post(&alice, &call).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["task"]["status"], "working", "{first}");
    let ticket = first["task"]["ticket"]
        .as_str()
        .expect("a ticket")
        .to_owned();
    assert!(
        first["task"].get("task_id").is_none(),
        "the task id travels only in the ticket"
    );
    let poll = |ticket: &str, cancel: bool| {
        let mut b = call.clone();
        b["task"] = json!({"ticket": ticket, "cancel": cancel});
        b
    };
    assert_eq!(
        post(&mallory, &poll(&ticket, false)).await.0,
        403,
        "another user's"
    );
    let mut other = poll(&ticket, false);
    other["call_id"] = json!("c2");
    assert_eq!(post(&alice, &other).await.0, 403, "another call's");

    let mut last = first;
    for _ in 0..50 {
        if last.get("task").is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let t = last["task"]["ticket"].as_str().unwrap().to_owned();
        last = post(&alice, &poll(&t, false)).await.1;
    }
    assert_eq!(last["content"], "job done after 2 steps", "{last}");

    // Cancelled through its ticket: the server stops it.
    let (_, long) = post(&alice, &json!({"name": "jobs__long_job", "arguments": {"steps": 50, "ms": 10000}, "call_id": "c3"})).await;
    let t = long["task"]["ticket"].as_str().unwrap().to_owned();
    let mut b = poll(&t, true);
    b["call_id"] = json!("c3");
    b["arguments"] = json!({"steps": 50, "ms": 10000});
    let (status, _) = post(&alice, &b).await;
    assert_eq!(status, 200);
    for _ in 0..50 {
        if server.cancelled.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        server.cancelled.load(Ordering::SeqCst),
        1,
        "the server saw the cancel"
    );
}

#[tokio::test]
async fn an_ai_sdk_turn_follows_a_task_reports_its_states_and_goes_on_with_its_result() {
    let server = TaskServer::new();
    let (_mock, svc) = service(&server).await;
    let alice = serve_as(svc, Principal::new("alice")).await;
    let body = json!({"id": "thread-task", "trigger": "submit-message", "model": "mock-small",
        "messages": [{"id": "u1", "role": "user", "parts": [
            {"type": "text", "text": "call tool jobs__long_job {\"steps\": 3, \"ms\": 600}"}]}]});
    let (status, out) = post_turn(&alice, &body).await;
    assert_eq!(status, 200);
    let states: Vec<&Value> = out
        .iter()
        .filter(|c| c["type"] == "data-tool-task")
        .collect();
    assert!(!states.is_empty(), "{out:?}");
    assert!(
        states
            .iter()
            .all(|c| c["id"] == "call_mcp" && c["data"]["toolCallId"] == "call_mcp")
    );
    assert!(
        states
            .iter()
            .any(|c| c["data"]["statusMessage"] == "step 1 of 3"),
        "{states:?}"
    );
    let output = out
        .iter()
        .find(|c| c["type"] == "tool-output-available")
        .unwrap_or_else(|| panic!("{out:?}"));
    assert_eq!(output["output"], "job done after 3 steps");
    let said: String = out
        .iter()
        .filter(|c| c["type"] == "text-delta")
        .filter_map(|c| c["delta"].as_str())
        .collect();
    assert_eq!(said, "Tool said: job done after 3 steps");
    let polls = server.polls.load(Ordering::SeqCst);
    assert!(
        (3..=12).contains(&polls),
        "polled at the server's 100 ms interval: {polls}"
    );
}

#[tokio::test]
async fn a_stopped_ai_sdk_run_cancels_the_task_it_follows() {
    let server = TaskServer::new();
    let (_mock, svc) = service(&server).await;
    let alice = serve_as(svc, Principal::new("alice")).await;
    let body = json!({"id": "thread-stop", "trigger": "submit-message", "model": "mock-small",
        "messages": [{"id": "u1", "role": "user", "parts": [
            {"type": "text", "text": "call tool jobs__long_job {\"steps\": 100, \"ms\": 60000}"}]}]});
    let res = reqwest::Client::new()
        .post(alice.url("/chat/api/aisdk/chat"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let run = res.headers()[RUN_ID_HEADER].to_str().unwrap().to_owned();
    for _ in 0..100 {
        if server.polls.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(server.cancelled.load(Ordering::SeqCst), 0);
    let stop = reqwest::Client::new()
        .post(alice.url(&format!("/chat/api/runs/{run}/stop")))
        .send()
        .await
        .unwrap();
    assert_eq!(stop.status(), 200);
    for _ in 0..100 {
        if server.cancelled.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        server.cancelled.load(Ordering::SeqCst),
        1,
        "the stop reached the server as tasks/cancel"
    );
    drop(res);
}

#[tokio::test]
async fn a_task_that_asks_the_user_waits_and_goes_on_with_the_answers_through_both_protocols() {
    let server = TaskServer::new();
    let (_mock, svc) = service(&server).await;
    let alice = serve_as(svc, Principal::new("alice")).await;

    // Native: the poll that finds the question carries a request for input beside the task.
    let call = json!({"name": "jobs__ask_job", "arguments": {}, "call_id": "c9"});
    let (_, mut last) = post(&alice, &call).await;
    for _ in 0..50 {
        if last.get("input_required").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut b = call.clone();
        b["task"] = json!({"ticket": last["task"]["ticket"]});
        last = post(&alice, &b).await.1;
    }
    assert_eq!(last["task"]["status"], "input_required", "{last}");
    assert_eq!(
        last["input_required"]["questions"][0]["key"], "who",
        "{last}"
    );
    let ticket = last["input_required"]["ticket"]
        .as_str()
        .unwrap()
        .to_owned();
    // The task's own ticket does not answer, nor the question's poll.
    let mut wrong = call.clone();
    wrong["input"] = json!({"ticket": last["task"]["ticket"], "answers": {}});
    assert_eq!(post(&alice, &wrong).await.0, 400);
    let mut answer = call.clone();
    answer["input"] = json!({"ticket": ticket, "answers": {"who": {"action": "accept", "content": {"name": "Ada"}}}});
    let (status, mut now) = post(&alice, &answer).await;
    assert_eq!(status, 200, "{now}");
    for _ in 0..50 {
        if now.get("task").is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut b = call.clone();
        b["task"] = json!({"ticket": now["task"]["ticket"]});
        now = post(&alice, &b).await.1;
    }
    assert_eq!(now["content"], "hello Ada", "{now}");

    // AI SDK: the turn waits with the task alive, and the answer in the next request goes on.
    let user = json!({"id": "u1", "role": "user", "parts": [
        {"type": "text", "text": "call tool jobs__ask_job"}]});
    let body = json!({"id": "thread-ask", "trigger": "submit-message", "model": "mock-small",
        "messages": [user]});
    let (_, first) = post_turn(&alice, &body).await;
    let request = first
        .iter()
        .find(|c| c["type"] == "data-input-request")
        .unwrap_or_else(|| panic!("{first:?}"))
        .clone();
    assert_eq!(
        server.cancelled.load(Ordering::SeqCst),
        0,
        "the task lives on"
    );
    let message_id = first.iter().find(|c| c["type"] == "start").unwrap()["messageId"].clone();
    let mut data = request["data"].clone();
    data["answers"] = json!({"who": {"action": "accept", "content": {"name": "Grace"}}});
    let assistant = json!({"id": message_id, "role": "assistant", "parts": [
        {"type": "step-start"},
        {"type": "dynamic-tool", "toolName": "jobs__ask_job", "toolCallId": "call_mcp",
         "state": "input-available", "input": {}},
        {"type": "data-input-request", "id": "call_mcp", "data": data},
    ]});
    let again = json!({"id": "thread-ask", "trigger": "submit-message", "model": "mock-small",
        "messages": [user, assistant]});
    let (status, second) = post_turn(&alice, &again).await;
    assert_eq!(status, 200);
    let output = second
        .iter()
        .find(|c| c["type"] == "tool-output-available")
        .unwrap_or_else(|| panic!("{second:?}"));
    assert_eq!(output["output"], "hello Grace");
}
