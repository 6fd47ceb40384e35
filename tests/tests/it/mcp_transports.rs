//! The hub over real transports with the rmcp test server: a stdio child process (the
//! `test-mcp-server` binary) and Streamable HTTP on loopback — listing, calls, `list_changed`,
//! and resilience (a killed child restarts on the next call, a child dying mid-call gives an
//! `is_error` result naming the server, dropping the hub kills the child).

use std::time::Duration;

use futures_util::StreamExt;
use lmchatkit::mcp::{McpHub, McpServerConfig};
use lmchatkit::protocol::ServerEventType;
use lmchatkit::{EventBroadcaster, Principal, Scope};
use lmchatkit_tests::mcp_server::{UI_URI, duplex_connector, serve_hanging, serve_http};
use serde_json::json;

fn stdio_server(name: &str) -> McpServerConfig {
    McpServerConfig::stdio(
        name,
        env!("CARGO_BIN_EXE_test-mcp-server"),
        Vec::<String>::new(),
    )
}

fn alive(pid: u32) -> bool {
    // A zombie counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

async fn wait_gone(pid: u32) -> bool {
    for _ in 0..100 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

async fn expect_event(
    sub: &mut (impl futures_util::Stream<Item = (u64, lmchatkit::protocol::ServerEvent)> + Unpin),
    kind: ServerEventType,
) {
    let got = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let (_, e) = sub.next().await.expect("event stream ended");
            if e.kind == kind {
                return;
            }
        }
    })
    .await;
    assert!(got.is_ok(), "no {kind:?} event");
}

#[tokio::test]
async fn stdio_child_lists_calls_and_notifies() {
    let events = EventBroadcaster::new();
    let hub = McpHub::new(vec![stdio_server("local")]).with_events(events.clone());
    let mut sub = Box::pin(events.subscribe(Principal::anonymous(), None));
    hub.start().await;
    assert_eq!(hub.status()[0].status, "connected");
    let tools = hub.list_tools(&Scope::default()).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "local__show_app"));
    let r = hub
        .call_tool(&Scope::default(), "local__add", json!({"a": 20, "b": 22}))
        .await
        .unwrap();
    assert_eq!(r.content, "42");
    let r = hub.read_resource(&view_of("local"), UI_URI).await.unwrap();
    assert!(r.text.unwrap().contains("test app"));
    hub.call_tool(&Scope::default(), "local__poke", json!({}))
        .await
        .unwrap();
    expect_event(&mut sub, ServerEventType::ToolsChanged).await;
}

