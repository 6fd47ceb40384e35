//! The Messages request body: [`request_body`] turns a [`CompleteRequest`] into the JSON
//! Anthropic's `POST /v1/messages` expects.

use base64::Engine;
use lmchatkit_protocol::{Content, ContentPart, Message, Role, Tool, ToolCall};
use serde_json::{Map, Value, json};

use crate::host::CompleteRequest;

/// The thinking budget (`thinking.budget_tokens`) sent for each `reasoning_effort`: `low`
/// 1024 (Anthropic's minimum), `medium` 4096, `high` 16384.
pub const THINKING_BUDGETS: [(&str, u64); 3] = [("low", 1024), ("medium", 4096), ("high", 16384)];

/// Params passed through under their own name (Anthropic rejects keys it does not know, so
/// every other param is dropped, with a debug log).
const NATIVE: [&str; 6] = [
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
    "metadata",
    "service_tier",
];

/// Builds the streaming Messages body for `req`; `default_max_tokens` is used when the params
/// carry no `max_tokens` (Anthropic requires one).
///
/// - `system`: the text of every system message, in order, joined by a blank line, at the top
///   level (the Messages API has no system role); omitted when empty.
/// - `messages`: user and assistant turns of content blocks. User text and parts become `text`,
///   `image` (a `data:` URL as a `base64` source, another URL as a `url` source) and `document`
///   blocks (a PDF `data:` URL as `base64`, a `text/*` one as a `text` source, titled with the
///   file name); audio and files given by id are dropped with a warning. Assistant text and tool
///   calls become `text` and `tool_use` blocks (`input` an object: arguments kept as a string
///   are parsed when they hold an object, else sent as `{}`). Tool messages become `tool_result`
///   blocks in a user turn (`is_error` kept). Adjacent turns of one role are merged into one, as
///   Anthropic requires alternation; empty text blocks are never sent (Anthropic rejects them),
///   and a turn left without blocks is dropped.
/// - Reasoning text of earlier turns (`Message::thinking`) is not sent: Anthropic only takes
///   thinking blocks back with the signature it issued, which `Message` does not keep.
/// - `tools`: `{name, description?, input_schema}` (default schema `{"type":"object"}`).
/// - Params (`null` and `""` skipped): `max_tokens`; `stop` → `stop_sequences` (a string
///   becomes a one-item list); `tool_choice` in OpenAI's form (`auto`, `none`, `required`,
///   `{"type":"function","function":{"name"}}`) or Anthropic's; the native keys `temperature`,
///   `top_p`, `top_k`, `stop_sequences`, `metadata`, `service_tier`, `thinking`; every other key
///   is dropped (debug log). `model`, `messages`, `system` and `stream` are never overridden.
/// - `reasoning_effort` `low|medium|high` → `thinking: {type: "enabled", budget_tokens}` with
///   [`THINKING_BUDGETS`]; when `max_tokens` is not above the budget it becomes budget +
///   `default_max_tokens` (thinking counts against `max_tokens`). With thinking on,
///   `temperature` and `top_k` are dropped and `top_p` only kept from 0.95 up (Anthropic's
///   constraints), and thinking is left off for a request that continues a tool-use turn (the
///   last assistant message made tool calls after the last user message): Anthropic then
///   requires that turn's signed thinking block, which is not kept (see above).
pub fn request_body(req: &CompleteRequest, default_max_tokens: u64) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(req.model.clone()));
    let system: Vec<String> = req
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.joined_text("\n"))
        .filter(|t| !t.is_empty())
        .collect();
    if !system.is_empty() {
        body.insert("system".into(), Value::String(system.join("\n\n")));
    }
    body.insert("messages".into(), Value::Array(messages(&req.messages)));
    if !req.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(req.tools.iter().map(tool).collect()),
        );
    }
    body.insert("stream".into(), Value::Bool(true));
    let mut max_tokens = default_max_tokens;
    let mut effort = None;
    for (key, value) in &req.params {
        if value.is_null() || value.as_str() == Some("") {
            continue;
        }
        match key.as_str() {
            "max_tokens" => match value.as_u64() {
                Some(n) => max_tokens = n,
                None => tracing::debug!(%value, "ignoring a max_tokens that is not a count"),
            },
            "reasoning_effort" => effort = value.as_str(),
            "stop" => {
                let list = match value {
                    Value::String(s) => json!([s]),
                    other => other.clone(),
                };
                body.insert("stop_sequences".into(), list);
            }
            "tool_choice" if !req.tools.is_empty() => {
                if let Some(choice) = tool_choice(value) {
                    body.insert("tool_choice".into(), choice);
                }
            }
            k if NATIVE.contains(&k) || k == "thinking" => {
                body.insert(key.clone(), value.clone());
            }
            _ => tracing::debug!(param = %key, "dropping a param the Messages API does not take"),
        }
    }
    let budget = effort.and_then(|e| {
        let found = THINKING_BUDGETS.iter().find(|(name, _)| *name == e);
        if found.is_none() {
            tracing::debug!(effort = %e, "ignoring an unknown reasoning effort");
        }
        found.map(|(_, b)| *b)
    });
    // Continuing a tool-use turn, Anthropic wants that turn's signed thinking back, which is
    // not kept: no thinking then, asked for by effort or natively.
    let continuing = continues_tool_use(&req.messages);
    let native = continuing && body.remove("thinking").is_some();
    if native || (continuing && budget.is_some()) {
        tracing::debug!(
            "no thinking for a turn that continues a tool call: its signed thinking is not kept"
        );
    }
    if let Some(budget) = budget.filter(|_| !continuing) {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
        if max_tokens <= budget {
            max_tokens = budget + default_max_tokens;
        }
    }
    if body.contains_key("thinking") {
        for key in ["temperature", "top_k"] {
            if body.remove(key).is_some() {
                tracing::debug!(param = key, "dropping a param thinking does not allow");
            }
        }
        if body
            .get("top_p")
            .and_then(Value::as_f64)
            .is_some_and(|p| p < 0.95)
        {
            body.remove("top_p");
            tracing::debug!("dropping top_p below 0.95, which thinking does not allow");
        }
    }
    body.insert("max_tokens".into(), Value::from(max_tokens));
    Value::Object(body)
}

