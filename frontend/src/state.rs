//! The UI's state: the catalog lists, the conversation list, the open chat and its messages, the
//! picker's setup and the settings. One [`Store`] of `Copy` signals is provided as context; each
//! message carries its own signals so a streaming delta re-renders only its bubble.
//!
//! History mode (server vs this tab's sessionStorage) comes from `/api/config`,
//! never from probing a route.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use leptos::prelude::*;
use lmchatkit_protocol::{
    Branch, ConfigResponse, ConversationSummary, HistoryMode, Message, Model, Params, Persona,
    Prompt, Resource, Role, SlashCommand, StoredConversation, UploadedFile,
};

use crate::api::{Api, ApiError};
use crate::markdown;
pub use crate::params::{PARAM_FIELDS, ParamFields, fields_from_params, params_from_fields};
use crate::results::{CallKey, Shown, link_results};

/// The message sent as the tool result when the user denies a call (reference §9.7).
pub fn deny_message(tool: &str) -> String {
    format!(
        "The user denied this tool call. Do not attempt to call '{tool}' again. Ask the user how \
         they would like to proceed, or continue with an alternative approach."
    )
}

/// The virtual skill tool, always allowed.
pub use lmchatkit_protocol::SKILL_TOOL_NAME as SKILL_TOOL;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}

/// A random id: `prefix` + 8 base-36 characters.
pub fn new_id(prefix: &str) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut s = String::from(prefix);
    for _ in 0..8 {
        let i = (js_sys::Math::random() * 36.0) as usize % 36;
        s.push(DIGITS[i] as char);
    }
    s
}

/// A message on screen: the wire message plus the render state of the bubble.
#[derive(Clone)]
pub struct UiMessage {
    /// Stable key (the message id).
    pub key: String,
    /// The message (the truth that is saved and sent).
    pub data: ArcRwSignal<Message>,
    /// Rendered Markdown of an assistant message's content.
    pub html: ArcRwSignal<String>,
    /// Where each top-level block of `html` is while a reply streams ([`Self::show_blocks`]);
    /// empty when `html` is to be shown whole. Read untracked, with `html`.
    pub layout: ArcRwSignal<Vec<BlockSpan>>,
    /// The reply is still streaming.
    pub streaming: ArcRwSignal<bool>,
    /// The turn failed (shown in the bubble with a Retry); not saved.
    pub error: ArcRwSignal<Option<String>>,
    /// The tool calls whose arguments streamed into this reply in this tab, in order; not
    /// saved (the complete calls in `data` are).
    pub streamed: ArcRwSignal<Vec<StreamedCall>>,
}

/// A tool call whose arguments the model streams (its `tool_call_delta` events): shown as a
/// card at once, its view (when the tool has one) opened early. Never saved.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamedCall {
    /// The call's id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments' JSON text so far.
    pub text: String,
    /// The tool's MCP App view (`ui://` resource), when it has one.
    pub view: Option<String>,
    /// The reply ended without the complete call: it will never run.
    pub cut: bool,
}

/// One rendered top-level block of a streaming reply's HTML: its key and revision (the
/// [`crate::markdown::Incremental`]'s) and its length in bytes, the blocks in order and joined
/// being the whole HTML. The bubble replaces only the blocks whose key or revision changed
/// (`components::message`), so a long reply does not have all its HTML parsed again on
/// every frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSpan {
    /// The block's key.
    pub key: u64,
    /// Its revision.
    pub rev: u64,
    /// Its HTML's length in bytes.
    pub len: usize,
}

impl UiMessage {
    /// Shows the blocks of a reply as it streams: their HTML joined, and where each is.
    pub fn show_blocks(&self, inc: &crate::markdown::Incremental) {
        let blocks = inc.blocks();
        let spans = blocks
            .iter()
            .map(|b| BlockSpan {
                key: b.key,
                rev: b.rev,
                len: b.html.len(),
            })
            .collect();
        self.layout.set(spans);
        self.html.set(inc.html());
    }

    /// Shows `html` whole (not as a streaming reply's blocks).
    pub fn set_html(&self, html: String) {
        self.layout.set(Vec::new());
        self.html.set(html);
    }

