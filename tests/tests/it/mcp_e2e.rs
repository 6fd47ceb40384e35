//! The MCP hub behind a real `ChatService` (via `StandardHost`) on loopback, against the mock
//! OpenAI upstream: the full tool loop on the real server-everything (`/api/chat` → tool call →
//! `/api/tools/call` → the next `/api/chat` carries the result upstream), `/api/config`'s `mcp`
//! list, and — with the rmcp test server in-process — skills, visibility, app-proxy ownership,
//! scoped resource reads and prompts through the routes.

use std::time::Duration;

use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::mcp::{McpHub, McpServerConfig};
use lmchatkit::{ChatService, Config, StandardHost};
use lmchatkit_tests::mcp_server::{
    APP_MIME, SKILL_URI, UI_URI, duplex_connector, npm_bin, serve_hanging,
};
use lmchatkit_tests::mock_upstream::MockUpstream;
use lmchatkit_tests::serve::{Served, serve};
use serde_json::{Value, json};

async fn setup(hub: McpHub) -> (MockUpstream, Served) {
    let mock = MockUpstream::start().await;
    let backend = OpenAiBackend::new(
        OpenAiConfig::new(mock.base_url()).with_idle_timeout(Duration::from_secs(5)),
    );
    let status = hub.clone();
    let host = StandardHost::new(backend).with_mcp(hub);
    let config = Config::builder(host)
        .mcp_status(move || status.status())
        .build()
        .unwrap();
    (mock, serve(ChatService::new(config)).await)
}

