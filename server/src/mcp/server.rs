//! One server as the hub uses it: get-or-connect (restart after a crash, backoff after failed
//! connects), cached listings that follow pagination and only ask for what the server
//! advertises, and calls with a timeout whose transport failures become results naming the
//! server.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ServiceError;
use rmcp::model::{CallToolRequestParams, GetPromptRequestParams, ReadResourceRequestParams};
use serde_json::{Map, Value};

use super::config::{McpServerConfig, McpTransport};
use super::conn::{Cache, Client, ConnState, Shared, StatusCell, backoff, connect};
use crate::events::EventBroadcaster;
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
}

impl Server {
    pub fn new(cfg: McpServerConfig, events: Option<EventBroadcaster>) -> Self {
        let shared = Arc::new(Shared {
            name: cfg.name.clone(),
            cache: Mutex::new(Cache::default()),
            generation: AtomicU64::new(0),
            events,
        });
        Self {
            cfg,
            shared,
            conn: tokio::sync::Mutex::new(ConnState::default()),
            status: Mutex::new(StatusCell::default()),
        }
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
            if !c.is_dead() {
                return Ok(c.clone());
            }
            tracing::warn!(server = %self.name(), "MCP server connection lost; restarting it");
            st.note_death();
            self.shared.clear();
        }
        let delay = st.restart_delay();
        if !delay.is_zero() {
            // A crash loop: restart, but not at full speed.
            tracing::warn!(server = %self.name(), "MCP server keeps dying; restarting in {delay:?}");
            tokio::time::sleep(delay).await;
        }
        if let Some(at) = st.retry_at
            && Instant::now() < at
        {
            let last = st.last_error.clone().unwrap_or_default();
            return Err(CallError::Unavailable(format!(
                "MCP server {} is unavailable ({last}); retrying in {:.1} s",
                self.name(),
                at.saturating_duration_since(Instant::now()).as_secs_f32()
            )));
        }
        self.set_status("connecting", None);
        match connect(&self.cfg, self.shared.clone()).await {
            Ok(c) => {
                let c = Arc::new(c);
                st.client = Some(c.clone());
                st.connected_at = Some(Instant::now());
                st.failures = 0;
                st.retry_at = None;
                st.last_error = None;
                self.shared.clear();
                self.set_status("connected", None);
                Ok(c)
            }
            Err(e) => {
                st.failures += 1;
                st.retry_at = Some(Instant::now() + backoff(st.failures));
                st.last_error = Some(e.clone());
                tracing::error!(server = %self.name(), "MCP server failed to connect: {e}");
                self.set_status("error", Some(e.clone()));
                Err(CallError::Unavailable(format!(
                    "MCP server {} is unavailable: {e}",
                    self.name()
                )))
            }
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
                Ok(Err(e)) => {
                    // Over a pipe, a failed send never reached the server, so it is safe to
                    // retry; an HTTP POST may have been processed before it failed.
                    let not_sent = matches!(e, ServiceError::TransportSend(_))
                        && !matches!(self.cfg.transport, McpTransport::Http { .. });
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

    pub async fn tools(&self, timeout: Duration) -> Result<Arc<Vec<rmcp::model::Tool>>, CallError> {
        if let Some(t) = self.cache().tools.clone() {
            return Ok(t);
        }
        let generation = self.shared.generation.load(Ordering::SeqCst);
        let c = self.client().await?;
        let tools = if c.capabilities().tools.is_some() {
            Arc::new(
                self.run(timeout, |c| async move { c.svc.list_all_tools().await })
                    .await?,
            )
        } else {
            Arc::new(Vec::new())
        };
        self.store(generation, |cache| cache.tools = Some(tools.clone()));
        Ok(tools)
    }

    pub async fn prompts(
        &self,
        timeout: Duration,
    ) -> Result<Arc<Vec<rmcp::model::Prompt>>, CallError> {
        if let Some(p) = self.cache().prompts.clone() {
            return Ok(p);
        }
        let generation = self.shared.generation.load(Ordering::SeqCst);
        let c = self.client().await?;
        let prompts = if c.capabilities().prompts.is_some() {
            Arc::new(
                self.run(timeout, |c| async move { c.svc.list_all_prompts().await })
                    .await?,
            )
        } else {
            Arc::new(Vec::new())
        };
        self.store(generation, |cache| cache.prompts = Some(prompts.clone()));
        Ok(prompts)
    }

    pub async fn resources(&self, timeout: Duration) -> Result<Arc<ResourceListing>, CallError> {
        if let Some(r) = self.cache().resources.clone() {
            return Ok(r);
        }
        let generation = self.shared.generation.load(Ordering::SeqCst);
        let c = self.client().await?;
        let listing = if c.capabilities().resources.is_some() {
            let resources = self
                .run(timeout, |c| async move { c.svc.list_all_resources().await })
                .await?;
            // Templates are optional even for servers with resources.
            let templates = self
                .run(timeout, |c| async move {
                    c.svc.list_all_resource_templates().await
                })
                .await
                .unwrap_or_default();
            ResourceListing {
                resources,
                templates,
            }
        } else {
            ResourceListing::default()
        };
        let listing = Arc::new(listing);
        self.store(generation, |cache| cache.resources = Some(listing.clone()));
        Ok(listing)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.shared.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn store(&self, generation: u64, f: impl FnOnce(&mut Cache)) {
        let mut cache = self.cache();
        if self.shared.generation.load(Ordering::SeqCst) == generation {
            f(&mut cache);
        }
    }

    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        timeout: Duration,
    ) -> Result<rmcp::model::CallToolResult, CallError> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Some(a) = arguments {
            params = params.with_arguments(a);
        }
        self.run(timeout, |c| {
            let params = params.clone();
            async move { c.svc.peer().call_tool(params).await }
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
