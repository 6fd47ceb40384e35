//! Every non-chat route through `oneshot`: catalog lists with ETags, tools with visibility and
//! ownership checks, prompts, resources, the app proxy, upload, config and events.

use crate::support;

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use lmchatkit::presets::{StaticCommands, StaticPersonas};
use lmchatkit::protocol::*;
use serde_json::json;
use support::*;
use tower::ServiceExt;

#[tokio::test]
async fn personas_default_etag_and_304() {
    let svc = service(config(FakeHost::default()));
    let r = send(&svc, get("/chat/api/personas")).await;
    assert_eq!(r.json(), json!([{"id": "default", "name": "Default"}]));
    let etag = r.headers["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with('"') && etag.len() == 18);
    let req = Request::get("/chat/api/personas")
        .header("if-none-match", &etag)
        .body(Full::default())
        .unwrap();
    let r = send(&svc, req).await;
    assert_eq!(r.status, 304);
    assert!(r.body.is_empty());
    let req = Request::get("/chat/api/personas")
        .header("if-none-match", "\"stale\"")
        .body(Full::default())
        .unwrap();
    assert_eq!(send(&svc, req).await.status, 200);
}

#[tokio::test]
async fn personas_from_source_can_hide_system_prompts() {
    let p = Persona {
        id: "x".into(),
        name: "X".into(),
        system_prompt: Some("secret".into()),
        ..Default::default()
    };
    let svc = service(config(FakeHost::default()).personas(StaticPersonas(vec![p.clone()])));
    assert_eq!(
        send(&svc, get("/chat/api/personas")).await.json()[0]["system_prompt"],
        "secret"
    );
    let svc = service(
        config(FakeHost::default())
            .personas(StaticPersonas(vec![p]))
            .hide_system_prompts(true),
    );
    assert_eq!(
        send(&svc, get("/chat/api/personas")).await.json(),
        json!([{"id": "x", "name": "X"}])
    );
}

#[tokio::test]
async fn empty_lists_are_arrays_never_null() {
    let svc = service(config(FakeHost::default()));
    for path in [
        "/chat/api/commands",
        "/chat/api/models",
        "/chat/api/prompts",
        "/chat/api/resources",
    ] {
        let r = send(&svc, get(path)).await;
        assert_eq!(
            (r.status.as_u16(), r.text()),
            (200, "[]".to_string()),
            "{path}"
        );
    }
    let cmd = SlashCommand {
        id: "1".into(),
        name: "help".into(),
        body: "Help: $ARGUMENTS".into(),
        ..Default::default()
    };
    let svc = service(config(FakeHost::default()).commands(StaticCommands(vec![cmd])));
    assert_eq!(
        send(&svc, get("/chat/api/commands")).await.json()[0]["name"],
        "help"
    );
}

#[tokio::test]
async fn config_reports_capabilities_without_secrets() {
    let svc = service(
        config(FakeHost::default())
            .file_upload(true)
            .max_upload_bytes(1234)
            .events(false),
    );
    assert_eq!(
        send(&svc, get("/chat/api/config")).await.json(),
        json!({"file_upload": true, "max_upload_bytes": 1234, "history": "browser", "events": false, "demo": false, "mcp": [], "user_mcp": false})
    );
}

fn scoped_host() -> FakeHost {
    let mut h = FakeHost {
        tools: vec![
            tool("both", &[]),
            tool("model_only", &[Visibility::Model]),
            tool("app_only", &[Visibility::App]),
            tool("other_server_tool", &[]),
            tool("broken", &[]),
        ],
        ..FakeHost::default()
    };
    for t in ["both", "model_only", "app_only", "broken"] {
        h.sources.insert(t.into(), "a".into());
    }
    h.sources.insert("other_server_tool".into(), "b".into());
    h
}

async fn call(svc: &lmchatkit::ChatService, body: serde_json::Value) -> Reply {
    send(svc, post("/chat/api/tools/call", &body)).await
}

#[tokio::test]
async fn tool_calls_enforce_visibility_fail_closed() {
    let svc = service(config(scoped_host()));
    let r = call(&svc, json!({"name": "both", "arguments": {"x": 1}})).await;
    assert_eq!(r.json(), json!({"content": "both:{\"x\":1}"}));
    assert_eq!(
        call(&svc, json!({"name": "model_only"})).await.json()["content"],
        "model_only:{}"
    );
    let r = call(&svc, json!({"name": "app_only"})).await;
    assert_eq!(
        (r.status.as_u16(), r.error()),
        (
            403,
            "tool \"app_only\" is not callable from this context".into()
        )
    );
    let r = call(
        &svc,
        json!({"name": "model_only", "source": "app", "via": "both"}),
    )
    .await;
    assert_eq!(r.status, 403);
    let r = call(
        &svc,
        json!({"name": "app_only", "source": "app", "via": "both"}),
    )
    .await;
    assert_eq!(r.status, 200);
    let r = call(&svc, json!({"name": "nope"})).await;
    assert_eq!(
        (r.status.as_u16(), r.error()),
        (403, "tool \"nope\" is not recognized".into())
    );
    let r = call(&svc, json!({"name": ""})).await;
    assert_eq!(
        (r.status.as_u16(), r.error()),
        (400, "name is required".into())
    );
    let svc = service(config(FakeHost {
        fail_tools_list: true,
        ..scoped_host()
    }));
    assert_eq!(call(&svc, json!({"name": "both"})).await.status, 403);
}

#[tokio::test]
async fn app_calls_must_stay_on_the_views_server() {
    let svc = service(config(scoped_host()));
    let r = call(&svc, json!({"name": "both", "source": "app"})).await;
    assert_eq!(r.status, 400);
    let r = call(
        &svc,
        json!({"name": "other_server_tool", "source": "app", "via": "both"}),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.error()),
        (
            403,
            "tool \"other_server_tool\" does not belong to the calling view's server".into()
        )
    );
    let r = call(
        &svc,
        json!({"name": "both", "source": "app", "via": "unknown_view"}),
    )
    .await;
    assert_eq!(r.status, 403);
    // A host that does not say where tools come from fails closed; a single-source host passes.
    let mut h = scoped_host();
    h.sources.clear();
    let svc = service(config(h));
    assert_eq!(
        call(
            &svc,
            json!({"name": "both", "source": "app", "via": "both"})
        )
        .await
        .status,
        403
    );
    let svc = service(config(FakeHost {
        unscoped: true,
        ..scoped_host()
    }));
    assert_eq!(
        call(
            &svc,
            json!({"name": "other_server_tool", "source": "app", "via": "both"})
        )
        .await
        .status,
        200
    );
}

