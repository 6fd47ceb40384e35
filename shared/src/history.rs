//! Stored conversations and the events of `GET {prefix}/api/events`.

use serde::{Deserialize, Serialize};

use crate::catalog::Params;
use crate::chat::Message;

/// A conversation in the sidebar list.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ConversationSummary {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub persona_id: String,
    #[serde(default)]
    pub model: String,
    #[serde(default, skip_serializing_if = "Params::is_empty")]
    pub params: Params,
    /// Milliseconds since the Unix epoch.
    #[serde(default)]
    pub created_at: i64,
    #[serde(default)]
    pub updated_at: i64,
    /// Bumped by every save; a PUT names the revision it started from (`0` creates).
    #[serde(default)]
    pub revision: u64,
}

/// A whole conversation, as `GET` returns it and `PUT` sends it. System messages are never stored.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StoredConversation {
    pub id: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub persona_id: String,
    #[serde(default)]
    pub model: String,
    #[serde(default, skip_serializing_if = "Params::is_empty")]
    pub params: Params,
    #[serde(default)]
    pub created_at: i64,
    #[serde(default)]
    pub updated_at: i64,
    #[serde(default)]
    pub revision: u64,
    #[serde(default)]
    pub messages: Vec<Message>,
}

impl StoredConversation {
    /// The list entry for this conversation.
    pub fn summary(&self) -> ConversationSummary {
        ConversationSummary {
            id: self.id.clone(),
            title: self.title.clone(),
            persona_id: self.persona_id.clone(),
            model: self.model.clone(),
            params: self.params.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            revision: self.revision,
        }
    }
}

/// Body of a successful `PUT {prefix}/api/conversations/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SaveResponse {
    pub ok: bool,
    pub revision: u64,
}

/// Body of a `409 Conflict` answer to a PUT with a stale revision: the current copy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConflictResponse {
    pub error: String,
    pub revision: u64,
    pub conversation: StoredConversation,
}

/// Body of `PATCH {prefix}/api/conversations/{id}`: rename and/or change setup.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ConversationPatch {
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona_id: Option<String>,
    /// When present (even `{}`), replaces the stored params wholesale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Params>,
}

/// Kinds of [`ServerEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerEventType {
    ConversationSaved,
    ConversationRenamed,
    ConversationDeleted,
    PersonasChanged,
    CommandsChanged,
    PromptsChanged,
    ResourcesChanged,
    ToolsChanged,
    /// The client missed events older than the replay buffer: refetch every list.
    Resync,
}

impl ServerEventType {
    /// True for conversation events, which go only to the same principal's subscribers.
    pub fn is_conversation(self) -> bool {
        matches!(
            self,
            Self::ConversationSaved | Self::ConversationRenamed | Self::ConversationDeleted
        )
    }
}

/// One event of `GET {prefix}/api/events`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerEvent {
    #[serde(rename = "type")]
    pub kind: ServerEventType,
    /// The conversation id, for conversation events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The revision after a save, so a tab can ignore its own saves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u64>,
}

impl ServerEvent {
    /// An event with no conversation id.
    pub fn new(kind: ServerEventType) -> Self {
        Self {
            kind,
            id: None,
            revision: None,
        }
    }

    /// A conversation event.
    pub fn conversation(
        kind: ServerEventType,
        id: impl Into<String>,
        revision: Option<u64>,
    ) -> Self {
        Self {
            kind,
            id: Some(id.into()),
            revision,
        }
    }
}