    /// Wraps a message, giving it an id when it has none.
    pub fn new(mut m: Message) -> Self {
        let key =
            m.id.clone()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| new_id("m-"));
        m.id = Some(key.clone());
        let html = match (&m.role, m.content.as_text()) {
            (Role::Assistant, Some(t)) => markdown::render(t),
            _ => String::new(),
        };
        Self {
            key,
            data: ArcRwSignal::new(m),
            html: ArcRwSignal::new(html),
            layout: ArcRwSignal::new(Vec::new()),
            streaming: ArcRwSignal::new(false),
            error: ArcRwSignal::new(None),
            streamed: ArcRwSignal::new(Vec::new()),
        }
    }

    /// Whether the message is worth saving and sending (failed, empty placeholders are not).
    pub fn is_substantial(&self) -> bool {
        self.data.with_untracked(|m| {
            m.role != Role::Assistant
                || !m.content.is_empty()
                || !m.tool_calls.is_empty()
                || m.thinking.as_deref().is_some_and(|t| !t.is_empty())
        })
    }
}

/// Save bookkeeping of a chat (server mode).
#[derive(Debug, Default, Clone)]
pub struct SyncState {
    /// The revision the next PUT starts from (0 = not stored yet).
    pub revision: u64,
    /// Message ids as of that revision (to tell an append from an edit on a 409).
    pub base_ids: Vec<String>,
    /// The messages as this tab last saved or loaded them (at `stored_revision`): a save sends
    /// only what follows those it still holds unchanged (see [`crate::history::kept_count`]).
    pub stored: Vec<Message>,
    /// The revision `stored` was saved or loaded at.
    pub stored_revision: u64,
    /// A save is in flight.
    pub saving: bool,
    /// Something changed while saving: save again after.
    pub dirty: bool,
}

/// The open conversation.
#[derive(Clone)]
pub struct Chat {
    /// Conversation id (changes when a conflict copy is split off).
    pub id: ArcRwSignal<String>,
    /// Title.
    pub title: ArcRwSignal<String>,
    /// Persona id.
    pub persona_id: ArcRwSignal<String>,
    /// Model id.
    pub model: ArcRwSignal<String>,
    /// Model params.
    pub params: ArcRwSignal<Params>,
    /// Creation time (ms).
    pub created_at: i64,
    /// The messages, oldest first (tool messages included, not shown as bubbles).
    pub messages: ArcRwSignal<Vec<UiMessage>>,
    /// Tool results by (assistant message id, call id): see [`crate::results`].
    pub results: ArcRwSignal<HashMap<CallKey, Shown>>,
    /// Calls running now, by (assistant message id, call id).
    pub running: ArcRwSignal<HashSet<CallKey>>,
    /// The last progress report of each running call (its server's `notifications/progress`).
    pub progress: ArcRwSignal<HashMap<CallKey, lmchatkit_protocol::CallProgress>>,
    /// Tools always allowed in this chat ("Always allow" in this chat); saved with it.
    pub allowed: ArcRwSignal<HashSet<String>>,
    /// Save bookkeeping.
    pub sync: Arc<Mutex<SyncState>>,
    /// The latest `ui/update-model-context` of a view in this chat and the view that reported it
    /// (not saved), sent with turns until that view is torn down.
    pub model_context: ArcRwSignal<Option<AppContext>>,
    /// The other versions of its messages, by message key (the stored conversation's
    /// `branches`), for the `‹ 2 / 3 ›` switcher.
    pub branches: ArcRwSignal<HashMap<String, Branch>>,
}

/// `branches` (by position in `messages`) by the key of the message at that position.
pub fn branches_by_key(messages: &[UiMessage], branches: Vec<Branch>) -> HashMap<String, Branch> {
    branches
        .into_iter()
        .filter_map(|b| {
            let key = messages.get(usize::try_from(b.index).ok()?)?.key.clone();
            Some((key, b))
        })
        .collect()
}

