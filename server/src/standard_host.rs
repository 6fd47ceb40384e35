//! [`StandardHost`]: the ready-made [`Host`] — an LLM host (e.g. the OpenAI-compatible
//! backend) for models and completions, plus an optional [`McpHub`] for tools, prompts,
//! resources, tool sources and the skill index. Every `Host` method is implemented by
//! delegating: without a hub it behaves like the LLM host alone.
//!
//! With feature `clap-tools`, `StandardHost::with_toolset` adds a `clap_tools::ClapToolset` as
//! a second tool source: its tools are listed
//! after the hub's (or the LLM host's), a call whose name starts with the toolset's namespace
//! and `__` goes to it, and its tools' source is the namespace. The toolset is asked first, so
//! a hub server with the same name as a toolset's namespace loses those names (a warning is
//! logged when both are set).

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use lmchatkit_protocol::{Model, Prompt, PromptResult, Resource, ResourceResult, Tool, ToolResult};
use serde_json::Value;

use crate::access::Scope;
#[cfg(feature = "clap-tools")]
use crate::clap_tools::ClapToolset;
use crate::host::{
    CompleteRequest, EventStream, Host, HostError, IconImage, IconOf, RequestContext, ToolInput,
    ToolSource,
};
#[cfg(feature = "mcp")]
use crate::mcp::McpHub;

/// A system-prompt augmenter: `(context, current prompt) -> new prompt`.
pub type Augmenter = Arc<
    dyn Fn(RequestContext, String) -> futures_util::future::BoxFuture<'static, String>
        + Send
        + Sync,
>;

/// An LLM host plus (optionally) an MCP hub.
///
/// ```no_run
/// # #[cfg(all(feature = "openai", feature = "mcp"))]
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
/// use lmchatkit::mcp::{McpConfigFile, McpHub};
/// use lmchatkit::standard_host::StandardHost;
/// use lmchatkit::{ChatService, Config, EventBroadcaster};
///
/// let events = EventBroadcaster::new();
/// let hub = McpHub::new(McpConfigFile::from_path("lmchatkit.toml")?.servers).with_events(events.clone());
/// hub.start().await;
/// let status = hub.clone();
/// let host = StandardHost::new(OpenAiBackend::new(OpenAiConfig::new("http://127.0.0.1:11434/v1")))
///     .with_mcp(hub);
/// let svc = ChatService::new(
///     Config::builder(host).event_broadcaster(events).mcp_status(move || status.status()).build()?,
/// );
/// # let _ = svc; Ok(()) }
/// ```
#[derive(Clone)]
pub struct StandardHost {
    llm: Arc<dyn Host>,
    #[cfg(feature = "mcp")]
    mcp: Option<McpHub>,
    augmenter: Option<Augmenter>,
    skill_index: bool,
    #[cfg(feature = "clap-tools")]
    toolsets: Vec<ClapToolset>,
}

impl StandardHost {
    /// Wraps an LLM host (its tools, prompts and resources are not used once a hub is set).
    pub fn new(llm: impl Host) -> Self {
        Self::from_arc(Arc::new(llm))
    }

    /// Like [`StandardHost::new`], for a host already in an `Arc`.
    pub fn from_arc(llm: Arc<dyn Host>) -> Self {
        Self {
            llm,
            #[cfg(feature = "mcp")]
            mcp: None,
            augmenter: None,
            skill_index: true,
            #[cfg(feature = "clap-tools")]
            toolsets: Vec::new(),
        }
    }

    /// Takes tools, prompts and resources from this hub.
    #[cfg(feature = "mcp")]
    pub fn with_mcp(mut self, hub: McpHub) -> Self {
        self.mcp = Some(hub);
        #[cfg(feature = "clap-tools")]
        self.warn_on_shadowing();
        self
    }

    /// Adds a clap command tree's tools beside the hub's (feature `clap-tools`); several
    /// toolsets need distinct namespaces (a later one with a taken namespace is ignored, with
    /// a warning).
    #[cfg(feature = "clap-tools")]
    pub fn with_toolset(mut self, toolset: ClapToolset) -> Self {
        if self
            .toolsets
            .iter()
            .any(|t| t.namespace() == toolset.namespace())
        {
            tracing::warn!(
                namespace = toolset.namespace(),
                "a CLI toolset with this namespace is already added; ignoring the new one"
            );
            return self;
        }
        self.toolsets.push(toolset);
        self.warn_on_shadowing();
        self
    }

    #[cfg(feature = "clap-tools")]
    fn warn_on_shadowing(&self) {
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.mcp {
            for name in hub.server_names() {
                if self.toolsets.iter().any(|t| t.namespace() == name) {
                    tracing::warn!(
                        server = name,
                        "an MCP server has the name of a CLI toolset's namespace; the toolset's tools win"
                    );
                }
            }
        }
    }

    /// The toolset owning the tool `name`, if any.
    #[cfg(feature = "clap-tools")]
    fn toolset(&self, name: &str) -> Option<&ClapToolset> {
        self.toolsets.iter().find(|t| t.owns(name))
    }

    /// The hub, if any.
    #[cfg(feature = "mcp")]
    pub fn mcp(&self) -> Option<&McpHub> {
        self.mcp.as_ref()
    }

    /// Appends the skill index to the system prompt (default on; needs a hub).
    pub fn with_skill_index(mut self, on: bool) -> Self {
        self.skill_index = on;
        self
    }

