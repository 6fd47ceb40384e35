//! From rmcp's model types to the service's protocol types: tools (schema, annotations,
//! `_meta.ui`), prompts, resources and templates, and the model-facing text of tool results
//! and prompt messages (text joined; images, audio and blobs summarised; results over the cap
//! cut to head + tail with a marker).
//!
//! The rmcp structs are `#[non_exhaustive]` and change between minor versions, so they are
//! read through their serde form (the MCP wire JSON), which is the stable contract.

use lmchatkit_protocol::{
    Prompt, PromptArgument, PromptMessage, Resource, ResourceResult, Role, Tool, ToolFile,
    ToolResult, UiResourceMeta, UiToolMeta,
};

use super::ui_meta::{merge_ui, ui_resource_meta, ui_tool_meta};
use serde::Serialize;
use serde_json::{Map, Value};

/// The wire JSON of an rmcp value (`Null` if it cannot be serialised, which rmcp types can).
pub(crate) fn wire<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn str_of(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// An MCP tool exposed under `exposed` (its namespaced name).
pub(crate) fn tool(t: &rmcp::model::Tool, exposed: &str) -> Tool {
    let v = wire(t);
    let ui = ui_tool_meta(v.get("_meta"));
    let mut out = Tool::new(exposed);
    out.description = str_of(&v, "description").or_else(|| str_of(&v, "title"));
    out.input_schema = v.get("inputSchema").cloned();
    out.annotations = v.get("annotations").filter(|a| !a.is_null()).cloned();
    out.visibility = ui
        .as_ref()
        .map(|u| u.visibility.clone())
        .unwrap_or_default();
    out.ui = ui;
    out
}

/// An MCP prompt exposed under `exposed`; `server_icon`: its server has an icon (a prompt
/// without one of its own shows its server's).
pub(crate) fn prompt(p: &rmcp::model::Prompt, exposed: &str, server_icon: bool) -> Prompt {
    let v = wire(p);
    let arguments = v
        .get("arguments")
        .and_then(Value::as_array)
        .map(|args| {
            args.iter()
                .map(|a| PromptArgument {
                    name: str_of(a, "name").unwrap_or_default(),
                    description: str_of(a, "description"),
                    required: a.get("required").and_then(Value::as_bool).unwrap_or(false),
                })
                .collect()
        })
        .unwrap_or_default();
    Prompt {
        name: exposed.to_owned(),
        description: str_of(&v, "description").or_else(|| str_of(&v, "title")),
        arguments,
        icon: server_icon || super::icons::has_icon(p.icons.as_deref()),
    }
}

/// A static resource (URI kept as is).
pub(crate) fn resource(r: &rmcp::model::Resource) -> Resource {
    Resource {
        uri: r.uri.clone(),
        template: false,
        name: Some(r.name.clone()),
        description: r.description.clone(),
        mime_type: r.mime_type.clone(),
    }
}

/// A resource template (`template: true`, `uri` keeps its `{var}` placeholders).
pub(crate) fn template(r: &rmcp::model::ResourceTemplate) -> Resource {
    Resource {
        uri: r.uri_template.clone(),
        template: true,
        name: Some(r.name.clone()),
        description: r.description.clone(),
        mime_type: r.mime_type.clone(),
    }
}

/// Bytes encoded by a base64 string (without decoding it).
fn b64_len(data: &str) -> usize {
    let data = data.trim_end();
    let pad = data.bytes().rev().take_while(|&b| b == b'=').count();
    (data.len() / 4) * 3 + [0, 0, 1, 2][data.len() % 4] - pad.min(2)
}

/// The model-facing text of one content block (MCP wire JSON).
pub(crate) fn block_text(b: &Value) -> String {
    let kind = b.get("type").and_then(Value::as_str).unwrap_or("");
    let mime = |v: &Value| str_of(v, "mimeType").unwrap_or_else(|| "unknown".into());
    match kind {
        "text" => str_of(b, "text").unwrap_or_default(),
        "image" | "audio" => format!(
            "[{kind}: {}, {} bytes]",
            mime(b),
            b64_len(b.get("data").and_then(Value::as_str).unwrap_or(""))
        ),
        "resource" => {
            let r = b.get("resource").cloned().unwrap_or(Value::Null);
            let uri = str_of(&r, "uri").unwrap_or_default();
            match (str_of(&r, "text"), str_of(&r, "blob")) {
                (Some(text), _) => format!("[resource: {uri}, {}]\n{text}", mime(&r)),
                (None, Some(blob)) => {
                    format!("[resource: {uri}, {}, {} bytes]", mime(&r), b64_len(&blob))
                }
                _ => format!("[resource: {uri}]"),
            }
        }
        "resource_link" => {
            let uri = str_of(b, "uri").unwrap_or_default();
            match str_of(b, "name") {
                Some(n) => format!("[resource link: {uri} ({n})]"),
                None => format!("[resource link: {uri}]"),
            }
        }
        other => format!("[{other}]"),
    }
}

/// Cuts `s` to about `cap` bytes: head + marker + tail, on char boundaries.
pub(crate) fn cap_text(s: String, cap: usize) -> String {
    if s.len() <= cap {
        return s;
    }
    let half = cap / 2;
    let mut head = half;
    while !s.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = s.len() - half;
    while !s.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n\n[… {} bytes omitted: the tool result exceeded {} bytes …]\n\n{}",
        &s[..head],
        tail - head,
        cap,
        &s[tail..]
    )
}

