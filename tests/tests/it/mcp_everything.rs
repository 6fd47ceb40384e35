//! The hub against real npm MCP servers (installed by `scripts/setup-test.sh`):
//! `@modelcontextprotocol/server-everything` over stdio and Streamable HTTP, and the MCP Apps
//! example `@modelcontextprotocol/server-basic-vanillajs`. Skipped with a note when the
//! packages are missing.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::StreamExt;
use lmchatkit::mcp::{MCP_APP_MIME, McpHub, McpServerConfig};
use lmchatkit::protocol::ServerEventType;
use lmchatkit::{EventBroadcaster, Principal, Scope};
use lmchatkit_tests::mcp_server::{free_port, npm_bin};
use serde_json::json;

fn everything_stdio() -> Option<McpServerConfig> {
    let bin = npm_bin("mcp-server-everything")?;
    Some(McpServerConfig::stdio(
        "everything",
        bin.to_string_lossy(),
        ["stdio"],
    ))
}

/// `mcp-server-everything streamableHttp` on a free port (it binds all interfaces; the hub
/// connects over 127.0.0.1). Killed when dropped.
struct EverythingHttp {
    child: tokio::process::Child,
    port: u16,
}

impl EverythingHttp {
    async fn start(port: u16) -> Option<Self> {
        let bin = npm_bin("mcp-server-everything")?;
        let child = tokio::process::Command::new(bin)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start server-everything");
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return Some(Self { child, port });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("server-everything did not listen on {port}");
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

#[tokio::test]
async fn everything_over_stdio() {
    let Some(cfg) = everything_stdio() else {
        return;
    };
    let events = EventBroadcaster::new();
    let mut sub = Box::pin(events.subscribe(Principal::anonymous(), None));
    let hub = McpHub::new(vec![cfg]).with_events(events.clone());
    hub.start().await;
    assert_eq!(hub.status()[0].status, "connected", "{:?}", hub.status());
    // A TypeScript-SDK server: `initialize` lifecycle after the discover probe.
    assert_eq!(
        hub.protocol_version("everything").await.as_deref(),
        Some("2025-11-25")
    );

    // Its startup tools/list_changed arrives (through the handler on this connection).
    let got = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let (_, e) = sub.next().await.unwrap();
            if e.kind == ServerEventType::ToolsChanged {
                return;
            }
        }
    })
    .await;
    assert!(
        got.is_ok(),
        "no tools_changed from server-everything's startup notification"
    );

    let tools = hub.list_tools(&Scope::default()).await.unwrap();
    for name in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "get-structured-content",
        "get-resource-links",
    ] {
        assert!(
            tools
                .iter()
                .any(|t| t.name == format!("everything__{name}")),
            "{name} missing from {:?}",
            tools.iter().map(|t| &t.name).collect::<Vec<_>>()
        );
    }
    let echo = tools.iter().find(|t| t.name == "everything__echo").unwrap();
    assert_eq!(
        echo.input_schema.as_ref().unwrap()["properties"]["message"]["type"],
        "string"
    );

    let r = hub
        .call_tool(
            &Scope::default(),
            "everything__echo",
            json!({"message": "hello"}),
        )
        .await
        .unwrap();
    assert_eq!(r.content, "Echo: hello");
    let r = hub
        .call_tool(
            &Scope::default(),
            "everything__get-sum",
            json!({"a": 2, "b": 40}),
        )
        .await
        .unwrap();
    assert!(!r.is_error && r.content.contains("42"), "{r:?}");
    let r = hub
        .call_tool(&Scope::default(), "everything__get-tiny-image", json!({}))
        .await
        .unwrap();
    assert!(r.content.contains("[image: image/png,"), "{}", r.content);

    let prompts = hub.list_prompts(&Scope::default()).await.unwrap();
    let names: Vec<_> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(prompts.len(), 4, "{names:?}");
    for p in [
        "simple-prompt",
        "args-prompt",
        "completable-prompt",
        "resource-prompt",
    ] {
        assert!(
            names.contains(&format!("everything__{p}").as_str()),
            "{p} in {names:?}"
        );
    }
    let args_prompt = prompts
        .iter()
        .find(|p| p.name == "everything__args-prompt")
        .unwrap();
    assert!(
        args_prompt
            .arguments
            .iter()
            .any(|a| a.name == "city" && a.required)
    );
    let r = hub
        .get_prompt(
            &Scope::default(),
            "everything__args-prompt",
            BTreeMap::from([
                ("city".to_owned(), "Oslo".to_owned()),
                ("state".to_owned(), "Viken".to_owned()),
            ]),
        )
        .await
        .unwrap();
    assert!(
        r.messages.iter().any(|m| m.content.contains("Oslo")),
        "{r:?}"
    );

    let resources = hub.list_resources(&Scope::default()).await.unwrap();
    assert!(
        resources
            .iter()
            .any(|r| !r.template && r.uri.starts_with("demo://resource/static/document/")),
        "{resources:?}"
    );
    let template = resources
        .iter()
        .find(|r| r.template && r.uri == "demo://resource/dynamic/text/{resourceId}")
        .expect("text template");
    let uri = template.uri.replace("{resourceId}", "3");
    let r = hub.read_resource(&Scope::default(), &uri).await.unwrap();
    assert!(r.text.as_deref().is_some_and(|t| !t.is_empty()), "{r:?}");
}