impl Chat {
    /// A new, empty chat.
    pub fn new(persona_id: String, model: String, params: Params) -> Self {
        Self::from_stored(StoredConversation {
            id: new_id("c-"),
            title: "New conversation".into(),
            persona_id,
            model,
            params,
            created_at: now_ms(),
            ..Default::default()
        })
    }

    /// A chat from a stored conversation (system messages dropped, tool results linked to the
    /// calls of their own assistant message).
    pub fn from_stored(c: StoredConversation) -> Self {
        let mut seen = HashSet::new();
        let mut stored = Vec::new();
        for mut m in c.messages.into_iter().filter(|m| m.role != Role::System) {
            // Repair missing and duplicate ids (older data): results are linked by id.
            if m.id
                .as_ref()
                .is_none_or(|id| id.is_empty() || !seen.insert(id.clone()))
            {
                m.id = Some(new_id("m-"));
            }
            stored.push(m);
        }
        let results = link_results(&stored);
        let known = stored.clone();
        let messages: Vec<UiMessage> = stored.into_iter().map(UiMessage::new).collect();
        let branches = branches_by_key(&messages, c.branches);
        let base_ids = messages.iter().map(|m| m.key.clone()).collect();
        Self {
            id: ArcRwSignal::new(c.id),
            title: ArcRwSignal::new(c.title),
            persona_id: ArcRwSignal::new(c.persona_id),
            model: ArcRwSignal::new(c.model),
            params: ArcRwSignal::new(c.params),
            created_at: c.created_at,
            messages: ArcRwSignal::new(messages),
            results: ArcRwSignal::new(results),
            running: ArcRwSignal::new(HashSet::new()),
            progress: ArcRwSignal::new(HashMap::new()),
            allowed: ArcRwSignal::new(c.allowed_tools.into_iter().collect()),
            sync: Arc::new(Mutex::new(SyncState {
                revision: c.revision,
                base_ids,
                stored: known,
                stored_revision: c.revision,
                ..Default::default()
            })),
            model_context: ArcRwSignal::new(None),
            branches: ArcRwSignal::new(branches),
        }
    }

    /// The conversation to save (placeholders and failed bubbles left out).
    pub fn to_stored(&self) -> StoredConversation {
        let mut c = StoredConversation {
            id: self.id.get_untracked(),
            title: self.title.get_untracked(),
            persona_id: self.persona_id.get_untracked(),
            model: self.model.get_untracked(),
            params: self.params.get_untracked(),
            created_at: self.created_at,
            updated_at: now_ms(),
            revision: self.sync.lock().map(|s| s.revision).unwrap_or(0),
            allowed_tools: self.allowed.with_untracked(|a| {
                let mut names: Vec<String> = a.iter().cloned().collect();
                names.sort();
                names
            }),
            messages: self.messages.with_untracked(|ms| {
                ms.iter()
                    .filter(|m| m.is_substantial())
                    .map(|m| m.data.get_untracked())
                    .collect()
            }),
            ..StoredConversation::default()
        };
        // What the browser's own copy (browser history) shows; the server recomputes them.
        c.totals = lmchatkit_protocol::ConversationTotals::of(&c.messages);
        c
    }

    /// The messages to send to the model (info cards left out; the server drops the rest).
    pub fn wire_messages(&self) -> Vec<Message> {
        self.messages.with_untracked(|ms| {
            ms.iter()
                .filter(|m| m.is_substantial())
                .map(|m| m.data.get_untracked())
                .filter(|m| m.info.is_none())
                .collect()
        })
    }

    /// Whether a tool call of the last assistant message waits for the user.
    pub fn has_pending(&self) -> bool {
        self.messages.with(|ms| {
            ms.iter()
                .rev()
                .find(|m| m.data.with(|d| d.role == Role::Assistant))
                .is_some_and(|m| {
                    m.data.with(|d| {
                        d.tool_calls.iter().any(|c| {
                            c.approval == Some(lmchatkit_protocol::Approval::Pending)
                                || c.input_request.is_some()
                                || c.task.is_some()
                        })
                    })
                })
        })
    }

    /// Appends a message.
    pub fn push(&self, m: UiMessage) {
        self.messages.update(|ms| ms.push(m));
    }
}