/// A `CallToolResult` as the model and the UI see it.
pub(crate) fn call_result(
    r: &rmcp::model::CallToolResult,
    ui: Option<UiToolMeta>,
    cap: usize,
) -> ToolResult {
    let v = wire(r);
    let parts: Vec<String> = v
        .get("content")
        .and_then(Value::as_array)
        .map(|c| c.iter().map(block_text).collect())
        .unwrap_or_default();
    let structured = v.get("structuredContent").filter(|s| !s.is_null()).cloned();
    let mut content = parts.join("\n");
    if content.is_empty()
        && let Some(s) = &structured
    {
        // A tool that answers only with structured content still tells the model something.
        content = s.to_string();
    }
    ToolResult {
        content: cap_text(content, cap),
        is_error: v.get("isError").and_then(Value::as_bool).unwrap_or(false),
        structured_content: structured,
        ui,
        files: images(&v),
        input_required: None,
        task: None,
    }
}

/// The user's answers as MCP's `inputResponses` (for a call made again, or `tasks/update`).
pub(crate) fn input_responses(input: &crate::host::ToolInput) -> rmcp::model::InputResponses {
    input
        .answers
        .iter()
        .map(|(k, a)| (k.clone(), serde_json::to_value(a).unwrap_or(Value::Null)))
        .collect()
}

/// A call that runs as a task, as the service hands it on: its state, the server's task id
/// kept for the ticket.
pub(crate) fn task(t: &rmcp::model::Task, tool: &str) -> ToolResult {
    use lmchatkit_protocol::{TaskState, ToolTask};
    use rmcp::model::TaskStatus;
    let status = match t.status {
        TaskStatus::InputRequired => TaskState::InputRequired,
        TaskStatus::Completed => TaskState::Completed,
        TaskStatus::Failed => TaskState::Failed,
        TaskStatus::Cancelled => TaskState::Cancelled,
        _ => TaskState::Working,
    };
    ToolResult {
        content: format!("tool {tool} runs as a task"),
        task: Some(Box::new(ToolTask {
            status,
            status_message: t.status_message.clone(),
            poll_interval_ms: t.poll_interval_ms,
            ticket: None,
            task_id: t.task_id.clone(),
        })),
        ..ToolResult::default()
    }
}

/// A `tools/call` answered `input_required`, as the service hands it on: the elicitation
/// requests as questions (form schemas and URLs as the server sent them), the server's
/// `requestState` kept for the ticket. Sampling and roots requests are not offered (the hub
/// does not advertise them): a server that asks for one anyway gets an error result.
pub(crate) fn input_required(r: &rmcp::model::InputRequiredResult, tool: &str) -> ToolResult {
    use lmchatkit_protocol::{InputKind, InputQuestion, InputRequired};
    use rmcp::model::{ElicitRequestParams, InputRequest};
    let mut questions = Vec::new();
    for (key, req) in r.input_requests.iter().flatten() {
        let InputRequest::Elicitation(e) = req else {
            return ToolResult::error(format!(
                "tool {tool} asked for something other than the user's input \
                 (sampling or roots), which this host does not offer"
            ));
        };
        let (message, kind) = match &e.params {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => (
                message.clone(),
                InputKind::Form {
                    schema: serde_json::to_value(requested_schema).unwrap_or(Value::Null),
                },
            ),
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => (
                message.clone(),
                InputKind::Url {
                    url: url.clone(),
                    host: String::new(),
                },
            ),
            _ => {
                return ToolResult::error(format!(
                    "tool {tool} asked for input in a form this host does not know"
                ));
            }
        };
        questions.push(InputQuestion {
            key: key.clone(),
            message,
            kind,
        });
    }
    ToolResult {
        content: format!("tool {tool} waits for the user's input"),
        input_required: Some(Box::new(InputRequired {
            questions,
            request_state: r.request_state.clone(),
            ..InputRequired::default()
        })),
        ..ToolResult::default()
    }
}

