//! The demo server through the hub, as the service sees it.

use std::collections::BTreeMap;

use lmchatkit_protocol::Visibility;
use serde_json::json;

use super::*;
use crate::Scope;
use crate::host::ToolSource;
use crate::mcp::McpHub;

fn hub() -> McpHub {
    McpHub::new(vec![demo_server_config()])
}

#[tokio::test]
async fn lists_tools_with_the_app_meta_and_visibility() {
    let hub = hub();
    let tools = hub.list_tools(&Scope::default()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for name in [
        "demo__roll_dice",
        "demo__current_time",
        "demo__show_clock",
        "demo__clock_now",
    ] {
        assert!(names.contains(&name), "{names:?}");
    }
    let app = tools.iter().find(|t| t.name == "demo__show_clock").unwrap();
    let ui = app.ui.as_ref().unwrap();
    assert_eq!(ui.resource_uri.as_deref(), Some(DEMO_VIEW_URI));
    let app_only = tools.iter().find(|t| t.name == "demo__clock_now").unwrap();
    assert_eq!(app_only.visibility, [Visibility::App]);
    let dice = tools.iter().find(|t| t.name == "demo__roll_dice").unwrap();
    assert!(dice.ui.is_none() && dice.visibility.is_empty());
    assert_eq!(
        hub.tool_source(&Scope::default(), "demo__clock_now").await,
        ToolSource::Scoped("demo".into())
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn tools_answer_and_validate_their_arguments() {
    let hub = hub();
    for _ in 0..20 {
        let r = hub
            .call_tool(&Scope::default(), "demo__roll_dice", json!({"sides": 3}))
            .await
            .unwrap();
        let roll = r.structured_content.as_ref().unwrap()["roll"]
            .as_u64()
            .unwrap();
        assert!((1..=3).contains(&roll), "{r:?}");
        assert_eq!(r.content, format!("You rolled a {roll} on a d3."));
    }
    let bad = hub
        .call_tool(&Scope::default(), "demo__roll_dice", json!({"sides": 1}))
        .await
        .unwrap();
    assert!(
        bad.is_error && bad.content.contains("between 2 and 1000"),
        "{bad:?}"
    );
    let time = hub
        .call_tool(&Scope::default(), "demo__current_time", json!({}))
        .await
        .unwrap();
    let iso = time.structured_content.as_ref().unwrap()["iso"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        iso.ends_with('Z') && time.content.contains(&iso),
        "{time:?}"
    );
    let clock = hub
        .call_tool(
            &Scope::default(),
            "demo__show_clock",
            json!({"title": "Kitchen"}),
        )
        .await
        .unwrap();
    assert!(clock.content.starts_with("Kitchen: it is "), "{clock:?}");
    assert_eq!(
        clock.structured_content.as_ref().unwrap()["title"],
        "Kitchen"
    );
    let now = hub
        .call_tool(&Scope::default(), "demo__clock_now", json!({}))
        .await
        .unwrap();
    assert!(now.content.starts_with("Server time: "), "{now:?}");
    hub.shutdown().await;
}

#[tokio::test]
async fn prompt_with_an_argument() {
    let hub = hub();
    let prompts = hub.list_prompts(&Scope::default()).await.unwrap();
    let explain = prompts.iter().find(|p| p.name == "demo__explain").unwrap();
    let topic = explain
        .arguments
        .iter()
        .find(|a| a.name == "topic")
        .unwrap();
    assert!(topic.required);
    let args = BTreeMap::from([("topic".to_owned(), "borrowing".to_owned())]);
    let r = hub
        .get_prompt(&Scope::default(), "demo__explain", args)
        .await
        .unwrap();
    assert_eq!(
        r.messages[0].content,
        "Explain borrowing to a curious beginner in three short paragraphs, with one example."
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn resources_skill_and_view() {
    let hub = hub();
    let resources = hub.list_resources(&Scope::default()).await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, [ABOUT_URI, SKILL_URI, DEMO_VIEW_URI]);
    let index = crate::mcp::skill_index(&resources).unwrap();
    assert!(index.contains("- skill://dice-games/SKILL.md (dice-games): How to run"));

    let about = hub
        .read_resource(&Scope::default(), ABOUT_URI)
        .await
        .unwrap();
    assert!(about.text.unwrap().contains("--no-demo-mcp"));
    let skill = hub
        .read_resource(&Scope::default(), SKILL_URI)
        .await
        .unwrap();
    assert!(skill.text.unwrap().contains("roll_dice"));

    let view = hub
        .read_resource(
            &Scope::view(Default::default(), Some("demo".into())),
            DEMO_VIEW_URI,
        )
        .await
        .unwrap();
    assert_eq!(view.mime_type.as_deref(), Some(MCP_APP_MIME));
    assert_eq!(view.ui.as_ref().unwrap().prefers_border, Some(true));
    let html = view.text.unwrap();
    for needle in [
        "\"ui/initialize\"",
        "\"2026-01-26\"",
        "ui/notifications/initialized",
        "ui/notifications/size-changed",
        "ui/resource-teardown",
        "event.source !== window.parent",
        "id=\"tool-input\"",
        "id=\"tool-result\"",
        "id=\"call-result\"",
        &format!("\"{DEMO_APP_ONLY_TOOL}\""),
    ] {
        assert!(html.contains(needle), "the view lacks {needle}");
    }
    // Self-contained: nothing loaded from elsewhere.
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
    hub.shutdown().await;
}
