//! The MCP hub against the rmcp test server in-process (a duplex pipe per connection):
//! namespacing, listing with `_meta.ui` and visibility, calls (errors, summaries, the result
//! cap, timeouts), prompts, resources and templates, `list_changed`, skills, and one broken
//! server not hiding the others.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::StreamExt;
use lmchatkit::mcp::{McpHub, McpServerConfig};
use lmchatkit::protocol::{Role, ServerEventType, Visibility};
use lmchatkit::{EventBroadcaster, HostError, Principal, Scope, ToolSource};
use lmchatkit_tests::mcp_server::{APP_HTML, APP_MIME, SKILL_URI, UI_URI, duplex_connector};
use serde_json::json;

fn hub() -> McpHub {
    McpHub::new(vec![McpServerConfig::in_process(
        "test",
        duplex_connector(),
    )])
}

#[tokio::test]
async fn lists_tools_namespaced_with_ui_meta_and_visibility() {
    let hub = hub();
    let tools = hub.list_tools(&Scope::default()).await.unwrap();
    let get = |n: &str| {
        tools
            .iter()
            .find(|t| t.name == n)
            .unwrap_or_else(|| panic!("{n} in {tools:?}"))
    };
    assert!(tools.iter().all(|t| t.name.starts_with("test__")));
    let add = get("test__add");
    assert_eq!(add.description.as_deref(), Some("Add two integers"));
    assert_eq!(
        add.input_schema.as_ref().unwrap()["properties"]["a"]["type"],
        "integer"
    );
    assert!(add.ui.is_none() && add.visibility.is_empty());
    let show = get("test__show_app");
    assert_eq!(
        show.ui.as_ref().unwrap().resource_uri.as_deref(),
        Some(UI_URI)
    );
    assert_eq!(show.visibility, vec![Visibility::Model, Visibility::App]);
    assert_eq!(
        get("test__legacy_app")
            .ui
            .as_ref()
            .unwrap()
            .resource_uri
            .as_deref(),
        Some(UI_URI),
        "the deprecated flat ui/resourceUri key is read too"
    );
    let app_only = get("test__app_refresh");
    assert!(!app_only.visible_to(Visibility::Model) && app_only.visible_to(Visibility::App));
    let model_only = get("test__model_only");
    assert!(model_only.visible_to(Visibility::Model) && !model_only.visible_to(Visibility::App));
    assert_eq!(hub.status()[0].status, "connected");
}

#[tokio::test]
async fn calls_route_back_and_results_are_model_text() {
    let hub = hub().with_result_cap(1024);
    let r = hub
        .call_tool(&Scope::default(), "test__add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!((r.content.as_str(), r.is_error), ("5", false));

    let r = hub
        .call_tool(&Scope::default(), "test__fail", json!({}))
        .await
        .unwrap();
    assert!(r.is_error, "an MCP tool error is an is_error result");
    assert_eq!(r.content, "it broke");

    let r = hub
        .call_tool(&Scope::default(), "test__show_app", json!({}))
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"value": 42})));
    assert_eq!(r.ui.unwrap().resource_uri.as_deref(), Some(UI_URI));

    let r = hub
        .call_tool(&Scope::default(), "test__picture", json!({}))
        .await
        .unwrap();
    assert_eq!(
        r.content,
        "a picture:\n[image: image/png, 8 bytes]\n[audio: audio/wav, 3 bytes]"
    );

    let r = hub
        .call_tool(&Scope::default(), "test__big", json!({"bytes": 100_000}))
        .await
        .unwrap();
    assert!(r.content.len() < 1200, "capped: {}", r.content.len());
    assert!(r.content.starts_with("HEAD") && r.content.ends_with("TAIL"));
    assert!(r.content.contains("bytes omitted"));

    assert!(matches!(
        hub.call_tool(&Scope::default(), "test__nope", json!({}))
            .await,
        Err(HostError::NotFound(_))
    ));
    assert!(matches!(
        hub.call_tool(&Scope::default(), "add", json!({})).await,
        Err(HostError::NotFound(_))
    ));
    assert!(matches!(
        hub.call_tool(&Scope::default(), "test__add", json!([1]))
            .await,
        Err(HostError::InvalidInput(_))
    ));

    assert_eq!(
        hub.tool_source(&Scope::default(), "test__app_refresh")
            .await,
        ToolSource::Scoped("test".into())
    );
    assert_eq!(
        hub.tool_source(&Scope::default(), "other__add").await,
        ToolSource::Unknown
    );
    assert_eq!(
        hub.tool_source(&Scope::default(), "add").await,
        ToolSource::Unknown
    );

    // A view's bare names resolve within the mounting tool's server.
    let view = view_of("test");
    assert_eq!(
        hub.resolve_view_tool(&view, "app_refresh"),
        "test__app_refresh"
    );
    assert_eq!(hub.resolve_view_tool(&view, "test__add"), "test__add");
    assert_eq!(hub.resolve_view_tool(&view_of("nope"), "add"), "add");
    assert_eq!(hub.resolve_view_tool(&Scope::default(), "add"), "add");
}

