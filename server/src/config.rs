//! [`Config`] and its builder: everything a [`ChatService`](crate::ChatService) needs, validated
//! once at build time rather than per request.

use std::sync::Arc;
use std::time::Duration;

use lmchatkit_protocol::{McpServerStatus, ServerEvent, ServerEventType};

use crate::catalog::{CommandDir, CommandSource, OnChange, PersonaDir, PersonaSource};
use crate::events::EventBroadcaster;
use crate::history::HistoryStore;
use crate::host::Host;

/// Default JSON body limit (16 MiB).
pub const DEFAULT_BODY_LIMIT: usize = 16 << 20;
/// Default per-file upload cap (10 MiB).
pub const DEFAULT_MAX_UPLOAD_BYTES: u64 = 10 << 20;

/// Errors found while building a [`Config`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The prefix must be empty or start with `/`, without `?`, `#` or `..`.
    #[error("invalid prefix {0:?}: use \"\" or a path like \"/chat\"")]
    InvalidPrefix(String),
    /// A limit was zero.
    #[error("{0} must be greater than zero")]
    ZeroLimit(&'static str),
}

/// The service's configuration. Build it with [`Config::builder`].
///
/// ```
/// # use lmchatkit::{async_trait, CompleteRequest, EventStream, Host, HostError, RequestContext};
/// # struct MyHost;
/// # #[async_trait] impl Host for MyHost {
/// #   async fn models(&self, _: &RequestContext) -> Result<Vec<lmchatkit::protocol::Model>, HostError> { Ok(vec![]) }
/// #   fn complete(&self, _: &RequestContext, _: CompleteRequest) -> EventStream { Box::pin(futures_util::stream::empty()) }
/// # }
/// let config = lmchatkit::Config::builder(MyHost)
///     .prefix("/assistant")
///     .history(lmchatkit::history::MemoryStore::new())
///     .file_upload(true)
///     .build()
///     .unwrap();
/// assert_eq!(config.prefix(), "/assistant");
/// ```
#[derive(Clone)]
pub struct Config {
    pub(crate) prefix: String,
    pub(crate) host: Arc<dyn Host>,
    pub(crate) personas: Option<Arc<dyn PersonaSource>>,
    pub(crate) commands: Option<Arc<dyn CommandSource>>,
    pub(crate) history: Option<Arc<dyn HistoryStore>>,
    pub(crate) events: Option<EventBroadcaster>,
    pub(crate) file_upload: bool,
    pub(crate) max_upload_bytes: u64,
    pub(crate) body_limit: usize,
    pub(crate) page: bool,
    pub(crate) title: String,
    pub(crate) require_principal: bool,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) heartbeat: Duration,
    pub(crate) hide_system_prompts: bool,
    pub(crate) demo: bool,
    pub(crate) sandbox_origin: Option<String>,
    /// Issued MCP App view tokens.
    pub(crate) views: Arc<crate::apps::tokens::ViewTokens>,
    pub(crate) mcp_status: Option<Arc<dyn Fn() -> Vec<McpServerStatus> + Send + Sync>>,
    pub(crate) turn_cache: Arc<crate::turn::TurnCache>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("prefix", &self.prefix)
            .field("history", &self.history.is_some())
            .field("events", &self.events.is_some())
            .field("file_upload", &self.file_upload)
            .field("body_limit", &self.body_limit)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// Starts a builder around the host that supplies models and completions.
    pub fn builder(host: impl Host) -> ConfigBuilder {
        Self::builder_arc(Arc::new(host))
    }

    /// Like [`Config::builder`], for a host already in an `Arc`.
    pub fn builder_arc(host: Arc<dyn Host>) -> ConfigBuilder {
        ConfigBuilder {
            config: Config {
                prefix: "/chat".into(),
                host,
                personas: None,
                commands: None,
                history: None,
                events: Some(EventBroadcaster::new()),
                file_upload: false,
                max_upload_bytes: DEFAULT_MAX_UPLOAD_BYTES,
                body_limit: DEFAULT_BODY_LIMIT,
                page: true,
                title: "Chat".into(),
                require_principal: false,
                allowed_origins: Vec::new(),
                heartbeat: Duration::from_secs(15),
                hide_system_prompts: false,
                demo: false,
                sandbox_origin: None,
                views: Arc::default(),
                mcp_status: None,
                turn_cache: Arc::default(),
            },
            personas_dir: None,
            commands_dir: None,
        }
    }

    /// The public prefix the service is mounted at (`""` for the root).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The event broadcaster, when `/api/events` is on (hosts send `tools_changed` etc. here).
    pub fn events(&self) -> Option<&EventBroadcaster> {
        self.events.as_ref()
    }
}

/// Builds a [`Config`]; every setter has a sensible default.
pub struct ConfigBuilder {
    config: Config,
    personas_dir: Option<std::path::PathBuf>,
    commands_dir: Option<std::path::PathBuf>,
}

