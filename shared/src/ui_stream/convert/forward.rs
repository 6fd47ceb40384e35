//! `UIMessage` → [`Message`] (see the parent module for the rules).

use serde::Deserialize;
use serde_json::Value;

use super::denied_text;
use crate::chat::{Approval, Content, ContentPart, FileData, Message, Role, ToolCall, Usage};
use crate::ui_stream::extra::{AiSdkExtra, AiSdkPart, AiSdkTool, OutputForm};
use crate::ui_stream::message::{UiMessage, UiPart, UiRole, UiToolPart, UiToolState};
use crate::ui_stream::thread::UiMessageMetadata;

/// `UIMessage`s as our messages: what the model sees, plus [`Message::aisdk`] keeping the rest.
pub fn to_messages(ui: &[UiMessage]) -> Vec<Message> {
    let mut out = Vec::with_capacity(ui.len());
    for m in ui {
        let start = out.len();
        match m.role {
            UiRole::User => out.push(user_like(Role::User, &m.parts)),
            UiRole::System => out.push(user_like(Role::System, &m.parts)),
            UiRole::Assistant => {
                for step in steps(&m.parts) {
                    assistant_step(step, &mut out);
                }
            }
        }
        for (k, msg) in out[start..].iter_mut().enumerate() {
            let mut extra = AiSdkExtra::of_message(msg).unwrap_or_default();
            if k == 0 {
                msg.id = Some(m.id.clone());
                extra.metadata = m.metadata.clone();
            } else {
                msg.id = Some(format!("{}~{k}", m.id));
                extra.of = Some(m.id.clone());
            }
            msg.aisdk = Some(extra.into_value());
        }
        if m.role == UiRole::Assistant {
            apply_metadata(m.metadata.as_ref(), &mut out[start..]);
        }
    }
    out
}

/// Our metadata's usage and cost on the last step, its time on the first message.
fn apply_metadata(metadata: Option<&Value>, group: &mut [Message]) {
    let Some(meta) = metadata.and_then(|v| UiMessageMetadata::deserialize(v).ok()) else {
        return;
    };
    if let Some(first) = group.first_mut() {
        first.created_at = Some(meta.created_at);
    }
    if let Some(last) = group.iter_mut().rev().find(|m| m.role == Role::Assistant) {
        last.usage = Some(Usage::from(&meta.usage));
        last.cost_usd = meta.cost_usd;
        // Cut off: the model and our UI see it as such.
        last.stopped = meta.stopped;
        last.failed = meta.failed;
    }
}

/// The parts split before each `step-start` (a leading one stays with its step); always at
/// least one step.
fn steps(parts: &[UiPart]) -> Vec<&[UiPart]> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, p) in parts.iter().enumerate() {
        if matches!(p, UiPart::StepStart {}) && i > start {
            out.push(&parts[start..i]);
            start = i;
        }
    }
    out.push(&parts[start..]);
    out
}

fn user_like(role: Role, parts: &[UiPart]) -> Message {
    let mut layout = Vec::with_capacity(parts.len());
    let mut items = Vec::new();
    for p in parts {
        match p {
            UiPart::Text {
                text,
                state,
                provider_metadata,
            } => {
                items.push(ContentPart::text(text.clone()));
                layout.push(AiSdkPart::Text {
                    len: text.len(),
                    state: *state,
                    provider_metadata: provider_metadata.clone(),
                });
            }
            UiPart::File {
                media_type,
                filename,
                url,
                provider_metadata,
            } => {
                items.push(file_content(media_type, filename.as_deref(), url));
                layout.push(AiSdkPart::File {
                    media_type: media_type.clone(),
                    filename: filename.clone(),
                    provider_metadata: provider_metadata.clone(),
                });
            }
            other => layout.push(AiSdkPart::Part {
                part: other.clone(),
            }),
        }
    }
    let content = match items.as_slice() {
        [] => Content::default(),
        [ContentPart::Text { text }] => Content::Text(text.clone()),
        _ => Content::Parts(items),
    };
    let mut m = Message::new(role, content);
    m.aisdk = Some(
        AiSdkExtra {
            parts: layout,
            ..AiSdkExtra::default()
        }
        .into_value(),
    );
    m
}

fn file_content(media_type: &str, filename: Option<&str>, url: &str) -> ContentPart {
    if media_type.starts_with("image/") {
        ContentPart::image_url(url)
    } else {
        ContentPart::File {
            file: FileData {
                filename: filename.map(str::to_owned),
                file_data: Some(url.to_owned()),
                file_id: None,
            },
        }
    }
}

