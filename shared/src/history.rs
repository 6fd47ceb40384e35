//! Stored conversations and the events of `GET {prefix}/api/events`.

use serde::{Deserialize, Serialize};

use crate::chat::Message;
use crate::menus::Params;

/// A conversation in the sidebar list.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ConversationSummary {
    /// Conversation id, chosen by the client.
    pub id: String,
    /// Title shown in the sidebar.
    pub title: String,
    /// Persona the conversation uses; `""` (the default) when none.
    #[serde(default)]
    pub persona_id: String,
    /// Model id the conversation uses; `""` (the default) when none.
    #[serde(default)]
    pub model: String,
    /// Model parameters of the conversation; omitted when empty.
    #[serde(default, skip_serializing_if = "Params::is_empty")]
    pub params: Params,
    /// Milliseconds since the Unix epoch.
    #[serde(default)]
    pub created_at: i64,
    /// Time of the last save or patch, in milliseconds since the Unix epoch.
    #[serde(default)]
    pub updated_at: i64,
    /// Bumped by every save; a PUT names the revision it started from (`0` creates).
    #[serde(default)]
    pub revision: u64,
    /// What its replies used and cost, as of this revision.
    #[serde(flatten)]
    pub totals: ConversationTotals,
}

/// A whole conversation, as `GET` returns it and `PUT` sends it. System messages are never stored.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StoredConversation {
    /// Conversation id, chosen by the client; in a PUT the path id overrides it.
    pub id: String,
    /// Title shown in the sidebar; `""` when absent.
    #[serde(default)]
    pub title: String,
    /// Persona the conversation uses; `""` when absent.
    #[serde(default)]
    pub persona_id: String,
    /// Model id the conversation uses; `""` when absent.
    #[serde(default)]
    pub model: String,
    /// Model parameters of the conversation; omitted when empty.
    #[serde(default, skip_serializing_if = "Params::is_empty")]
    pub params: Params,
    /// Creation time in milliseconds since the Unix epoch, set by the first save (the body's
    /// value when `> 0`, else now) and kept after.
    #[serde(default)]
    pub created_at: i64,
    /// Time of the last save or patch, in milliseconds since the Unix epoch; set by the store.
    #[serde(default)]
    pub updated_at: i64,
    /// In a GET, the current revision; in a PUT, the revision the edit started from (`0` creates).
    #[serde(default)]
    pub revision: u64,
    /// The messages, oldest first, without system messages; `[]` when absent. In a PUT with
    /// [`kept`](Self::kept), only the messages after the kept ones.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// In a PUT only: the first `kept` messages stored at the base `revision` stay as they are
    /// and `messages` holds what follows them (the stored ones after them are replaced), so
    /// saving one more turn sends and writes that turn, not the whole conversation. The client
    /// counts only messages it knows are stored unchanged at that revision. More than are
    /// stored, or a conversation that is gone, is a conflict (`409`; revision `0` in the copy
    /// says it is gone: send everything with base `0` to recreate it). Omitted (never sent by
    /// the service) when absent: the PUT holds the whole conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<u64>,
    /// Tools the user always allows in this conversation ("Always allow" in this chat), so the
    /// choice survives a reload and shows in other tabs. Replaced by every save, kept by a
    /// patch; omitted when empty (and absent in older copies).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    /// Every stored message with its parent: in a GET with `?tree=1` (an export that keeps
    /// every branch); in a PUT that creates the conversation (revision `0`), the tree to store
    /// instead of `messages` (an import). Omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<ConversationTree>,
    /// In a GET, the messages of the path that have other versions (an edited user message,
    /// a regenerated reply), in path order; omitted when none. Ignored in a PUT.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub branches: Vec<Branch>,
    /// What its replies used and cost: in a GET, as the store computed them in the save's
    /// transaction; in a PUT, ignored (the store recomputes them from `messages`).
    #[serde(flatten)]
    pub totals: ConversationTotals,
}