impl ConfigBuilder {
    /// The public mount prefix (default `/chat`), used to build URLs in the page and loader.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.config.prefix = prefix.into();
        self
    }

    /// Where personas come from (default: the built-in Default persona only).
    pub fn personas(mut self, source: impl PersonaSource) -> Self {
        self.config.personas = Some(Arc::new(source));
        self
    }

    /// Where slash commands come from (default: none).
    pub fn commands(mut self, source: impl CommandSource) -> Self {
        self.config.commands = Some(Arc::new(source));
        self
    }

    /// Personas from a directory of `.toml` files, reloaded on change (a `personas_changed`
    /// event goes to every tab). A missing directory is an empty list and a warning.
    pub fn personas_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.personas_dir = Some(dir.into());
        self
    }

    /// Slash commands from a directory of `.md` files, reloaded on change (`commands_changed`).
    pub fn commands_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.commands_dir = Some(dir.into());
        self
    }

    /// The history store (default: none — the browser keeps history in sessionStorage).
    pub fn history(mut self, store: impl HistoryStore) -> Self {
        self.config.history = Some(Arc::new(store));
        self
    }

    /// Like [`ConfigBuilder::history`], for a store already in an `Arc`.
    pub fn history_arc(mut self, store: Arc<dyn HistoryStore>) -> Self {
        self.config.history = Some(store);
        self
    }

    /// Uses this broadcaster for `/api/events` (to share it with the host).
    pub fn event_broadcaster(mut self, events: EventBroadcaster) -> Self {
        self.config.events = Some(events);
        self
    }

    /// Turns `/api/events` on (default) or off.
    pub fn events(mut self, on: bool) -> Self {
        self.config.events = match (on, self.config.events.take()) {
            (true, Some(b)) => Some(b),
            (true, None) => Some(EventBroadcaster::new()),
            (false, _) => None,
        };
        self
    }

    /// Turns `POST /api/upload` on (default off).
    pub fn file_upload(mut self, on: bool) -> Self {
        self.config.file_upload = on;
        self
    }

    /// Per-file upload cap (default 10 MiB).
    pub fn max_upload_bytes(mut self, n: u64) -> Self {
        self.config.max_upload_bytes = n;
        self
    }

    /// JSON body limit (default 16 MiB).
    pub fn body_limit(mut self, n: usize) -> Self {
        self.config.body_limit = n;
        self
    }

    /// Serve the chat page at `{prefix}` (default on; off for hosts that own the page).
    pub fn page(mut self, on: bool) -> Self {
        self.config.page = on;
        self
    }

    /// The page title (default "Chat").
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.config.title = title.into();
        self
    }

    /// Answer 401 when no [`Principal`](crate::Principal) is in the request (default off).
    pub fn require_principal(mut self, on: bool) -> Self {
        self.config.require_principal = on;
        self
    }

    /// Accepts mutating requests from this extra origin (e.g. `https://app.example.com`).
    pub fn allowed_origin(mut self, origin: impl Into<String>) -> Self {
        self.config
            .allowed_origins
            .push(origin.into().trim_end_matches('/').to_owned());
        self
    }

    /// Heartbeat interval of the SSE streams (default 15 s).
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.config.heartbeat = every;
        self
    }

    /// Leave `system_prompt` out of `/api/personas` (default off).
    pub fn hide_system_prompts(mut self, on: bool) -> Self {
        self.config.hide_system_prompts = on;
        self
    }

    /// Tell the UI it runs on the built-in demo model (shown as a banner).
    pub fn demo(mut self, on: bool) -> Self {
        self.config.demo = on;
        self
    }

    /// Switches MCP App views to proxy mode: the spec's sandbox proxy is served from `origin`
    /// (e.g. `https://sandbox.chat.example`, no trailing slash), which must be on a different
    /// **host name** than the chat page (cookies are per host, not per port). Route that origin to
    /// [`ChatService::sandbox_only`](crate::ChatService::sandbox_only). Without it, views are
    /// served in default mode (see the README's security section).
    pub fn sandbox_origin(mut self, origin: impl Into<String>) -> Self {
        let origin: String = origin.into();
        self.config.sandbox_origin = Some(origin.trim_end_matches('/').to_owned());
        self
    }

    /// How long a view URL from `POST /api/apps/view` stays valid (default 60 s); each is good
    /// for one load.
    pub fn app_view_ttl(mut self, ttl: Duration) -> Self {
        self.config.views = Arc::new(crate::apps::tokens::ViewTokens::new(ttl));
        self
    }

    /// Reports MCP server states for `/api/config`.
    pub fn mcp_status(
        mut self,
        f: impl Fn() -> Vec<McpServerStatus> + Send + Sync + 'static,
    ) -> Self {
        self.config.mcp_status = Some(Arc::new(f));
        self
    }

    /// Validates and returns the config.
    pub fn build(mut self) -> Result<Config, ConfigError> {
        let p = self.config.prefix.trim().trim_end_matches('/').to_owned();
        let valid = p.is_empty()
            || (p.starts_with('/')
                && !p.contains(['?', '#', ' '])
                && !p.contains("..")
                && !p.contains("//"));
        if !valid {
            return Err(ConfigError::InvalidPrefix(self.config.prefix));
        }
        self.config.prefix = p;
        // Opened here, so the reload events go to the broadcaster the config ends up with.
        if let Some(dir) = self.personas_dir.take() {
            let on_change =
                change_notifier(self.config.events.clone(), ServerEventType::PersonasChanged);
            self.config.personas = Some(Arc::new(PersonaDir::open(dir, on_change)));
        }
        if let Some(dir) = self.commands_dir.take() {
            let on_change =
                change_notifier(self.config.events.clone(), ServerEventType::CommandsChanged);
            self.config.commands = Some(Arc::new(CommandDir::open(dir, on_change)));
        }
        if self.config.body_limit == 0 {
            return Err(ConfigError::ZeroLimit("body_limit"));
        }
        if self.config.max_upload_bytes == 0 {
            return Err(ConfigError::ZeroLimit("max_upload_bytes"));
        }
        Ok(self.config)
    }
}

/// A reload callback that broadcasts `kind` (nothing when events are off).
fn change_notifier(events: Option<EventBroadcaster>, kind: ServerEventType) -> Option<OnChange> {
    let events = events?;
    Some(Arc::new(move || events.broadcast(ServerEvent::new(kind))))
}
