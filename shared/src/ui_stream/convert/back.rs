//! [`Message`] → `UIMessage` (see the parent module for the rules).

use serde_json::Value;

use crate::chat::{Approval, Content, ContentPart, Message, Role};
use crate::ui_stream::extra::{AiSdkExtra, AiSdkPart, AiSdkTool, OutputForm};
use crate::ui_stream::message::{UiApproval, UiMessage, UiPart, UiRole, UiToolPart, UiToolState};

/// Our messages as `UIMessage`s: exact for messages made by [`super::to_messages`], grouped by
/// reply for messages written by our UI.
pub fn to_ui_messages(messages: &[Message]) -> Vec<UiMessage> {
    let mut out = Vec::new();
    let mut cur: Option<Group> = None;
    for (i, m) in messages.iter().enumerate() {
        if m.info.is_some() {
            continue;
        }
        let extra = AiSdkExtra::of_message(m);
        let of = extra.as_ref().and_then(|x| x.of.as_deref());
        let joins = match (&extra, of) {
            (Some(_), Some(of)) => cur.as_ref().is_some_and(|g| g.msg.id == of),
            (Some(_), None) => false,
            (None, _) => {
                matches!(m.role, Role::Assistant | Role::Tool)
                    && cur
                        .as_ref()
                        .is_some_and(|g| g.msg.role == UiRole::Assistant)
            }
        };
        let group = match cur.take() {
            Some(g) if joins => cur.insert(g),
            prev => {
                out.extend(prev.map(|g| g.msg));
                let id = of
                    .map(str::to_owned)
                    .or_else(|| m.id.clone())
                    .unwrap_or_else(|| format!("msg-{i}"));
                let role = match m.role {
                    Role::User => UiRole::User,
                    Role::System => UiRole::System,
                    Role::Assistant | Role::Tool => UiRole::Assistant,
                };
                let metadata = match (&extra, of) {
                    (Some(x), None) => x.metadata.clone(),
                    _ => None,
                };
                cur.insert(Group::new(id, role, metadata))
            }
        };
        group.add(m, extra.as_ref());
    }
    out.extend(cur.map(|g| g.msg));
    out
}

/// A `UIMessage` being rebuilt, with its tool parts still waiting for a tool message.
struct Group {
    msg: UiMessage,
    /// (call id, index of the part, what the part kept; `None` for our UI's calls).
    waiting: Vec<(String, usize, Option<AiSdkTool>)>,
}

impl Group {
    fn new(id: String, role: UiRole, metadata: Option<Value>) -> Self {
        Self {
            msg: UiMessage {
                id,
                role,
                metadata,
                parts: Vec::new(),
            },
            waiting: Vec::new(),
        }
    }

    fn add(&mut self, m: &Message, extra: Option<&AiSdkExtra>) {
        match m.role {
            Role::User | Role::System => self.add_user(m, extra),
            Role::Assistant => self.add_step(m, extra),
            Role::Tool => self.add_result(m),
        }
    }

    fn add_user(&mut self, m: &Message, extra: Option<&AiSdkExtra>) {
        let items = content_items(&m.content);
        let Some(extra) = extra else {
            if items.is_empty() {
                // `validateUIMessages` wants at least one part.
                self.msg.parts.push(UiPart::text(""));
            }
            self.msg.parts.extend(items);
            return;
        };
        let represented: Vec<&AiSdkPart> = extra
            .parts
            .iter()
            .filter(|p| matches!(p, AiSdkPart::Text { .. } | AiSdkPart::File { .. }))
            .collect();
        let items = if represented.is_empty() && m.content == Content::default() {
            Vec::new()
        } else {
            items
        };
        let matches = items.len() == represented.len()
            && items.iter().zip(&represented).all(|(i, p)| {
                matches!(
                    (i, p),
                    (UiPart::Text { .. }, AiSdkPart::Text { .. })
                        | (UiPart::File { .. }, AiSdkPart::File { .. })
                )
            });
        let mut items = items.into_iter();
        let mut placed = false;
        for p in &extra.parts {
            match p {
                AiSdkPart::Part { part } => self.msg.parts.push(part.clone()),
                AiSdkPart::Text { .. } | AiSdkPart::File { .. } if matches => {
                    if let Some(item) = items.next() {
                        self.msg.parts.push(restore(p, item));
                    }
                }
                AiSdkPart::Text { .. } | AiSdkPart::File { .. } => {
                    // Edited since: the content as it is now, where the first part was.
                    if !placed {
                        self.msg.parts.extend(items.by_ref());
                        placed = true;
                    }
                }
                AiSdkPart::Reasoning { .. } | AiSdkPart::Tool(_) => {} // not in a user layout
            }
        }
        self.msg.parts.extend(items);
    }