#[tokio::test]
async fn a_failing_tool_is_an_error_result_not_a_5xx() {
    let svc = service(config(scoped_host()));
    let r = call(&svc, json!({"name": "broken"})).await;
    assert_eq!(
        (r.status.as_u16(), r.json()),
        (
            200,
            json!({"content": "tool broken failed: server went away", "is_error": true})
        )
    );
}

#[tokio::test]
async fn skill_tool_is_intercepted_for_the_model_only() {
    let mut h = scoped_host();
    let skill = ResourceResult {
        uri: "skill://go/SKILL.md".into(),
        text: Some("Use gofmt.".into()),
        ..Default::default()
    };
    h.contents.insert(skill.uri.clone(), ("a".into(), skill));
    h.resources = vec![Resource::new("skill://go/SKILL.md")];
    let calls = h.calls.clone();
    let svc = service(config(h));
    let r = call(
        &svc,
        json!({"name": SKILL_TOOL_NAME, "arguments": {"uri": "@skill://go/SKILL.md"}}),
    )
    .await;
    assert_eq!(r.json(), json!({"content": "Use gofmt."}));
    let r = call(
        &svc,
        json!({"name": SKILL_TOOL_NAME, "arguments": {"uri": "skill://nope"}}),
    )
    .await;
    assert_eq!(
        r.json(),
        json!({"content": "Error: skill://nope is not a listed skill; call this tool with a skill:// URI from the skill index", "is_error": true})
    );
    let r = call(&svc, json!({"name": SKILL_TOOL_NAME, "arguments": {}})).await;
    assert_eq!(r.json()["is_error"], true);
    let r = call(
        &svc,
        json!({"name": SKILL_TOOL_NAME, "source": "app", "via": "both"}),
    )
    .await;
    assert_eq!(r.status, 403);
    assert!(calls.lock().unwrap().is_empty());
}