#[tokio::test]
async fn streamable_http_lists_calls_and_notifies() {
    let server = serve_http().await;
    let events = EventBroadcaster::new();
    let hub = McpHub::new(vec![
        McpServerConfig::http("web", server.url())
            .with_header("x-test", "1")
            .with_bearer("t0k3n"),
    ])
    .with_events(events.clone());
    let mut sub = Box::pin(events.subscribe(Principal::anonymous(), None));
    hub.start().await;
    assert_eq!(hub.status()[0].status, "connected", "{:?}", hub.status());
    let r = hub
        .call_tool(&Scope::default(), "web__add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(r.content, "3");
    let prompts = hub.list_prompts(&Scope::default()).await.unwrap();
    assert!(prompts.iter().any(|p| p.name == "web__greet"));
    hub.call_tool(&Scope::default(), "web__poke", json!({"what": "resources"}))
        .await
        .unwrap();
    expect_event(&mut sub, ServerEventType::ResourcesChanged).await;
}

#[tokio::test]
async fn a_killed_child_is_restarted_on_the_next_call() {
    let hub = McpHub::new(vec![stdio_server("local")]);
    let r = hub
        .call_tool(&Scope::default(), "local__add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert_eq!(r.content, "2");
    let pid = hub.pid("local").await.expect("a stdio server has a pid");
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(wait_gone(pid).await);
    let r = hub
        .call_tool(&Scope::default(), "local__add", json!({"a": 2, "b": 2}))
        .await
        .unwrap();
    assert_eq!(
        (r.content.as_str(), r.is_error),
        ("4", false),
        "restarted: {r:?}"
    );
    let new_pid = hub.pid("local").await.unwrap();
    assert_ne!(new_pid, pid);
    assert_eq!(hub.status()[0].status, "connected");
}

#[tokio::test]
async fn a_child_dying_mid_call_is_an_error_result_then_restarts() {
    let hub = McpHub::new(vec![stdio_server("local")]);
    let r = hub
        .call_tool(&Scope::default(), "local__die", json!({}))
        .await
        .unwrap();
    assert!(r.is_error, "{r:?}");
    assert!(
        r.content.contains("local"),
        "names the server: {}",
        r.content
    );
    let r = hub
        .call_tool(&Scope::default(), "local__add", json!({"a": 3, "b": 3}))
        .await
        .unwrap();
    assert_eq!(r.content, "6");
}

#[tokio::test]
async fn dropping_the_hub_kills_the_child() {
    let hub = McpHub::new(vec![stdio_server("local")]);
    hub.start().await;
    let pid = hub.pid("local").await.unwrap();
    assert!(alive(pid));
    drop(hub);
    assert!(
        wait_gone(pid).await,
        "child {pid} still running after the hub was dropped"
    );
}

/// The scope of an MCP App view of `server`.
fn view_of(server: &str) -> Scope {
    Scope::view(Default::default(), Some(server.into()))
}

#[tokio::test]
async fn a_hanging_server_holds_up_a_listing_once_by_the_wait_and_then_never() {
    let (url, _hang) = serve_hanging().await;
    let hub = McpHub::new(vec![
        McpServerConfig::http("hang", url),
        McpServerConfig::in_process("test", duplex_connector()),
    ])
    .with_listing_wait(Duration::from_secs(3));
    let scope = Scope::default();

    // Nothing listed yet: the turn waits for the hanging server, but only the listing wait
    // (connecting alone may take 30 s).
    let started = std::time::Instant::now();
    let tools = hub.list_tools(&scope).await.unwrap();
    let first = started.elapsed();
    assert!(tools.iter().any(|t| t.name == "test__add"), "{tools:?}");
    assert!(!tools.iter().any(|t| t.name.starts_with("hang__")));
    assert!(
        first < Duration::from_secs(10),
        "first listing took {first:?}"
    );

    // Now the hanging server is known to be slow: no request waits for it again.
    for _ in 0..3 {
        let started = std::time::Instant::now();
        let tools = hub.list_tools(&scope).await.unwrap();
        let prompts = hub.list_prompts(&scope).await.unwrap();
        let resources = hub.list_resources(&scope).await.unwrap();
        let took = started.elapsed();
        assert!(tools.iter().any(|t| t.name == "test__add"));
        assert!(prompts.iter().any(|p| p.name == "test__greet"));
        assert!(!resources.is_empty());
        assert!(
            took < Duration::from_secs(2),
            "a later listing took {took:?}"
        );
    }
    // The hanging server offered nothing: a call naming it is unknown at once.
    let err = hub
        .call_tool(&scope, "hang__anything", json!({}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("unknown tool"), "{err}");
}

#[tokio::test]
async fn listings_come_from_the_cache_and_a_change_is_listed_again_in_the_background() {
    let server = serve_http().await;
    let events = EventBroadcaster::new();
    let hub =
        McpHub::new(vec![McpServerConfig::http("web", server.url())]).with_events(events.clone());
    let mut sub = Box::pin(events.subscribe(Principal::anonymous(), None));
    hub.start().await;
    let lists = |method: &str| {
        server
            .methods
            .lock()
            .unwrap()
            .iter()
            .filter(|m| *m == method)
            .count()
    };
    let requests = || server.headers.lock().unwrap().len();
    let scope = Scope::default();

    // `start` listed everything: turns make no request at all.
    assert_eq!(lists("tools/list"), 1);
    let after_start = requests();
    for _ in 0..5 {
        let tools = hub.list_tools(&scope).await.unwrap();
        assert!(tools.iter().any(|t| t.name == "web__add"));
        hub.list_prompts(&scope).await.unwrap();
        hub.list_resources(&scope).await.unwrap();
        hub.augment_system_prompt(&scope, String::new()).await;
    }
    assert_eq!(requests(), after_start, "a listing from the cache went out");

    // A list change is listed again in the background (its event goes out once that ended).
    hub.call_tool(&scope, "web__poke", json!({"what": "tools"}))
        .await
        .unwrap();
    expect_event(&mut sub, ServerEventType::ToolsChanged).await;
    assert!(
        lists("tools/list") >= 2,
        "the event came before the tools were listed again"
    );
    // (The test server may notify twice, through the session and on the listen stream; let a
    // second refresh end.)
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after_event = requests();
    hub.list_tools(&scope).await.unwrap();
    assert_eq!(requests(), after_event, "the refreshed listing is current");
}