/// The picker's choices.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Setup {
    /// Chosen persona id.
    pub persona_id: String,
    /// Chosen model id.
    pub model: String,
    /// The six parameter fields.
    pub fields: ParamFields,
    /// The reasoning effort (`None`: the default, not sent); used for a reasoning model only.
    pub effort: Option<lmchatkit_protocol::ReasoningEffort>,
}

/// Light, dark, or following the system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Theme {
    /// `prefers-color-scheme`.
    #[default]
    System,
    /// Forced light.
    Light,
    /// Forced dark.
    Dark,
}

/// sessionStorage key of the tools always allowed for this browser session (a JSON array).
const SESSION_ALLOW_KEY: &str = "lmchatkit:alwaysAllow";

/// The tools allowed for this browser session: the skill tool, plus what an earlier page of this
/// tab allowed.
fn session_allowed() -> HashSet<String> {
    let mut set = HashSet::from([SKILL_TOOL.to_owned()]);
    if let Some(list) = crate::storage::session_get(SESSION_ALLOW_KEY)
        .and_then(|s| serde_json::from_str::<Vec<String>>(&s).ok())
    {
        set.extend(list);
    }
    set
}

/// Everything the components share (all `Copy` signals).
#[derive(Clone, Copy)]
pub struct Store {
    /// The API client.
    pub api: StoredValue<Api>,
    /// `/api/config`, once loaded.
    pub config: RwSignal<Option<Result<ConfigResponse, ApiError>>>,
    /// `/api/models`, once loaded.
    pub models: RwSignal<Option<Result<Vec<Model>, ApiError>>>,
    /// `/api/personas`.
    pub personas: RwSignal<Vec<Persona>>,
    /// `/api/commands`.
    pub commands: RwSignal<Vec<SlashCommand>>,
    /// `/api/prompts`.
    pub prompts: RwSignal<Vec<Prompt>>,
    /// `/api/resources`.
    pub resources: RwSignal<Vec<Resource>>,
    /// The sidebar list.
    pub conversations: RwSignal<Vec<ConversationSummary>>,
    /// Conversations changed elsewhere since last opened.
    pub unread: RwSignal<HashSet<String>>,
    /// The open chat (`None` = the start screen).
    pub chat: RwSignal<Option<Chat>>,
    /// A turn is streaming or running tools.
    pub busy: RwSignal<bool>,
    /// The picker's choices.
    pub setup: RwSignal<Setup>,
    /// Tools always allowed for this browser session (kept in sessionStorage: see
    /// [`Store::allow_for_session`]).
    pub auto_allow: RwSignal<HashSet<String>>,
    /// Tools this user always allows, in every chat (the server's list: see
    /// [`crate::approvals`]).
    pub always: RwSignal<HashSet<String>>,
    /// Files attached to the next message.
    pub attachments: RwSignal<Vec<UploadedFile>>,
    /// A message for the user (load or save failures), dismissible.
    pub notice: RwSignal<Option<String>>,
    /// The sidebar drawer is open (narrow screens).
    pub sidebar_open: RwSignal<bool>,
    /// Theme choice.
    pub theme: RwSignal<Theme>,
    /// Bumped to ask the composer to take focus.
    pub focus_composer: RwSignal<u32>,
    /// The draft in the composer.
    pub draft: RwSignal<String>,
    /// The "Tools & servers" screen, when open (see [`crate::servers`]).
    pub servers_screen: RwSignal<Option<crate::servers::ServersScreen>>,
    /// Messages written while a reply streams, sent when it ends (see `crate::queue`).
    pub queue: RwSignal<Vec<String>>,
    /// Stop paused the queue: it waits for Send.
    pub queue_paused: RwSignal<bool>,
    /// What reading each `@` reference of the draft gave, by URI (its chip shows it).
    pub ref_reads: RwSignal<HashMap<String, RefRead>>,
}

/// Where reading a picked `@` reference is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefRead {
    /// Asked for.
    Reading,
    /// The server read it.
    Read,
    /// It could not be read: why.
    Failed(String),
}