#[tokio::test]
async fn prompts_get() {
    let h = FakeHost {
        prompts: vec![Prompt {
            name: "p".into(),
            ..Default::default()
        }],
        ..FakeHost::default()
    };
    let svc = service(config(h));
    let r = send(
        &svc,
        post(
            "/chat/api/prompts/get",
            &json!({"name": "p", "args": {"a": "b"}}),
        ),
    )
    .await;
    assert_eq!(
        r.json()["messages"][0],
        json!({"role": "user", "content": "p {\"a\":\"b\"}"})
    );
    let r = send(&svc, post("/chat/api/prompts/get", &json!({"name": "zzz"}))).await;
    assert_eq!(r.status, 404);
    let r = send(&svc, post("/chat/api/prompts/get", &json!({"name": ""}))).await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn resource_reads_with_via_stay_on_that_server() {
    let mut h = scoped_host();
    let a = ResourceResult {
        uri: "ui://a/view".into(),
        text: Some("<p>a</p>".into()),
        ..Default::default()
    };
    let b = ResourceResult {
        uri: "ui://b/view".into(),
        text: Some("<p>b</p>".into()),
        ..Default::default()
    };
    h.contents.insert(a.uri.clone(), ("a".into(), a));
    h.contents.insert(b.uri.clone(), ("b".into(), b));
    h.resources = vec![Resource::new("ui://a/view"), Resource::new("ui://b/view")];
    let svc = service(config(h));
    let read = |body| post("/chat/api/resources/read", &body);
    assert_eq!(
        send(&svc, read(json!({"uri": "ui://b/view"}))).await.json()["text"],
        "<p>b</p>"
    );
    assert_eq!(
        send(&svc, read(json!({"uri": "ui://a/view", "via": "both"})))
            .await
            .json()["text"],
        "<p>a</p>"
    );
    assert_eq!(
        send(&svc, read(json!({"uri": "ui://b/view", "via": "both"})))
            .await
            .status,
        404
    );
    let r = send(&svc, read(json!({"uri": "ui://a/view", "via": "ghost"}))).await;
    assert_eq!(
        (r.status.as_u16(), r.error()),
        (403, "tool \"ghost\" is not recognized".into())
    );
    assert_eq!(send(&svc, read(json!({"uri": " "}))).await.status, 400);
    // Without `via`, only a listed URI is read.
    let r = send(&svc, read(json!({"uri": "ui://c/unlisted"}))).await;
    assert_eq!(
        (r.status.as_u16(), r.error()),
        (
            404,
            "no server offers the resource \"ui://c/unlisted\"".into()
        )
    );
}

/// The skill tool reads listed `skill://` resources only: never a `demo://` text, a `ui://`
/// view or a `file://` path, even from a server that has them (before the access layer each of
/// these was read and returned to the model).
#[tokio::test]
async fn the_skill_tool_refuses_anything_but_a_listed_skill() {
    let mut h = scoped_host();
    for (uri, text) in [
        ("skill://go/SKILL.md", "Use gofmt."),
        ("demo://lmchatkit/about.txt", "secret about text"),
        ("ui://a/view", "<p>view html</p>"),
        ("file:///etc/passwd", "root:x:0:0"),
    ] {
        let r = ResourceResult {
            uri: uri.into(),
            text: Some(text.into()),
            ..Default::default()
        };
        h.contents.insert(uri.into(), ("a".into(), r));
    }
    h.resources = vec![
        Resource::new("skill://go/SKILL.md"),
        Resource::new("demo://lmchatkit/about.txt"),
        Resource::new("ui://a/view"),
    ];
    let lookups = h.lookups.clone();
    let svc = service(config(h));
    for uri in [
        "demo://lmchatkit/about.txt",
        "ui://a/view",
        "file:///etc/passwd",
    ] {
        let r = call(
            &svc,
            json!({"name": SKILL_TOOL_NAME, "arguments": {"uri": uri}}),
        )
        .await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["is_error"], true, "{uri}: {}", r.json());
        assert!(
            r.json()["content"]
                .as_str()
                .unwrap()
                .contains("not a listed skill"),
            "{uri}: {}",
            r.json()
        );
    }
    assert!(lookups.lock().unwrap().is_empty(), "nothing was read");
    let r = call(
        &svc,
        json!({"name": SKILL_TOOL_NAME, "arguments": {"uri": "skill://go/SKILL.md"}}),
    )
    .await;
    assert_eq!(r.json(), json!({"content": "Use gofmt."}));
}

