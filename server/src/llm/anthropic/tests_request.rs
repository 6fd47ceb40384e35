//! Request-body tests.

use lmchatkit_protocol::{Content, ContentPart, FileData, Message, Tool, ToolCall};
use serde_json::{Value, json};

use super::request_body;
use crate::host::CompleteRequest;

fn req(messages: Vec<Message>) -> CompleteRequest {
    CompleteRequest {
        model: "claude-x".into(),
        messages,
        ..Default::default()
    }
}

fn with_params(mut r: CompleteRequest, params: Value) -> CompleteRequest {
    r.params = params.as_object().unwrap().clone();
    r
}

#[test]
fn a_plain_turn_has_a_top_level_system_a_max_tokens_and_streams() {
    let body = request_body(
        &req(vec![
            Message::system("Be brief."),
            Message::user("hi"),
            Message::system("Answer in French."),
        ]),
        8192,
    );
    assert_eq!(
        body,
        json!({
            "model": "claude-x",
            "system": "Be brief.\n\nAnswer in French.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "stream": true,
            "max_tokens": 8192,
        })
    );
}

#[test]
fn a_tool_round_trip_becomes_tool_use_and_merged_tool_result_blocks() {
    let mut failed = Message::tool("c2", "weather", "no such city");
    failed.is_error = true;
    let mut a = Message::assistant("Checking both.").with_tool_calls(vec![
        ToolCall::new("c1", "weather", json!({"city": "Paris"})),
        ToolCall::new(
            "c2",
            "weather",
            Value::String("{\"city\": \"Nowhere\"}".into()),
        ),
        ToolCall::new("c3", "clock", Value::String("{broken".into())),
    ]);
    a.thinking = Some("not sent back".into());
    let body = request_body(
        &req(vec![
            Message::user("Weather in Paris and Nowhere?"),
            a,
            Message::tool("c1", "weather", "sunny"),
            failed,
            Message::tool("c3", "clock", ""),
            Message::user("And tomorrow?"),
        ]),
        1000,
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Nowhere?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "c2", "name": "weather", "input": {"city": "Nowhere"}},
                {"type": "tool_use", "id": "c3", "name": "clock", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "sunny"},
                {"type": "tool_result", "tool_use_id": "c2", "content": "no such city", "is_error": true},
                {"type": "tool_result", "tool_use_id": "c3"},
                {"type": "text", "text": "And tomorrow?"}
            ]}
        ])
    );
}

#[test]
fn adjacent_turns_of_one_role_merge_and_empty_ones_vanish() {
    let body = request_body(
        &req(vec![
            Message::user("one"),
            Message::user(""),
            Message::user("two"),
            Message::assistant(""),
            Message::assistant("reply"),
        ]),
        1,
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "reply"}]}
        ])
    );
}

#[test]
fn images_and_documents_become_anthropic_blocks() {
    let file = |name: &str, data: &str| ContentPart::File {
        file: FileData {
            filename: Some(name.into()),
            file_data: Some(data.into()),
            file_id: None,
        },
    };
    let u = Message::user(Content::Parts(vec![
        ContentPart::text("look"),
        ContentPart::image_url("data:image/png;base64,iVBORw0K"),
        ContentPart::image_url("https://img.example/cat.jpg"),
        file("report.pdf", "data:application/pdf;base64,JVBERi0x"),
        file("notes.txt", "data:text/plain;base64,aGVsbG8="),
        file("sheet.xlsx", "data:application/vnd.ms-excel;base64,AAAA"),
        ContentPart::File {
            file: FileData {
                file_id: Some("file_1".into()),
                ..FileData::default()
            },
        },
        ContentPart::text(""),
    ]));
    let body = request_body(&req(vec![u]), 1);
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"type": "text", "text": "look"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}},
            {"type": "image", "source": {"type": "url", "url": "https://img.example/cat.jpg"}},
            {"type": "document", "title": "report.pdf",
                "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"}},
            {"type": "document", "title": "notes.txt",
                "source": {"type": "text", "media_type": "text/plain", "data": "hello"}}
        ])
    );
}