/// Base64 bytes of images one result may carry for clients that show them (the model reads
/// only their summary); images past it are summarised only.
pub(crate) const MAX_RESULT_IMAGE_BYTES: usize = 8 << 20;

/// The image blocks of a result (wire JSON) with an `image/*` type and base64 data, while they
/// fit [`MAX_RESULT_IMAGE_BYTES`] together.
fn images(v: &Value) -> Vec<ToolFile> {
    let mut left = MAX_RESULT_IMAGE_BYTES;
    let blocks = v.get("content").and_then(Value::as_array);
    let mut out = Vec::new();
    for b in blocks.into_iter().flatten() {
        let (Some("image"), Some(data), Some(mime)) = (
            b.get("type").and_then(Value::as_str),
            b.get("data").and_then(Value::as_str),
            b.get("mimeType").and_then(Value::as_str),
        ) else {
            continue;
        };
        // Only what a `data:` URL may carry safely: an image type, base64 characters.
        let safe_mime = mime.starts_with("image/")
            && mime[6..]
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"+.-".contains(&c));
        let safe_data = data
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"+/=".contains(&c));
        if !safe_mime || !safe_data || data.len() > left {
            continue;
        }
        left -= data.len();
        out.push(ToolFile {
            media_type: mime.to_owned(),
            data: data.to_owned(),
        });
    }
    out
}

/// The first content of a `resources/read` result, with its `_meta.ui` merged over the
/// listing's.
pub(crate) fn read_result(
    uri: &str,
    r: &rmcp::model::ReadResourceResult,
    listing_ui: Option<UiResourceMeta>,
) -> Option<ResourceResult> {
    let v = wire(r);
    let first = v.get("contents")?.as_array()?.first()?.clone();
    let content_ui = ui_resource_meta(first.get("_meta"));
    Some(ResourceResult {
        uri: str_of(&first, "uri").unwrap_or_else(|| uri.to_owned()),
        text: str_of(&first, "text"),
        blob: str_of(&first, "blob"),
        mime_type: str_of(&first, "mimeType"),
        ui: merge_ui(listing_ui, content_ui),
    })
}

/// Every message of a `prompts/get` result (text content; other content summarised).
pub(crate) fn prompt_messages(
    r: &rmcp::model::GetPromptResult,
) -> (Option<String>, Vec<PromptMessage>) {
    let v = wire(r);
    let messages = v
        .get("messages")
        .and_then(Value::as_array)
        .map(|ms| {
            ms.iter()
                .map(|m| PromptMessage {
                    role: if m.get("role").and_then(Value::as_str) == Some("assistant") {
                        Role::Assistant
                    } else {
                        Role::User
                    },
                    content: m.get("content").map(block_text).unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    (str_of(&v, "description"), messages)
}

/// Prompt arguments as MCP wants them (string values).
pub(crate) fn string_args(args: std::collections::BTreeMap<String, String>) -> Map<String, Value> {
    args.into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn images_of_a_result_are_kept_for_clients_and_summarised_for_the_model() {
        let r: rmcp::model::CallToolResult = serde_json::from_value(json!({"content": [
            {"type": "text", "text": "a chart"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "image", "data": "AAAA", "mimeType": "text/html"},
            {"type": "image", "data": "AA\"><script>", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
        ]}))
        .unwrap();
        let out = call_result(&r, None, 1 << 20);
        assert_eq!(
            out.files,
            vec![ToolFile {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into()
            }]
        );
        assert!(out.content.contains("[image: image/png, 8 bytes]"));
    }

    #[test]
    fn blocks_are_summarised() {
        assert_eq!(block_text(&json!({"type": "text", "text": "hi"})), "hi");
        assert_eq!(
            block_text(&json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})),
            "[image: image/png, 8 bytes]"
        );
        assert_eq!(
            block_text(&json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"})),
            "[audio: audio/wav, 3 bytes]"
        );
        assert_eq!(
            block_text(
                &json!({"type": "resource", "resource": {"uri": "x://b", "blob": "AAA=", "mimeType": "application/gzip"}})
            ),
            "[resource: x://b, application/gzip, 2 bytes]"
        );
        assert_eq!(
            block_text(&json!({"type": "resource_link", "uri": "x://l", "name": "L"})),
            "[resource link: x://l (L)]"
        );
    }

    #[test]
    fn cap_keeps_head_and_tail() {
        let s = format!("{}{}", "a".repeat(100), "é".repeat(100));
        let out = cap_text(s.clone(), 64);
        assert!(out.starts_with(&"a".repeat(32)));
        assert!(out.ends_with("éééé"));
        assert!(out.contains("bytes omitted"));
        assert_eq!(cap_text("short".into(), 64), "short");
    }
}
