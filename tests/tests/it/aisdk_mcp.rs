//! The AI SDK route's tool loop against a real MCP server (rmcp, in process): an image a tool
//! returns reaches the real AI SDK client as a file part, and a stop of a run while the server
//! runs a tool call cancels that call on the MCP server (`notifications/cancelled`), not only
//! the model's request (a client that merely leaves cancels nothing).

use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::StreamExt;
use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::mcp::{McpHub, McpServerConfig};
use lmchatkit::protocol::ToolDecision;
use lmchatkit::store::MemoryStore;
use lmchatkit::{ApprovalPolicy, ChatService, Config, StandardHost};
use lmchatkit_tests::aisdk::{AI_VERSIONS, available, drive};
use lmchatkit_tests::mcp_server::{SLOW_CANCELLED, duplex_connector};
use lmchatkit_tests::mock_upstream::MockUpstream;
use lmchatkit_tests::serve::{Served, serve};
use serde_json::json;

/// The service over the mock upstream and the test MCP server (namespace `test`), every tool
/// allowed, threads kept in memory.
async fn setup() -> (MockUpstream, Served) {
    let mock = MockUpstream::start().await;
    let backend = OpenAiBackend::new(
        OpenAiConfig::new(mock.base_url()).with_idle_timeout(Duration::from_secs(5)),
    );
    let hub = McpHub::new(vec![McpServerConfig::in_process(
        "test",
        duplex_connector(),
    )]);
    let host = StandardHost::new(backend).with_mcp(hub);
    let config = Config::builder(host)
        .history(MemoryStore::new())
        .approval_policy(ApprovalPolicy::new(ToolDecision::Allow))
        .build()
        .unwrap();
    let server = serve(ChatService::new(config)).await;
    (mock, server)
}

#[tokio::test]
async fn an_image_a_tool_returns_reaches_both_client_versions_as_a_file_part() {
    let (_mock, server) = setup().await;
    if !available() {
        return;
    }
    for version in AI_VERSIONS {
        let chat = format!("pictures-{version}");
        let scenario = json!({
            "api": server.url("/chat/api/aisdk/chat"), "chatId": chat, "body": {"model": "mock-small"},
            "steps": [
                {"send": "call tool test__picture"},
                {"loadThread": server.url(&format!("/chat/api/aisdk/threads/{chat}"))},
            ],
        });
        let out = drive(version, &scenario).await;
        let step = &out["steps"][0];
        assert_eq!(step["status"], "ready", "{version}: {step}");
        let parts = step["messages"][1]["parts"].as_array().unwrap();
        let file = parts
            .iter()
            .find(|p| p["type"] == "file")
            .unwrap_or_else(|| panic!("{step}"));
        assert_eq!(file["mediaType"], "image/png", "{version}");
        assert_eq!(
            file["url"], "data:image/png;base64,iVBORw0KGgo=",
            "{version}"
        );
        let loaded = &out["steps"][1];
        assert_eq!(loaded["validation"]["ok"], true, "{version}: {loaded}");
        assert_eq!(loaded["thread"]["messages"], step["messages"], "{version}");
    }
}

#[tokio::test]
async fn a_client_that_leaves_mid_tool_call_leaves_it_running_and_a_stop_cancels_it() {
    let (_mock, server) = setup().await;

    let body = json!({"id": "t1", "trigger": "submit-message", "model": "mock-small", "messages": [
        {"id": "u1", "role": "user", "parts": [
            {"type": "text", "text": "call tool test__slow {\"ms\": 60000}"}]},
    ]});
    let res = reqwest::Client::new()
        .post(server.url("/chat/api/aisdk/chat"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let run = res.headers()[lmchatkit::protocol::RUN_ID_HEADER]
        .to_str()
        .unwrap()
        .to_owned();
    // Read until the server is running the call, then leave.
    let mut stream = res.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("tool-input-available") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("the call starts within 10 s")
            .expect("the stream goes on")
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(stream);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        SLOW_CANCELLED.load(Ordering::SeqCst),
        0,
        "a client leaving stops nothing: the run goes on"
    );

    let stop = reqwest::Client::new()
        .post(server.url(&format!("/chat/api/runs/{run}/stop")))
        .send()
        .await
        .unwrap();
    assert_eq!(stop.status(), 200);
    for _ in 0..500 {
        if SLOW_CANCELLED.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        SLOW_CANCELLED.load(Ordering::SeqCst),
        1,
        "the MCP server was told the call is cancelled"
    );
}