fn assistant_step(step: &[UiPart], out: &mut Vec<Message>) {
    let mut msg = Message::assistant("");
    let mut text = String::new();
    let mut thinking: Option<String> = None;
    let mut layout = Vec::with_capacity(step.len());
    let mut results = Vec::new();
    for p in step {
        match p {
            UiPart::Text {
                text: t,
                state,
                provider_metadata,
            } => {
                text.push_str(t);
                layout.push(AiSdkPart::Text {
                    len: t.len(),
                    state: *state,
                    provider_metadata: provider_metadata.clone(),
                });
            }
            UiPart::Reasoning {
                text: t,
                state,
                provider_metadata,
            } => {
                thinking.get_or_insert_with(String::new).push_str(t);
                layout.push(AiSdkPart::Reasoning {
                    len: t.len(),
                    state: *state,
                    provider_metadata: provider_metadata.clone(),
                });
            }
            UiPart::Tool(t) => {
                let (call, result, extra) = tool_call(t);
                msg.tool_calls.push(call);
                results.extend(result);
                layout.push(AiSdkPart::Tool(Box::new(extra)));
            }
            other => layout.push(AiSdkPart::Part {
                part: other.clone(),
            }),
        }
    }
    msg.content = Content::Text(text);
    msg.thinking = thinking;
    msg.aisdk = Some(
        AiSdkExtra {
            parts: layout,
            ..AiSdkExtra::default()
        }
        .into_value(),
    );
    out.push(msg);
    out.extend(results);
}

/// The call, its tool message when the part has an outcome, and what the part keeps besides.
fn tool_call(t: &UiToolPart) -> (ToolCall, Option<Message>, AiSdkTool) {
    use UiToolState::*;
    let approval = match t.state {
        InputStreaming | InputAvailable => None,
        ApprovalRequested => Some(Approval::Pending),
        ApprovalResponded => Some(match t.approval.as_ref().and_then(|a| a.approved) {
            Some(true) => Approval::Approved,
            Some(false) => Approval::Denied,
            None => Approval::Pending,
        }),
        OutputAvailable => Some(Approval::Approved),
        OutputError => Some(Approval::Error),
        OutputDenied => Some(Approval::Denied),
    };
    let mut call = ToolCall::new(
        t.tool_call_id.clone(),
        t.tool_name.clone(),
        t.input
            .clone()
            .unwrap_or_else(|| Value::Object(Default::default())),
    );
    call.approval = approval;
    let mut extra = AiSdkTool {
        tool_call_id: t.tool_call_id.clone(),
        dynamic: t.dynamic,
        state: t.state,
        title: t.title.clone(),
        approval: t.approval.clone(),
        provider_executed: t.provider_executed,
        call_provider_metadata: t.call_provider_metadata.clone(),
        preliminary: t.preliminary,
        no_input: t.input.is_none(),
        output_in_message: None,
        output: t.output.clone(),
        error_in_message: false,
        error_text: t.error_text.clone(),
        unknown: t.unknown.clone(),
    };
    let result = match t.state {
        OutputAvailable => {
            let text = match &t.output {
                Some(Value::String(s)) => {
                    extra.output_in_message = Some(OutputForm::Text);
                    s.clone()
                }
                Some(v) => {
                    let s = v.to_string();
                    // The text alone keeps the output only when it parses back to the same JSON.
                    if serde_json::from_str::<Value>(&s).ok().as_ref() == Some(v) {
                        extra.output_in_message = Some(OutputForm::Json);
                    }
                    s
                }
                None => String::new(),
            };
            if extra.output_in_message.is_some() {
                extra.output = None;
            }
            Some((text, false))
        }
        OutputError => match &t.error_text {
            Some(e) => {
                extra.error_in_message = true;
                extra.error_text = None;
                Some((e.clone(), true))
            }
            None => Some((String::new(), true)),
        },
        OutputDenied => {
            let reason = t.approval.as_ref().and_then(|a| a.reason.as_deref());
            Some((denied_text(&t.tool_name, reason), true))
        }
        _ => None,
    };
    let result = result.map(|(text, is_error)| {
        let mut m = Message::tool(t.tool_call_id.clone(), t.tool_name.clone(), text);
        m.is_error = is_error;
        m
    });
    (call, result, extra)
}