    /// A custom augmenter, run after the LLM host's own and before the skill index.
    pub fn with_augmenter<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(RequestContext, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = String> + Send + 'static,
    {
        self.augmenter = Some(Arc::new(move |cx, s| Box::pin(f(cx, s))));
        self
    }
}

impl StandardHost {
    /// The hub's tools, or the LLM host's without a hub.
    async fn base_tools(&self, scope: &Scope) -> Result<Vec<Tool>, HostError> {
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.mcp {
            return hub.list_tools(scope).await;
        }
        self.llm.list_tools(scope).await
    }
}

/// Every method passes the request's scope on: to the hub when there is one (which answers
/// from the servers the scope and the principal may reach), else to the LLM host.
#[async_trait]
impl Host for StandardHost {
    async fn models(&self, cx: &RequestContext) -> Result<Vec<Model>, HostError> {
        self.llm.models(cx).await
    }

    /// The LLM host's problems, then each MCP server's that failed to start or connect.
    fn setup_problems(&self) -> Vec<lmchatkit_protocol::SetupProblem> {
        #[allow(unused_mut)]
        let mut problems = self.llm.setup_problems();
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.mcp {
            problems.extend(hub.problems());
        }
        problems
    }

    fn complete(&self, cx: &RequestContext, req: CompleteRequest) -> EventStream {
        self.llm.complete(cx, req)
    }

    async fn list_tools(&self, scope: &Scope) -> Result<Vec<Tool>, HostError> {
        #[allow(unused_mut)]
        let mut tools = self.base_tools(scope).await?;
        #[cfg(feature = "clap-tools")]
        for set in self.toolsets.iter().filter(|t| scope.allows(t.namespace())) {
            let own = set.tools();
            tools.retain(|t| !own.iter().any(|o| o.name == t.name));
            tools.extend(own);
        }
        Ok(tools)
    }

    async fn call_tool(
        &self,
        scope: &Scope,
        name: &str,
        arguments: Value,
    ) -> Result<ToolResult, HostError> {
        #[cfg(feature = "clap-tools")]
        if let Some(set) = self.toolset(name) {
            return Ok(set.call(name, arguments).await);
        }
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.mcp {
            return hub.call_tool(scope, name, arguments).await;
        }
        self.llm.call_tool(scope, name, arguments).await
    }

    async fn call_tool_with_input(
        &self,
        scope: &Scope,
        name: &str,
        arguments: Value,
        input: ToolInput,
    ) -> Result<ToolResult, HostError> {
        #[cfg(feature = "clap-tools")]
        if self.toolset(name).is_some() {
            return Err(HostError::Unsupported(format!(
                "tool {name:?} is a command-line tool, which never asks for input"
            )));
        }
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.mcp {
            return hub
                .call_tool_with_input(scope, name, arguments, input)
                .await;
        }
        self.llm
            .call_tool_with_input(scope, name, arguments, input)
            .await
    }

    async fn poll_tool_task(
        &self,
        scope: &Scope,
        name: &str,
        task_id: &str,
        cancel: bool,
    ) -> Result<ToolResult, HostError> {
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.mcp {
            return hub.poll_tool_task(scope, name, task_id, cancel).await;
        }
        self.llm.poll_tool_task(scope, name, task_id, cancel).await
    }

    async fn list_prompts(&self, scope: &Scope) -> Result<Vec<Prompt>, HostError> {
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.mcp {
            return hub.list_prompts(scope).await;
        }
        self.llm.list_prompts(scope).await
    }

    async fn get_prompt(
        &self,
        scope: &Scope,
        name: &str,
        args: BTreeMap<String, String>,
    ) -> Result<PromptResult, HostError> {
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.mcp {
            return hub.get_prompt(scope, name, args).await;
        }
        self.llm.get_prompt(scope, name, args).await
    }

    async fn list_resources(&self, scope: &Scope) -> Result<Vec<Resource>, HostError> {
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.mcp {
            return hub.list_resources(scope).await;
        }
        self.llm.list_resources(scope).await
    }

    async fn read_resource(&self, scope: &Scope, uri: &str) -> Result<ResourceResult, HostError> {
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.mcp {
            return hub.read_resource(scope, uri).await;
        }
        self.llm.read_resource(scope, uri).await
    }

    async fn icon(
        &self,
        scope: &Scope,
        of: IconOf,
        name: &str,
    ) -> Result<Option<IconImage>, HostError> {
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.mcp {
            return hub.icon(scope, of, name).await;
        }
        self.llm.icon(scope, of, name).await
    }

    async fn augment_system_prompt(&self, cx: &RequestContext, current: String) -> String {
        let mut prompt = self.llm.augment_system_prompt(cx, current).await;
        if let Some(f) = &self.augmenter {
            prompt = f(cx.clone(), prompt).await;
        }
        #[cfg(feature = "mcp")]
        if self.skill_index
            && let Some(hub) = &self.mcp
        {
            prompt = hub
                .augment_system_prompt(&Scope::model(cx.clone()), prompt)
                .await;
        }
        prompt
    }

    async fn resolve_view_tool(&self, scope: &Scope, name: &str) -> String {
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.mcp {
            return hub.resolve_view_tool(scope, name);
        }
        self.llm.resolve_view_tool(scope, name).await
    }

    async fn tool_source(&self, cx: &RequestContext, name: &str) -> ToolSource {
        #[cfg(feature = "clap-tools")]
        if let Some(set) = self.toolset(name) {
            return ToolSource::Scoped(set.namespace().to_owned());
        }
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.mcp {
            return hub.tool_source(&Scope::user(cx.clone()), name).await;
        }
        self.llm.tool_source(cx, name).await
    }
}