/// A message of a conversation's active path that has other versions: the messages stored
/// with the same parent. An edit of a user message and a regenerated reply each start one; the
/// earlier version stays, with everything that followed it. `messages` is always the active
/// path; `POST {prefix}/api/conversations/{id}/branch` makes another version's branch the
/// active one.
///
/// Versions are named by their node: the number the store gave the stored message, unique in
/// the conversation and never reused (message ids are the client's and may repeat: an AI SDK
/// client edits a message keeping its id).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Branch {
    /// The message's position in `messages`.
    pub index: u64,
    /// The node of every version, oldest first, this one included.
    pub versions: Vec<u64>,
    /// Which of `versions` is on the path.
    pub current: u64,
}

/// Every stored message of a conversation, with its parent ([`StoredConversation::tree`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ConversationTree {
    /// The messages, each after its parent (in the order they were stored).
    pub nodes: Vec<TreeNode>,
    /// The node that ends the active path; `None` when it is empty.
    #[serde(default)]
    pub leaf: Option<u64>,
}

/// One stored message of a [`ConversationTree`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeNode {
    /// Its number in the conversation ([`Branch::versions`] names versions by it).
    pub node: u64,
    /// Its parent's number; `None` for a first message.
    #[serde(default)]
    pub parent: Option<u64>,
    /// The message.
    pub message: Message,
}

/// `POST {prefix}/api/conversations/{id}/branch`: make the branch through `node` (any stored
/// message of the conversation, on the path or not: a [`Branch`] version, a [`SearchHit`]'s
/// node) the active one. Its newest descendant becomes the active leaf: at each step down,
/// the child stored last; a node already on the active path keeps the path. Answered with the
/// new revision; another tab hears of it as of a save.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BranchSwitch {
    /// The stored message whose branch becomes active.
    pub node: u64,
}

/// `GET {prefix}/api/search?q=…&limit=…`: the caller's messages that match, newest
/// conversation first.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SearchResponse {
    /// The hits, newest conversation first, then by position in the conversation.
    pub results: Vec<SearchHit>,
}

/// One message that matches a search.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SearchHit {
    /// The conversation holding the message.
    pub conversation_id: String,
    /// The message's id; `null` for a message stored without one.
    pub message_id: Option<String>,
    /// The message's position in its branch, from 0 (system messages are never stored).
    pub index: u64,
    /// The stored message ([`Branch`] names versions by it): to open a hit on a branch that is
    /// not the active one, switch to it (`POST …/branch`); `null` from a store without
    /// branches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u64>,
    /// The conversation's title.
    pub title: String,
    /// Plain text around the first match (never HTML: show it as text), with `…` where it
    /// cuts the message.
    pub snippet: String,
    /// Where `snippet` shows the matched words, as `[start, end)` in characters (Unicode
    /// scalar values, not bytes or UTF-16 units).
    #[serde(default)]
    pub matches: Vec<[u32; 2]>,
    /// The conversation's last save or patch, in milliseconds since the Unix epoch.
    pub updated_at: i64,
}