/// The last assistant message came after the last user message and made tool calls.
fn continues_tool_use(messages: &[Message]) -> bool {
    messages
        .iter()
        .rev()
        .find(|m| matches!(m.role, Role::User | Role::Assistant))
        .is_some_and(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
}

/// The conversation as alternating user and assistant turns.
fn messages(messages: &[Message]) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in messages {
        let (role, blocks) = match m.role {
            Role::System => continue,
            Role::User => ("user", content_blocks(&m.content)),
            Role::Assistant => ("assistant", assistant_blocks(m)),
            Role::Tool => ("user", vec![tool_result(m)]),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, prior)) if *last == role => prior.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

fn assistant_blocks(m: &Message) -> Vec<Value> {
    let mut blocks = content_blocks(&m.content);
    blocks.extend(m.tool_calls.iter().map(tool_use));
    blocks
}

fn tool_use(c: &ToolCall) -> Value {
    let input = match &c.arguments {
        Value::Object(_) => c.arguments.clone(),
        Value::String(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(v @ Value::Object(_)) => v,
            _ => json!({}),
        },
        _ => json!({}),
    };
    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input})
}

fn tool_result(m: &Message) -> Value {
    let mut block = Map::new();
    block.insert("type".into(), "tool_result".into());
    let id = m.tool_call_id.clone().unwrap_or_default();
    block.insert("tool_use_id".into(), Value::String(id));
    match &m.content {
        Content::Text(t) if t.is_empty() => {}
        Content::Text(t) => {
            block.insert("content".into(), Value::String(t.clone()));
        }
        parts @ Content::Parts(_) => {
            let blocks = content_blocks(parts);
            if !blocks.is_empty() {
                block.insert("content".into(), Value::Array(blocks));
            }
        }
    }
    if m.is_error {
        block.insert("is_error".into(), Value::Bool(true));
    }
    Value::Object(block)
}

fn content_blocks(content: &Content) -> Vec<Value> {
    match content {
        Content::Text(t) if t.is_empty() => Vec::new(),
        Content::Text(t) => vec![json!({"type": "text", "text": t})],
        Content::Parts(parts) => parts.iter().filter_map(part).collect(),
    }
}

fn part(p: &ContentPart) -> Option<Value> {
    match p {
        ContentPart::Text { text } if text.is_empty() => None,
        ContentPart::Text { text } => Some(json!({"type": "text", "text": text})),
        ContentPart::ImageUrl { image_url } => Some(match data_url(&image_url.url) {
            Some((media_type, data)) => json!({"type": "image", "source":
                {"type": "base64", "media_type": media_type, "data": data}}),
            None => json!({"type": "image", "source": {"type": "url", "url": image_url.url}}),
        }),
        ContentPart::File { file } => {
            let Some((media_type, data)) = file.file_data.as_deref().and_then(data_url) else {
                tracing::warn!(
                    "dropping a file part without inline data (file ids are not supported)"
                );
                return None;
            };
            let source = if media_type == "application/pdf" {
                json!({"type": "base64", "media_type": media_type, "data": data})
            } else if media_type.starts_with("text/") {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .ok()?;
                let text = String::from_utf8_lossy(&bytes);
                json!({"type": "text", "media_type": "text/plain", "data": text})
            } else {
                tracing::warn!(%media_type, "dropping a file type the Messages API does not take");
                return None;
            };
            let mut block = json!({"type": "document", "source": source});
            if let Some(name) = file.filename.as_deref().filter(|n| !n.is_empty()) {
                block["title"] = Value::String(name.to_owned());
            }
            Some(block)
        }
        ContentPart::InputAudio { .. } => {
            tracing::warn!("dropping an audio part: the Messages API takes no audio");
            None
        }
    }
}

/// A base64 `data:` URL's media type and data.
fn data_url(url: &str) -> Option<(&str, &str)> {
    let (head, data) = url.strip_prefix("data:")?.split_once(',')?;
    let media_type = head.strip_suffix(";base64")?;
    Some((media_type, data))
}

/// A tool choice in OpenAI's form or Anthropic's, as Anthropic takes it.
fn tool_choice(value: &Value) -> Option<Value> {
    match value {
        Value::String(s) => match s.as_str() {
            "auto" => Some(json!({"type": "auto"})),
            "none" => Some(json!({"type": "none"})),
            "required" | "any" => Some(json!({"type": "any"})),
            other => {
                tracing::debug!(choice = %other, "dropping an unknown tool_choice");
                None
            }
        },
        Value::Object(o) => match o.get("type").and_then(Value::as_str) {
            Some("function") => {
                let name = value.pointer("/function/name")?.as_str()?;
                Some(json!({"type": "tool", "name": name}))
            }
            _ => Some(value.clone()),
        },
        _ => None,
    }
}

fn tool(t: &Tool) -> Value {
    let mut out = json!({
        "name": t.name,
        "input_schema": t.input_schema.clone().unwrap_or_else(|| json!({"type": "object"})),
    });
    if let Some(d) = t.description.as_deref().filter(|d| !d.is_empty()) {
        out["description"] = Value::String(d.to_owned());
    }
    out
}
