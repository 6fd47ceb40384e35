//! [`McpHub`]: many MCP servers behind one [`Host`]-shaped surface. Tools and prompts are
//! namespaced `server__name`; calls route back to the owning server; resources keep their URIs
//! and remember their owner. One broken server never hides the others: its error is logged
//! and shown in [`McpHub::status`].

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use lmchatkit_protocol::{McpServerStatus, Tool, ToolResult};
use serde_json::Value;

use super::client::{CallError, Server};
use super::config::{McpServerConfig, McpTransport};
use super::convert;
use super::icons::IconCache;
use super::listing::Wait;
use super::oauth::OperatorOAuth;
use super::outbound::OutboundPolicy;
use crate::access::Scope;
use crate::host::{HostError, Principal, ProgressSink, ToolInput, ToolSource};
use crate::live::events::EventBroadcaster;
use rmcp::model::CallToolResponse;

/// Default per-call timeout.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Default cap on the model-facing text of one tool result (128 KiB).
pub const DEFAULT_RESULT_CAP: usize = 128 << 10;
/// Default namespace separator (`server__tool`).
pub const DEFAULT_SEPARATOR: &str = "__";
/// Default longest wait of a turn for a server's listing (see [`McpHub::with_listing_wait`]).
pub const DEFAULT_LISTING_WAIT: Duration = Duration::from_secs(2);

/// The hub's settings (what the `with_*` methods change).
#[derive(Clone)]
struct Knobs {
    call_timeout: Duration,
    result_cap: usize,
    separator: String,
    listing_wait: Duration,
    events: Option<EventBroadcaster>,
    icon_policy: OutboundPolicy,
    oauth: Option<OperatorOAuth>,
}

pub(super) struct Inner {
    pub(super) servers: Vec<Arc<Server>>,
    pub(super) call_timeout: Duration,
    pub(super) result_cap: usize,
    pub(super) separator: String,
    pub(super) listing_wait: Duration,
    pub(super) icon_policy: OutboundPolicy,
    pub(super) icons: IconCache,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // A refresh task holds its server; let the server (and its child process) go.
        for s in &self.servers {
            s.abort_refreshes();
        }
    }
}

/// A client of any number of MCP servers (stdio, Streamable HTTP or in-process), cheap to
/// clone (`Arc` inside).
///
/// **Connecting.** Servers connect lazily, on first use, or all at once (in parallel) when
/// [`McpHub::start`] is awaited; either way a server that fails is retried on a later use with
/// backoff (0.5 s doubling to 30 s), and a stdio server that died is restarted on its next use.
/// Child processes are killed when the last clone of the hub is dropped.
///
/// **Listings** are served from a cache refreshed in the background: a turn waits for a
/// server's listing at most [`McpHub::with_listing_wait`], and a dead or hanging server never
/// holds up the others or a warm cache.
///
/// **Names.** A namespaced server `fs` exposes tool `read` as `fs__read` (see
/// [`McpHub::with_separator`]); an un-namespaced one exposes `read`. Resources keep their URIs.
///
/// ```no_run
/// # async fn run() {
/// use lmchatkit::mcp::{McpHub, McpServerConfig};
/// let hub = McpHub::new(vec![
///     McpServerConfig::stdio("everything", "npx", ["-y", "@modelcontextprotocol/server-everything", "stdio"]),
/// ]);
/// hub.start().await;
/// let scope = lmchatkit::Scope::default(); // the anonymous user, every server
/// let tools = hub.list_tools(&scope).await.unwrap();
/// let r = hub.call_tool(&scope, "everything__echo", serde_json::json!({"message": "hi"})).await.unwrap();
/// # let _ = (tools, r); }
/// ```
#[derive(Clone)]
pub struct McpHub {
    pub(super) inner: Arc<Inner>,
    configs: Arc<Vec<McpServerConfig>>,
    knobs: Knobs,
    server_filter: Option<ServerFilter>,
}

