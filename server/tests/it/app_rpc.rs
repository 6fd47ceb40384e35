//! Typed app calls round-trip between the UI and the service: each call is built from a view's
//! JSON-RPC params with the shared [`AppCall`] (as the UI's bridge does), serialised as an
//! [`AppProxyRequest`] (as the UI's `api.rs` does), posted to `/api/app-proxy`, and every answer
//! is read back into the shared result type (as `api.rs` does before the bridge posts it).

use crate::support;

use lmchatkit::ChatService;
use lmchatkit::protocol::*;
use serde_json::{Value, json};
use support::*;

const VIEW: &str = "ui://a/view";
const VIEW_HTML: &str = "<!doctype html><p>view</p>";

/// Server `a`: the tool `show` with the view `ui://a/view`, the app-only tool `refresh`, a
/// resource template and the prompt `review`. Server `b`: the tool `other`, its own view and the
/// prompt `elsewhere`.
fn host() -> FakeHost {
    let mut show = tool("show", &[]);
    show.ui = Some(UiToolMeta {
        resource_uri: Some(VIEW.into()),
        ..Default::default()
    });
    let mut h = FakeHost {
        tools: vec![
            show,
            tool("refresh", &[Visibility::App]),
            tool("other", &[]),
        ],
        resources: vec![
            Resource {
                name: Some("The view".into()),
                mime_type: Some("text/html;profile=mcp-app".into()),
                ..Resource::new(VIEW)
            },
            Resource {
                template: true,
                description: Some("One item".into()),
                ..Resource::new("ui://a/{id}")
            },
            Resource::new("ui://b/view"),
        ],
        prompts: vec![
            Prompt {
                name: "review".into(),
                description: Some("Review a file".into()),
                arguments: vec![PromptArgument {
                    name: "file".into(),
                    description: None,
                    required: true,
                }],
                icon: false,
            },
            Prompt {
                name: "elsewhere".into(),
                ..Default::default()
            },
        ],
        ..FakeHost::default()
    };
    for (name, server) in [("show", "a"), ("refresh", "a"), ("other", "b")] {
        h.sources.insert(name.into(), server.into());
    }
    h.prompt_sources.insert("review".into(), "a".into());
    h.prompt_sources.insert("elsewhere".into(), "b".into());
    let view = ResourceResult {
        uri: VIEW.into(),
        text: Some(VIEW_HTML.into()),
        mime_type: Some("text/html;profile=mcp-app".into()),
        ui: Some(UiResourceMeta {
            prefers_border: Some(false),
            ..Default::default()
        }),
        ..Default::default()
    };
    h.contents.insert(VIEW.into(), ("a".into(), view));
    h.contents.insert(
        "ui://a/{id}".into(),
        ("a".into(), ResourceResult::default()),
    );
    h.contents.insert(
        "ui://b/view".into(),
        ("b".into(), ResourceResult::default()),
    );
    h
}

/// The call as the bridge parses it from a view's request.
fn from_view(method: &str, params: Value) -> AppCall {
    AppCall::parse(method, params).unwrap()
}

/// Posts `call` from the view of `via` with the body the UI's `api.rs` sends.
async fn post_call(svc: &ChatService, via: &str, call: &AppCall) -> Reply {
    let body = serde_json::to_vec(&AppProxyRequest::new(via, call.clone())).unwrap();
    send(svc, with_json("POST", "/chat/api/app-proxy", body)).await
}

/// The answer to `call` from the view of `show`, read as the UI reads it; re-serialising it gives
/// the service's bytes back (what the view receives).
async fn answer(svc: &ChatService, call: &AppCall) -> AppResult {
    let r = post_call(svc, "show", call).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let result = call.read_result(&r.text()).unwrap();
    assert_eq!(serde_json::to_string(&result).unwrap(), r.text());
    result
}

