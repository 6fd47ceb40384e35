//! [`Config`] and its builder: the service's settings, validated once at build time rather than
//! per request, and the parts the host hands over. Settings are apart from live state: a
//! config is inert and cloneable; [`ChatService::new`](crate::ChatService::new) builds the state
//! (see `state.rs`) from it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use lmchatkit_protocol::McpServerStatus;

use http::HeaderValue;

use crate::access::approval::{ApprovalPolicy, ApprovalStore};
use crate::access::host_names::AllowedHost;
use crate::host::Host;
use crate::limits::{BodyLimits, StreamCaps};
use crate::live::events::EventBroadcaster;
use crate::page_policy;
use crate::presets::{CommandSource, PersonaSource};
use crate::store::HistoryStore;

pub use crate::limits::DEFAULT_BODY_LIMIT;
/// Default per-file upload cap (10 MiB).
pub const DEFAULT_MAX_UPLOAD_BYTES: u64 = 10 << 20;
/// Default lifetime of an MCP App view URL (60 s).
pub const DEFAULT_APP_VIEW_TTL: Duration = Duration::from_secs(60);

/// Errors found while building a [`Config`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The prefix must be empty or start with `/`, without `?`, `#` or `..`.
    #[error("invalid prefix {0:?}: use \"\" or a path like \"/chat\"")]
    InvalidPrefix(String),
    /// A limit was zero.
    #[error("{0} must be greater than zero")]
    ZeroLimit(&'static str),
    /// An allowed host (or the sandbox origin) is not a host name.
    #[error(
        "invalid host name {0:?}: use a name like \"chat.example.com\" or \"chat.example.com:8443\""
    )]
    InvalidHost(String),
    /// A frame ancestor is not an origin.
    #[error(
        "invalid frame ancestor {0:?}: use an origin like \"https://portal.example.com\", \
         \"https://portal.example.com:8443\" or \"https://*.example.com\""
    )]
    InvalidFrameAncestor(String),
    /// The sandbox origin is not `http(s)://name[:port]` with a DNS name.
    #[error(
        "invalid sandbox origin {0:?}: use http(s)://NAME[:PORT] with a DNS name, not an IP \
         address (each MCP server's views run on a subdomain of it), e.g. http://localhost:8081"
    )]
    InvalidSandboxOrigin(String),
    /// The signing secret is shorter than [`MIN_SIGNING_SECRET`] bytes.
    #[error(
        "the signing secret has {0} bytes; give at least 32 random bytes (the app derives one \
         from its key file)"
    )]
    SigningSecretTooShort(usize),
}

/// The shortest signing secret [`ConfigBuilder::signing_secret`] takes (32 bytes).
pub const MIN_SIGNING_SECRET: usize = 32;

/// A secret shared by every instance, from which the service derives its signing keys. Its
/// `Debug` never shows it.
#[derive(Clone)]
pub(crate) struct SigningSecret(pub(crate) Arc<[u8]>);

impl std::fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(crate::secrets::REDACTED)
    }
}

/// The service's settings, validated once by [`ConfigBuilder::build`], plus the parts the host
/// hands over (its [`Host`], stores, catalog sources). Cloneable and inert: building a config
/// starts nothing. [`ChatService::new`](crate::ChatService::new) turns it into the service's
/// live state (it opens watched directories, creates the view-token store and the turn cache).
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
///     .history(lmchatkit::store::MemoryStore::new())
///     .file_upload(true)
///     .build()
///     .unwrap();
/// assert_eq!(config.prefix(), "/assistant");
/// let same = config.clone(); // settings only: nothing is shared or started twice
/// assert_eq!(same.prefix(), "/assistant");
/// ```
#[derive(Clone)]
pub struct Config {
    pub(crate) settings: Settings,
    pub(crate) parts: HostSupplied,
}