#[test]
fn params_pass_native_keys_map_openai_ones_and_drop_the_rest() {
    let mut r = with_params(
        req(vec![Message::user("hi")]),
        json!({
            "temperature": 0, "top_p": null, "top_k": 40, "max_tokens": 300, "stop": "END",
            "frequency_penalty": 1, "seed": 7, "model": "evil", "stream": false,
            "system": "evil", "tool_choice": "required", "metadata": {"user_id": "u1"}
        }),
    );
    r.tools = vec![
        Tool::new("bare"),
        Tool::new("full")
            .with_description("Does things")
            .with_input_schema(json!({"type": "object", "properties": {"x": {"type": "string"}}})),
    ];
    let body = request_body(&r, 8192);
    let mut keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "max_tokens",
            "messages",
            "metadata",
            "model",
            "stop_sequences",
            "stream",
            "temperature",
            "tool_choice",
            "tools",
            "top_k"
        ]
    );
    assert_eq!(body["model"], "claude-x");
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 300);
    assert_eq!(body["temperature"], 0);
    assert_eq!(body["stop_sequences"], json!(["END"]));
    assert_eq!(body["tool_choice"], json!({"type": "any"}));
    assert_eq!(
        body["tools"],
        json!([
            {"name": "bare", "input_schema": {"type": "object"}},
            {"name": "full", "description": "Does things",
                "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}}}
        ])
    );
    let named = with_params(
        r.clone(),
        json!({"tool_choice": {"type": "function", "function": {"name": "full"}}}),
    );
    assert_eq!(
        request_body(&named, 1)["tool_choice"],
        json!({"type": "tool", "name": "full"})
    );
}

#[test]
fn each_reasoning_effort_becomes_its_thinking_budget_with_room_for_the_answer() {
    let cases = [
        ("low", None, 1024, 8192),
        ("medium", None, 4096, 8192),
        ("high", None, 16384, 16384 + 8192),
        ("low", Some(1024), 1024, 1024 + 8192),
        ("high", Some(20000), 16384, 20000),
    ];
    for (effort, max_tokens, budget, sent_max) in cases {
        let mut params =
            json!({"reasoning_effort": effort, "temperature": 0.3, "top_k": 5, "top_p": 0.9});
        if let Some(m) = max_tokens {
            params["max_tokens"] = json!(m);
        }
        let body = request_body(&with_params(req(vec![Message::user("hi")]), params), 8192);
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": budget}),
            "{effort}"
        );
        assert_eq!(body["max_tokens"], sent_max, "{effort} {max_tokens:?}");
        for dropped in ["temperature", "top_k", "top_p", "reasoning_effort"] {
            assert!(body.get(dropped).is_none(), "{dropped} with thinking on");
        }
    }
    let kept = with_params(
        req(vec![Message::user("hi")]),
        json!({"reasoning_effort": "low", "top_p": 0.95}),
    );
    assert_eq!(request_body(&kept, 8192)["top_p"], 0.95);
    let unknown = with_params(
        req(vec![Message::user("hi")]),
        json!({"reasoning_effort": "max"}),
    );
    assert!(request_body(&unknown, 8192).get("thinking").is_none());
}

#[test]
fn thinking_is_left_off_while_a_tool_call_is_being_answered() {
    let call = Message::assistant("").with_tool_calls(vec![ToolCall::new("c1", "f", json!({}))]);
    let continuing = vec![
        Message::user("go"),
        call.clone(),
        Message::tool("c1", "f", "done"),
    ];
    for params in [
        json!({"reasoning_effort": "high", "temperature": 0.5}),
        json!({"thinking": {"type": "enabled", "budget_tokens": 2000}}),
    ] {
        let body = request_body(&with_params(req(continuing.clone()), params.clone()), 8192);
        assert!(body.get("thinking").is_none(), "{params}");
        assert_eq!(body["max_tokens"], 8192);
    }
    let body = request_body(
        &with_params(
            req(continuing).clone(),
            json!({"reasoning_effort": "high", "temperature": 0.5}),
        ),
        8192,
    );
    assert_eq!(
        body["temperature"], 0.5,
        "no thinking, so temperature stays"
    );
    let next_question = vec![
        Message::user("go"),
        call,
        Message::tool("c1", "f", "done"),
        Message::assistant("Done."),
        Message::user("again"),
    ];
    let body = request_body(
        &with_params(req(next_question), json!({"reasoning_effort": "low"})),
        8192,
    );
    assert_eq!(
        body["thinking"]["budget_tokens"], 1024,
        "a new user turn thinks again"
    );
}
