//! One configured MCP server: connecting (stdio child, Streamable HTTP, in-process pipe) with
//! the MCP Apps extension and elicitation (forms and URLs) advertised and protocol negotiation (`server/discover` for
//! 2026-07-28 servers, falling back to `initialize`), reconnecting with backoff, and the
//! `list_changed` plumbing (handler callbacks on legacy connections, a `subscriptions/listen`
//! stream on 2026-07-28 ones) that invalidates the listing caches and forwards events.
//!
//! Decisions:
//! - A stdio child starts from a **cleared environment** ([`child_env`]): the basics in
//!   [`BASE_ENV`] (and `LC_*`), then the configured `inherit_env` names, then `env`. The
//!   basics are those the official MCP SDKs pass (`PATH`, `HOME`, `USER`, …) plus `TMPDIR`
//!   and the locale; proxies and CA bundles are not among them (a proxy URL may carry
//!   credentials), so a server that needs them names them in `inherit_env`.
//! - A failed connect's error is **redacted** ([`redact_urls`]) before it is logged, shown in
//!   `/api/config` or put in a tool result: reqwest's errors carry the request URL, query
//!   and all.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use lmchatkit_protocol::{McpServerStatus, ServerEvent, ServerEventType};
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitationCapability, ExtensionCapabilities,
    FormElicitationCapability, Implementation, ProtocolVersion, ServerNotification,
    SubscriptionFilter, UrlElicitationCapability,
};
use rmcp::service::{ClientCacheConfig, NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient};
use tokio::io::AsyncBufReadExt;

use super::client::Server;
use super::config::{McpServerConfig, McpTransport};
use super::listing::{Cache, Refreshes};
use crate::live::events::EventBroadcaster;
use crate::secrets::redact_urls;

/// The MCP Apps extension id and the MIME type the hub can render.
pub(crate) const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The MCP Apps view MIME type.
pub const MCP_APP_MIME: &str = "text/html;profile=mcp-app";
/// How long one connection attempt (spawn + handshake) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait between reconnection attempts of a failing server.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Which listing a `list_changed` notification invalidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ListKind {
    Tools = 0,
    Prompts = 1,
    Resources = 2,
}

impl ListKind {
    pub const ALL: [ListKind; 3] = [Self::Tools, Self::Prompts, Self::Resources];
}

/// What the notification handler and the listen task share with the server.
pub(crate) struct Shared {
    pub name: String,
    pub cache: Mutex<Cache>,
    pub generation: AtomicU64,
    pub events: Option<EventBroadcaster>,
    pub refreshes: Refreshes,
    /// The server, to refresh a listing when a notification outdates it.
    pub server: Weak<Server>,
    /// Where each running call's progress goes, by its progress token.
    pub progress: Mutex<std::collections::HashMap<String, crate::host::ProgressSink>>,
}

impl Shared {
    /// A list changed: mark the cached listing outdated and refresh it in the background;
    /// `/api/events` subscribers hear of it when the refresh has ended.
    /// A private listing is refreshed by each principal's next use, not here: a refresh
    /// for nobody would keep nothing of it (see [`super::listing`]).
    pub fn changed(&self, kind: ListKind) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        let private = {
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            cache.outdate(kind);
            cache.is_private(kind)
        };
        tracing::debug!(server = %self.name, ?kind, "MCP list changed");
        match self.server.upgrade() {
            Some(server) if !private => {
                self.refreshes.announce_after(kind);
                let _ = server.spawn_refresh(kind, None, None);
            }
            // Private (each principal lists again on next use), or the hub is going away.
            _ => self.announce(kind),
        }
    }

    /// Tells `/api/events` subscribers that a listing changed.
    pub fn announce(&self, kind: ListKind) {
        if let Some(ev) = &self.events {
            ev.broadcast(ServerEvent::new(match kind {
                ListKind::Tools => ServerEventType::ToolsChanged,
                ListKind::Prompts => ServerEventType::PromptsChanged,
                ListKind::Resources => ServerEventType::ResourcesChanged,
            }));
        }
    }

    /// Marks every cached listing outdated (after a reconnect the server may have changed).
    pub fn clear(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .outdate_all();
    }
}