impl Store {
    /// A store for the service at `prefix`.
    pub fn new(prefix: &str) -> Self {
        Self {
            api: StoredValue::new(Api::new(prefix)),
            config: RwSignal::new(None),
            models: RwSignal::new(None),
            personas: RwSignal::new(Vec::new()),
            commands: RwSignal::new(Vec::new()),
            prompts: RwSignal::new(Vec::new()),
            resources: RwSignal::new(Vec::new()),
            conversations: RwSignal::new(Vec::new()),
            unread: RwSignal::new(HashSet::new()),
            chat: RwSignal::new(None),
            busy: RwSignal::new(false),
            setup: RwSignal::new(Setup::default()),
            auto_allow: RwSignal::new(session_allowed()),
            always: RwSignal::new(HashSet::new()),
            attachments: RwSignal::new(Vec::new()),
            notice: RwSignal::new(None),
            sidebar_open: RwSignal::new(false),
            theme: RwSignal::new(Theme::System),
            focus_composer: RwSignal::new(0),
            draft: RwSignal::new(String::new()),
            servers_screen: RwSignal::new(None),
            queue: RwSignal::new(Vec::new()),
            queue_paused: RwSignal::new(false),
            ref_reads: RwSignal::new(HashMap::new()),
        }
    }

    /// Allows `names` without asking for the rest of this browser session ("Always allow" for
    /// the session, a file command's `allowed-tools`). Kept in this tab's sessionStorage, so a
    /// reload keeps them and closing the tab forgets them.
    pub fn allow_for_session(&self, names: impl IntoIterator<Item = String>) {
        self.auto_allow.update(|s| s.extend(names));
        let mut list: Vec<String> = self.auto_allow.with_untracked(|s| {
            s.iter()
                .filter(|n| n.as_str() != SKILL_TOOL)
                .cloned()
                .collect()
        });
        list.sort();
        let json = serde_json::to_string(&list).ok();
        crate::storage::session_set(SESSION_ALLOW_KEY, json.as_deref());
    }

    /// The API client.
    pub fn api(&self) -> Api {
        self.api.get_value()
    }

    /// History kept by the server (else in this tab's sessionStorage). `None` until known.
    pub fn history_mode(&self) -> Option<HistoryMode> {
        self.config
            .with(|c| c.as_ref().and_then(|r| r.as_ref().ok()).map(|c| c.history))
    }

    /// Whether this user may add their own MCP servers (`/api/config`'s `user_mcp`).
    pub fn user_mcp_on(&self) -> bool {
        self.config.with(|c| matches!(c, Some(Ok(c)) if c.user_mcp))
    }

    /// The model list (empty while loading or on error).
    pub fn model_list(&self) -> Vec<Model> {
        self.models.with(|m| {
            m.as_ref()
                .and_then(|r| r.as_ref().ok())
                .cloned()
                .unwrap_or_default()
        })
    }

    /// [`model_list`](Self::model_list), untracked (for event handlers and tasks).
    pub fn model_list_untracked(&self) -> Vec<Model> {
        self.models.with_untracked(|m| {
            m.as_ref()
                .and_then(|r| r.as_ref().ok())
                .cloned()
                .unwrap_or_default()
        })
    }

    /// The model with this id on the menu (tracked).
    pub fn model(&self, id: &str) -> Option<Model> {
        self.models.with(|m| {
            m.as_ref()
                .and_then(|r| r.as_ref().ok())
                .and_then(|list| list.iter().find(|m| m.id == id).cloned())
        })
    }

    /// The persona with this id.
    pub fn persona(&self, id: &str) -> Option<Persona> {
        self.personas
            .with(|ps| ps.iter().find(|p| p.id == id).cloned())
    }

    /// Asks the composer to take focus.
    pub fn focus(&self) {
        self.focus_composer.update(|n| *n += 1);
    }
}

/// A view's model context and who reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct AppContext {
    /// The tool call id of the view that reported it.
    pub view: String,
    /// The app's name (its MCP server).
    pub app: String,
    /// The `ui/update-model-context` params.
    pub value: serde_json::Value,
}

/// The store provided by [`crate::App`].
pub fn store() -> Store {
    expect_context::<Store>()
}
