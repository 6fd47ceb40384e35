//! The hub's client of one server: get-or-connect (restart after a crash, backoff after failed
//! connects), cached listings that follow pagination and only ask for what the server
//! advertises, and calls with a timeout whose transport failures become results naming the
//! server.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use rmcp::ServiceError;
use rmcp::model::{CallToolRequestParams, GetPromptRequestParams, ReadResourceRequestParams};
use serde_json::{Map, Value};
use tokio::task::AbortHandle;

use super::config::{McpServerConfig, McpTransport};
use super::conn::{Client, ConnState, ListKind, Shared, StatusCell, backoff, connect};
use super::listing::{Cache, Claim, Hint, Listings, Refreshes, Wait};
use super::oauth::{OPERATOR_PAGE_PATH, OperatorOAuth, SignInError, Token};
use crate::host::Principal;
use crate::live::events::EventBroadcaster;
use crate::secrets::redact_urls;

/// Static resources and templates of one server.
#[derive(Default)]
pub(crate) struct ResourceListing {
    pub resources: Vec<rmcp::model::Resource>,
    pub templates: Vec<rmcp::model::ResourceTemplate>,
}

/// How a request failed.
#[derive(Debug)]
pub(crate) enum CallError {
    /// Could not connect (or in backoff).
    Unavailable(String),
    /// The server answered with a JSON-RPC error.
    Mcp(String),
    /// Transport failure or timeout during the call.
    Transport(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unavailable(e) | Self::Mcp(e) | Self::Transport(e) => f.write_str(e),
        }
    }
}

pub(crate) struct Server {
    pub cfg: McpServerConfig,
    pub shared: Arc<Shared>,
    conn: tokio::sync::Mutex<ConnState>,
    status: Mutex<StatusCell>,
    /// How long one listing request (after connecting) may take.
    list_timeout: Duration,
    /// Background refreshes still running, aborted when the hub goes away.
    tasks: Mutex<Vec<AbortHandle>>,
    /// The icons the server gave for itself at its last connect.
    icons: Mutex<Option<Vec<rmcp::model::Icon>>>,
    /// The operator's sign-ins, for a server with OAuth.
    oauth: Option<OperatorOAuth>,
}

/// What a server with OAuth says while the operator has not signed in.
pub(crate) const NEEDS_OPERATOR: &str = "the operator must sign the service in to it (OAuth)";