/// The plain settings: values, no live objects.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) prefix: String,
    pub(crate) file_upload: bool,
    pub(crate) max_upload_bytes: u64,
    /// Body size and timeout, opaque JSON caps.
    pub(crate) limits: BodyLimits,
    /// Concurrent chat streams.
    pub(crate) streams: StreamCaps,
    pub(crate) page: bool,
    pub(crate) title: String,
    pub(crate) require_principal: bool,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) heartbeat: Duration,
    pub(crate) hide_system_prompts: bool,
    pub(crate) demo: bool,
    pub(crate) sandbox_origin: Option<String>,
    /// `/api/events` on or off.
    pub(crate) events: bool,
    /// Lifetime of a view URL from `POST /api/apps/view`.
    pub(crate) app_view_ttl: Duration,
    /// Host names served besides the loopback names (and the sandbox origin's).
    pub(crate) allowed_hosts: Vec<AllowedHost>,
    /// Origins that may frame the page besides its own (validated CSP sources).
    pub(crate) frame_ancestors: Vec<String>,
    /// The page's `Content-Security-Policy`, built by `build` ([`page_policy`]).
    pub(crate) page_csp: HeaderValue,
    /// The principal who sees MCP server states (`None`: everyone).
    pub(crate) operator: Option<String>,
    /// The system prompt of a turn whose persona has none.
    pub(crate) system_prompt: String,
    /// Model calls per request of the server-side agent loop.
    pub(crate) max_steps: usize,
    /// How long a request for the user's input waits.
    pub(crate) input_ttl: Duration,
}

/// Reports MCP server states for `/api/config`.
pub(crate) type StatusFn = Arc<dyn Fn() -> Vec<McpServerStatus> + Send + Sync>;

/// Where a catalog (personas or commands) comes from.
pub(crate) enum PresetSpec<S: ?Sized> {
    /// A source the host built.
    Source(Arc<S>),
    /// A directory the service opens (and watches) when it starts.
    Dir(PathBuf),
}

impl<S: ?Sized> Clone for PresetSpec<S> {
    fn clone(&self) -> Self {
        match self {
            Self::Source(s) => Self::Source(s.clone()),
            Self::Dir(d) => Self::Dir(d.clone()),
        }
    }
}

/// What the host hands over; the service builds its state from these.
#[derive(Clone)]
pub(crate) struct HostSupplied {
    pub(crate) host: Arc<dyn Host>,
    pub(crate) personas: Option<PresetSpec<dyn PersonaSource>>,
    pub(crate) commands: Option<PresetSpec<dyn CommandSource>>,
    pub(crate) history: Option<Arc<dyn HistoryStore>>,
    /// A broadcaster shared with the host (else the service makes its own when events are on).
    pub(crate) event_broadcaster: Option<EventBroadcaster>,
    /// What the service knows of models beyond the host's list (default: the built-in table).
    pub(crate) catalog: Option<crate::models::Catalog>,
    pub(crate) mcp_status: Option<StatusFn>,
    /// The operator's approval policy for the model's tool calls.
    pub(crate) approval_policy: ApprovalPolicy,
    /// Where "always allow" lists live (else in memory).
    pub(crate) approval_store: Option<Arc<dyn ApprovalStore>>,
    /// Each user's own MCP servers (off when `None`).
    #[cfg(feature = "mcp")]
    pub(crate) user_mcp: Option<crate::user_mcp::UserMcp>,
    /// The operator's sign-ins to their OAuth MCP servers (off when `None`).
    #[cfg(feature = "mcp")]
    pub(crate) mcp_oauth: Option<crate::mcp::OperatorOAuth>,
    /// What signing keys are derived from (`None`: random keys per process).
    pub(crate) signing_secret: Option<SigningSecret>,
    /// The engine several instances share (runs, stops, events); in-process when `None`.
    #[cfg(shared_engine)]
    pub(crate) shared: Option<crate::live::SharedEngine>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("prefix", &self.settings.prefix)
            .field("history", &self.parts.history.is_some())
            .field("events", &self.settings.events)
            .field("file_upload", &self.settings.file_upload)
            .field("limits", &self.settings.limits)
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
            pending_hosts: Vec::new(),
            pending_ancestors: Vec::new(),
            config: Config {
                settings: Settings {
                    prefix: "/chat".into(),
                    file_upload: false,
                    max_upload_bytes: DEFAULT_MAX_UPLOAD_BYTES,
                    limits: BodyLimits::default(),
                    streams: StreamCaps::default(),
                    page: true,
                    title: "Chat".into(),
                    require_principal: false,
                    allowed_origins: Vec::new(),
                    heartbeat: Duration::from_secs(15),
                    hide_system_prompts: false,
                    demo: false,
                    sandbox_origin: None,
                    events: true,
                    app_view_ttl: DEFAULT_APP_VIEW_TTL,
                    allowed_hosts: Vec::new(),
                    frame_ancestors: Vec::new(),
                    page_csp: HeaderValue::from_static("default-src 'self'"),
                    operator: None,
                    system_prompt: crate::turn::FALLBACK_SYSTEM_PROMPT.to_owned(),
                    max_steps: crate::agent::DEFAULT_MAX_STEPS,
                    input_ttl: crate::access::input::DEFAULT_INPUT_TTL,
                },
                parts: HostSupplied {
                    host,
                    personas: None,
                    commands: None,
                    history: None,
                    event_broadcaster: None,
                    catalog: None,
                    mcp_status: None,
                    approval_policy: ApprovalPolicy::default(),
                    approval_store: None,
                    #[cfg(feature = "mcp")]
                    user_mcp: None,
                    #[cfg(feature = "mcp")]
                    mcp_oauth: None,
                    signing_secret: None,
                    #[cfg(shared_engine)]
                    shared: None,
                },
            },
        }
    }

    /// The public prefix the service is mounted at (`""` for the root).
    pub fn prefix(&self) -> &str {
        &self.settings.prefix
    }
}

