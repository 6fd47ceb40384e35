//! Helpers shared by the stores: message rows (id + serialized JSON) and the clock.

#[cfg(any(feature = "sqlite", feature = "postgres"))]
use lmchatkit_protocol::ConversationSummary;
use lmchatkit_protocol::{Message, Role, StoredConversation};

use super::HistoryError;

/// A whole stored conversation from its summary, its message bodies in order and its
/// allowed tools as stored (JSON): what every SQL store reads back the same way.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn stored_conversation(
    s: ConversationSummary,
    bodies: &[String],
    allowed_tools: &str,
) -> Result<StoredConversation, HistoryError> {
    Ok(StoredConversation {
        id: s.id,
        title: s.title,
        persona_id: s.persona_id,
        model: s.model,
        params: s.params,
        created_at: s.created_at,
        updated_at: s.updated_at,
        revision: s.revision,
        messages: decode_rows(bodies.iter().map(String::as_str))?,
        allowed_tools: serde_json::from_str(allowed_tools).map_err(storage)?,
        totals: s.totals,
        kept: None,
        tree: None,
        branches: Vec::new(),
    })
}

/// The conflict copy of a conversation that is gone, answered to a save that keeps stored
/// messages ([`StoredConversation::kept`]) of it: only the id, at revision `0`.
pub(crate) fn gone(id: &str) -> StoredConversation {
    StoredConversation {
        id: id.to_owned(),
        ..StoredConversation::default()
    }
}

/// One stored message row: the message id (if any) and the message serialized as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct MessageRow {
    pub id: Option<String>,
    pub body: String,
    /// What search looks in ([`searchable_text`](super::search::searchable_text)); `None`
    /// for messages search skips.
    pub text: Option<String>,
}

/// Serializes the messages to rows, dropping system messages (they are never stored); no row
/// carries its searchable text (the memory store searches the messages themselves).
pub(crate) fn encode_messages(messages: &[Message]) -> Result<Vec<MessageRow>, HistoryError> {
    encode(messages, |_| None)
}

/// [`encode_messages`], each row with its searchable text, for the stores that index it.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn encode_indexed(messages: &[Message]) -> Result<Vec<MessageRow>, HistoryError> {
    encode(messages, super::search::searchable_text)
}

fn encode(
    messages: &[Message],
    text: impl Fn(&Message) -> Option<String>,
) -> Result<Vec<MessageRow>, HistoryError> {
    messages
        .iter()
        .filter(|m| m.role != Role::System)
        .map(|m| {
            Ok(MessageRow {
                id: m.id.clone(),
                body: serde_json::to_string(m).map_err(storage)?,
                text: text(m),
            })
        })
        .collect()
}

/// Parses a stored message body.
pub(crate) fn decode_message(body: &str) -> Result<Message, HistoryError> {
    serde_json::from_str(body).map_err(storage)
}

/// Decodes rows in order, skipping any system message (defensive: none is ever written).
pub(crate) fn decode_rows<'a>(
    bodies: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<Message>, HistoryError> {
    let mut out = Vec::new();
    for body in bodies {
        let m = decode_message(body)?;
        if m.role != Role::System {
            out.push(m);
        }
    }
    Ok(out)
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Wraps any error as [`HistoryError::Storage`].
pub(crate) fn storage(e: impl std::fmt::Display) -> HistoryError {
    HistoryError::Storage(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(ms: &[Message]) -> Vec<MessageRow> {
        encode_messages(ms).unwrap()
    }

    #[test]
    fn system_messages_are_dropped() {
        let r = rows(&[Message::system("s"), Message::user("u").with_id("1")]);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].id.as_deref(), Some("1"));
    }
}
