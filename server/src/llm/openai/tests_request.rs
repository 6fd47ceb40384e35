//! Request-body tests.

use lmchatkit_protocol::{Approval, Content, ContentPart, Message, Tool, ToolCall, Usage};
use serde_json::{Value, json};

use super::request_body;
use crate::host::CompleteRequest;

fn req(messages: Vec<Message>) -> CompleteRequest {
    CompleteRequest {
        model: "m".into(),
        messages,
        ..Default::default()
    }
}

#[test]
fn params_skip_null_and_empty_keep_zero_and_false_and_never_override_core_keys() {
    let mut r = req(vec![Message::user("hi")]);
    let params = json!({
        "temperature": 0, "top_p": null, "stop": "", "logprobs": false, "top_k": 40,
        "reasoning_effort": "low", "model": "evil", "messages": [], "stream": false,
        "stream_options": {"include_usage": false}
    });
    r.params = params.as_object().unwrap().clone();
    let body = request_body(&r);
    assert_eq!(body["model"], "m");
    assert_eq!(body["stream"], true);
    assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
    assert_eq!(body["temperature"], 0);
    assert_eq!(body["logprobs"], false);
    assert_eq!(body["top_k"], 40);
    assert_eq!(body["reasoning_effort"], "low");
    assert_eq!(body["stream_options"], json!({"include_usage": false}));
    assert!(body.get("top_p").is_none());
    assert!(body.get("stop").is_none());
    assert!(body.get("tools").is_none());
}

#[test]
fn default_body_asks_for_usage() {
    let body = request_body(&req(vec![]));
    assert_eq!(
        body,
        json!({"model": "m", "messages": [], "stream": true, "stream_options": {"include_usage": true}})
    );
}

#[test]
fn ui_only_fields_are_never_sent() {
    let mut a = Message::assistant("").with_id("m1").with_tool_calls(vec![
        ToolCall {
            approval: Some(Approval::Approved),
            hints: vec![lmchatkit_protocol::ArgumentHint {
                name: "q".into(),
                description: Some("what to look for".into()),
                required: true,
            }],
            ..ToolCall::new("c1", "search", json!({"q": "x"}))
        },
        ToolCall::new("c2", "broken", Value::String("{not json".into())),
        ToolCall::new("c3", "nothing", Value::Null),
    ]);
    a.thinking = Some("hmm".into());
    a.info = Some(json!({"card": 1}));
    a.created_at = Some(1);
    a.usage = Some(Usage::default());
    let mut t = Message::tool("c1", "search", "").with_id("m2");
    t.is_error = true;
    t.structured_content = Some(json!({"a": 1}));
    let mut u = Message::user(Content::Parts(vec![
        ContentPart::text("look"),
        ContentPart::image_url("data:image/png;base64,AA"),
    ]));
    u.created_at = Some(2);
    let body = request_body(&req(vec![u, a, t]));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}
            ]},
            {"role": "assistant", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"x\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "broken", "arguments": "{not json"}},
                {"id": "c3", "type": "function", "function": {"name": "nothing", "arguments": "{}"}}
            ]},
            {"role": "tool", "content": "", "tool_call_id": "c1"}
        ])
    );
}

#[test]
fn tools_get_a_description_and_a_default_schema() {
    let mut r = req(vec![Message::user("hi")]);
    r.tools = vec![
        Tool::new("bare"),
        Tool::new("full")
            .with_description("Does things")
            .with_input_schema(json!({"type": "object", "properties": {"x": {"type": "string"}}})),
    ];
    let body = request_body(&r);
    assert_eq!(
        body["tools"],
        json!([
            {"type": "function", "function": {"name": "bare", "description": "", "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "full", "description": "Does things",
                "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}}
        ])
    );
}