impl Server {
    pub fn new(
        cfg: McpServerConfig,
        events: Option<EventBroadcaster>,
        list_timeout: Duration,
        oauth: Option<OperatorOAuth>,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            shared: Arc::new(Shared {
                name: cfg.name.clone(),
                cache: Mutex::new(Cache::default()),
                generation: AtomicU64::new(0),
                events,
                refreshes: Refreshes::default(),
                server: me.clone(),
                progress: Mutex::new(std::collections::HashMap::new()),
            }),
            cfg,
            conn: tokio::sync::Mutex::new(ConnState::default()),
            status: Mutex::new(StatusCell::default()),
            list_timeout,
            tasks: Mutex::new(Vec::new()),
            icons: Mutex::new(None),
            oauth,
        })
    }

    pub fn name(&self) -> &str {
        &self.cfg.name
    }

    /// Sets what `/api/config` shows; the error is redacted (no URL userinfo or query).
    fn set_status(&self, status: &'static str, error: Option<String>) {
        let error = error.map(|e| redact_urls(&e));
        *self.status.lock().unwrap_or_else(|p| p.into_inner()) = StatusCell { status, error };
    }

    pub fn status(&self) -> StatusCell {
        self.status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The live connection, connecting (or reconnecting) first when needed.
    pub async fn client(&self) -> Result<Arc<Client>, CallError> {
        let mut st = self.conn.lock().await;
        if let Some(c) = &st.client {
            if !c.is_dead() && !c.token_due() {
                return Ok(c.clone());
            }
            if c.is_dead() {
                tracing::warn!(server = %self.name(), "MCP server connection lost; restarting it");
                st.note_death();
                self.shared.clear();
            } else {
                // The same server, a fresh token: its listings stay good.
                tracing::debug!(server = %self.name(), "the OAuth token falls due; connecting again");
                st.client = None;
            }
        }
        let delay = st.restart_delay();
        if !delay.is_zero() {
            // A crash loop: restart, but not at full speed.
            tracing::warn!(server = %self.name(), "MCP server keeps dying; restarting in {delay:?}");
            tokio::time::sleep(delay).await;
        }
        // A sign-in since the last failure: try at once.
        let signed_in = self
            .oauth
            .as_ref()
            .is_some_and(|o| o.generation() != st.oauth_generation);
        if let Some(at) = st.retry_at
            && Instant::now() < at
            && !signed_in
        {
            let last = st.last_error.clone().unwrap_or_default();
            return Err(CallError::Unavailable(format!(
                "MCP server {} is unavailable ({last}); retrying in {:.1} s",
                self.name(),
                at.saturating_duration_since(Instant::now()).as_secs_f32()
            )));
        }
        self.set_status("connecting", None);
        let rejected = st.rejected.take();
        let mut token = self.oauth_token(&mut st, rejected.as_deref()).await?;
        let mut connected = connect(
            &self.cfg,
            self.shared.clone(),
            token.as_ref().map(|t| t.access.as_str()),
        )
        .await;
        if let (Err(f), Some(sent)) = (&connected, &token)
            && f.unauthorized
        {
            // The server rejected the token before its time: one refresh, one more try.
            token = self.oauth_token(&mut st, Some(&sent.access)).await?;
            connected = connect(
                &self.cfg,
                self.shared.clone(),
                token.as_ref().map(|t| t.access.as_str()),
            )
            .await;
        }
        match connected {
            Ok(mut c) => {
                c.token = token;
                let c = Arc::new(c);
                st.client = Some(c.clone());
                st.connected_at = Some(Instant::now());
                st.failures = 0;
                st.retry_at = None;
                st.last_error = None;
                *self.icons.lock().unwrap_or_else(|p| p.into_inner()) = c
                    .svc
                    .peer_info()
                    .and_then(|i| i.server_info.as_ref().and_then(|s| s.icons.clone()));
                self.shared.clear();
                self.set_status("connected", None);
                Ok(c)
            }
            Err(f) => {
                let e = f.message;
                st.failures += 1;
                st.retry_at = Some(Instant::now() + backoff(st.failures));
                st.last_error = Some(e.clone());
                let fix = super::problems::fix(&self.cfg.transport, &e);
                tracing::error!(server = %self.name(), %fix, "MCP server failed to connect: {e}");
                self.set_status("error", Some(e.clone()));
                Err(CallError::Unavailable(format!(
                    "MCP server {} is unavailable: {e}",
                    self.name()
                )))
            }
        }
    }

    /// The operator's OAuth token for a connection (`None` for a server without OAuth); the
    /// server is unavailable until the operator signs in. `rejected`: the token the server
    /// just refused, to refresh.
    async fn oauth_token(
        &self,
        st: &mut ConnState,
        rejected: Option<&str>,
    ) -> Result<Option<Token>, CallError> {
        if !self.cfg.uses_oauth() {
            return Ok(None);
        }
        let Some(oauth) = &self.oauth else {
            let e = "it signs in with OAuth, but the hub has no OperatorOAuth \
                     (McpHub::with_oauth)"
                .to_owned();
            self.set_status("error", Some(e.clone()));
            return Err(CallError::Unavailable(format!(
                "MCP server {} is unavailable: {e}",
                self.name()
            )));
        };
        st.oauth_generation = oauth.generation();
        match oauth.token(self.name(), rejected).await {
            Ok(Some(t)) => Ok(Some(t)),
            Ok(None) | Err(SignInError::SignInRequired(_)) => Err(self.needs_operator(st)),
            Err(e) => {
                let e = e.to_string();
                st.failures += 1;
                st.retry_at = Some(Instant::now() + backoff(st.failures));
                st.last_error = Some(e.clone());
                self.set_status("error", Some(e.clone()));
                Err(CallError::Unavailable(format!(
                    "MCP server {} is unavailable: {e}",
                    self.name()
                )))
            }
        }
    }

    /// The server waits for the operator's sign-in: no backoff (the next use looks again).
    fn needs_operator(&self, st: &mut ConnState) -> CallError {
        let e = format!("{NEEDS_OPERATOR} (the page {OPERATOR_PAGE_PATH} below the chat's prefix)");
        st.retry_at = None;
        st.last_error = Some(e.clone());
        self.set_status("error", Some(e.clone()));
        CallError::Unavailable(format!("MCP server {} is unavailable: {e}", self.name()))
    }

    /// Drops the connection whose OAuth token the server refused; the next connection
    /// refreshes it first.
    async fn refused_token(&self, dead: &Arc<Client>) {
        let mut st = self.conn.lock().await;
        if st.client.as_ref().is_some_and(|c| Arc::ptr_eq(c, dead)) {
            st.client = None;
            st.rejected = dead.token.as_ref().map(|t| t.access.clone());
        }
    }

    /// Drops the connection after a transport failure so the next use restarts it.
    async fn forget(&self, dead: &Arc<Client>, why: &str) {
        let mut st = self.conn.lock().await;
        if st.client.as_ref().is_some_and(|c| Arc::ptr_eq(c, dead)) {
            st.note_death();
            self.shared.clear();
            self.set_status("error", Some(why.to_owned()));
        }
    }

    /// The child's process id, for diagnostics (stdio servers only, once connected).
    pub async fn pid(&self) -> Option<u32> {
        self.conn.lock().await.client.as_ref().and_then(|c| c.pid)
    }

    /// The negotiated MCP protocol version, once connected.
    pub async fn protocol_version(&self) -> Option<String> {
        let st = self.conn.lock().await;
        let info = st.client.as_ref()?.svc.peer_info()?;
        Some(info.protocol_version.to_string())
    }

    /// The icons the server gave for itself at its last connect (never waits, never
    /// connects for them).
    pub fn server_icons(&self) -> Option<Vec<rmcp::model::Icon>> {
        self.icons.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Closes the connection (a child process is stopped).
    pub async fn shutdown(&self) {
        let client = self.conn.lock().await.client.take();
        if let Some(c) = client
            && let Ok(mut c) = Arc::try_unwrap(c)
        {
            let _ = c.svc.close_with_timeout(Duration::from_secs(3)).await;
        }
    }

    fn map_err(&self, e: ServiceError) -> CallError {
        match e {
            ServiceError::McpError(e) => CallError::Mcp(e.message.to_string()),
            ServiceError::Timeout { .. } => {
                CallError::Transport(format!("MCP server {} timed out", self.name()))
            }
            other => CallError::Transport(redact_urls(&format!(
                "MCP server {} failed: {other}",
                self.name()
            ))),
        }
    }

    /// Runs `f` on the connection. A failure to send over a pipe (the server was already gone)
    /// is retried once on a fresh connection; a failure during the call is returned (and the connection
    /// dropped, so the next use restarts the server).
    async fn run<T, F, Fut>(&self, timeout: Duration, f: F) -> Result<T, CallError>
    where
        F: Fn(Arc<Client>) -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        for attempt in 0..2 {
            let c = self.client().await?;
            let res = tokio::time::timeout(timeout, f(c.clone())).await;
            match res {
                Err(_) => {
                    return Err(CallError::Transport(format!(
                        "MCP server {} did not answer within {timeout:?}",
                        self.name()
                    )));
                }
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(ServiceError::McpError(e))) => {
                    return Err(CallError::Mcp(e.message.to_string()));
                }
                Ok(Err(e)) if c.token.is_some() && e.is_authorization_required() => {
                    // The server refused the operator's token before its time (revoked): the
                    // request was not run, so it is retried once with a refreshed token.
                    let err = self.map_err(e);
                    self.refused_token(&c).await;
                    if attempt == 0 {
                        continue;
                    }
                    return Err(err);
                }
                Ok(Err(e)) => {
                    // Over a pipe, a failed send never reached the server, so it is safe to
                    // retry; an HTTP POST may have been processed before it failed.
                    let not_sent = matches!(e, ServiceError::TransportSend(_))
                        && !matches!(
                            self.cfg.transport,
                            McpTransport::Http { .. } | McpTransport::Sse { .. }
                        );
                    let err = self.map_err(e);
                    if c.is_dead() || not_sent {
                        self.forget(&c, &err.to_string()).await;
                        if attempt == 0 && not_sent {
                            continue;
                        }
                    }
                    return Err(err);
                }
            }
        }
        unreachable!("the loop returns on its second attempt")
    }

    /// The tools `who` may see, from the cache (see [`super::listing`] for how long this
    /// waits and whose listing it is).
    pub async fn tools(
        self: &Arc<Self>,
        who: &Principal,
        wait: Wait,
    ) -> Option<Arc<Vec<rmcp::model::Tool>>> {
        self.listed(who, ListKind::Tools, wait, |c| &c.tools).await
    }

    /// The prompts `who` may see, from the cache.
    pub async fn prompts(
        self: &Arc<Self>,
        who: &Principal,
        wait: Wait,
    ) -> Option<Arc<Vec<rmcp::model::Prompt>>> {
        self.listed(who, ListKind::Prompts, wait, |c| &c.prompts)
            .await
    }

    /// The resources and templates `who` may see, from the cache.
    pub async fn resources(
        self: &Arc<Self>,
        who: &Principal,
        wait: Wait,
    ) -> Option<Arc<ResourceListing>> {
        self.listed(who, ListKind::Resources, wait, |c| &c.resources)
            .await
    }

    async fn listed<T>(
        self: &Arc<Self>,
        who: &Principal,
        kind: ListKind,
        wait: Wait,
        pick: fn(&Cache) -> &Listings<T>,
    ) -> Option<Arc<T>> {
        let started = Instant::now();
        // Two rounds: a shared refresh may answer `private` (kept for whoever started it), and
        // then `who` needs a refresh of their own.
        for round in 0..2 {
            let (whose, last) = {
                let cache = self.cache();
                let listings = pick(&cache);
                // The common case, a current listing, takes one lock and no subscription.
                if let Some(current) = listings.current(who) {
                    return Some(current);
                }
                (listings.partition(who), listings.last(who))
            };
            // Claimed or joined under the refreshes' lock, so its end is not missed.
            let mut ended = self.spawn_refresh(kind, whose.as_ref(), Some(who));
            let limit = match wait {
                // A slow server that never listed offered nothing to call.
                Wait::ForCall if last.is_some() || self.shared.refreshes.is_slow() => return last,
                Wait::ForCall => None,
                Wait::Briefly(d) if d.is_zero() || self.shared.refreshes.is_slow() => return last,
                Wait::Briefly(d) => match d.checked_sub(started.elapsed()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ if round > 0 => return last,
                    _ => Some(Duration::ZERO),
                },
            };
            match limit {
                None => {
                    let _ = ended.changed().await;
                }
                Some(d) => {
                    if tokio::time::timeout(d, ended.changed()).await.is_err() {
                        self.shared.refreshes.mark_slow();
                        tracing::warn!(
                            server = %self.name(),
                            ?kind,
                            "MCP server did not list within {d:?}; going on without waiting \
                             for it (the listing goes on in the background)"
                        );
                        return last;
                    }
                }
            }
            let cache = self.cache();
            let listings = pick(&cache);
            if let Some(value) = listings.last(who) {
                return Some(value);
            }
            // Our own refresh failed, or the shared one answered something public but empty-handed.
            if whose.is_some() || !listings.is_private() {
                return None;
            }
        }
        None
    }

    /// Starts a background refresh of `kind` for `whose` (`None`: the shared listing) unless
    /// one is running; `by` is the principal whose request started it (a private answer is
    /// kept for them). The receiver's `changed()` returns when that refresh has ended.
    pub fn spawn_refresh(
        self: &Arc<Self>,
        kind: ListKind,
        whose: Option<&Principal>,
        by: Option<&Principal>,
    ) -> tokio::sync::watch::Receiver<()> {
        let rx = match self.shared.refreshes.claim(kind, whose) {
            Claim::Running(rx) => return rx,
            Claim::Claimed(rx) => rx,
        };
        let me = self.clone();
        let (whose, by) = (whose.cloned(), by.cloned());
        let task = tokio::spawn(async move { me.refresh(kind, whose, by).await });
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        tasks.retain(|t| !t.is_finished());
        tasks.push(task.abort_handle());
        rx
    }

    /// Fetches `kind` now (the caller claimed the refresh), then ends the refresh.
    async fn refresh(&self, kind: ListKind, whose: Option<Principal>, by: Option<Principal>) {
        let r = self.fetch(kind, by.as_ref()).await;
        if let Err(e) = &r {
            tracing::warn!(server = %self.name(), ?kind, "listing the MCP server failed: {e}");
        }
        if self.shared.refreshes.end(kind, whose.as_ref(), r.is_ok()) {
            self.shared.announce(kind);
        }
    }

    /// Refreshes every shared listing now and waits for them (for
    /// [`McpHub::start`](super::McpHub::start)).
    pub async fn refresh_all(&self) {
        join_all(ListKind::ALL.into_iter().map(|kind| async move {
            match self.shared.refreshes.claim(kind, None) {
                Claim::Claimed(_) => self.refresh(kind, None, None).await,
                // One is running already (a turn started it): wait for that one.
                Claim::Running(mut ended) => {
                    let _ = ended.changed().await;
                }
            }
        }))
        .await;
    }

    /// Lists `kind` from the server on behalf of `by` and stores it; listed again when a
    /// change raced with it.
    async fn fetch(&self, kind: ListKind, by: Option<&Principal>) -> Result<(), CallError> {
        const ATTEMPTS: usize = 3;
        for _ in 0..ATTEMPTS {
            // Connecting (which outdates every listing) comes before the generation is read.
            let c = self.client().await?;
            let generation = self.shared.generation.load(Ordering::SeqCst);
            let caps = c.capabilities();
            let t = self.list_timeout;
            let stored = match kind {
                ListKind::Tools => {
                    let (tools, hint) = if caps.tools.is_some() {
                        let m = self
                            .run(t, |c| async move {
                                c.svc.list_all_tools_with_cache_hint().await
                            })
                            .await?;
                        (m.items, Hint::new(m.ttl_ms, m.cache_scope))
                    } else {
                        (Vec::new(), Hint::default())
                    };
                    self.store(generation, |c| &mut c.tools, by, tools, hint)
                }
                ListKind::Prompts => {
                    let (prompts, hint) = if caps.prompts.is_some() {
                        let m = self
                            .run(t, |c| async move {
                                c.svc.list_all_prompts_with_cache_hint().await
                            })
                            .await?;
                        (m.items, Hint::new(m.ttl_ms, m.cache_scope))
                    } else {
                        (Vec::new(), Hint::default())
                    };
                    self.store(generation, |c| &mut c.prompts, by, prompts, hint)
                }
                ListKind::Resources => {
                    let (listing, hint) = if caps.resources.is_some() {
                        let resources = self
                            .run(t, |c| async move {
                                c.svc.list_all_resources_with_cache_hint().await
                            })
                            .await?;
                        // Templates are optional even for servers with resources.
                        let templates = self
                            .run(t, |c| async move {
                                c.svc.list_all_resource_templates_with_cache_hint().await
                            })
                            .await
                            .ok();
                        let hint = Hint::new(resources.ttl_ms, resources.cache_scope).and(
                            templates
                                .as_ref()
                                .map(|m| Hint::new(m.ttl_ms, m.cache_scope))
                                .unwrap_or_default(),
                        );
                        let listing = ResourceListing {
                            resources: resources.items,
                            templates: templates.map(|m| m.items).unwrap_or_default(),
                        };
                        (listing, hint)
                    } else {
                        (ResourceListing::default(), Hint::default())
                    };
                    self.store(generation, |c| &mut c.resources, by, listing, hint)
                }
            };
            if stored {
                return Ok(());
            }
        }
        // It kept changing while we listed: what we have is outdated and is listed again
        // on its next use.
        Ok(())
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.shared.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores a listing fetched on behalf of `by`, current when no change came since
    /// `generation`.
    fn store<T>(
        &self,
        generation: u64,
        listings: fn(&mut Cache) -> &mut Listings<T>,
        by: Option<&Principal>,
        value: T,
        hint: Hint,
    ) -> bool {
        let mut cache = self.cache();
        let current = self.shared.generation.load(Ordering::SeqCst) == generation;
        listings(&mut cache).store(by, value, current, hint);
        current
    }

    /// Aborts the background refreshes (the hub is going away).
    pub fn abort_refreshes(&self) {
        for t in self
            .tasks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            t.abort();
        }
    }

    /// One `tools/call`: a result, the server's request for the user's input, or a task. With
    /// `input`, the call made again with the user's answers and the server's `requestState`;
    /// with `progress`, the call's progress reports go there while it runs.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        timeout: Duration,
        input: Option<&crate::host::ToolInput>,
        progress: Option<crate::host::ProgressSink>,
    ) -> Result<rmcp::model::CallToolResponse, CallError> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Some(a) = arguments {
            params = params.with_arguments(a);
        }
        if let Some(input) = input {
            params.input_responses = Some(super::convert::input_responses(input));
            params.request_state = input.request_state.clone();
        }
        let Some(sink) = progress else {
            return self
                .run(timeout, |c| {
                    let params = params.clone();
                    async move { c.svc.peer().call_tool_once(params).await }
                })
                .await;
        };
        // rmcp gives every request a progress token of its own: the call is sent by hand to
        // learn it, and its reports go to `sink` while it runs.
        let shared = self.shared.clone();
        self.run(timeout, |c| {
            let (params, sink, shared) = (params.clone(), sink.clone(), shared.clone());
            async move {
                use rmcp::model::{ClientRequest, NumberOrString, ServerResult};
                let peer = c.svc.peer().clone();
                let handle = peer
                    .send_request_with_option(
                        ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params)),
                        rmcp::service::PeerRequestOptions::no_options(),
                    )
                    .await?;
                let token = match &handle.progress_token.0 {
                    NumberOrString::String(s) => s.to_string(),
                    NumberOrString::Number(n) => n.to_string(),
                };
                shared
                    .progress
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(token.clone(), sink);
                let _registered = ProgressToken(shared.clone(), token);
                let mut cancel = CancelOnDrop(Some((peer, handle.id.clone())));
                let result = handle.await_response().await;
                cancel.0 = None;
                match result? {
                    ServerResult::CallToolResult(r) => {
                        Ok(rmcp::model::CallToolResponse::Complete(r))
                    }
                    ServerResult::InputRequiredResult(r) => {
                        Ok(rmcp::model::CallToolResponse::InputRequired(r))
                    }
                    ServerResult::CreateTaskResult(r) => Ok(rmcp::model::CallToolResponse::Task(r)),
                    _ => Err(rmcp::ServiceError::UnexpectedResponse),
                }
            }
        })
        .await
    }

    /// `tasks/get` of a task this server runs for a call; with `cancel`, `tasks/cancel` first.
    pub async fn task(
        &self,
        task_id: &str,
        cancel: bool,
        timeout: Duration,
    ) -> Result<rmcp::model::GetTaskResult, CallError> {
        let id = task_id.to_owned();
        self.run(timeout, |c| {
            let id = id.clone();
            async move {
                if cancel {
                    c.svc
                        .peer()
                        .cancel_task(rmcp::model::CancelTaskParams::new(id.clone()))
                        .await?;
                }
                c.svc
                    .peer()
                    .get_task(rmcp::model::GetTaskParams::new(id))
                    .await
            }
        })
        .await
    }

    /// `tasks/update`: the user's answers to a task's requests for input.
    pub async fn update_task(
        &self,
        task_id: &str,
        responses: rmcp::model::InputResponses,
        timeout: Duration,
    ) -> Result<(), CallError> {
        let id = task_id.to_owned();
        self.run(timeout, |c| {
            let (id, responses) = (id.clone(), responses.clone());
            async move {
                c.svc
                    .peer()
                    .update_task(rmcp::model::UpdateTaskParams::new(id, responses))
                    .await
            }
        })
        .await
    }

    pub async fn get_prompt(
        &self,
        name: &str,
        args: Map<String, Value>,
        timeout: Duration,
    ) -> Result<rmcp::model::GetPromptResult, CallError> {
        let mut params = GetPromptRequestParams::new(name.to_owned());
        if !args.is_empty() {
            params = params.with_arguments(args);
        }
        self.run(timeout, |c| {
            let params = params.clone();
            async move { c.svc.peer().get_prompt(params).await }
        })
        .await
    }

    pub async fn read_resource(
        &self,
        uri: &str,
        timeout: Duration,
    ) -> Result<rmcp::model::ReadResourceResult, CallError> {
        let params = ReadResourceRequestParams::new(uri.to_owned());
        self.run(timeout, |c| {
            let params = params.clone();
            async move { c.svc.peer().read_resource(params).await }
        })
        .await
    }
}

/// Tells the server a call was abandoned (`notifications/cancelled`) when dropped armed, as
/// rmcp's own `call_tool_once` does.
struct CancelOnDrop(Option<(rmcp::Peer<rmcp::RoleClient>, rmcp::model::RequestId)>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some((peer, id)) = self.0.take() else {
            return;
        };
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = peer
                    .notify_cancelled(rmcp::model::CancelledNotificationParam::new(
                        Some(id),
                        Some("the caller no longer waits".into()),
                    ))
                    .await;
            });
        }
    }
}

/// A call's progress token, taken out of the registry when the call ends (or is dropped).
struct ProgressToken(Arc<Shared>, String);

impl Drop for ProgressToken {
    fn drop(&mut self) {
        self.0
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.1);
    }
}