#[tokio::test]
async fn a_tools_call_round_trips_through_the_service() {
    let h = host();
    let calls = h.calls.clone();
    let svc = service(config(h));
    let call = from_view(
        "tools/call",
        json!({"name": "refresh", "arguments": {"k": 2}}),
    );
    let AppResult::CallTool(r) = answer(&svc, &call).await else {
        panic!("not a CallToolResult");
    };
    assert_eq!(r.content, [ContentBlock::text(r#"refresh:{"k":2}"#)]);
    assert!(!r.is_error && r.structured_content.is_none());
    // No arguments reach the tool as `{}`.
    let AppResult::CallTool(r) =
        answer(&svc, &from_view("tools/call", json!({"name": "refresh"}))).await
    else {
        panic!("not a CallToolResult");
    };
    assert_eq!(r.content[0].as_text(), Some("refresh:{}"));
    let seen: Vec<String> = calls.lock().unwrap().iter().map(|c| c.0.clone()).collect();
    assert_eq!(seen, ["refresh", "refresh"]);
}

#[tokio::test]
async fn a_resource_read_round_trips_with_its_view_meta() {
    let svc = service(config(host()));
    let call = from_view("resources/read", json!({"uri": VIEW}));
    let AppResult::ReadResource(r) = answer(&svc, &call).await else {
        panic!("not a ReadResourceResult");
    };
    let [c] = &r.contents[..] else {
        panic!("one entry expected: {r:?}");
    };
    assert_eq!(c.uri, VIEW);
    assert_eq!(c.mime_type.as_deref(), Some("text/html;profile=mcp-app"));
    assert_eq!(
        c.body,
        ResourceBody::Text {
            text: VIEW_HTML.into()
        }
    );
    let ui = c.meta.as_ref().and_then(|m| m.ui.as_ref());
    assert_eq!(ui.and_then(|u| u.prefers_border), Some(false));
    // Another server's resource is not found from this view.
    let r = post_call(&svc, "show", &AppCall::read_resource("ui://b/view")).await;
    assert_eq!(r.status, 404, "{}", r.text());
}

#[tokio::test]
async fn resource_and_template_lists_round_trip_scoped_to_the_views_server() {
    let svc = service(config(host()));
    let AppResult::ListResources(r) = answer(&svc, &from_view("resources/list", Value::Null)).await
    else {
        panic!("not a ListResourcesResult");
    };
    assert_eq!(
        r.resources,
        [McpResource {
            uri: VIEW.into(),
            details: ResourceDetails {
                name: Some("The view".into()),
                mime_type: Some("text/html;profile=mcp-app".into()),
                description: None,
            },
        }]
    );
    let call = from_view("resources/templates/list", json!({"cursor": "ignored"}));
    let AppResult::ListResourceTemplates(r) = answer(&svc, &call).await else {
        panic!("not a ListResourceTemplatesResult");
    };
    assert_eq!(
        r.resource_templates,
        [McpResourceTemplate {
            uri_template: "ui://a/{id}".into(),
            details: ResourceDetails {
                description: Some("One item".into()),
                ..Default::default()
            },
        }]
    );
}

#[tokio::test]
async fn a_prompts_list_round_trips_scoped_to_the_views_server() {
    let svc = service(config(host()));
    let AppResult::ListPrompts(r) = answer(&svc, &from_view("prompts/list", json!({}))).await
    else {
        panic!("not a ListPromptsResult");
    };
    let names: Vec<&str> = r.prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["review"]);
    assert!(r.prompts[0].arguments[0].required);
}

#[tokio::test]
async fn a_tool_of_another_server_is_403() {
    let h = host();
    let calls = h.calls.clone();
    let svc = service(config(h));
    let r = post_call(&svc, "show", &AppCall::call_tool("other", None)).await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.error(),
        "tool \"other\" does not belong to the calling view's server"
    );
    let r = post_call(&svc, "ghost", &AppCall::call_tool("refresh", None)).await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(calls.lock().unwrap().is_empty(), "nothing was called");
}

#[tokio::test]
async fn an_unknown_method_or_bad_params_are_400() {
    let svc = service(config(host()));
    let post = |body: Value| send(&svc, support::post("/chat/api/app-proxy", &body));
    let r = post(json!({"method": "sampling/createMessage", "params": {}, "via": "show"})).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.error()
            .contains("method \"sampling/createMessage\" is not allowed from a view"),
        "{}",
        r.error()
    );
    let r = post(json!({"method": "resources/read", "params": {"uri": 7}, "via": "show"})).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.error().contains("invalid params of resources/read"),
        "{}",
        r.error()
    );
}

/// Before, the operator's `deny` governed only the model's calls: a view (hostile content that
/// can post without the user acting) could still run a denied tool of its own server, through
/// the proxy or `POST /api/tools/call` with `source: "app"`.
#[tokio::test]
async fn a_tool_the_operator_denies_is_refused_to_views_too() {
    let h = host();
    let calls = h.calls.clone();
    let policy = lmchatkit::ApprovalPolicy::new(ToolDecision::Ask).deny("refr*");
    let svc = service(config(h).approval_policy(policy));
    let r = post_call(&svc, "show", &AppCall::call_tool("refresh", None)).await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(r.error().contains("refresh"), "{}", r.error());
    let body = json!({"name": "refresh", "arguments": {}, "source": "app", "via": "show"});
    let r = send(&svc, support::post("/chat/api/tools/call", &body)).await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(calls.lock().unwrap().is_empty(), "nothing was called");
    // An `ask` is the model's matter: the view's own tool still runs for the view.
    let r = post_call(&svc, "show", &AppCall::call_tool("show", None)).await;
    assert_eq!(r.status, 200, "{}", r.text());
}