async fn chat(server: &Served, messages: &Value) -> Vec<Value> {
    let res = reqwest::Client::new()
        .post(server.url("/chat/api/chat"))
        .json(&json!({"model": "mock-small", "messages": messages}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    lmchatkit_tests::serve::sse_data(&text)
}

async fn post(server: &Served, path: &str, body: Value) -> (u16, Value) {
    let res = reqwest::Client::new()
        .post(server.url(path))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

async fn get(server: &Served, path: &str) -> Value {
    reqwest::get(server.url(path))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn tool_loop_runs_on_server_everything() {
    let Some(bin) = npm_bin("mcp-server-everything") else {
        return;
    };
    let hub = McpHub::new(vec![McpServerConfig::stdio(
        "everything",
        bin.to_string_lossy(),
        ["stdio"],
    )]);
    hub.start().await;
    let (mock, server) = setup(hub).await;

    let config = get(&server, "/chat/api/config").await;
    assert_eq!(
        config["mcp"],
        json!([{"name": "everything", "status": "connected"}])
    );

    let mut messages = json!([{"role": "user", "content": "call tool everything__echo {\"message\": \"hi from the model\"}"}]);
    let events = chat(&server, &messages).await;
    // The arguments stream first (the mock sends them whole), then the complete call.
    assert_eq!(
        events[0],
        json!({"type": "tool_call_delta", "id": "call_mcp", "name": "everything__echo",
            "arguments_delta": "{\"message\": \"hi from the model\"}"})
    );
    let events = &events[1..];
    assert_eq!(
        events[0],
        json!({"type": "tool_call", "decision": "ask", "tool_call": {"id": "call_mcp", "name": "everything__echo", "arguments": {"message": "hi from the model"},
            "hints": [{"name": "message", "description": "Message to echo", "required": true}]}})
    );
    let first = mock.observed.requests.lock().unwrap()[0].clone();
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        offered.contains(&"everything__echo") && offered.contains(&"everything__get-sum"),
        "{offered:?}"
    );

    // The browser approves and runs it on the real server.
    let call = events[0]["tool_call"].clone();
    let (status, result) = post(
        &server,
        "/chat/api/tools/call",
        json!({"name": call["name"], "arguments": call["arguments"]}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(result, json!({"content": "Echo: hi from the model"}));

    let arr = messages.as_array_mut().unwrap();
    arr.push(json!({"role": "assistant", "content": "", "tool_calls": [call]}));
    arr.push(json!({"role": "tool", "tool_call_id": "call_mcp", "tool_name": "everything__echo", "content": result["content"]}));
    let events = chat(&server, &messages).await;
    let text: String = events.iter().filter_map(|e| e["delta"].as_str()).collect();
    assert_eq!(text, "Tool said: Echo: hi from the model");
    let second = mock.observed.requests.lock().unwrap()[1].clone();
    let tool_msg = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    assert_eq!(
        tool_msg,
        json!({"role": "tool", "content": "Echo: hi from the model", "tool_call_id": "call_mcp"})
    );
}

#[tokio::test]
async fn skills_visibility_and_views_through_the_routes() {
    let hub = McpHub::new(vec![McpServerConfig::in_process(
        "test",
        duplex_connector(),
    )]);
    let (mock, server) = setup(hub).await;

    // One turn: the skill tool is injected, the index is in the system prompt, and app-only
    // tools are not offered to the model.
    chat(&server, &json!([{"role": "user", "content": "hello"}])).await;
    let req = mock.observed.requests.lock().unwrap()[0].clone();
    let system = req["messages"][0]["content"].as_str().unwrap().to_owned();
    assert!(
        system.contains("Call the lmchatkit__get_skill tool with the skill URI"),
        "{system}"
    );
    assert!(system.contains(SKILL_URI), "{system}");
    let offered: Vec<&str> = req["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"lmchatkit__get_skill"));
    assert!(offered.contains(&"test__model_only") && offered.contains(&"test__show_app"));
    assert!(!offered.contains(&"test__app_refresh"), "{offered:?}");

    let (status, r) = post(
        &server,
        "/chat/api/tools/call",
        json!({"name": "lmchatkit__get_skill", "arguments": {"uri": SKILL_URI}}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        r["content"]
            .as_str()
            .unwrap()
            .contains("Write the test first.")
    );

    // Visibility and ownership, failing closed.
    let (status, _) = post(
        &server,
        "/chat/api/tools/call",
        json!({"name": "test__app_refresh"}),
    )
    .await;
    assert_eq!(status, 403, "app-only tool from the model");
    let (status, r) = post(
        &server,
        "/chat/api/app-proxy",
        json!({"method": "tools/call", "params": {"name": "test__app_refresh"}, "via": "test__show_app"}),
    )
    .await;
    assert_eq!(
        (status, r["content"][0]["text"].as_str()),
        (200, Some("refreshed"))
    );
    // A view knows its server's tools by their own names: `app_refresh` means `test__app_refresh`.
    let (status, r) = post(
        &server,
        "/chat/api/app-proxy",
        json!({"method": "tools/call", "params": {"name": "app_refresh"}, "via": "test__show_app"}),
    )
    .await;
    assert_eq!(
        (status, r["content"][0]["text"].as_str()),
        (200, Some("refreshed"))
    );
    let (status, _) = post(
        &server,
        "/chat/api/app-proxy",
        json!({"method": "tools/call", "params": {"name": "test__model_only"}, "via": "test__show_app"}),
    )
    .await;
    assert_eq!(status, 403, "model-only tool from a view");
    let (status, _) = post(
        &server,
        "/chat/api/app-proxy",
        json!({"method": "tools/call", "params": {"name": "test__add"}, "via": "other__tool"}),
    )
    .await;
    assert_eq!(status, 403, "unknown via");

    // The view's resource, scoped to the calling tool's server.
    let (status, r) = post(
        &server,
        "/chat/api/resources/read",
        json!({"uri": UI_URI, "via": "test__show_app"}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(r["mime_type"], APP_MIME);
    assert_eq!(
        r["ui"]["csp"]["connectDomains"],
        json!(["https://api.example.com"])
    );
    let (status, r) = post(
        &server,
        "/chat/api/tools/call",
        json!({"name": "test__show_app"}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(r["ui"], json!({"resourceUri": UI_URI}));
    assert_eq!(r["structured_content"], json!({"value": 42}));

    // Prompts and resources lists.
    let prompts = get(&server, "/chat/api/prompts").await;
    assert!(prompts.to_string().contains("test__greet"), "{prompts}");
    let (status, r) = post(
        &server,
        "/chat/api/prompts/get",
        json!({"name": "test__greet", "args": {"name": "Ada"}}),
    )
    .await;
    assert_eq!(status, 200, "{r}");
    assert!(r.to_string().contains("Greet Ada warmly."), "{r}");
    let resources = get(&server, "/chat/api/resources").await;
    assert!(
        resources.to_string().contains("test://item/{id}"),
        "{resources}"
    );
}

#[tokio::test]
async fn a_hanging_operator_server_delays_a_turn_once_by_the_listing_wait_at_most() {
    let (url, _hang) = serve_hanging().await;
    let hub = McpHub::new(vec![
        McpServerConfig::http("hang", url),
        McpServerConfig::in_process("test", duplex_connector()),
    ])
    .with_listing_wait(Duration::from_secs(5));
    let (mock, server) = setup(hub).await;
    let messages = json!([{"role": "user", "content": "hi"}]);
    let offered = || {
        let requests = mock.observed.requests.lock().unwrap();
        let tools = requests.last().unwrap()["tools"].as_array().cloned();
        tools
            .unwrap_or_default()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };

    // Connecting alone may take 30 s; the turn waits for the listing 5 s at most.
    let started = std::time::Instant::now();
    let events = chat(&server, &messages).await;
    let first = started.elapsed();
    assert_eq!(events.last().unwrap()["type"], "done", "{events:?}");
    assert!(
        first < Duration::from_secs(15),
        "the first turn took {first:?}"
    );
    let tools = offered();
    assert!(tools.contains(&"test__add".to_owned()), "{tools:?}");
    assert!(!tools.iter().any(|t| t.starts_with("hang__")), "{tools:?}");

    // The server made a turn wait: later turns do not wait for it at all.
    for _ in 0..3 {
        let started = std::time::Instant::now();
        let events = chat(&server, &messages).await;
        let took = started.elapsed();
        assert_eq!(events.last().unwrap()["type"], "done");
        assert!(took < Duration::from_secs(3), "a later turn took {took:?}");
        assert!(offered().contains(&"test__add".to_owned()));
    }
}