#[tokio::test]
async fn a_slow_call_times_out_as_an_error_result() {
    let hub = hub().with_call_timeout(Duration::from_millis(300));
    let r = hub
        .call_tool(&Scope::default(), "test__slow", json!({"ms": 5000}))
        .await
        .unwrap();
    assert!(r.is_error);
    assert!(
        r.content.contains("test"),
        "names the server: {}",
        r.content
    );
    let r = hub
        .call_tool(&Scope::default(), "test__add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert_eq!(
        r.content, "2",
        "the server still works after a timed-out call"
    );
}

#[tokio::test]
async fn prompts_with_arguments_and_every_message() {
    let hub = hub();
    let prompts = hub.list_prompts(&Scope::default()).await.unwrap();
    let greet = prompts.iter().find(|p| p.name == "test__greet").unwrap();
    let args: Vec<_> = greet
        .arguments
        .iter()
        .map(|a| (a.name.as_str(), a.required))
        .collect();
    assert!(
        args.contains(&("name", true)) && args.contains(&("style", false)),
        "{args:?}"
    );

    let r = hub
        .get_prompt(
            &Scope::default(),
            "test__greet",
            BTreeMap::from([("name".to_owned(), "Ada".to_owned())]),
        )
        .await
        .unwrap();
    assert_eq!(r.messages.len(), 2);
    assert_eq!(r.messages[0].role, Role::User);
    assert_eq!(r.messages[0].content, "Greet Ada warmly.");
    assert_eq!(r.messages[1].role, Role::Assistant);
    assert!(
        hub.get_prompt(&Scope::default(), "test__greet", BTreeMap::new())
            .await
            .is_err()
    );
    assert!(matches!(
        hub.get_prompt(&Scope::default(), "test__nope", BTreeMap::new())
            .await,
        Err(HostError::NotFound(_))
    ));
    assert_eq!(hub.list_prompts(&view_of("test")).await.unwrap().len(), 1);
}

#[tokio::test]
async fn resources_templates_and_ui_meta() {
    let hub = hub();
    let res = hub.list_resources(&Scope::default()).await.unwrap();
    let uris: Vec<_> = res.iter().map(|r| (r.uri.as_str(), r.template)).collect();
    assert!(uris.contains(&("test://static/hello.txt", false)));
    assert!(uris.contains(&("test://item/{id}", true)), "{uris:?}");
    assert!(
        uris.contains(&(SKILL_URI, false)),
        "the second page is followed: {uris:?}"
    );

    let r = hub
        .read_resource(&Scope::default(), "test://static/hello.txt")
        .await
        .unwrap();
    assert_eq!(r.text.as_deref(), Some("Hello, resource!"));
    let r = hub
        .read_resource(&Scope::default(), "test://item/7")
        .await
        .unwrap();
    assert_eq!(
        r.text.as_deref(),
        Some("item 7"),
        "an expanded template is read"
    );

    let r = hub.read_resource(&view_of("test"), UI_URI).await.unwrap();
    assert_eq!(r.mime_type.as_deref(), Some(APP_MIME));
    assert_eq!(r.text.as_deref(), Some(APP_HTML));
    let ui = r.ui.unwrap();
    assert_eq!(
        ui.csp.unwrap().connect_domains,
        vec!["https://api.example.com"]
    );
    assert_eq!(ui.prefers_border, Some(false), "content-level meta wins");
    assert_eq!(
        ui.domain.as_deref(),
        Some("listing.example"),
        "listing meta fills the rest"
    );

    assert!(hub.read_resource(&view_of("other"), UI_URI).await.is_err());
    assert!(
        hub.read_resource(&Scope::default(), "test://missing")
            .await
            .is_err()
    );
}