/// The rmcp client handler: advertises the MCP Apps extension and forwards `list_changed`.
#[derive(Clone)]
pub(crate) struct Handler(pub Arc<Shared>);

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        let mut ext = ExtensionCapabilities::new();
        ext.insert(
            UI_EXTENSION.into(),
            rmcp::object!({ "mimeTypes": [MCP_APP_MIME] }),
        );
        // Calls that run as tasks, polled by the service (see `access::follow_task`).
        ext.insert(rmcp::model::TASKS_EXTENSION_ID.into(), rmcp::object!({}));
        caps.extensions = Some(ext);
        // Forms and URLs, answered by the user through a retried call (MCP 2026-07-28's
        // `input_required`; see `access::input`).
        caps.elicitation = Some(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::new())
                .with_url(UrlElicitationCapability::new()),
        );
        ClientConfig::new(
            caps,
            Implementation::new("lmchatkit", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    /// A server on a protocol before 2026-07-28 asks mid-call, holding the call open while
    /// the user answers; the hub answers only through retried calls (`input_required`), so such
    /// a request is cancelled: the user was not asked.
    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _cx: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        Ok(rmcp::model::ElicitResult::new(
            rmcp::model::ElicitationAction::Cancel,
        ))
    }

    /// A running call's progress goes to its sink (an unknown token, or one whose call ended,
    /// is dropped).
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        let token = match &params.progress_token.0 {
            rmcp::model::NumberOrString::String(s) => s.to_string(),
            rmcp::model::NumberOrString::Number(n) => n.to_string(),
        };
        let sink = self
            .0
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&token)
            .cloned();
        if let Some(sink) = sink {
            (sink.0)(crate::host::ToolProgress {
                progress: params.progress,
                total: params.total,
                message: params.message.clone(),
            });
        }
    }

    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.0.changed(ListKind::Tools);
    }

    async fn on_prompt_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.0.changed(ListKind::Prompts);
    }

    async fn on_resource_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.0.changed(ListKind::Resources);
    }
}

/// A live connection.
pub(crate) struct Client {
    pub svc: RunningService<RoleClient, Handler>,
    pub pid: Option<u32>,
    listen: Option<tokio::task::JoinHandle<()>>,
    /// The operator's OAuth token this connection sends: when it falls due, the connection is
    /// opened again, with a refreshed token, at its next use after.
    pub token: Option<crate::mcp::oauth::Token>,
}

impl Client {
    /// The OAuth token this connection sent has fallen due.
    pub fn token_due(&self) -> bool {
        self.token
            .as_ref()
            .and_then(|t| t.due_at)
            .is_some_and(|at| crate::mcp::oauth::now_secs() >= at)
    }

    /// The connection is gone (child died, pipe closed, service loop ended).
    pub fn is_dead(&self) -> bool {
        self.svc.is_closed() || self.svc.peer().is_transport_closed() || self.child_exited()
    }

    /// True when this connection's child process has exited. rmcp notices a dead child only
    /// when it next reads the pipe, so a call right after a crash would otherwise be sent into
    /// the closed pipe and fail instead of restarting the server. Linux only (`/proc`); elsewhere
    /// rmcp's own detection applies.
    fn child_exited(&self) -> bool {
        let Some(pid) = self.pid else { return false };
        if !cfg!(target_os = "linux") {
            return false;
        }
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // `pid (comm) S ...`: the state follows the last ')'.
            Ok(stat) => stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state == "Z" || state == "X"),
            Err(_) => true,
        }
    }

    /// The server's advertised capabilities.
    pub fn capabilities(&self) -> rmcp::model::ServerCapabilities {
        self.svc
            .peer_info()
            .map(|i| i.capabilities.clone())
            .unwrap_or_default()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(t) = self.listen.take() {
            t.abort();
        }
        // Dropping `svc` cancels the service; its child process is killed (kill_on_drop).
    }
}

