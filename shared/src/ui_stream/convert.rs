//! Conversion between `UIMessage`s and our [`Message`]s.

use super::message::UiMessage;
use crate::chat::Message;

/// What the model is told when the user declined a call of `tool`.
pub fn denied_text(tool: &str, reason: Option<&str>) -> String {
    let _ = (tool, reason);
    String::new()
}

/// `UIMessage`s as our messages.
pub fn to_messages(ui: &[UiMessage]) -> Vec<Message> {
    let _ = ui;
    Vec::new()
}

/// Our messages as `UIMessage`s.
pub fn to_ui_messages(messages: &[Message]) -> Vec<UiMessage> {
    let _ = messages;
    Vec::new()
}