/// Decides whether a principal may use a server: `(principal, server name) -> allowed`.
pub type ServerFilter = Arc<dyn Fn(&Principal, &str) -> bool + Send + Sync>;

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub")
            .field(
                "servers",
                &self
                    .inner
                    .servers
                    .iter()
                    .map(|s| s.name())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl McpHub {
    /// A hub over these servers (nothing is started yet).
    pub fn new(servers: Vec<McpServerConfig>) -> Self {
        crate::tls::install_provider();
        Self::build(
            Arc::new(servers),
            Knobs {
                call_timeout: DEFAULT_CALL_TIMEOUT,
                result_cap: DEFAULT_RESULT_CAP,
                separator: DEFAULT_SEPARATOR.into(),
                listing_wait: DEFAULT_LISTING_WAIT,
                events: None,
                icon_policy: OutboundPolicy::new(),
                oauth: None,
            },
        )
    }

    fn build(configs: Arc<Vec<McpServerConfig>>, knobs: Knobs) -> Self {
        let servers = configs
            .iter()
            .map(|c| {
                let oauth = knobs.oauth.clone().filter(|_| c.uses_oauth());
                Server::new(c.clone(), knobs.events.clone(), knobs.call_timeout, oauth)
            })
            .collect();
        Self {
            inner: Arc::new(Inner {
                servers,
                call_timeout: knobs.call_timeout,
                result_cap: knobs.result_cap,
                separator: knobs.separator.clone(),
                listing_wait: knobs.listing_wait,
                icon_policy: knobs.icon_policy.clone(),
                icons: IconCache::default(),
            }),
            configs,
            knobs,
            server_filter: None,
        }
    }

    fn rebuild(self, f: impl FnOnce(&mut Knobs)) -> Self {
        let mut knobs = self.knobs.clone();
        f(&mut knobs);
        let mut hub = Self::build(self.configs.clone(), knobs);
        hub.server_filter = self.server_filter;
        hub
    }

    /// Lets each principal use only the servers `allowed(principal, server)` accepts (default:
    /// every principal uses every server). A server a principal may not use is absent for
    /// them: its tools, prompts and resources are not listed, and calls and reads of them are
    /// unknown. (Per-user servers are a later step; this shares one set of servers out.)
    ///
    /// ```
    /// use lmchatkit::mcp::McpHub;
    /// let hub = McpHub::new(vec![]).with_server_filter(|who, server| {
    ///     server != "admin-tools" || who.id() == "root"
    /// });
    /// # let _ = hub;
    /// ```
    pub fn with_server_filter(
        mut self,
        allowed: impl Fn(&Principal, &str) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.server_filter = Some(Arc::new(allowed));
        self
    }

    /// The servers `scope` reaches: its one server when it is limited to one, else every
    /// server; less those the principal may not use.
    pub(super) fn servers_in<'a>(
        &'a self,
        scope: &'a Scope,
    ) -> impl Iterator<Item = &'a Arc<Server>> {
        let principal = scope.principal();
        self.inner.servers.iter().filter(move |s| {
            scope.allows(s.name())
                && self
                    .server_filter
                    .as_ref()
                    .is_none_or(|f| f(&principal, s.name()))
        })
    }

    /// Sends `tools_changed` / `prompts_changed` / `resources_changed` here when a server
    /// reports a list change (share it with [`ConfigBuilder::event_broadcaster`](crate::ConfigBuilder::event_broadcaster)).
    /// Call the `with_*` methods before [`McpHub::start`]: each returns a fresh hub.
    pub fn with_events(self, events: EventBroadcaster) -> Self {
        self.rebuild(|k| k.events = Some(events))
    }

    /// Per-call timeout (default 60 s); a call that takes longer gets an `is_error` result.
    /// Listing requests have the same timeout.
    pub fn with_call_timeout(self, timeout: Duration) -> Self {
        self.rebuild(|k| k.call_timeout = timeout)
    }

    /// Cap on the model-facing text of one tool result (default 128 KiB); longer results
    /// keep their head and tail around a marker.
    pub fn with_result_cap(self, bytes: usize) -> Self {
        self.rebuild(|k| k.result_cap = bytes.max(64))
    }

    /// The namespace separator (default `__`).
    pub fn with_separator(self, separator: impl Into<String>) -> Self {
        let separator = separator.into();
        self.rebuild(|k| k.separator = separator)
    }

    /// How long assembling a turn (or a listing route) waits for a server whose listing is
    /// missing or outdated (default [`DEFAULT_LISTING_WAIT`]). A server that made a request
    /// wait this long is not waited for again until it has answered a listing; its listing
    /// goes on in the background meanwhile, and the turn goes on with the last listing it
    /// gave (or none). `Duration::ZERO` never waits: only what [`McpHub::start`] or earlier
    /// refreshes listed is offered.
    pub fn with_listing_wait(self, wait: Duration) -> Self {
        self.rebuild(|k| k.listing_wait = wait)
    }

    /// Where the service may fetch the icons servers name by URL (default
    /// [`OutboundPolicy::new`]: https to public addresses only); the host of an HTTP server's
    /// own URL is always allowed for that server's icons. The browser never fetches them: the
    /// service serves each icon from its own origin (see [`crate::host::IconImage`]).
    pub fn with_icon_policy(self, policy: OutboundPolicy) -> Self {
        self.rebuild(|k| k.icon_policy = policy)
    }

    /// Signs the service in to the servers configured with OAuth
    /// ([`McpServerConfig::with_oauth`]) through `oauth`, whose page (served when the same
    /// `oauth` is given to [`ConfigBuilder::mcp_oauth`](crate::ConfigBuilder::mcp_oauth)) the
    /// operator signs in on. Until they do, such a server is unavailable and `/api/config`
    /// says so.
    pub fn with_oauth(self, oauth: OperatorOAuth) -> Self {
        for c in self.configs.iter().filter(|c| c.uses_oauth()) {
            if let McpTransport::Http { url, .. } | McpTransport::Sse { url, .. } = &c.transport {
                oauth.register(&c.name, url);
            }
        }
        self.rebuild(|k| k.oauth = Some(oauth))
    }

    /// The icon policy for `s`'s icons: the hub's, and `s`'s own host when it is an HTTP
    /// server.
    pub(super) fn icon_policy_for(&self, s: &Server) -> OutboundPolicy {
        let policy = self.inner.icon_policy.clone();
        let own = match &s.cfg.transport {
            McpTransport::Http { url, .. } | McpTransport::Sse { url, .. } => {
                reqwest::Url::parse(url)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_owned))
            }
            _ => None,
        };
        match own {
            Some(host) => policy.with_allowed_host(host),
            None => policy,
        }
    }

    /// Connects every server now and lists its tools, prompts and resources, in parallel.
    /// Failures are logged and kept for [`McpHub::status`]; they do not fail the hub.
    pub async fn start(&self) {
        join_all(self.inner.servers.iter().map(|s| s.refresh_all())).await;
    }

    /// How long a turn's listing may wait.
    pub(super) fn briefly(&self) -> Wait {
        Wait::Briefly(self.inner.listing_wait)
    }

    /// Each server's state for `/api/config` (`pending`, `connecting`, `connected`, `error`).
    pub fn status(&self) -> Vec<McpServerStatus> {
        self.inner
            .servers
            .iter()
            .map(|s| s.status().to_wire(s.name()))
            .collect()
    }

    /// The servers that failed to start or connect, each with the likely fix (see
    /// [`Host::setup_problems`](crate::Host::setup_problems)); empty while all are pending,
    /// connecting or connected.
    pub fn problems(&self) -> Vec<lmchatkit_protocol::SetupProblem> {
        self.inner
            .servers
            .iter()
            .filter_map(|s| {
                let status = s.status();
                let error = status.error.filter(|_| status.status == "error")?;
                Some(super::problems::problem(&s.cfg, &error))
            })
            .collect()
    }

    /// The process id of a connected stdio server (diagnostics and tests).
    pub async fn pid(&self, server: &str) -> Option<u32> {
        self.server(server)?.pid().await
    }

    /// The MCP protocol version negotiated with a connected server (e.g. `2026-07-28`, or
    /// `2025-11-25` for an `initialize`-only server).
    pub async fn protocol_version(&self, server: &str) -> Option<String> {
        self.server(server)?.protocol_version().await
    }

    /// Closes every connection and stops the child processes (dropping the hub does the
    /// same without waiting).
    pub async fn shutdown(&self) {
        join_all(self.inner.servers.iter().map(|s| s.shutdown())).await;
    }

    /// The configured server names, in order.
    pub fn server_names(&self) -> Vec<String> {
        self.inner
            .servers
            .iter()
            .map(|s| s.name().to_owned())
            .collect()
    }

    pub(super) fn server(&self, name: &str) -> Option<&Arc<Server>> {
        self.inner.servers.iter().find(|s| s.name() == name)
    }

    pub(super) fn exposed(&self, s: &Server, name: &str) -> String {
        if s.cfg.namespaced {
            format!("{}{}{}", s.name(), self.inner.separator, name)
        } else {
            name.to_owned()
        }
    }

    /// `(server, original name)` for an exposed tool name, from the (cached) listings.
    pub(super) async fn resolve_tool<'a>(
        &'a self,
        scope: &'a Scope,
        exposed: &str,
    ) -> Option<(&'a Arc<Server>, String)> {
        let who = scope.principal();
        for s in self.servers_in(scope) {
            let original = if s.cfg.namespaced {
                match exposed.strip_prefix(&format!("{}{}", s.name(), self.inner.separator)) {
                    Some(rest) => rest,
                    None => continue,
                }
            } else {
                exposed
            };
            if let Some(tools) = s.tools(&who, Wait::ForCall).await
                && tools.iter().any(|t| t.name == original)
            {
                return Some((s, original.to_owned()));
            }
        }
        None
    }

    /// Every tool of every reachable server in `scope`, including app-only ones (with
    /// visibility).
    pub async fn list_tools(&self, scope: &Scope) -> Result<Vec<Tool>, HostError> {
        let wait = self.briefly();
        let who = &scope.principal();
        let lists = join_all(
            self.servers_in(scope)
                .map(|s| async move { (s, s.tools(who, wait).await) }),
        )
        .await;
        let mut out = Vec::new();
        // A server with no listing yet is left out; its refresh logged why.
        for (s, tools) in lists {
            if let Some(tools) = tools {
                out.extend(
                    tools
                        .iter()
                        .map(|t| convert::tool(t, &self.exposed(s, &t.name))),
                );
            }
        }
        Ok(out)
    }

    /// What a bare tool name from an MCP App view means. Views call their server's tools by
    /// the server's own names: a view of server `fs` (the scope's server) calling `refresh`
    /// means `fs__refresh`. A name already carrying that server's prefix is kept as it is, and
    /// so is any name in a scope without a server. (For the app proxy; it does not check that
    /// the tool exists.)
    pub fn resolve_view_tool(&self, scope: &Scope, name: &str) -> String {
        let Some(s) = scope.server().and_then(|n| self.server(n)) else {
            return name.to_owned();
        };
        if !s.cfg.namespaced {
            return name.to_owned();
        }
        let prefix = format!("{}{}", s.name(), self.inner.separator);
        if name.starts_with(&prefix) {
            name.to_owned()
        } else {
            format!("{prefix}{name}")
        }
    }

    /// Which server owns an exposed tool name (`Unknown` when no server in `scope` lists it).
    pub async fn tool_source(&self, scope: &Scope, name: &str) -> ToolSource {
        match self.resolve_tool(scope, name).await {
            Some((s, _)) => ToolSource::Scoped(s.name().to_owned()),
            None => ToolSource::Unknown,
        }
    }

    /// Calls a tool. The server's own error and a transport failure (the server died, timed
    /// out or is unreachable) are `Ok` with `is_error: true` naming the server.
    pub async fn call_tool(
        &self,
        scope: &Scope,
        name: &str,
        arguments: Value,
    ) -> Result<ToolResult, HostError> {
        self.call(scope, name, arguments, None).await
    }

    /// Calls a tool again with the user's answers to its request for input (MCP's retry with
    /// `inputResponses` and `requestState`). Errors as [`call_tool`](Self::call_tool).
    pub async fn call_tool_with_input(
        &self,
        scope: &Scope,
        name: &str,
        arguments: Value,
        input: ToolInput,
    ) -> Result<ToolResult, HostError> {
        if let Some(task_id) = &input.task_id {
            // Answers to the task's own requests: `tasks/update`, then the task as it is now.
            let Some((s, _)) = self.resolve_tool(scope, name).await else {
                return Err(HostError::NotFound(format!("unknown tool {name:?}")));
            };
            let responses = convert::input_responses(&input);
            if let Err(e) = s
                .update_task(task_id, responses, self.inner.call_timeout)
                .await
            {
                return Ok(ToolResult::error(format!(
                    "the answers could not reach {name}'s task: {e}"
                )));
            }
            return self.poll_tool_task(scope, name, task_id, false).await;
        }
        self.call(scope, name, arguments, Some(&input)).await
    }

    /// The state of a call's task (`tasks/get`; `tasks/cancel` first with `cancel`): the
    /// call's result once the task is done, else the task with its new state. A task that asks
    /// for the user's input inside it is cancelled and is an error result (not offered yet).
    pub async fn poll_tool_task(
        &self,
        scope: &Scope,
        name: &str,
        task_id: &str,
        cancel: bool,
    ) -> Result<ToolResult, HostError> {
        let Some((s, original)) = self.resolve_tool(scope, name).await else {
            return Err(HostError::NotFound(format!("unknown tool {name:?}")));
        };
        let got = match s.task(task_id, cancel, self.inner.call_timeout).await {
            Ok(g) => g,
            Err(CallError::Mcp(e)) => return Ok(ToolResult::error(format!("Error: {e}"))),
            Err(e) => {
                return Ok(ToolResult::error(format!(
                    "Error polling {name}'s task: {e}"
                )));
            }
        };
        use rmcp::model::TaskPayload;
        Ok(match got.task.payload {
            TaskPayload::Completed { result } => {
                let ui = tool_ui(s, scope, &original, name).await;
                match serde_json::from_value::<rmcp::model::CallToolResult>(Value::Object(result)) {
                    Ok(r) => convert::call_result(&r, ui, self.inner.result_cap),
                    Err(e) => ToolResult::error(format!(
                        "tool {name}'s task ended with a result this host cannot read: {e}"
                    )),
                }
            }
            TaskPayload::Failed { error } => ToolResult::error(format!(
                "tool {name}'s task failed: {}",
                error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given")
            )),
            TaskPayload::Cancelled => {
                ToolResult::error(format!("tool {name}'s task was cancelled"))
            }
            TaskPayload::InputRequired { input_requests } => {
                // The task asks the user: its state, with the questions (answered through
                // `tasks/update`, see `call_tool_with_input`).
                let asked = rmcp::model::InputRequiredResult::from_input_requests(input_requests);
                let mut out = convert::task(&got.task.task, name);
                out.input_required = convert::input_required(&asked, name).input_required;
                if out.input_required.is_none() {
                    let _ = s.task(task_id, true, self.inner.call_timeout).await;
                    return Ok(ToolResult::error(format!(
                        "tool {name}'s task asked for something other than the user's input; \
                         it was cancelled"
                    )));
                }
                out
            }
            _ => convert::task(&got.task.task, name),
        })
    }

    async fn call(
        &self,
        scope: &Scope,
        name: &str,
        arguments: Value,
        input: Option<&ToolInput>,
    ) -> Result<ToolResult, HostError> {
        let args = match arguments {
            Value::Null => None,
            Value::Object(m) => Some(m),
            other => {
                return Err(HostError::InvalidInput(format!(
                    "tool arguments must be a JSON object, not {other}"
                )));
            }
        };
        let Some((s, original)) = self.resolve_tool(scope, name).await else {
            return Err(HostError::NotFound(format!("unknown tool {name:?}")));
        };
        let ui = tool_ui(s, scope, &original, name).await;
        match s
            .call_tool(
                &original,
                args,
                self.inner.call_timeout,
                input,
                scope.cx().extensions().get::<ProgressSink>().cloned(),
            )
            .await
        {
            Ok(CallToolResponse::Complete(r)) => {
                Ok(convert::call_result(&r, ui, self.inner.result_cap))
            }
            Ok(CallToolResponse::InputRequired(r)) => {
                let mut out = convert::input_required(&r, name);
                out.ui = ui;
                Ok(out)
            }
            Ok(CallToolResponse::Task(t)) => Ok(convert::task(&t.task, name)),
            Ok(_) => Ok(ToolResult::error(format!(
                "tool {name} answered in a way this host does not know"
            ))),
            Err(CallError::Mcp(e)) => Ok(ToolResult::error(format!("Error: {e}"))),
            Err(e) => Ok(ToolResult::error(format!("Error calling {name}: {e}"))),
        }
    }
}

/// The `_meta.ui` of `server`'s tool `original` (offered as `name`), for its results' views.
async fn tool_ui(
    server: &Arc<Server>,
    scope: &Scope,
    original: &str,
    name: &str,
) -> Option<lmchatkit_protocol::UiToolMeta> {
    server
        .tools(&scope.principal(), Wait::ForCall)
        .await
        .and_then(|ts| {
            ts.iter()
                .find(|t| t.name == original)
                .map(|t| convert::tool(t, name).ui)
        })
        .flatten()
}