    fn add_step(&mut self, m: &Message, extra: Option<&AiSdkExtra>) {
        let Some(extra) = extra else {
            self.add_plain_step(m);
            return;
        };
        let content = m.content.joined_text("");
        let thinking = m.thinking.as_deref().unwrap_or_default();
        let mut texts = Slicer::new(&content, extra.parts.iter().filter_map(text_len));
        let mut reasoning = Slicer::new(thinking, extra.parts.iter().filter_map(reasoning_len));
        let mut used = Vec::new();
        for p in &extra.parts {
            match p {
                AiSdkPart::Text {
                    len,
                    state,
                    provider_metadata,
                } => {
                    if let Some(text) = texts.next(*len) {
                        self.msg.parts.push(UiPart::Text {
                            text,
                            state: *state,
                            provider_metadata: provider_metadata.clone(),
                        });
                    }
                }
                AiSdkPart::Reasoning {
                    len,
                    state,
                    provider_metadata,
                } => {
                    if let Some(text) = reasoning.next(*len) {
                        self.msg.parts.push(UiPart::Reasoning {
                            text,
                            state: *state,
                            provider_metadata: provider_metadata.clone(),
                        });
                    }
                }
                AiSdkPart::Tool(x) => {
                    let Some(call) = m.tool_calls.iter().find(|c| c.id == x.tool_call_id) else {
                        continue; // the call was removed since
                    };
                    used.push(call.id.as_str());
                    let part = UiToolPart {
                        tool_name: call.name.clone(),
                        dynamic: x.dynamic,
                        tool_call_id: call.id.clone(),
                        state: x.state,
                        title: x.title.clone(),
                        input: (!x.no_input).then(|| call.arguments.clone()),
                        output: x.output.clone(),
                        error_text: x.error_text.clone(),
                        approval: x.approval.clone(),
                        provider_executed: x.provider_executed,
                        call_provider_metadata: x.call_provider_metadata.clone(),
                        preliminary: x.preliminary,
                        unknown: x.unknown.clone(),
                    };
                    self.waiting
                        .push((call.id.clone(), self.msg.parts.len(), Some((**x).clone())));
                    self.msg.parts.push(UiPart::Tool(Box::new(part)));
                }
                AiSdkPart::File { .. } => {} // files of assistant messages are kept as parts
                AiSdkPart::Part { part } => self.msg.parts.push(part.clone()),
            }
        }
        // What was added since the layout was written (edits): after the step's parts.
        if let Some(rest) = reasoning.rest() {
            self.msg.parts.push(UiPart::reasoning(rest));
        }
        if let Some(rest) = texts.rest() {
            self.msg.parts.push(UiPart::text(rest));
        }
        for call in m
            .tool_calls
            .iter()
            .filter(|c| !used.contains(&c.id.as_str()))
        {
            self.push_plain_call(call);
        }
    }

    /// A step written by our UI: `step-start`, its reasoning, its text, its calls.
    fn add_plain_step(&mut self, m: &Message) {
        self.msg.parts.push(UiPart::step_start());
        if let Some(t) = m.thinking.as_deref().filter(|t| !t.is_empty()) {
            self.msg.parts.push(UiPart::reasoning(t));
        }
        let text = m.content.joined_text("\n");
        if !text.is_empty() {
            self.msg.parts.push(UiPart::text(text));
        }
        for call in &m.tool_calls {
            self.push_plain_call(call);
        }
    }

    fn push_plain_call(&mut self, call: &crate::chat::ToolCall) {
        let approval = |approved| {
            Some(UiApproval {
                approved,
                ..UiApproval::new(&call.id)
            })
        };
        let mut part = UiToolPart::dynamic(&call.name, &call.id, UiToolState::InputAvailable);
        part.input = Some(call.arguments.clone());
        match call.approval {
            None => {}
            Some(Approval::Pending) => {
                part.state = UiToolState::ApprovalRequested;
                part.approval = approval(None);
            }
            Some(Approval::Approved | Approval::Error) => {
                part.state = UiToolState::ApprovalResponded;
                part.approval = approval(Some(true));
            }
            Some(Approval::Denied) => {
                part.state = UiToolState::ApprovalResponded;
                part.approval = approval(Some(false));
            }
        }
        self.waiting
            .push((call.id.clone(), self.msg.parts.len(), None));
        self.msg.parts.push(UiPart::Tool(Box::new(part)));
    }

    fn add_result(&mut self, m: &Message) {
        let call_id = m.tool_call_id.clone().unwrap_or_default();
        let found = self.waiting.iter().rposition(|(id, _, _)| *id == call_id);
        let Some((_, index, extra)) = found.map(|i| self.waiting.remove(i)) else {
            // A result whose call is not in this message: a part of its own.
            let mut part = UiToolPart::dynamic(
                m.tool_name.clone().unwrap_or_default(),
                call_id,
                UiToolState::InputAvailable,
            );
            part.input = Some(Value::Object(Default::default()));
            settle_plain(&mut part, m);
            self.msg.parts.push(UiPart::Tool(Box::new(part)));
            return;
        };
        let Some(UiPart::Tool(part)) = self.msg.parts.get_mut(index) else {
            return;
        };
        match extra {
            None => settle_plain(part, m),
            Some(x) => {
                let text = m.content.joined_text("\n");
                match x.output_in_message {
                    Some(OutputForm::Text) => part.output = Some(Value::String(text.clone())),
                    Some(OutputForm::Json) => {
                        part.output =
                            Some(serde_json::from_str(&text).unwrap_or(Value::String(text.clone())))
                    }
                    None => {}
                }
                if x.error_in_message {
                    part.error_text = Some(text);
                }
            }
        }
    }
}