/// Connection state of one server (behind an async mutex: one connect at a time).
#[derive(Default)]
pub(crate) struct ConnState {
    pub client: Option<Arc<Client>>,
    /// When the current connection was opened.
    pub connected_at: Option<Instant>,
    /// Consecutive connections that died soon after opening (a crash loop).
    pub quick_deaths: u32,
    pub failures: u32,
    pub retry_at: Option<Instant>,
    pub last_error: Option<String>,
    /// The operator's sign-ins' generation when a token was last asked for.
    pub oauth_generation: u64,
    /// The OAuth token the server just refused (refreshed before the next connection).
    pub rejected: Option<String>,
}

/// What `/api/config` shows.
#[derive(Debug, Clone, Default)]
pub(crate) struct StatusCell {
    pub status: &'static str,
    pub error: Option<String>,
}

impl StatusCell {
    pub fn to_wire(&self, name: &str) -> McpServerStatus {
        let status = match self.status {
            "" => "pending",
            s => s,
        };
        McpServerStatus::new(name, status, self.error.clone())
    }
}

/// A connection that dies sooner than this after opening counts towards crash-loop backoff.
pub(crate) const QUICK_DEATH: Duration = Duration::from_secs(10);
/// Longest wait before restarting a server in a crash loop.
pub(crate) const MAX_RESTART_DELAY: Duration = Duration::from_secs(5);

impl ConnState {
    /// The connection died: drop it and count a quick death.
    pub fn note_death(&mut self) {
        self.client = None;
        let quick = self.connected_at.is_some_and(|t| t.elapsed() < QUICK_DEATH);
        self.quick_deaths = if quick { self.quick_deaths + 1 } else { 0 };
        self.connected_at = None;
    }

    /// How long to wait before restarting after a death (0 for the first quick death's
    /// predecessor, i.e. a server that ran for a while restarts at once).
    pub fn restart_delay(&self) -> Duration {
        if self.quick_deaths <= 1 {
            Duration::ZERO
        } else {
            backoff(self.quick_deaths - 1).min(MAX_RESTART_DELAY)
        }
    }
}

/// The delay before the next attempt after `failures` consecutive failed connects.
pub(crate) fn backoff(failures: u32) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let ms = 500u64.saturating_mul(1 << (failures - 1).min(10));
    Duration::from_millis(ms).min(MAX_BACKOFF)
}

/// What a stdio child gets from the hub's environment when set (and every `LC_*`).
#[cfg(not(windows))]
const BASE_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR", "LANG", "LANGUAGE", "TZ",
];
/// What a stdio child gets from the hub's environment when set (and every `LC_*`).
#[cfg(windows)]
const BASE_ENV: &[&str] = &[
    "PATH",
    "PATHEXT",
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMFILES",
    "PROCESSOR_ARCHITECTURE",
    "LANG",
    "TZ",
];