/// What a conversation's replies used and cost. The store recomputes them from the messages in
/// the transaction of every save ([`ConversationTotals::of`]), so two tabs saving at once
/// cannot leave a total that disagrees with the messages, and the browser never sums them.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ConversationTotals {
    /// Prompt tokens of every reply (each model call's prompt counts again); omitted when `0`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub total_input_tokens: u64,
    /// Generated tokens of every reply (reasoning included); omitted when `0`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub total_output_tokens: u64,
    /// The sum of the replies' known costs in US dollars; omitted (never `0`) when no reply
    /// has a known cost. A reply whose price is unknown adds nothing to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cost_usd: Option<f64>,
    /// How full the context window was after the latest reply that reported usage (its last
    /// model call's prompt plus output, [`Usage::context`](crate::Usage::context)); omitted
    /// when no reply reported usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_context_tokens: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ConversationTotals {
    /// The totals of `messages`: the usage and cost of each assistant message added up.
    ///
    /// ```
    /// use lmchatkit_protocol::{ConversationTotals, Message, Usage};
    /// let reply = |p, c, cost| {
    ///     let mut m = Message::assistant("ok");
    ///     m.usage = Some(Usage { prompt_tokens: Some(p), completion_tokens: Some(c), ..Usage::default() });
    ///     m.cost_usd = cost;
    ///     m
    /// };
    /// let t = ConversationTotals::of(&[Message::user("a"), reply(100, 10, Some(0.5)), reply(130, 20, None)]);
    /// assert_eq!((t.total_input_tokens, t.total_output_tokens), (230, 30));
    /// assert_eq!(t.total_cost_usd, Some(0.5));
    /// assert_eq!(t.last_context_tokens, Some(150));
    /// assert_eq!(ConversationTotals::of(&[Message::user("a")]).total_cost_usd, None);
    /// ```
    pub fn of(messages: &[Message]) -> Self {
        let mut t = Self::default();
        for m in messages.iter().filter(|m| m.role == crate::Role::Assistant) {
            if let Some(u) = &m.usage {
                t.total_input_tokens += u.prompt_tokens.unwrap_or(0);
                t.total_output_tokens += u.completion_tokens.unwrap_or(0);
                t.last_context_tokens = u.context().or(t.last_context_tokens);
            }
            if let Some(c) = m.cost_usd {
                *t.total_cost_usd.get_or_insert(0.0) += c;
            }
        }
        t
    }

    /// The totals of a conversation whose messages are those of `self` followed by those of
    /// `later`: what a save that appends messages adds to the stored totals.
    ///
    /// ```
    /// use lmchatkit_protocol::{ConversationTotals, Message, Usage};
    /// let reply = |p, c, cost| {
    ///     let mut m = Message::assistant("ok");
    ///     m.usage = Some(Usage { prompt_tokens: Some(p), completion_tokens: Some(c), ..Usage::default() });
    ///     m.cost_usd = cost;
    ///     m
    /// };
    /// let (a, b) = ([reply(100, 10, Some(0.5))], [Message::user("b"), reply(130, 20, None)]);
    /// let all = [a[0].clone(), b[0].clone(), b[1].clone()];
    /// let joined = ConversationTotals::of(&a).then(ConversationTotals::of(&b));
    /// assert_eq!(joined, ConversationTotals::of(&all));
    /// assert_eq!(joined.last_context_tokens, Some(150));
    /// // Later messages without usage keep the earlier context size.
    /// let quiet = ConversationTotals::of(&a).then(ConversationTotals::of(&[Message::user("c")]));
    /// assert_eq!(quiet.last_context_tokens, Some(110));
    /// ```
    #[must_use]
    pub fn then(self, later: Self) -> Self {
        Self {
            total_input_tokens: self.total_input_tokens + later.total_input_tokens,
            total_output_tokens: self.total_output_tokens + later.total_output_tokens,
            total_cost_usd: match (self.total_cost_usd, later.total_cost_usd) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            },
            last_context_tokens: later.last_context_tokens.or(self.last_context_tokens),
        }
    }
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
            totals: self.totals,
        }
    }
}

/// Body of a successful `PUT {prefix}/api/conversations/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SaveResponse {
    /// Always `true`.
    pub ok: bool,
    /// The revision after this save; send it as the base of the next PUT.
    pub revision: u64,
}

/// Body of a `409 Conflict` answer to a PUT with a stale revision: the current copy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConflictResponse {
    /// Why the save was refused, for display.
    pub error: String,
    /// The current revision (the same as `conversation.revision`).
    pub revision: u64,
    /// The stored copy the client should merge with before retrying.
    pub conversation: StoredConversation,
}

/// Body of `PATCH {prefix}/api/conversations/{id}`: rename and/or change setup.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ConversationPatch {
    /// The new title; required, trimmed, must not be blank.
    pub title: String,
    /// The new model id; omitted (or `""`) keeps the stored one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The new persona id; omitted (or `""`) keeps the stored one.
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
    /// A conversation was saved (`id` and `revision` set).
    ConversationSaved,
    /// A conversation was renamed or its setup changed (`id` set).
    ConversationRenamed,
    /// A conversation was deleted (`id` set).
    ConversationDeleted,
    /// The persona list changed: refetch `/api/personas`.
    PersonasChanged,
    /// The slash-command list changed: refetch `/api/commands`.
    CommandsChanged,
    /// The MCP prompt list changed: refetch `/api/prompts`.
    PromptsChanged,
    /// The resource list changed: refetch `/api/resources`.
    ResourcesChanged,
    /// The host's tool list changed.
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
    /// The event's kind, serialized as `type`.
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