/// The outcome of one of our UI's calls, from its tool message.
fn settle_plain(part: &mut UiToolPart, m: &Message) {
    let declined = part.approval.as_ref().and_then(|a| a.approved) == Some(false);
    if declined {
        part.state = UiToolState::OutputDenied;
        return;
    }
    // It ran, so it was allowed (an output part's approval must say `approved: true`).
    if let Some(a) = &mut part.approval {
        a.approved = Some(true);
    }
    if m.is_error {
        part.state = UiToolState::OutputError;
        part.error_text = Some(m.content.joined_text("\n"));
    } else {
        part.state = UiToolState::OutputAvailable;
        part.output = Some(match &m.content {
            Content::Text(t) => Value::String(t.clone()),
            Content::Parts(p) => serde_json::to_value(p).unwrap_or(Value::Null),
        });
    }
}

fn text_len(p: &AiSdkPart) -> Option<usize> {
    match p {
        AiSdkPart::Text { len, .. } => Some(*len),
        _ => None,
    }
}

fn reasoning_len(p: &AiSdkPart) -> Option<usize> {
    match p {
        AiSdkPart::Reasoning { len, .. } => Some(*len),
        _ => None,
    }
}

/// Cuts a text into the stored lengths when they still fit it exactly; otherwise the first
/// request gets the whole text and the others nothing.
struct Slicer<'a> {
    text: &'a str,
    exact: bool,
    pos: usize,
    any_layout: bool,
}

impl<'a> Slicer<'a> {
    fn new(text: &'a str, lens: impl Iterator<Item = usize>) -> Self {
        let mut pos = 0usize;
        let mut exact = true;
        let mut any_layout = false;
        for len in lens {
            any_layout = true;
            pos = pos.saturating_add(len);
            exact &= text.is_char_boundary(pos.min(text.len())) && pos <= text.len();
        }
        exact &= pos == text.len();
        Self {
            text,
            exact,
            pos: 0,
            any_layout,
        }
    }

    fn next(&mut self, len: usize) -> Option<String> {
        if self.exact {
            let s = &self.text[self.pos..self.pos + len];
            self.pos += len;
            Some(s.to_owned())
        } else if self.pos == 0 && !self.text.is_empty() {
            self.pos = self.text.len();
            Some(self.text.to_owned())
        } else {
            None
        }
    }

    /// Text no layout part took (all of it when the layout had no part for it).
    fn rest(&self) -> Option<String> {
        let taken = self.any_layout && (self.exact || self.pos > 0);
        (!taken && !self.text.is_empty()).then(|| self.text.to_owned())
    }
}

/// A content's parts as `UIMessage` parts (text, and files for images, documents and audio).
fn content_items(content: &Content) -> Vec<UiPart> {
    match content {
        Content::Text(t) => vec![UiPart::text(t.clone())],
        Content::Parts(parts) => parts
            .iter()
            .map(|p| match p {
                ContentPart::Text { text } => UiPart::text(text.clone()),
                ContentPart::ImageUrl { image_url } => {
                    UiPart::file(media_type_of(&image_url.url, "image/*"), &image_url.url)
                }
                ContentPart::File { file } => {
                    let url = file
                        .file_data
                        .clone()
                        .or_else(|| file.file_id.clone())
                        .unwrap_or_default();
                    UiPart::File {
                        media_type: media_type_of(&url, "application/octet-stream"),
                        filename: file.filename.clone(),
                        url,
                        provider_metadata: None,
                    }
                }
                ContentPart::InputAudio { input_audio } => UiPart::file(
                    format!("audio/{}", input_audio.format),
                    format!(
                        "data:audio/{};base64,{}",
                        input_audio.format, input_audio.data
                    ),
                ),
            })
            .collect(),
    }
}

/// The media type of a `data:` URL, else `fallback`.
fn media_type_of(url: &str, fallback: &str) -> String {
    url.strip_prefix("data:")
        .and_then(|rest| rest.split([';', ',']).next())
        .filter(|t| t.contains('/'))
        .unwrap_or(fallback)
        .to_owned()
}

/// A content item put back with what its layout part kept.
fn restore(layout: &AiSdkPart, item: UiPart) -> UiPart {
    match (layout, item) {
        (
            AiSdkPart::Text {
                state,
                provider_metadata,
                ..
            },
            UiPart::Text { text, .. },
        ) => UiPart::Text {
            text,
            state: *state,
            provider_metadata: provider_metadata.clone(),
        },
        (
            AiSdkPart::File {
                media_type,
                filename,
                provider_metadata,
            },
            UiPart::File { url, .. },
        ) => UiPart::File {
            media_type: media_type.clone(),
            filename: filename.clone(),
            url,
            provider_metadata: provider_metadata.clone(),
        },
        (_, item) => item,
    }
}