/// The environment of a stdio child, from the hub's environment `parent`: the basics
/// ([`BASE_ENV`], `LC_*`), the `inherit` names that `parent` sets, then `env`.
pub(crate) fn child_env(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    inherit: &[String],
    env: &BTreeMap<String, String>,
) -> Vec<(OsString, OsString)> {
    // Variable names are case-insensitive on Windows.
    let same = |a: &str, b: &str| {
        if cfg!(windows) {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    };
    let mut out: Vec<(OsString, OsString)> = parent
        .into_iter()
        .filter(|(name, _)| {
            let Some(name) = name.to_str() else {
                return false;
            };
            name.starts_with("LC_")
                || BASE_ENV.iter().any(|b| same(b, name))
                || inherit.iter().any(|i| same(i, name))
        })
        .collect();
    for (name, value) in env {
        out.retain(|(n, _)| !n.to_str().is_some_and(|n| same(n, name)));
        out.push((name.into(), value.into()));
    }
    out
}

/// Opens a connection to `cfg` (spawn/connect + handshake). The error is redacted.
/// Why a connect failed: the redacted message, and whether the server asked for
/// authorization (a `401`).
pub(crate) struct ConnectFailure {
    pub message: String,
    pub unauthorized: bool,
}

/// Connects to `cfg`'s server; `token` (the operator's OAuth access token) replaces a
/// configured bearer.
pub(crate) async fn connect(
    cfg: &McpServerConfig,
    shared: Arc<Shared>,
    token: Option<&str>,
) -> Result<Client, ConnectFailure> {
    let unauthorized = std::sync::atomic::AtomicBool::new(false);
    open(cfg, shared, token, &unauthorized)
        .await
        .map_err(|e| ConnectFailure {
            message: redact_urls(&e),
            unauthorized: unauthorized.load(Ordering::SeqCst),
        })
}

async fn open(
    cfg: &McpServerConfig,
    shared: Arc<Shared>,
    token: Option<&str>,
    unauthorized: &std::sync::atomic::AtomicBool,
) -> Result<Client, String> {
    let handler = Handler(shared.clone());
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    let name = cfg.name.clone();
    let fut = async {
        match &cfg.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                inherit_env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args)
                    .env_clear()
                    .envs(child_env(std::env::vars_os(), inherit_env, env))
                    .kill_on_drop(true);
                if let Some(dir) = cwd {
                    cmd.current_dir(dir);
                }
                let (proc, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("cannot start {command:?}: {e}"))?;
                let pid = proc.id();
                if let Some(stderr) = stderr {
                    let name = name.clone();
                    tokio::spawn(async move {
                        let mut stderr = tokio::io::BufReader::new(stderr);
                        while let Some((line, cut)) =
                            capped_line(&mut stderr, MAX_STDERR_LINE).await
                        {
                            match cut {
                                0 => tracing::debug!(server = %name, "stderr: {line}"),
                                n => {
                                    tracing::debug!(server = %name, "stderr: {line}… ({n} bytes cut)")
                                }
                            }
                        }
                    });
                }
                let svc = handler
                    .serve_with_lifecycle(proc, lifecycle)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok::<_, String>((svc, pid))
            }
            McpTransport::Http {
                url,
                headers,
                bearer,
                ..
            } => {
                let hs: std::collections::HashMap<_, _> = header_pairs(headers)?.collect();
                let mut c = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(hs)
                    .reinit_on_expired_session(true);
                if let Some(token) = token.or(bearer.as_deref()) {
                    c = c.auth_header(token.to_owned());
                }
                let t = StreamableHttpClientTransport::with_client(
                    super::http_client::SessionAwareClient::default(),
                    c,
                );
                let svc = handler
                    .serve_with_lifecycle(t, lifecycle)
                    .await
                    .map_err(|e| {
                        if e.is_authorization_required() {
                            unauthorized.store(true, Ordering::SeqCst);
                        }
                        e.to_string()
                    })?;
                Ok((svc, None))
            }
            McpTransport::Sse {
                url,
                headers,
                bearer,
                ..
            } => {
                let mut hs: http::HeaderMap = header_pairs(headers)?.collect();
                if let Some(token) = token.or(bearer.as_deref()) {
                    let mut v = http::HeaderValue::try_from(format!("Bearer {token}"))
                        .map_err(|_| "the bearer token is not a valid header value".to_owned())?;
                    v.set_sensitive(true);
                    hs.insert(http::header::AUTHORIZATION, v);
                }
                let client = crate::tls::client_builder()
                    .redirect(crate::secrets::same_origin_redirects())
                    .build()
                    .map_err(|e| e.to_string())?;
                let t = super::sse_transport::connect(client, url, hs)
                    .await
                    .map_err(|e| {
                        let text = e.to_string();
                        if text.contains("answered 401") {
                            unauthorized.store(true, Ordering::SeqCst);
                        }
                        text
                    })?;
                let svc = handler
                    .serve_with_lifecycle(t, lifecycle)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok((svc, None))
            }
            McpTransport::InProcess(connect) => {
                let svc = handler
                    .serve_with_lifecycle(connect(), lifecycle)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok((svc, None))
            }
        }
    };
    let (svc, pid) = tokio::time::timeout(CONNECT_TIMEOUT, fut)
        .await
        .map_err(|_| format!("no answer within {CONNECT_TIMEOUT:?}"))??;
    // rmcp's response cache keys private results by connection, and this connection serves
    // every principal: the hub's own listing cache honours `ttlMs` and `cacheScope` per
    // principal instead (see `super::listing`), and reads are never cached.
    svc.peer()
        .set_response_cache_config(ClientCacheConfig::disabled())
        .await;
    let listen = start_listen(&svc, shared).await;
    let info = svc.peer_info();
    tracing::info!(
        server = %cfg.name,
        protocol = info.as_ref().map(|i| i.protocol_version.to_string()).unwrap_or_default(),
        "MCP server connected"
    );
    Ok(Client {
        svc,
        pid,
        listen,
        token: None,
    })
}

