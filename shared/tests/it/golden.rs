//! Golden JSON shapes of the wire types: field names, what is omitted when empty, and what is
//! never omitted. A failing test here is a protocol change: update both sides deliberately.

use lmchatkit_protocol::*;
use serde_json::{Value, json};

fn to(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap()
}

#[test]
fn events() {
    assert_eq!(
        to(&Event::delta("Hi")),
        json!({"type": "delta", "delta": "Hi"})
    );
    assert_eq!(
        to(&Event::reasoning("hm")),
        json!({"type": "reasoning", "reasoning": "hm"})
    );
    let call = ToolCall::new("call_1", "search", json!({"q": "x"}));
    assert_eq!(
        to(&Event::tool_call(call.clone())),
        json!({"type": "tool_call", "tool_call": {"id": "call_1", "name": "search", "arguments": {"q": "x"}}})
    );
    // The policy's decision rides along when the service decided it; old events read back.
    assert_eq!(
        to(&Event::ToolCall {
            tool_call: call.clone(),
            decision: Some(ToolDecision::Deny)
        }),
        json!({"type": "tool_call", "decision": "deny",
               "tool_call": {"id": "call_1", "name": "search", "arguments": {"q": "x"}}})
    );
    let old: Event = serde_json::from_value(
        json!({"type": "tool_call", "tool_call": {"id": "call_1", "name": "search", "arguments": {"q": "x"}}}),
    )
    .unwrap();
    assert_eq!(old, Event::tool_call(call));
    assert_eq!(
        to(&Event::Done {
            finish_reason: None,
            usage: None,
            cost_usd: None,
        }),
        json!({"type": "done"})
    );
    assert_eq!(
        to(&Event::Done {
            finish_reason: Some(FinishReason::Stop),
            usage: None,
            cost_usd: Some(0.0125),
        }),
        json!({"type": "done", "finish_reason": "stop", "cost_usd": 0.0125})
    );
    let usage = Usage {
        prompt_tokens: Some(3),
        completion_tokens: Some(4),
        total_tokens: Some(7),
        ..Default::default()
    };
    assert_eq!(
        to(&Event::done(FinishReason::ContentFilter, Some(usage))),
        json!({"type": "done", "finish_reason": "content_filter",
               "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}})
    );
    let shares = Usage {
        cached_prompt_tokens: Some(2),
        reasoning_tokens: Some(1),
        ..usage
    };
    assert_eq!(
        to(&shares),
        json!({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7,
               "cached_prompt_tokens": 2, "reasoning_tokens": 1})
    );
    assert_eq!(
        to(&Event::error("boom")),
        json!({"type": "error", "error": "boom"})
    );
    assert_eq!(
        to(&Event::Saved { revision: 7 }),
        json!({"type": "saved", "revision": 7})
    );
    assert_eq!(Event::Saved { revision: 7 }.kind(), EventType::Saved);
    for r in ["stop", "tool_calls", "length", "content_filter", "stopped"] {
        let ev: Event =
            serde_json::from_value(json!({"type": "done", "finish_reason": r})).unwrap();
        assert_eq!(to(&ev)["finish_reason"], r);
    }
    assert_eq!(Event::delta("x").kind(), EventType::Delta);
    assert_eq!(to(&EventType::ToolCall), json!("tool_call"));
}

#[test]
fn a_tool_calls_arguments_stream_in_pieces_before_the_complete_call() {
    assert_eq!(
        to(&Event::tool_call_delta("call_1", "search", "{\"q\":\"x")),
        json!({"type": "tool_call_delta", "id": "call_1", "name": "search", "arguments_delta": "{\"q\":\"x"})
    );
    // The first piece of a call to a tool with a view names the view; never its visibility.
    let first = Event::ToolCallDelta {
        id: "call_1".into(),
        name: "clock".into(),
        arguments_delta: String::new(),
        ui: Some(UiToolMeta {
            resource_uri: Some("ui://clock/view".into()),
            visibility: vec![Visibility::Model],
        }),
    };
    assert_eq!(
        to(&first),
        json!({"type": "tool_call_delta", "id": "call_1", "name": "clock", "arguments_delta": "",
               "ui": {"resourceUri": "ui://clock/view"}})
    );
    let back: Event = serde_json::from_value(
        json!({"type": "tool_call_delta", "id": "c", "name": "n", "arguments_delta": "{"}),
    )
    .unwrap();
    assert_eq!(back, Event::tool_call_delta("c", "n", "{"));
    assert_eq!(back.kind(), EventType::ToolCallDelta);
    assert_eq!(to(&EventType::ToolCallDelta), json!("tool_call_delta"));
}

#[test]
fn message_minimal_keeps_content() {
    assert_eq!(
        to(&Message::user("")),
        json!({"role": "user", "content": ""})
    );
    assert_eq!(
        to(&Message::assistant("x")),
        json!({"role": "assistant", "content": "x"})
    );
}

#[test]
fn message_null_content_reads_as_empty_text() {
    let m: Message = serde_json::from_value(json!({"role": "assistant", "content": null,
        "tool_calls": [{"id": "a", "name": "f"}]}))
    .unwrap();
    assert_eq!(m.content, Content::Text(String::new()));
    assert_eq!(m.tool_calls[0].arguments, json!({}));
    let m: Message = serde_json::from_value(json!({"role": "assistant"})).unwrap();
    assert_eq!(to(&m), json!({"role": "assistant", "content": ""}));
}

#[test]
fn content_reads_each_shape_and_names_what_is_wrong() {
    // From a string (what the UI's client parses) as well as from a value (the server's path).
    for read in [
        |j: &str| serde_json::from_str::<Content>(j).map_err(|e| e.to_string()),
        |j: &str| {
            serde_json::from_value::<Content>(serde_json::from_str(j).unwrap())
                .map_err(|e| e.to_string())
        },
    ] {
        assert_eq!(read(r#""hi""#).unwrap(), Content::Text("hi".into()));
        assert_eq!(read("null").unwrap(), Content::Text(String::new()));
        assert_eq!(
            read(
                r#"[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:,"}}]"#
            )
            .unwrap(),
            Content::Parts(vec![
                ContentPart::text("a"),
                ContentPart::image_url("data:,")
            ])
        );
        assert_eq!(read("[]").unwrap(), Content::Parts(vec![]));
        let e = read("3").unwrap_err();
        assert!(
            e.contains("a string, an array of content parts, or null"),
            "{e}"
        );
        // The error inside a malformed part is reported, not hidden behind a generic one.
        let e = read(r#"[{"type":"text"}]"#).unwrap_err();
        assert!(e.contains("missing field `text`"), "{e}");
    }
}

#[test]
fn message_full_shape() {
    let mut call = ToolCall::new("c1", "weather", json!({"city": "Oslo"}));
    call.approval = Some(Approval::Denied);
    let mut m = Message::assistant("")
        .with_id("m-1")
        .with_tool_calls(vec![call]);
    m.thinking = Some("hmm".into());
    m.created_at = Some(1_700_000_000_000);
    m.usage = Some(Usage {
        total_tokens: Some(9),
        ..Usage::default()
    });
    assert_eq!(
        to(&m),
        json!({"id": "m-1", "role": "assistant", "content": "", "thinking": "hmm",
               "tool_calls": [{"id": "c1", "name": "weather", "arguments": {"city": "Oslo"}, "approval": "denied"}],
               "created_at": 1_700_000_000_000i64, "usage": {"total_tokens": 9}})
    );
    let mut t = Message::tool("c1", "weather", "sunny");
    t.is_error = true;
    t.structured_content = Some(json!({"t": 20}));
    t.ui = Some(UiToolMeta {
        resource_uri: Some("ui://w/view".into()),
        visibility: vec![Visibility::App],
    });
    assert_eq!(
        to(&t),
        json!({"role": "tool", "content": "sunny", "tool_call_id": "c1", "tool_name": "weather",
               "is_error": true, "structured_content": {"t": 20}, "ui": {"resourceUri": "ui://w/view"}})
    );
    let back: Message = serde_json::from_value(to(&m)).unwrap();
    assert_eq!(back, m);
}

#[test]
fn a_message_from_an_app_names_it_and_is_optional() {
    let mut m = Message::user("/cmd @file:///x");
    m.from_app = Some("budget".into());
    let v = json!({"role": "user", "content": "/cmd @file:///x", "from_app": "budget"});
    assert_eq!(to(&m), v);
    let back: Message = serde_json::from_value(v).unwrap();
    assert_eq!(back.from_app.as_deref(), Some("budget"));
    let plain: Message = serde_json::from_value(json!({"role": "user", "content": "hi"})).unwrap();
    assert_eq!(plain.from_app, None);
    assert!(to(&plain).get("from_app").is_none());
}

#[test]
fn content_parts_read_with_the_type_anywhere_and_name_a_wrong_type() {
    let parts = json!([
        {"text": "look", "type": "text"},
        {"image_url": {"url": "data:,", "detail": "low"}, "type": "image_url"},
        {"type": "file", "file": {"file_id": "f-1"}, "extra": true},
        {"input_audio": {"data": "UklG", "format": "wav"}, "type": "input_audio"}
    ]);
    let want = Content::Parts(vec![
        ContentPart::text("look"),
        ContentPart::ImageUrl {
            image_url: ImageUrl {
                url: "data:,".into(),
                detail: Some("low".into()),
            },
        },
        ContentPart::File {
            file: FileData {
                file_id: Some("f-1".into()),
                ..FileData::default()
            },
        },
        ContentPart::InputAudio {
            input_audio: InputAudio {
                data: "UklG".into(),
                format: "wav".into(),
            },
        },
    ]);
    let text = parts.to_string();
    assert_eq!(serde_json::from_str::<Content>(&text).unwrap(), want);
    assert_eq!(serde_json::from_value::<Content>(parts).unwrap(), want);
    let read = |j: Value| {
        serde_json::from_value::<ContentPart>(j)
            .unwrap_err()
            .to_string()
    };
    let e = read(json!({"type": "video", "video": {}}));
    assert!(e.contains("unknown variant `video`"), "{e}");
    let e = read(json!({"text": "no type"}));
    assert!(e.contains("missing field `type`"), "{e}");
    let e = read(json!({"type": "image_url"}));
    assert!(e.contains("missing field `image_url`"), "{e}");
}

#[test]
fn content_parts() {
    let m = Message::user(Content::Parts(vec![
        ContentPart::text("look"),
        ContentPart::image_url("data:image/png;base64,AAA"),
        ContentPart::File {
            file: FileData {
                filename: Some("a.pdf".into()),
                file_data: Some("data:application/pdf;base64,B".into()),
                file_id: None,
            },
        },
        ContentPart::InputAudio {
            input_audio: InputAudio {
                data: "UklG".into(),
                format: "wav".into(),
            },
        },
    ]));
    assert_eq!(
        to(&m)["content"],
        json!([
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}},
            {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,B"}},
            {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}}
        ])
    );
    assert!(serde_json::from_value::<Message>(json!({"role": "user", "content": 5})).is_err());
}

#[test]
fn catalog_types() {
    assert_eq!(
        to(&Model::new("gpt")),
        json!({"id": "gpt", "configured": true})
    );
    let off = Model {
        provider: Some("anthropic".into()),
        configured: false,
        unavailable_reason: Some("ANTHROPIC_API_KEY is not set".into()),
        ..Model::new("anthropic/claude-sonnet-4-5")
    };
    assert_eq!(
        to(&off),
        json!({"id": "anthropic/claude-sonnet-4-5", "provider": "anthropic", "configured": false,
               "unavailable_reason": "ANTHROPIC_API_KEY is not set"})
    );
    // Older servers sent no `configured`: their models are usable.
    let old: Model = serde_json::from_value(json!({"id": "gpt"})).unwrap();
    assert!(old.configured);
    assert_eq!(
        serde_json::to_value(ReasoningEffort::ALL).unwrap(),
        json!(["low", "medium", "high"])
    );
    assert_eq!(
        to(&Persona::default_persona()),
        json!({"id": "default", "name": "Default"})
    );
    let c = SlashCommand {
        id: "1".into(),
        name: "help".into(),
        body: "b".into(),
        ..Default::default()
    };
    assert_eq!(to(&c), json!({"id": "1", "name": "help", "body": "b"}));
    let c = SlashCommand {
        allowed_tools: vec!["search".into()],
        argument_hint: Some("<x>".into()),
        source: "help.md".into(),
        ..c
    };
    assert_eq!(
        to(&c),
        json!({"id": "1", "name": "help", "argument_hint": "<x>", "allowed_tools": ["search"], "body": "b", "source": "help.md"})
    );
}

#[test]
fn tool_visibility_never_serialized() {
    let t = Tool::new("x").with_visibility(vec![Visibility::App]);
    assert_eq!(to(&t), json!({"name": "x"}));
    assert!(!t.visible_to(Visibility::Model));
    assert!(Tool::new("y").visible_to(Visibility::Model));
    // `_meta.ui` as MCP sends it: camelCase, visibility read, unknown keys ignored.
    let ui: UiToolMeta = serde_json::from_value(
        json!({"resourceUri": "ui://a", "visibility": ["app"], "future": 1}),
    )
    .unwrap();
    assert_eq!(ui.visibility, vec![Visibility::App]);
    assert_eq!(to(&ui), json!({"resourceUri": "ui://a"}));
}

#[test]
fn tool_result_and_resources() {
    assert_eq!(to(&ToolResult::text("ok")), json!({"content": "ok"}));
    assert_eq!(
        to(&ToolResult::error("bad")),
        json!({"content": "bad", "is_error": true})
    );
    let with_image = ToolResult {
        files: vec![ToolFile {
            media_type: "image/png".into(),
            data: "iVBO".into(),
        }],
        ..ToolResult::text("[image: image/png, 3 bytes]")
    };
    assert_eq!(
        to(&with_image),
        json!({"content": "[image: image/png, 3 bytes]", "files": [{"media_type": "image/png", "data": "iVBO"}]})
    );
    assert_eq!(to(&Resource::new("file:///a")), json!({"uri": "file:///a"}));
    let r = Resource {
        template: true,
        mime_type: Some("text/plain".into()),
        ..Resource::new("file:///{p}")
    };
    assert_eq!(
        to(&r),
        json!({"uri": "file:///{p}", "template": true, "mime_type": "text/plain"})
    );
    let meta: UiResourceMeta = serde_json::from_value(json!({
        "csp": {"connectDomains": ["https://api.x"], "resourceDomains": ["https://cdn.x"], "frameDomains": [], "baseUriDomains": ["https://b"]},
        "permissions": {"camera": {}, "clipboardWrite": {}}, "domain": "x.example", "prefersBorder": true, "other": 1
    })).unwrap();
    assert_eq!(
        to(&ResourceResult {
            uri: "ui://v".into(),
            text: Some("<p>".into()),
            mime_type: Some("text/html;profile=mcp-app".into()),
            ui: Some(meta),
            blob: None
        }),
        json!({"uri": "ui://v", "text": "<p>", "mime_type": "text/html;profile=mcp-app", "ui": {
            "csp": {"connectDomains": ["https://api.x"], "resourceDomains": ["https://cdn.x"], "baseUriDomains": ["https://b"]},
            "permissions": {"camera": {}, "clipboardWrite": {}}, "domain": "x.example", "prefersBorder": true}})
    );
}

#[test]
fn prompts() {
    let p = Prompt {
        name: "p".into(),
        description: None,
        arguments: vec![PromptArgument {
            name: "a".into(),
            description: None,
            required: true,
        }],
        icon: false,
    };
    assert_eq!(
        to(&p),
        json!({"name": "p", "arguments": [{"name": "a", "required": true}]})
    );
    let with_icon = Prompt {
        icon: true,
        ..Prompt::default()
    };
    assert_eq!(to(&with_icon), json!({"name": "", "icon": true}));
    let plain: Prompt = serde_json::from_value(json!({"name": "q"})).expect("a prompt");
    assert!(!plain.icon, "absent means no icon");
    let r = PromptResult {
        description: None,
        messages: vec![PromptMessage {
            role: Role::User,
            content: "x".into(),
        }],
    };
    assert_eq!(
        to(&r),
        json!({"messages": [{"role": "user", "content": "x"}]})
    );
}

#[test]
fn history_types() {
    let c = StoredConversation {
        id: "c-1".into(),
        title: "T".into(),
        revision: 3,
        messages: vec![Message::user("q")],
        ..Default::default()
    };
    assert_eq!(
        to(&c),
        json!({"id": "c-1", "title": "T", "persona_id": "", "model": "", "created_at": 0, "updated_at": 0, "revision": 3,
               "messages": [{"role": "user", "content": "q"}]})
    );
    assert_eq!(
        to(&c.summary()),
        json!({"id": "c-1", "title": "T", "persona_id": "", "model": "", "created_at": 0, "updated_at": 0, "revision": 3})
    );
    assert_eq!(
        to(&SaveResponse {
            ok: true,
            revision: 4
        }),
        json!({"ok": true, "revision": 4})
    );
    let conflict = ConflictResponse {
        error: "stale".into(),
        revision: 3,
        conversation: c,
    };
    assert_eq!(to(&conflict)["conversation"]["revision"], 3);
    // Totals sit beside the other keys, each omitted while empty.
    let mut totalled = conflict.conversation.summary();
    totalled.totals = ConversationTotals {
        total_input_tokens: 120,
        total_output_tokens: 30,
        total_cost_usd: Some(0.002),
        last_context_tokens: Some(150),
    };
    assert_eq!(
        to(&totalled),
        json!({"id": "c-1", "title": "T", "persona_id": "", "model": "", "created_at": 0, "updated_at": 0, "revision": 3,
               "total_input_tokens": 120, "total_output_tokens": 30, "total_cost_usd": 0.002, "last_context_tokens": 150})
    );
    let back: ConversationSummary = serde_json::from_value(to(&totalled)).unwrap();
    assert_eq!(back, totalled);
    // "Always allow" in a conversation is saved with it; absent (older copies) reads as none.
    let allowing: StoredConversation = serde_json::from_value(
        json!({"id": "c-2", "allowed_tools": ["get_weather"], "revision": 1}),
    )
    .unwrap();
    assert_eq!(to(&allowing)["allowed_tools"], json!(["get_weather"]));
    assert_eq!(to(&allowing.summary()).get("allowed_tools"), None);
    // A save that keeps the stored messages names how many; a copy read back never does.
    let tail: StoredConversation =
        serde_json::from_value(json!({"id": "c-3", "revision": 4, "kept": 12, "messages": []}))
            .unwrap();
    assert_eq!(tail.kept, Some(12));
    assert_eq!(to(&tail)["kept"], 12);
    assert_eq!(to(&allowing).get("kept"), None);
    let patch: ConversationPatch =
        serde_json::from_value(json!({"title": "n", "params": {}})).unwrap();
    assert_eq!(patch.params, Some(Default::default()));
    assert_eq!(patch.model, None);
}

#[test]
fn server_events() {
    assert_eq!(
        to(&ServerEvent::new(ServerEventType::ToolsChanged)),
        json!({"type": "tools_changed"})
    );
    assert_eq!(
        to(&ServerEvent::conversation(
            ServerEventType::ConversationSaved,
            "c-1",
            Some(2)
        )),
        json!({"type": "conversation_saved", "id": "c-1", "revision": 2})
    );
    assert_eq!(
        to(&ServerEvent::new(ServerEventType::Resync)),
        json!({"type": "resync"})
    );
    assert!(ServerEventType::ConversationDeleted.is_conversation());
    assert!(!ServerEventType::PersonasChanged.is_conversation());
}

#[test]
fn requests() {
    let r: ChatRequest = serde_json::from_value(json!({"model": "m", "messages": []})).unwrap();
    assert_eq!(
        (
            r.persona_id.as_str(),
            r.params.is_none(),
            r.model_context.is_none()
        ),
        ("", true, true)
    );
    assert_eq!(r.model_context_app, None);
    assert_eq!(
        to(&ChatRequest::new("m", vec![])
            .with_model_context(Some(json!({"a": 1})))
            .with_model_context_app(Some("budget".into()))),
        json!({"model": "m", "persona_id": "", "messages": [], "model_context": {"a": 1},
               "model_context_app": "budget"})
    );
    assert!(serde_json::from_value::<ChatRequest>(json!({"messages": []})).is_err());
    // A turn of a saved conversation names it and the reply's id; both are omitted when unset.
    assert_eq!(
        to(&ChatRequest::new("m", vec![]).with_conversation("c-1", "m-9")),
        json!({"model": "m", "persona_id": "", "messages": [], "conversation_id": "c-1",
               "reply_id": "m-9"})
    );
    assert_eq!(to(&r).get("conversation_id"), None);
    // A request may offer the model no tools (`/compact`); `false` is the default and omitted.
    assert_eq!(to(&r).get("no_tools"), None);
    let r: ChatRequest =
        serde_json::from_value(json!({"model": "m", "messages": [], "no_tools": true})).unwrap();
    assert_eq!(
        to(&r),
        json!({"model": "m", "persona_id": "", "messages": [], "no_tools": true})
    );
    let t: ToolCallRequest = serde_json::from_value(json!({"name": "x"})).unwrap();
    assert_eq!(
        (t.source, t.arguments.clone()),
        (ToolCallSource::Model, Value::Null)
    );
    let t: ToolCallRequest =
        serde_json::from_value(json!({"name": "x", "source": "app", "via": "v"})).unwrap();
    assert_eq!(t.source, ToolCallSource::App);
    assert_eq!(
        to(&PromptGetRequest {
            name: "p".into(),
            args: Default::default()
        }),
        json!({"name": "p", "args": {}})
    );
    assert_eq!(
        to(&ResourceReadRequest {
            uri: "u".into(),
            via: None
        }),
        json!({"uri": "u"})
    );
    assert_eq!(
        to(&AppProxyRequest::new("v", AppCall::call_tool("t", None))),
        json!({"method": "tools/call", "params": {"name": "t"}, "via": "v"})
    );
    assert_eq!(
        to(&AppViewResponse {
            url: "/chat/apps/view/t".into(),
            permissions: None,
            prefers_border: Some(true),
            ..Default::default()
        }),
        json!({"url": "/chat/apps/view/t", "prefers_border": true})
    );
    assert_eq!(
        to(&AppViewResponse {
            url: "http://localhost:8081/chat/apps/sandbox?t=x".into(),
            allow: "camera".into(),
            external_domains: vec!["https://a.example".into()],
            proxy: true,
            html: Some("<p>".into()),
            server: Some("budget".into()),
            ..Default::default()
        }),
        json!({"url": "http://localhost:8081/chat/apps/sandbox?t=x", "allow": "camera",
               "external_domains": ["https://a.example"], "proxy": true, "html": "<p>",
               "server": "budget"})
    );
    assert_eq!(
        to(&ConfigResponse::new(HistoryMode::Server)
            .with_upload(true, 10)
            .with_events(true)
            .with_mcp(vec![McpServerStatus::new("fs", "connected", None)])),
        json!({"file_upload": true, "max_upload_bytes": 10, "history": "server", "events": true, "demo": false, "mcp": [{"name": "fs", "status": "connected"}], "user_mcp": false})
    );
    assert_eq!(
        to(&ConfigResponse::new(HistoryMode::Browser).with_user_mcp(true))["user_mcp"],
        json!(true)
    );
    // An older service sends no `user_mcp`: the feature is off.
    let old: ConfigResponse = serde_json::from_value(
        json!({"file_upload": false, "max_upload_bytes": 0, "history": "browser", "events": false, "demo": false}),
    )
    .unwrap();
    assert!(!old.user_mcp);
    assert!(
        old.problems.is_empty(),
        "an older service sends no problems"
    );
    assert_eq!(
        to(
            &ConfigResponse::new(HistoryMode::Browser).with_problems(vec![SetupProblem::new(
                "provider anthropic",
                "GET https://api.anthropic.com/models answered 404 Not Found",
                "add /v1"
            )])
        )["problems"],
        json!([{"subject": "provider anthropic", "problem": "GET https://api.anthropic.com/models answered 404 Not Found", "fix": "add /v1"}])
    );
    assert_eq!(
        to(&UploadResponse {
            files: vec![UploadedFile {
                name: "a.txt".into(),
                mime_type: "text/plain".into(),
                data_url: "data:text/plain;base64,eA==".into(),
                size: 1
            }]
        }),
        json!({"files": [{"name": "a.txt", "mime_type": "text/plain", "data_url": "data:text/plain;base64,eA==", "size": 1}]})
    );
    assert_eq!(to(&ErrorBody { error: "x".into() }), json!({"error": "x"}));
}

/// Serialises `req`, checks the JSON, and reads it back to the same request.
fn proxy_round_trip(req: AppProxyRequest, expected: Value) {
    assert_eq!(serde_json::to_string(&req).unwrap(), expected.to_string());
    let back: AppProxyRequest = serde_json::from_value(expected.clone()).unwrap();
    assert_eq!(back, req, "{expected}");
    let alone: AppCall = serde_json::from_value(json!({
        "method": expected["method"], "params": expected["params"]
    }))
    .unwrap();
    assert_eq!(alone, req.call);
    assert_eq!(
        to(&req.call),
        json!({"method": expected["method"], "params": expected["params"]})
    );
}

#[test]
fn every_app_call_serialises_as_json_rpc_and_reads_back() {
    let args = json!({"k": 2}).as_object().cloned();
    proxy_round_trip(
        AppProxyRequest::new("show", AppCall::call_tool("refresh", args)),
        json!({"method": "tools/call", "params": {"name": "refresh", "arguments": {"k": 2}}, "via": "show"}),
    );
    proxy_round_trip(
        AppProxyRequest::new("show", AppCall::call_tool("refresh", None)),
        json!({"method": "tools/call", "params": {"name": "refresh"}, "via": "show"}),
    );
    proxy_round_trip(
        AppProxyRequest::new("show", AppCall::read_resource("ui://a/view")),
        json!({"method": "resources/read", "params": {"uri": "ui://a/view"}, "via": "show"}),
    );
    let page = ListParams {
        cursor: Some("2".into()),
    };
    proxy_round_trip(
        AppProxyRequest::new("show", AppCall::ListResources(page.clone())),
        json!({"method": "resources/list", "params": {"cursor": "2"}, "via": "show"}),
    );
    proxy_round_trip(
        AppProxyRequest::new(
            "show",
            AppCall::ListResourceTemplates(ListParams::default()),
        ),
        json!({"method": "resources/templates/list", "params": {}, "via": "show"}),
    );
    proxy_round_trip(
        AppProxyRequest::new("show", AppCall::ListPrompts(page)),
        json!({"method": "prompts/list", "params": {"cursor": "2"}, "via": "show"}),
    );
}

#[test]
fn app_call_methods_follow_the_variants() {
    let calls = [
        AppCall::call_tool("t", None),
        AppCall::read_resource("u"),
        AppCall::ListResources(ListParams::default()),
        AppCall::ListResourceTemplates(ListParams::default()),
        AppCall::ListPrompts(ListParams::default()),
    ];
    let methods: Vec<&str> = calls.iter().map(AppCall::method).collect();
    assert_eq!(methods, AppCall::METHODS);
}

#[test]
fn list_params_may_be_absent_or_null() {
    for params in [None, Some(Value::Null), Some(json!({}))] {
        let mut body = json!({"method": "prompts/list", "via": "v"});
        if let Some(p) = params {
            body["params"] = p;
        }
        let r: AppProxyRequest = serde_json::from_value(body).unwrap();
        assert_eq!(r.call, AppCall::ListPrompts(ListParams::default()));
    }
    let r: AppProxyRequest = serde_json::from_value(
        json!({"method": "tools/call", "params": {"name": "t", "arguments": null}, "via": "v"}),
    )
    .unwrap();
    assert_eq!(r.call, AppCall::call_tool("t", None));
}

#[test]
fn unknown_methods_bad_params_and_a_missing_via_are_rejected() {
    let err = |body: Value| {
        serde_json::from_value::<AppProxyRequest>(body)
            .unwrap_err()
            .to_string()
    };
    let e = err(json!({"method": "sampling/createMessage", "params": {}, "via": "v"}));
    assert!(e.contains("\"sampling/createMessage\""), "{e}");
    let e = err(json!({"method": "tools/call", "params": {"name": "t"}}));
    assert!(e.contains("missing field `via`"), "{e}");
    let e = err(json!({"method": "resources/read", "params": {}, "via": "v"}));
    assert!(
        e.contains("resources/read") && e.contains("missing field `uri`"),
        "{e}"
    );
    let e =
        err(json!({"method": "tools/call", "params": {"name": "t", "arguments": [1]}, "via": "v"}));
    assert!(e.contains("tools/call"), "{e}");
    assert!(serde_json::from_value::<AppCall>(json!({"method": "ping"})).is_err());
    assert_eq!(
        AppCall::parse("resources/read", json!({"uri": 5})),
        Err(AppCallError::InvalidParams {
            method: "resources/read".into(),
            reason: "invalid type: integer `5`, expected a string".into()
        })
    );
    assert_eq!(
        AppCall::parse("ui/open-link", Value::Null)
            .unwrap_err()
            .to_string(),
        "method \"ui/open-link\" is not allowed from a view"
    );
}

#[test]
fn app_results_have_mcp_shapes_and_read_back_by_call() {
    let cases = [
        (
            AppCall::call_tool("t", None),
            AppResult::CallTool(ToolResult::text("hi").into()),
            json!({"content": [{"type": "text", "text": "hi"}]}),
        ),
        (
            AppCall::call_tool("t", None),
            AppResult::CallTool(
                ToolResult {
                    structured_content: Some(json!({"n": 1})),
                    ..ToolResult::error("no")
                }
                .into(),
            ),
            json!({"content": [{"type": "text", "text": "no"}], "isError": true, "structuredContent": {"n": 1}}),
        ),
        (
            AppCall::read_resource("ui://a/view"),
            AppResult::ReadResource(ReadResourceResult {
                contents: vec![
                    ResourceResult {
                        uri: "ui://a/view".into(),
                        text: Some("<p>".into()),
                        mime_type: Some("text/html;profile=mcp-app".into()),
                        ui: Some(UiResourceMeta {
                            prefers_border: Some(false),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }
                    .into(),
                    ResourceResult {
                        uri: "ui://a/blob".into(),
                        blob: Some("PHA+".into()),
                        ..Default::default()
                    }
                    .into(),
                ],
            }),
            json!({"contents": [
                {"uri": "ui://a/view", "mimeType": "text/html;profile=mcp-app", "text": "<p>",
                 "_meta": {"ui": {"prefersBorder": false}}},
                {"uri": "ui://a/blob", "blob": "PHA+"}
            ]}),
        ),
        (
            AppCall::ListResources(ListParams::default()),
            AppResult::ListResources(ListResourcesResult {
                resources: vec![
                    McpResource::from(&Resource::new("ui://a/view")),
                    McpResource::from(&Resource {
                        name: Some("Doc".into()),
                        description: Some("d".into()),
                        mime_type: Some("text/plain".into()),
                        ..Resource::new("file:///doc")
                    }),
                ],
            }),
            json!({"resources": [{"uri": "ui://a/view"},
                {"uri": "file:///doc", "name": "Doc", "description": "d", "mimeType": "text/plain"}]}),
        ),
        (
            AppCall::ListResourceTemplates(ListParams::default()),
            AppResult::ListResourceTemplates(ListResourceTemplatesResult {
                resource_templates: vec![McpResourceTemplate::from(&Resource {
                    template: true,
                    mime_type: Some("text/html".into()),
                    ..Resource::new("ui://a/{id}")
                })],
            }),
            json!({"resourceTemplates": [{"uriTemplate": "ui://a/{id}", "mimeType": "text/html"}]}),
        ),
        (
            AppCall::ListPrompts(ListParams::default()),
            AppResult::ListPrompts(ListPromptsResult {
                prompts: vec![Prompt {
                    name: "review".into(),
                    description: None,
                    arguments: vec![PromptArgument {
                        name: "file".into(),
                        description: None,
                        required: true,
                    }],
                    icon: false,
                }],
            }),
            json!({"prompts": [{"name": "review", "arguments": [{"name": "file", "required": true}]}]}),
        ),
    ];
    for (call, result, expected) in cases {
        // Byte for byte, key order included (what a view receives).
        assert_eq!(
            serde_json::to_string(&result).unwrap(),
            expected.to_string()
        );
        let back = call.read_result(&expected.to_string()).unwrap();
        assert_eq!(back, result, "{expected}");
    }
}

#[test]
fn a_resource_without_text_or_blob_reads_as_empty_text() {
    let c: ResourceContents = ResourceResult {
        uri: "u".into(),
        ..Default::default()
    }
    .into();
    assert_eq!(to(&c), json!({"uri": "u", "text": ""}));
    assert!(
        AppCall::read_resource("u")
            .read_result(r#"{"contents": [{"uri": "u"}]}"#)
            .is_err(),
        "contents need text or blob"
    );
    assert!(
        AppCall::call_tool("t", None)
            .read_result(r#"{"resources": []}"#)
            .is_err(),
        "a result is read as its call's type"
    );
}

#[test]
fn a_stopped_reply_says_so_and_an_unstopped_one_omits_it() {
    let mut m = Message::assistant("par");
    assert_eq!(to(&m), json!({"role": "assistant", "content": "par"}));
    m.stopped = true;
    assert_eq!(
        to(&m),
        json!({"role": "assistant", "content": "par", "stopped": true})
    );
    let back: Message = serde_json::from_value(to(&m)).unwrap();
    assert!(back.stopped);
}

#[test]
fn tool_decisions_and_approvals() {
    for (d, s) in [
        (ToolDecision::Allow, "allow"),
        (ToolDecision::Ask, "ask"),
        (ToolDecision::Deny, "deny"),
    ] {
        assert_eq!(to(&d), json!(s));
        assert_eq!(serde_json::from_value::<ToolDecision>(json!(s)).unwrap(), d);
    }
    assert!(serde_json::from_value::<ToolDecision>(json!("Allow")).is_err());
    assert_eq!(
        to(&ToolApprovals::new(["a", "b__c"])),
        json!({"always": ["a", "b__c"]})
    );
    assert_eq!(to(&ToolApprovals::default()), json!({"always": []}));
    let read: ToolApprovals = serde_json::from_value(json!({})).unwrap();
    assert_eq!(read, ToolApprovals::default());
}

#[test]
fn a_call_waiting_for_the_user_carries_its_argument_hints_and_others_none() {
    let mut call = ToolCall::new("c1", "fs__rm", json!({"path": "/x"}));
    call.approval = Some(Approval::Pending);
    call.hints = vec![
        lmchatkit_protocol::ArgumentHint {
            name: "path".into(),
            description: Some("The file to delete.".into()),
            required: true,
        },
        lmchatkit_protocol::ArgumentHint {
            name: "force".into(),
            ..Default::default()
        },
    ];
    let wire = json!({"id": "c1", "name": "fs__rm", "arguments": {"path": "/x"},
        "approval": "pending",
        "hints": [{"name": "path", "description": "The file to delete.", "required": true},
                  {"name": "force"}]});
    assert_eq!(to(&call), wire);
    assert_eq!(serde_json::from_value::<ToolCall>(wire).unwrap(), call);
    // Without hints (every call before this field, and any call not asked about): no key.
    let plain = ToolCall::new("c1", "fs__rm", json!({}));
    assert_eq!(
        to(&plain),
        json!({"id": "c1", "name": "fs__rm", "arguments": {}})
    );
}

#[test]
fn a_tools_request_for_input_and_the_answers() {
    use lmchatkit_protocol::{
        INPUT_REQUEST_DATA, InputAction, InputAnswer, InputAnswers, InputKind, InputQuestion,
        InputRequestData, InputRequired, ToolCallRequest,
    };
    let req = InputRequired {
        questions: vec![
            InputQuestion {
                key: "who".into(),
                message: "Name?".into(),
                kind: InputKind::Form {
                    schema: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
                },
            },
            InputQuestion {
                key: "login".into(),
                message: "Sign in".into(),
                kind: InputKind::Url {
                    url: "https://a.example/x".into(),
                    host: "a.example".into(),
                },
            },
        ],
        ticket: Some("it_p.t".into()),
        expires_at_ms: Some(1_700_000_000_000),
        request_state: Some("secret-state".into()),
    };
    let result = ToolResult {
        input_required: Some(Box::new(req.clone())),
        ..ToolResult::text("waits")
    };
    assert_eq!(
        to(&result),
        json!({"content": "waits", "input_required": {
            "questions": [
                {"key": "who", "message": "Name?", "mode": "form",
                 "schema": {"type": "object", "properties": {"name": {"type": "string"}}}},
                {"key": "login", "message": "Sign in", "mode": "url",
                 "url": "https://a.example/x", "host": "a.example"}
            ],
            "ticket": "it_p.t",
            "expires_at_ms": 1_700_000_000_000u64
        }}),
        "the server's requestState is never serialized"
    );
    let back: ToolResult = serde_json::from_value(to(&result)).unwrap();
    assert_eq!(back.input_required.unwrap().request_state, None);

    let mut answers = std::collections::BTreeMap::new();
    let mut content = serde_json::Map::new();
    content.insert("name".into(), json!("Ada"));
    answers.insert("who".into(), InputAnswer::accept(content));
    answers.insert("login".into(), InputAnswer::new(InputAction::Decline));
    let call = ToolCallRequest {
        name: "book".into(),
        arguments: json!({}),
        call_id: Some("c1".into()),
        input: Some(InputAnswers {
            ticket: "it_p.t".into(),
            answers: answers.clone(),
        }),
        ..ToolCallRequest::default()
    };
    assert_eq!(
        to(&call),
        json!({"name": "book", "arguments": {}, "source": "model", "call_id": "c1",
               "input": {"ticket": "it_p.t", "answers": {
                   "login": {"action": "decline"},
                   "who": {"action": "accept", "content": {"name": "Ada"}}}}})
    );

    assert_eq!(INPUT_REQUEST_DATA, "input-request");
    let data = InputRequestData {
        tool_call_id: "c1".into(),
        questions: req.questions[..1].to_vec(),
        ticket: "it_p.t".into(),
        expires_at_ms: Some(5),
        answers: Some(answers),
    };
    let v = to(&data);
    assert_eq!(v["toolCallId"], "c1");
    assert_eq!(v["expiresAtMs"], 5);
    assert_eq!(v["answers"]["login"]["action"], "decline");
    assert_eq!(serde_json::from_value::<InputRequestData>(v).unwrap(), data);
}