#[tokio::test]
async fn list_changed_invalidates_and_reaches_the_event_stream() {
    let events = EventBroadcaster::new();
    let hub = hub().with_events(events.clone());
    hub.start().await;
    // The in-process rmcp server speaks 2026-07-28: notifications come on a listen stream.
    assert_eq!(
        hub.protocol_version("test").await.as_deref(),
        Some("2026-07-28")
    );
    let mut sub = Box::pin(events.subscribe(Principal::anonymous(), None));
    for (what, kind) in [
        ("tools", ServerEventType::ToolsChanged),
        ("prompts", ServerEventType::PromptsChanged),
        ("resources", ServerEventType::ResourcesChanged),
    ] {
        hub.call_tool(&Scope::default(), "test__poke", json!({"what": what}))
            .await
            .unwrap();
        let got = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                let (_, e) = sub.next().await.unwrap();
                if e.kind == kind {
                    return;
                }
            }
        })
        .await;
        assert!(got.is_ok(), "no {kind:?} event");
    }
}

#[tokio::test]
async fn skill_index_augments_the_system_prompt() {
    let hub = hub();
    let prompt = hub
        .augment_system_prompt(&Scope::default(), "Be brief.".into())
        .await;
    assert!(
        prompt.starts_with("Be brief.\n\nCall the lmchatkit__get_skill tool with the skill URI")
    );
    assert!(
        prompt.contains(&format!("- {SKILL_URI} (testing): How to write good tests")),
        "{prompt}"
    );
}

#[tokio::test]
async fn a_broken_server_does_not_hide_the_others() {
    let hub = McpHub::new(vec![
        McpServerConfig::stdio("broken", "/nonexistent/mcp-server", Vec::<String>::new()),
        McpServerConfig::in_process("test", duplex_connector()).unnamespaced(),
    ]);
    hub.start().await;
    let tools = hub.list_tools(&Scope::default()).await.unwrap();
    assert!(
        tools.iter().any(|t| t.name == "add"),
        "un-namespaced names: {tools:?}"
    );
    let status = hub.status();
    assert_eq!(
        (status[0].name.as_str(), status[0].status.as_str()),
        ("broken", "error")
    );
    assert!(status[0].error.as_deref().unwrap().contains("nonexistent"));
    assert_eq!(status[1].status, "connected");
    // Only the broken one is a set-up problem, with the fix for a missing command.
    let problems = hub.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].subject, "MCP server broken");
    assert!(
        problems[0]
            .fix
            .starts_with("`/nonexistent/mcp-server` was not found"),
        "{problems:?}"
    );
    assert_eq!(
        hub.tool_source(&Scope::default(), "add").await,
        ToolSource::Scoped("test".into())
    );
    let r = hub
        .call_tool(&Scope::default(), "add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(r.content, "3");
}

#[tokio::test]
async fn a_failed_connect_shows_no_url_secrets_in_the_status() {
    let port = lmchatkit_tests::mcp_server::free_port(); // nothing listens there
    let hub = McpHub::new(vec![McpServerConfig::http(
        "remote",
        format!("http://user:status-pass@127.0.0.1:{port}/mcp?token=status-token"),
    )]);
    hub.start().await;
    let status = hub.status();
    assert_eq!(status[0].status, "error");
    let error = status[0].error.clone().unwrap_or_default();
    assert!(error.contains("127.0.0.1"), "{error}");
    for secret in ["status-pass", "status-token"] {
        assert!(!error.contains(secret), "{secret} in the status: {error}");
    }
    let problem = hub
        .problems()
        .pop()
        .expect("the failed server is a set-up problem");
    assert!(
        problem
            .fix
            .starts_with(&format!("no answer from http://127.0.0.1:{port}")),
        "{problem:?}"
    );
    for secret in ["status-pass", "status-token"] {
        assert!(
            !problem.to_string().contains(secret),
            "{secret} in {problem}"
        );
    }
}

#[tokio::test]
async fn custom_separator() {
    let hub =
        McpHub::new(vec![McpServerConfig::in_process("t", duplex_connector())]).with_separator(".");
    let r = hub
        .call_tool(&Scope::default(), "t.add", json!({"a": 4, "b": 4}))
        .await
        .unwrap();
    assert_eq!(r.content, "8");
}

/// The scope of an MCP App view of `server`.
fn view_of(server: &str) -> Scope {
    Scope::view(Default::default(), Some(server.into()))
}