/// The configured headers as HTTP names and values; an invalid one is an error naming it.
fn header_pairs(
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<impl Iterator<Item = (http::HeaderName, http::HeaderValue)>, String> {
    let pairs = headers
        .iter()
        .map(|(k, v)| {
            let name =
                http::HeaderName::try_from(k.as_str()).map_err(|e| format!("header {k:?}: {e}"))?;
            let value = http::HeaderValue::try_from(v.as_str())
                .map_err(|e| format!("header {k:?}: {e}"))?;
            Ok((name, value))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(pairs.into_iter())
}

/// On a 2026-07-28 connection, unsolicited `list_changed` notifications arrive only on a
/// `subscriptions/listen` stream: open one for what the server advertises.
async fn start_listen(
    svc: &RunningService<RoleClient, Handler>,
    shared: Arc<Shared>,
) -> Option<tokio::task::JoinHandle<()>> {
    let info = svc.peer_info()?;
    if info.protocol_version.has_initialize() {
        return None;
    }
    let caps = &info.capabilities;
    let mut filter = SubscriptionFilter::builder();
    let mut any = false;
    if caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true) {
        filter = filter.tools_list_changed();
        any = true;
    }
    if caps.prompts.as_ref().and_then(|t| t.list_changed) == Some(true) {
        filter = filter.prompts_list_changed();
        any = true;
    }
    if caps.resources.as_ref().and_then(|t| t.list_changed) == Some(true) {
        filter = filter.resources_list_changed();
        any = true;
    }
    if !any {
        return None;
    }
    let mut sub = match svc.peer().listen(filter.build()).await {
        Ok(s) => s,
        Err(e) => {
            tracing::debug!(server = %shared.name, "subscriptions/listen refused: {e}");
            return None;
        }
    };
    Some(tokio::spawn(async move {
        while let Ok(Some(n)) = sub.next().await {
            match n {
                ServerNotification::ToolListChangedNotification(_) => {
                    shared.changed(ListKind::Tools)
                }
                ServerNotification::PromptListChangedNotification(_) => {
                    shared.changed(ListKind::Prompts)
                }
                ServerNotification::ResourceListChangedNotification(_) => {
                    shared.changed(ListKind::Resources)
                }
                _ => {}
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_loops_slow_down_restarts() {
        let mut st = ConnState {
            connected_at: Some(Instant::now()),
            ..ConnState::default()
        };
        st.note_death();
        assert_eq!(
            st.restart_delay(),
            Duration::ZERO,
            "the first crash restarts at once"
        );
        st.connected_at = Some(Instant::now());
        st.note_death();
        assert_eq!(st.restart_delay(), Duration::from_millis(500));
        for _ in 0..10 {
            st.connected_at = Some(Instant::now());
            st.note_death();
        }
        assert_eq!(st.restart_delay(), MAX_RESTART_DELAY);
        st.connected_at = Some(Instant::now() - QUICK_DEATH * 2);
        st.note_death();
        assert_eq!(
            st.restart_delay(),
            Duration::ZERO,
            "a long-lived connection resets the count"
        );
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<&str> {
        env.iter().filter_map(|(n, _)| n.to_str()).collect()
    }

    #[test]
    fn a_stdio_child_gets_the_basics_the_named_variables_and_its_env_only() {
        let parent = [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/me"),
            ("LC_TIME", "C"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("GITHUB_TOKEN", "gh-secret"),
            ("HTTPS_PROXY", "http://proxy:3128"),
            ("OVERRIDDEN", "from the hub"),
        ]
        .map(|(n, v)| (OsString::from(n), OsString::from(v)));
        let inherit = ["HTTPS_PROXY".to_owned(), "NOT_SET".to_owned()];
        let env = BTreeMap::from([
            ("OVERRIDDEN".to_owned(), "configured".to_owned()),
            ("LOG_LEVEL".to_owned(), "warn".to_owned()),
        ]);
        let got = child_env(parent, &inherit, &env);
        assert_eq!(
            names(&got),
            [
                "PATH",
                "HOME",
                "LC_TIME",
                "HTTPS_PROXY",
                "LOG_LEVEL",
                "OVERRIDDEN"
            ]
        );
        let value = |name: &str| got.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        assert_eq!(value("OVERRIDDEN"), Some("configured".into()));
        assert_eq!(value("HTTPS_PROXY"), Some("http://proxy:3128".into()));
    }

    #[test]
    fn a_configured_variable_replaces_a_basic_one() {
        let parent = [(OsString::from("PATH"), OsString::from("/usr/bin"))];
        let env = BTreeMap::from([("PATH".to_owned(), "/opt/node/bin".to_owned())]);
        assert_eq!(
            child_env(parent, &[], &env),
            [(OsString::from("PATH"), OsString::from("/opt/node/bin"))]
        );
    }

    #[test]
    fn backoff_grows_and_caps() {
        assert_eq!(backoff(0), Duration::ZERO);
        assert_eq!(backoff(1), Duration::from_millis(500));
        assert_eq!(backoff(3), Duration::from_secs(2));
        assert_eq!(backoff(30), MAX_BACKOFF);
    }
}

/// The longest stderr line of a stdio MCP server that is logged whole; the rest of a longer
/// line is read and dropped, so a server printing without newlines cannot grow memory.
const MAX_STDERR_LINE: usize = 4096;

/// The next line of `r` (without its end), at most `cap` bytes of it, and how many bytes were
/// cut; `None` at the end of input or on an error.
async fn capped_line<R>(r: &mut R, cap: usize) -> Option<(String, usize)>
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    let mut line = Vec::new();
    let mut cut = 0;
    let mut read_any = false;
    loop {
        let buf = r.fill_buf().await.ok()?;
        if buf.is_empty() {
            break;
        }
        read_any = true;
        let (chunk, end) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        let room = cap.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        cut += chunk.len().saturating_sub(room);
        let used = end.unwrap_or(buf.len());
        r.consume(used);
        if end.is_some() {
            break;
        }
    }
    if !read_any {
        return None;
    }
    let text = String::from_utf8_lossy(&line);
    Some((text.trim_end_matches('\r').to_owned(), cut))
}

#[cfg(test)]
mod stderr_tests {
    use super::*;

    #[tokio::test]
    async fn stderr_lines_are_cut_at_the_cap_and_reading_goes_on() {
        let long = "y".repeat(10_000);
        let input = format!("short\r\n{long}\nlast");
        let mut r = tokio::io::BufReader::with_capacity(64, input.as_bytes());
        assert_eq!(capped_line(&mut r, 100).await, Some(("short".into(), 0)));
        let (line, cut) = capped_line(&mut r, 100).await.unwrap();
        assert_eq!((line.len(), cut), (100, 9_900));
        assert_eq!(capped_line(&mut r, 100).await, Some(("last".into(), 0)));
        assert_eq!(capped_line(&mut r, 100).await, None);
    }
}