#[tokio::test]
async fn everything_over_streamable_http_survives_a_lost_session() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let port = free_port();
    let Some(server) = EverythingHttp::start(port).await else {
        return;
    };
    let hub = McpHub::new(vec![McpServerConfig::http("everything", server.url())])
        .with_call_timeout(Duration::from_secs(8));
    let r = hub
        .call_tool(
            &Scope::default(),
            "everything__echo",
            json!({"message": "one"}),
        )
        .await
        .unwrap();
    assert_eq!(r.content, "Echo: one");
    let tools = hub.list_tools(&Scope::default()).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "everything__get-sum"));

    // Restart the server on the same port: the old session id now gets 404.
    server.stop().await;
    let server = EverythingHttp::start(port).await.unwrap();
    let r = hub
        .call_tool(
            &Scope::default(),
            "everything__echo",
            json!({"message": "two"}),
        )
        .await
        .unwrap();
    assert_eq!(
        (r.content.as_str(), r.is_error),
        ("Echo: two", false),
        "{r:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn basic_vanillajs_app_tool_and_view() {
    let Some(bin) = npm_bin("mcp-server-basic-vanillajs") else {
        return;
    };
    let hub = McpHub::new(vec![McpServerConfig::stdio(
        "basic",
        bin.to_string_lossy(),
        ["--stdio"],
    )]);
    // Connected and listed first, as the app does at start: a listing waits only briefly
    // (`DEFAULT_LISTING_WAIT`, 2 s) for a server still starting, and node took longer once
    // while the browser tests ran beside this one.
    hub.start().await;
    let tools = hub.list_tools(&Scope::default()).await.unwrap();
    let get_time = tools
        .iter()
        .find(|t| t.name == "basic__get-time")
        .expect("get-time");
    let uri = get_time
        .ui
        .as_ref()
        .and_then(|u| u.resource_uri.clone())
        .expect("_meta.ui.resourceUri");
    assert_eq!(uri, "ui://get-time/mcp-app.html");
    let r = hub
        .call_tool(&Scope::default(), "basic__get-time", json!({}))
        .await
        .unwrap();
    assert!(!r.is_error);
    assert_eq!(r.ui.unwrap().resource_uri.as_deref(), Some(uri.as_str()));
    // It advertises no prompts: none are asked for, and the server stays healthy.
    assert!(
        hub.list_prompts(&Scope::default())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(hub.status()[0].status, "connected");
    let view = hub.read_resource(&view_of("basic"), &uri).await.unwrap();
    assert_eq!(view.mime_type.as_deref(), Some(MCP_APP_MIME));
    assert!(view.text.unwrap().to_lowercase().contains("<html"));
}

/// The scope of an MCP App view of `server`.
fn view_of(server: &str) -> Scope {
    Scope::view(Default::default(), Some(server.into()))
}
