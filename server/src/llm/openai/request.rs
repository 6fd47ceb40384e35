//! The chat-completions request body: [`request_body`] turns a [`CompleteRequest`] into the JSON
//! an OpenAI-compatible `/chat/completions` endpoint expects.

use lmchatkit_protocol::{Content, Message, Role, Tool, ToolCall};
use serde_json::{Map, Value, json};

use crate::host::CompleteRequest;

/// Keys that `params` may never override.
const PROTECTED: [&str; 3] = ["model", "messages", "stream"];

/// Builds the streaming chat-completions body for `req`.
///
/// - `messages`: `{role, content, tool_call_id?, tool_calls?}` only — the UI-only fields (`id`,
///   `thinking`, `info`, `created_at`, `usage`, `approval`, `tool_name`, `is_error`,
///   `structured_content`, `ui`) are never sent. `content` is omitted when empty, except on
///   `tool` messages, where OpenAI requires it (sent as `""`). Tool-call `arguments` are sent as
///   a JSON string; arguments kept as a string (the provider sent invalid JSON) are sent back
///   verbatim.
/// - `tools` (when any): `{type: "function", function: {name, description, parameters}}`, the
///   description always present (`""` if none), the parameters defaulting to `{"type":"object"}`.
/// - `stream: true` and `stream_options: {"include_usage": true}`.
/// - `params` merged at the top level, skipping `null` and `""` (so the provider applies its
///   default; `0` and `false` are kept), and never overriding `model`, `messages` or `stream`.
///
/// ```
/// use lmchatkit::CompleteRequest;
/// use lmchatkit::llm::openai::request_body;
/// use lmchatkit_protocol::Message;
///
/// let req = CompleteRequest {
///     model: "gpt-4o".into(),
///     messages: vec![Message::user("hi")],
///     ..Default::default()
/// };
/// let body = request_body(&req);
/// assert_eq!(body["messages"][0], serde_json::json!({"role": "user", "content": "hi"}));
/// assert_eq!(body["stream"], true);
/// ```
pub fn request_body(req: &CompleteRequest) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(req.model.clone()));
    body.insert(
        "messages".into(),
        Value::Array(req.messages.iter().map(message).collect()),
    );
    if !req.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(req.tools.iter().map(tool).collect()),
        );
    }
    body.insert("stream".into(), Value::Bool(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    for (key, value) in &req.params {
        let unset = value.is_null() || value.as_str() == Some("");
        if unset || PROTECTED.contains(&key.as_str()) {
            continue;
        }
        body.insert(key.clone(), value.clone());
    }
    Value::Object(body)
}

fn message(m: &Message) -> Value {
    let mut out = Map::new();
    out.insert("role".into(), Value::String(role(m.role).into()));
    if !m.content.is_empty() {
        let content = match &m.content {
            Content::Text(t) => Value::String(t.clone()),
            Content::Parts(p) => serde_json::to_value(p).unwrap_or(Value::Array(Vec::new())),
        };
        out.insert("content".into(), content);
    } else if m.role == Role::Tool {
        out.insert("content".into(), Value::String(String::new()));
    }
    if let Some(id) = m.tool_call_id.as_deref().filter(|id| !id.is_empty()) {
        out.insert("tool_call_id".into(), Value::String(id.into()));
    }
    if !m.tool_calls.is_empty() {
        out.insert(
            "tool_calls".into(),
            Value::Array(m.tool_calls.iter().map(tool_call).collect()),
        );
    }
    Value::Object(out)
}

fn role(r: Role) -> &'static str {
    match r {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

fn tool_call(c: &ToolCall) -> Value {
    let arguments = match &c.arguments {
        Value::Null => "{}".to_owned(),
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    };
    json!({
        "id": c.id,
        "type": "function",
        "function": {"name": c.name, "arguments": arguments},
    })
}

fn tool(t: &Tool) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": t.name,
            "description": t.description.clone().unwrap_or_default(),
            "parameters": t.input_schema.clone().unwrap_or_else(|| json!({"type": "object"})),
        },
    })
}