/// Builds a [`Config`]; every setter has a sensible default. Building validates and starts
/// nothing.
pub struct ConfigBuilder {
    config: Config,
    /// `allowed_host` names, parsed by `build`.
    pending_hosts: Vec<String>,
    /// `frame_ancestor` origins, checked by `build`.
    pending_ancestors: Vec<String>,
}

impl ConfigBuilder {
    /// The public mount prefix (default `/chat`), used to build URLs in the page and loader.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.config.settings.prefix = prefix.into();
        self
    }

    /// Where personas come from (default: the built-in Default persona only).
    pub fn personas(mut self, source: impl PersonaSource) -> Self {
        self.config.parts.personas = Some(PresetSpec::Source(Arc::new(source)));
        self
    }

    /// Where slash commands come from (default: none).
    pub fn commands(mut self, source: impl CommandSource) -> Self {
        self.config.parts.commands = Some(PresetSpec::Source(Arc::new(source)));
        self
    }

    /// Personas from a directory of `.toml` files, opened when the service starts and reloaded
    /// on change (a `personas_changed` event goes to every tab). A missing directory is an
    /// empty list and a warning.
    pub fn personas_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.parts.personas = Some(PresetSpec::Dir(dir.into()));
        self
    }

    /// Slash commands from a directory of `.md` files, opened when the service starts and
    /// reloaded on change (`commands_changed`).
    pub fn commands_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.parts.commands = Some(PresetSpec::Dir(dir.into()));
        self
    }

    /// The history store (default: none — the browser keeps history in sessionStorage).
    pub fn history(mut self, store: impl HistoryStore) -> Self {
        self.config.parts.history = Some(Arc::new(store));
        self
    }

    /// Like [`ConfigBuilder::history`], for a store already in an `Arc`.
    pub fn history_arc(mut self, store: Arc<dyn HistoryStore>) -> Self {
        self.config.parts.history = Some(store);
        self
    }

    /// Uses this broadcaster for `/api/events` (to share it with the host); turns events on.
    pub fn event_broadcaster(mut self, events: EventBroadcaster) -> Self {
        self.config.parts.event_broadcaster = Some(events);
        self.config.settings.events = true;
        self
    }

    /// Turns `/api/events` on (default) or off.
    pub fn events(mut self, on: bool) -> Self {
        self.config.settings.events = on;
        self
    }

    /// Turns `POST /api/upload` on (default off).
    pub fn file_upload(mut self, on: bool) -> Self {
        self.config.settings.file_upload = on;
        self
    }

    /// Per-file upload cap (default 10 MiB).
    pub fn max_upload_bytes(mut self, n: u64) -> Self {
        self.config.settings.max_upload_bytes = n;
        self
    }

    /// JSON body limit (default 16 MiB; 413 beyond).
    pub fn body_limit(mut self, n: usize) -> Self {
        self.config.settings.limits.body_bytes = n;
        self
    }

    /// How long a request body may take to arrive (default 30 s; 408 beyond).
    pub fn body_timeout(mut self, t: Duration) -> Self {
        self.config.settings.limits.timeout = t;
        self
    }

    /// Cap of a chat request's `model_context` from an MCP App view (default 64 KiB; 413
    /// beyond, before it is parsed).
    pub fn max_model_context_bytes(mut self, n: usize) -> Self {
        self.config.settings.limits.model_context_bytes = n;
        self
    }

    /// Cap of one tool call's `arguments` (default 1 MiB; 413 beyond, before they are parsed).
    pub fn max_arguments_bytes(mut self, n: usize) -> Self {
        self.config.settings.limits.arguments_bytes = n;
        self
    }

    /// Cap of all opaque JSON values of one body together: arguments, model context,
    /// structured results (default 8 MiB).
    pub fn max_opaque_bytes(mut self, n: usize) -> Self {
        self.config.settings.limits.opaque_bytes = n;
        self
    }

    /// Concurrent chat streams per principal (default 4) and in total (default 256); one more
    /// is 429 with `Retry-After`.
    pub fn max_streams(mut self, per_principal: usize, total: usize) -> Self {
        self.config.settings.streams = StreamCaps {
            per_principal,
            total,
        };
        self
    }

    /// Serve the chat page at `{prefix}` (default on; off for hosts that own the page).
    pub fn page(mut self, on: bool) -> Self {
        self.config.settings.page = on;
        self
    }

    /// The page title (default "Chat").
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.config.settings.title = title.into();
        self
    }

    /// Answer 401 when no [`Principal`](crate::Principal) is in the request (default off).
    pub fn require_principal(mut self, on: bool) -> Self {
        self.config.settings.require_principal = on;
        self
    }

    /// Serves requests naming this host (`chat.example.com` on any port, or
    /// `chat.example.com:8443`) besides `localhost`, `127.0.0.1` and `[::1]` (on any port),
    /// which are always served. Every other `Host` gets 403 on every route, so a page whose
    /// name is rebound to this machine's address cannot drive the service (DNS rebinding).
    /// Mounting the service under your own domain? Add it here. An invalid name is a
    /// [`ConfigError::InvalidHost`] from [`ConfigBuilder::build`].
    ///
    /// ```
    /// # use lmchatkit::{async_trait, CompleteRequest, EventStream, Host, HostError, RequestContext};
    /// # struct MyHost;
    /// # #[async_trait] impl Host for MyHost {
    /// #   async fn models(&self, _: &RequestContext) -> Result<Vec<lmchatkit::protocol::Model>, HostError> { Ok(vec![]) }
    /// #   fn complete(&self, _: &RequestContext, _: CompleteRequest) -> EventStream { Box::pin(futures_util::stream::empty()) }
    /// # }
    /// use tower::ServiceExt;
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let config = lmchatkit::Config::builder(MyHost).allowed_host("chat.example.com").build().unwrap();
    /// let svc = lmchatkit::ChatService::new(config);
    /// let ask = |host: &str| http::Request::get("/chat/api/models").header("host", host)
    ///     .body(http_body_util::Empty::<bytes::Bytes>::new()).unwrap();
    /// assert_eq!(svc.clone().oneshot(ask("chat.example.com")).await.unwrap().status(), 200);
    /// assert_eq!(svc.clone().oneshot(ask("localhost:8080")).await.unwrap().status(), 200);
    /// assert_eq!(svc.oneshot(ask("rebind.example")).await.unwrap().status(), 403);
    /// # });
    /// ```
    pub fn allowed_host(mut self, host: impl Into<String>) -> Self {
        self.pending_hosts.push(host.into());
        self
    }

    /// Lets a page of this origin frame the chat page (repeatable): `https://portal.example.com`,
    /// with a port if it is not the default one, or `https://*.example.com` for every subdomain.
    /// By default only the page's own origin may frame it (`frame-ancestors 'self'` and
    /// `X-Frame-Options: SAMEORIGIN`), so another site cannot overlay it and trick the user
    /// into clicking Allow or Delete (clickjacking). With an ancestor configured the page sends
    /// `frame-ancestors 'self' <origins>` and no `X-Frame-Options` (which cannot name origins).
    /// Anything but an `http(s)` origin is a [`ConfigError::InvalidFrameAncestor`] from
    /// [`ConfigBuilder::build`].
    ///
    /// ```
    /// # use lmchatkit::{async_trait, CompleteRequest, EventStream, Host, HostError, RequestContext};
    /// # struct MyHost;
    /// # #[async_trait] impl Host for MyHost {
    /// #   async fn models(&self, _: &RequestContext) -> Result<Vec<lmchatkit::protocol::Model>, HostError> { Ok(vec![]) }
    /// #   fn complete(&self, _: &RequestContext, _: CompleteRequest) -> EventStream { Box::pin(futures_util::stream::empty()) }
    /// # }
    /// let ok = lmchatkit::Config::builder(MyHost).frame_ancestor("https://portal.example.com").build();
    /// assert!(ok.is_ok());
    /// let bad = lmchatkit::Config::builder(MyHost).frame_ancestor("portal.example.com").build();
    /// assert!(matches!(bad, Err(lmchatkit::ConfigError::InvalidFrameAncestor(_))));
    /// ```
    pub fn frame_ancestor(mut self, origin: impl Into<String>) -> Self {
        self.pending_ancestors.push(origin.into());
        self
    }

    /// Accepts mutating requests from this extra origin (e.g. `https://app.example.com`).
    pub fn allowed_origin(mut self, origin: impl Into<String>) -> Self {
        self.config
            .settings
            .allowed_origins
            .push(origin.into().trim_end_matches('/').to_owned());
        self
    }

    /// Heartbeat interval of the SSE streams (default 15 s).
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.config.settings.heartbeat = every;
        self
    }

    /// Leave `system_prompt` out of `/api/personas` (default off).
    pub fn hide_system_prompts(mut self, on: bool) -> Self {
        self.config.settings.hide_system_prompts = on;
        self
    }

    /// Tell the UI it runs on the built-in demo model (shown as a banner).
    pub fn demo(mut self, on: bool) -> Self {
        self.config.settings.demo = on;
        self
    }

    /// Switches MCP App views to proxy mode: the spec's sandbox proxy is served from subdomains
    /// of `origin` (e.g. `https://sandbox.chat.example`, no trailing slash), one per MCP server:
    /// `https://v-<hash>.sandbox.chat.example`. It must be a DNS name (not an IP address) other
    /// than the chat page's (cookies are per host, not per port); `http://localhost:PORT` works
    /// without DNS, as browsers resolve `*.localhost` to loopback. Route that origin and its
    /// subdomains to [`ChatService::sandbox_only`](crate::ChatService::sandbox_only). Without it,
    /// views are served in default mode (see the README's security section).
    pub fn sandbox_origin(mut self, origin: impl Into<String>) -> Self {
        let origin: String = origin.into();
        self.config.settings.sandbox_origin = Some(origin.trim_end_matches('/').to_owned());
        self
    }

    /// How long a view URL from `POST /api/apps/view` stays valid (default 60 s); each is good
    /// for one load.
    pub fn app_view_ttl(mut self, ttl: Duration) -> Self {
        self.config.settings.app_view_ttl = ttl;
        self
    }

    /// The principal (its [`Principal::id`](crate::Principal::id)) who operates the service:
    /// only they see the MCP server states of [`mcp_status`](Self::mcp_status) and the host's
    /// [`setup_problems`](crate::Host::setup_problems) in `/api/config` (names, URLs,
    /// connection errors). Without one, every principal sees them, as suits a single-user app.
    pub fn operator(mut self, principal_id: impl Into<String>) -> Self {
        self.config.settings.operator = Some(principal_id.into());
        self
    }

    /// Reports MCP server states for `/api/config` (to the [`operator`](Self::operator) only
    /// when one is set).
    pub fn mcp_status(
        mut self,
        f: impl Fn() -> Vec<McpServerStatus> + Send + Sync + 'static,
    ) -> Self {
        self.config.parts.mcp_status = Some(Arc::new(f));
        self
    }

    /// The model catalog whose facts describe the host's models (default: the built-in table
    /// of well-known models, [`Catalog::builtin`](crate::models::Catalog::builtin)): whether a
    /// model takes a reasoning effort and its context window, in `/api/models`, the AI SDK
    /// model menu and the AI SDK route's effort. A host model the catalog does not know keeps
    /// what the host says.
    pub fn model_catalog(mut self, catalog: crate::models::Catalog) -> Self {
        self.config.parts.catalog = Some(catalog);
        self
    }

    /// The system prompt of every turn whose persona has none, on both protocols (default: "You
    /// are a helpful assistant."; some providers reject an empty one). A persona's own prompt
    /// replaces it; the host's augmenter adds to either.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.config.settings.system_prompt = prompt.into();
        self
    }

    /// At most this many model calls per request where the server runs the tool loop (the AI
    /// SDK route), default 10. A turn that still asks for tools after the last one ends with the
    /// finish reason `tool-calls`.
    pub fn max_steps(mut self, n: usize) -> Self {
        self.config.settings.max_steps = n;
        self
    }

    /// The operator's approval policy for the model's tool calls (default: ask for every
    /// call). The chat stream tells the UI each call's decision, `POST /api/tools/call` refuses
    /// a model's call the policy denies, and the server-side agent loop follows it. A
    /// principal's stored "always allow" turns an `ask` into an `allow`, never a `deny`.
    ///
    /// ```
    /// use lmchatkit::protocol::ToolDecision;
    /// # use lmchatkit::{async_trait, CompleteRequest, EventStream, Host, HostError, RequestContext};
    /// # struct MyHost;
    /// # #[async_trait] impl Host for MyHost {
    /// #   async fn models(&self, _: &RequestContext) -> Result<Vec<lmchatkit::protocol::Model>, HostError> { Ok(vec![]) }
    /// #   fn complete(&self, _: &RequestContext, _: CompleteRequest) -> EventStream { Box::pin(futures_util::stream::empty()) }
    /// # }
    /// let policy = lmchatkit::ApprovalPolicy::new(ToolDecision::Ask)
    ///     .allow("docs__*")
    ///     .deny("*__delete_*");
    /// let config = lmchatkit::Config::builder(MyHost).approval_policy(policy).build().unwrap();
    /// # drop(config);
    /// ```
    pub fn approval_policy(mut self, policy: ApprovalPolicy) -> Self {
        self.config.parts.approval_policy = policy;
        self
    }

    /// Where each principal's "always allow" list lives (`{prefix}/api/tools/approvals`).
    /// Default: a [`MemoryApprovalStore`](crate::access::approval::MemoryApprovalStore) made
    /// when the service starts; the history's
    /// [`SqliteStore`](crate::store::SqliteStore) keeps them in its database file.
    pub fn approval_store(mut self, store: Arc<dyn ApprovalStore>) -> Self {
        self.config.parts.approval_store = Some(store);
        self
    }

    /// Lets each signed-in user register their own MCP servers (`{prefix}/api/mcp/servers`):
    /// the registry, the keyring that seals their credentials and the operator's outbound
    /// policy (see [`crate::user_mcp`]). Off by default: the routes are absent (404).
    #[cfg(feature = "mcp")]
    pub fn user_mcp(mut self, user_mcp: crate::user_mcp::UserMcp) -> Self {
        self.config.parts.user_mcp = Some(user_mcp);
        self
    }

    /// How long a tool's request for the user's input (MCP elicitation: a form or a URL) waits
    /// for an answer; answers sent later count as `cancel` (see [`crate::access::input`]).
    /// Default: [`DEFAULT_INPUT_TTL`](crate::DEFAULT_INPUT_TTL), 10 minutes.
    pub fn input_request_ttl(mut self, ttl: Duration) -> Self {
        self.config.settings.input_ttl = ttl;
        self
    }

    /// Serves the operator's sign-ins to the MCP servers they configured with OAuth: the page
    /// `{prefix}/mcp/operator` (the [`operator`](Self::operator) only; without one, a service
    /// without principals), its callback `{prefix}/mcp/operator/callback`, and the client ID
    /// metadata document `{prefix}/oauth/client-metadata.json`. Give the hub the same `oauth`
    /// ([`McpHub::with_oauth`](crate::mcp::McpHub::with_oauth)). Off by default: the routes
    /// are absent (404).
    #[cfg(feature = "mcp")]
    pub fn mcp_oauth(mut self, oauth: crate::mcp::OperatorOAuth) -> Self {
        self.config.parts.mcp_oauth = Some(oauth);
        self
    }

    /// A secret every instance of the service shares, from which it derives the keys of what
    /// it signs (the AI SDK route's approval ids, the tickets of requests for input), each under a label of its own. Give every
    /// instance behind one load balancer the same one, at least [`MIN_SIGNING_SECRET`] random
    /// bytes. Without it (the default) the keys are random per process: what one instance
    /// signed does not verify on another, nor after a restart.
    ///
    /// ```
    /// # use lmchatkit::{async_trait, CompleteRequest, EventStream, Host, HostError, RequestContext};
    /// # struct MyHost;
    /// # #[async_trait] impl Host for MyHost {
    /// #   async fn models(&self, _: &RequestContext) -> Result<Vec<lmchatkit::protocol::Model>, HostError> { Ok(vec![]) }
    /// #   fn complete(&self, _: &RequestContext, _: CompleteRequest) -> EventStream { Box::pin(futures_util::stream::empty()) }
    /// # }
    /// let secret = [7u8; 32]; // in real use: random bytes every instance reads from one place
    /// let config = lmchatkit::Config::builder(MyHost).signing_secret(secret).build().unwrap();
    /// assert!(!format!("{config:?}").contains("7, 7"));
    /// assert!(lmchatkit::Config::builder(MyHost).signing_secret(b"short").build().is_err());
    /// ```
    pub fn signing_secret(mut self, secret: impl AsRef<[u8]>) -> Self {
        self.config.parts.signing_secret = Some(SigningSecret(Arc::from(secret.as_ref())));
        self
    }

    /// Shares runs (their logs, stops and the running run of each conversation), events and
    /// MCP App view tokens with the other instances using this engine (Redis or PostgreSQL),
    /// so any instance behind a load balancer can resume or stop a reply another one runs (see
    /// [`crate::live`]). Default: in-process, as one instance needs. Give every instance the
    /// same history store and [`signing_secret`](Self::signing_secret) too.
    #[cfg(shared_engine)]
    pub fn shared_engine(mut self, engine: impl Into<crate::live::SharedEngine>) -> Self {
        self.config.parts.shared = Some(engine.into());
        self
    }

    /// [`shared_engine`](Self::shared_engine) with a Redis.
    #[cfg(feature = "redis")]
    pub fn redis(self, redis: crate::live::Redis) -> Self {
        self.shared_engine(redis)
    }

    /// Validates and returns the config. Starts nothing.
    pub fn build(mut self) -> Result<Config, ConfigError> {
        let s = &mut self.config.settings;
        let p = s.prefix.trim().trim_end_matches('/').to_owned();
        let valid = p.is_empty()
            || (p.starts_with('/')
                && !p.contains(['?', '#', ' '])
                && !p.contains("..")
                && !p.contains("//"));
        if !valid {
            return Err(ConfigError::InvalidPrefix(s.prefix.clone()));
        }
        s.prefix = p;
        if s.system_prompt.trim().is_empty() {
            s.system_prompt = crate::turn::FALLBACK_SYSTEM_PROMPT.to_owned();
        }
        let l = &s.limits;
        for (name, n) in [
            ("body_limit", l.body_bytes),
            ("max_model_context_bytes", l.model_context_bytes),
            ("max_arguments_bytes", l.arguments_bytes),
            ("max_opaque_bytes", l.opaque_bytes),
            ("max_streams (per principal)", s.streams.per_principal),
            ("max_streams (total)", s.streams.total),
            ("max_steps", s.max_steps),
        ] {
            if n == 0 {
                return Err(ConfigError::ZeroLimit(name));
            }
        }
        if l.timeout.is_zero() {
            return Err(ConfigError::ZeroLimit("body_timeout"));
        }
        if s.max_upload_bytes == 0 {
            return Err(ConfigError::ZeroLimit("max_upload_bytes"));
        }
        if s.app_view_ttl.is_zero() {
            return Err(ConfigError::ZeroLimit("app_view_ttl"));
        }
        if let Some(secret) = &self.config.parts.signing_secret
            && secret.0.len() < MIN_SIGNING_SECRET
        {
            return Err(ConfigError::SigningSecretTooShort(secret.0.len()));
        }
        for name in &self.pending_hosts {
            let host =
                AllowedHost::parse(name).ok_or_else(|| ConfigError::InvalidHost(name.clone()))?;
            s.allowed_hosts.push(host);
        }
        if let Some(origin) = &s.sandbox_origin {
            // It goes into the page's CSP too: a plain origin only.
            let base = crate::apps::origins::Base::parse(origin)
                .filter(|_| page_policy::origin_source(origin, false).is_some())
                .ok_or_else(|| ConfigError::InvalidSandboxOrigin(origin.clone()))?;
            s.allowed_hosts.push(base.allowed_host());
        }
        for origin in &self.pending_ancestors {
            let source = page_policy::origin_source(origin, true)
                .ok_or_else(|| ConfigError::InvalidFrameAncestor(origin.clone()))?;
            s.frame_ancestors.push(source);
        }
        s.page_csp = page_policy::header(s.sandbox_origin.as_deref(), &s.frame_ancestors)
            .ok_or_else(|| {
                ConfigError::InvalidSandboxOrigin(s.sandbox_origin.clone().unwrap_or_default())
            })?;
        Ok(self.config)
    }
}