/// The skill tool exists only while skills are listed: without any, a call to it is an
/// unknown tool.
#[tokio::test]
async fn the_skill_tool_is_unknown_while_no_skill_is_listed() {
    let mut h = scoped_host();
    let r = ResourceResult {
        uri: "demo://x".into(),
        text: Some("x".into()),
        ..Default::default()
    };
    h.contents.insert("demo://x".into(), ("a".into(), r));
    h.resources = vec![Resource::new("demo://x")];
    let svc = service(config(h));
    let r = call(
        &svc,
        json!({"name": SKILL_TOOL_NAME, "arguments": {"uri": "demo://x"}}),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.error()),
        (403, format!("tool {SKILL_TOOL_NAME:?} is not recognized"))
    );
}

#[tokio::test]
async fn app_proxy_dispatches_scoped_methods() {
    let mut h = scoped_host();
    let a = ResourceResult {
        uri: "ui://a/view".into(),
        text: Some("<p>a</p>".into()),
        mime_type: Some("text/html;profile=mcp-app".into()),
        ..Default::default()
    };
    h.contents.insert(a.uri.clone(), ("a".into(), a));
    h.resources = vec![
        Resource::new("ui://a/view"),
        Resource {
            template: true,
            ..Resource::new("ui://a/{id}")
        },
    ];
    h.contents.insert(
        "ui://a/{id}".into(),
        ("a".into(), ResourceResult::default()),
    );
    let svc = service(config(h));
    let proxy = |m: &str, params: serde_json::Value, via: &str| {
        post(
            "/chat/api/app-proxy",
            &json!({"method": m, "params": params, "via": via}),
        )
    };
    let r = send(
        &svc,
        proxy(
            "tools/call",
            json!({"name": "app_only", "arguments": {"k": 2}}),
            "both",
        ),
    )
    .await;
    assert_eq!(
        r.json(),
        json!({"content": [{"type": "text", "text": "app_only:{\"k\":2}"}]})
    );
    assert_eq!(
        send(
            &svc,
            proxy("tools/call", json!({"name": "model_only"}), "both")
        )
        .await
        .status,
        403
    );
    assert_eq!(
        send(
            &svc,
            proxy("tools/call", json!({"name": "other_server_tool"}), "both")
        )
        .await
        .status,
        403
    );
    let r = send(
        &svc,
        proxy("resources/read", json!({"uri": "ui://a/view"}), "both"),
    )
    .await;
    assert_eq!(
        r.json(),
        json!({"contents": [{"uri": "ui://a/view", "mimeType": "text/html;profile=mcp-app", "text": "<p>a</p>"}]})
    );
    assert_eq!(
        send(&svc, proxy("resources/read", json!({}), "both"))
            .await
            .status,
        400
    );
    assert_eq!(
        send(&svc, proxy("resources/list", json!({}), "both"))
            .await
            .json(),
        json!({"resources": [{"uri": "ui://a/view"}]})
    );
    assert_eq!(
        send(&svc, proxy("resources/templates/list", json!({}), "both"))
            .await
            .json(),
        json!({"resourceTemplates": [{"uriTemplate": "ui://a/{id}"}]})
    );
    assert_eq!(
        send(&svc, proxy("resources/list", json!({}), "ghost"))
            .await
            .status,
        403
    );
    assert_eq!(
        send(&svc, proxy("sampling/createMessage", json!({}), "both"))
            .await
            .status,
        400
    );
    assert_eq!(
        send(&svc, proxy("tools/call", json!({"name": "both"}), ""))
            .await
            .status,
        400
    );
}

fn multipart(files: &[(&str, &str, &[u8])]) -> Request<Full<Bytes>> {
    let mut body = Vec::new();
    for (name, mime, data) in files {
        body.extend_from_slice(format!("--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: {mime}\r\n\r\n").as_bytes());
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"--XyZ--\r\n");
    Request::post("/chat/api/upload")
        .header("content-type", "multipart/form-data; boundary=XyZ")
        .body(Full::new(body.into()))
        .unwrap()
}

#[tokio::test]
async fn upload_returns_data_urls_and_caps_each_file() {
    let off = service(config(FakeHost::default()));
    assert_eq!(
        send(&off, multipart(&[("a.txt", "text/plain", b"hi")]))
            .await
            .status,
        404
    );
    let svc = service(
        config(FakeHost::default())
            .file_upload(true)
            .max_upload_bytes(8),
    );
    let r = send(
        &svc,
        multipart(&[
            ("a.txt", "text/plain", b"hi"),
            ("b.png", "application/octet-stream", b"\x89PNG"),
        ]),
    )
    .await;
    assert_eq!(
        r.json(),
        json!({"files": [
            {"name": "a.txt", "mime_type": "text/plain", "data_url": "data:text/plain;base64,aGk=", "size": 2},
            {"name": "b.png", "mime_type": "image/png", "data_url": "data:image/png;base64,iVBORw==", "size": 4}
        ]})
    );
    let r = send(
        &svc,
        multipart(&[("big.bin", "application/octet-stream", &[0u8; 9])]),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.error()),
        (413, "file \"big.bin\" exceeds 8 bytes".into())
    );
    let r = send(&svc, post("/chat/api/upload", &json!({}))).await;
    assert_eq!(r.status, 415);
}

#[tokio::test]
async fn events_stream_delivers_and_resumes_with_last_event_id() {
    let svc = service(config(FakeHost::default()).heartbeat(Duration::from_millis(50)));
    let events = svc.events().unwrap().clone();
    let res = svc.clone().oneshot(get("/chat/api/events")).await.unwrap();
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let mut body = res.into_body();
    events.broadcast(ServerEvent::new(ServerEventType::PromptsChanged));
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !(seen.contains("prompts_changed") && seen.contains(": ping")) {
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .expect("event and ping arrive")
            .unwrap()
            .unwrap();
        seen.push_str(std::str::from_utf8(frame.data_ref().unwrap()).unwrap());
    }
    let id: u64 = seen
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .unwrap()
        .parse()
        .unwrap();
    drop(body);
    events.broadcast(ServerEvent::new(ServerEventType::ToolsChanged));
    let req = Request::get("/chat/api/events")
        .header("last-event-id", id.to_string())
        .body(Full::<Bytes>::default())
        .unwrap();
    let mut body = svc.clone().oneshot(req).await.unwrap().into_body();
    let mut seen = String::new();
    while !seen.contains("tools_changed") {
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .expect("replayed")
            .unwrap()
            .unwrap();
        seen.push_str(std::str::from_utf8(frame.data_ref().unwrap()).unwrap());
    }
    assert!(
        seen.contains(&format!(
            "id: {}\ndata: {{\"type\":\"tools_changed\"}}",
            id + 1
        )),
        "{seen}"
    );
    let off = service(config(FakeHost::default()).events(false));
    assert_eq!(send(&off, get("/chat/api/events")).await.status, 404);
}

#[tokio::test]
async fn persona_and_command_dirs_reload_and_notify() {
    let dir = tempfile::tempdir().unwrap();
    let (pdir, cdir) = (dir.path().join("personas"), dir.path().join("commands"));
    std::fs::create_dir_all(&pdir).unwrap();
    std::fs::create_dir_all(&cdir).unwrap();
    std::fs::write(
        pdir.join("coder.toml"),
        "name = \"Coder\"\nsystem_prompt = \"Write Rust.\"\n",
    )
    .unwrap();
    let svc = service(
        config(FakeHost::default())
            .personas_dir(&pdir)
            .commands_dir(&cdir),
    );
    let names = |v: serde_json::Value| {
        v.as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(send(&svc, get("/chat/api/personas")).await.json()),
        ["Default", "Coder"]
    );
    let mut events = svc
        .clone()
        .oneshot(get("/chat/api/events"))
        .await
        .unwrap()
        .into_body();
    std::fs::write(
        cdir.join("Help.md"),
        "---\ndescription: Show help\n---\nHelp with $ARGUMENTS\n",
    )
    .unwrap();
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !seen.contains("commands_changed") {
        let f = tokio::time::timeout_at(deadline, events.frame())
            .await
            .expect("commands_changed arrives")
            .unwrap()
            .unwrap();
        seen.push_str(std::str::from_utf8(f.data_ref().unwrap()).unwrap());
    }
    let cmds = send(&svc, get("/chat/api/commands")).await.json();
    assert_eq!(
        (cmds[0]["name"].as_str(), cmds[0]["description"].as_str()),
        (Some("help"), Some("Show help"))
    );
}
