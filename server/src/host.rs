//! The [`Host`] contract: what the embedding application supplies (models, the completion
//! stream, and optionally MCP tools, prompts and resources), and the per-request
//! [`RequestContext`] every method receives.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use futures_util::Stream;
use http::{Extensions, HeaderMap};
use lmchatkit_protocol::{
    Event, Message, Model, Params, Prompt, PromptResult, Resource, ResourceResult, Tool, ToolResult,
};
use serde_json::Value;

/// The user a request acts for. A host's auth layer inserts one into the request extensions;
/// without one the request is the anonymous single user.
///
/// ```
/// let p = lmchatkit::Principal::new("alice");
/// assert_eq!(p.id(), "alice");
/// assert!(lmchatkit::Principal::anonymous().is_anonymous());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(Arc<str>);

impl Principal {
    /// A principal with an opaque user id.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self(id.into())
    }

    /// The anonymous single user (empty id).
    pub fn anonymous() -> Self {
        Self(Arc::from(""))
    }

    /// The user id.
    pub fn id(&self) -> &str {
        &self.0
    }

    /// True for the anonymous user.
    pub fn is_anonymous(&self) -> bool {
        self.0.is_empty()
    }
}

/// Who is asking and what came with the request, handed to every [`Host`] method (like Go's
/// `ctx`), so a host can serve per-user models, tools and servers.
///
/// ```
/// let cx = lmchatkit::RequestContext::new(lmchatkit::Principal::new("bob"));
/// assert_eq!(cx.principal().id(), "bob");
/// ```
#[derive(Debug, Clone, Default)]
pub struct RequestContext {
    principal: Option<Principal>,
    extensions: Extensions,
    headers: HeaderMap,
}

impl RequestContext {
    /// A context for `principal` with no headers or extensions (for tests and background work).
    pub fn new(principal: Principal) -> Self {
        Self {
            principal: Some(principal),
            ..Self::default()
        }
    }

    /// Built from a request's parts.
    pub fn from_parts(parts: &http::request::Parts) -> Self {
        Self {
            principal: parts.extensions.get::<Principal>().cloned(),
            extensions: parts.extensions.clone(),
            headers: parts.headers.clone(),
        }
    }

    /// The caller (anonymous when the host's auth layer set none).
    pub fn principal(&self) -> Principal {
        self.principal.clone().unwrap_or_else(Principal::anonymous)
    }

    /// True when an auth layer put a principal in the request.
    pub fn has_principal(&self) -> bool {
        self.principal.is_some()
    }

    /// The request's extensions (whatever the host's layers inserted).
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The request's headers.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }
}

/// The stream of chat events a completion produces. Dropping it cancels the upstream.
pub type EventStream = Pin<Box<dyn Stream<Item = Event> + Send + 'static>>;

/// What [`Host::complete`] receives: the cleaned messages (system prompt first), the
/// model-visible tools and the merged params.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompleteRequest {
    /// Model id from the chat request.
    pub model: String,
    /// The cleaned messages, starting with the derived system message.
    pub messages: Vec<Message>,
    /// Tools the model may call (visibility already filtered); empty when none.
    pub tools: Vec<Tool>,
    /// Persona params overridden key by key by the request's; empty when none.
    pub params: Params,
}

/// Where a tool comes from, for the same-server checks of MCP App calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSource {
    /// Owned by this named server.
    Scoped(String),
    /// The host has a single source; ownership checks pass.
    Unscoped,
    /// Not known: checks fail closed.
    Unknown,
}

/// Errors a [`Host`] returns; each maps to one HTTP status in one place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// No such tool, prompt, resource or model (404).
    #[error("{0}")]
    NotFound(String),
    /// The arguments are wrong (400).
    #[error("{0}")]
    InvalidInput(String),
    /// The host does not offer this capability (404).
    #[error("{0}")]
    Unsupported(String),
    /// The upstream (LLM or MCP server) failed (502).
    #[error("{0}")]
    Upstream(String),
}

/// What the embedding application supplies. Object-safe: the service holds an `Arc<dyn Host>`.
///
/// An LLM-only host implements two methods; the tool, prompt and resource methods default to
/// "none", and the optional capabilities to safe answers (no augmentation, tool sources
/// unknown, so app-view checks fail closed).
///
/// ```
/// use lmchatkit::{async_trait, CompleteRequest, EventStream, Host, HostError, RequestContext};
/// use lmchatkit_protocol::{Event, FinishReason, Model};
///
/// struct Echo;
///
/// #[async_trait]
/// impl Host for Echo {
///     async fn models(&self, _: &RequestContext) -> Result<Vec<Model>, HostError> {
///         Ok(vec![Model::new("echo")])
///     }
///     fn complete(&self, _: &RequestContext, req: CompleteRequest) -> EventStream {
///         let last = req.messages.last().and_then(|m| m.content.as_text()).unwrap_or("").to_owned();
///         Box::pin(futures_util::stream::iter([Event::delta(last), Event::done(FinishReason::Stop, None)]))
///     }
/// }
/// let _host: std::sync::Arc<dyn Host> = std::sync::Arc::new(Echo);
/// ```
#[async_trait]
pub trait Host: Send + Sync + 'static {
    /// The models the user may pick.
    async fn models(&self, cx: &RequestContext) -> Result<Vec<Model>, HostError>;

    /// Streams one completion. Failures are `Event::Error` items; dropping the stream cancels.
    fn complete(&self, cx: &RequestContext, req: CompleteRequest) -> EventStream;

    /// Tools offered to the model and to views (with visibility; the service filters).
    async fn list_tools(&self, _cx: &RequestContext) -> Result<Vec<Tool>, HostError> {
        Ok(Vec::new())
    }

    /// Calls a tool. A tool's own failure is `Ok` with `is_error: true`.
    async fn call_tool(
        &self,
        _cx: &RequestContext,
        name: &str,
        _arguments: Value,
    ) -> Result<ToolResult, HostError> {
        Err(HostError::NotFound(format!("unknown tool {name:?}")))
    }

    /// MCP prompts, offered as `/name` commands.
    async fn list_prompts(&self, _cx: &RequestContext) -> Result<Vec<Prompt>, HostError> {
        Ok(Vec::new())
    }

    /// Expands a prompt.
    async fn get_prompt(
        &self,
        _cx: &RequestContext,
        name: &str,
        _args: BTreeMap<String, String>,
    ) -> Result<PromptResult, HostError> {
        Err(HostError::NotFound(format!("unknown prompt {name:?}")))
    }

    /// Resources and resource templates, offered as `@uri` attachments.
    async fn list_resources(&self, _cx: &RequestContext) -> Result<Vec<Resource>, HostError> {
        Ok(Vec::new())
    }

    /// Reads a resource from any source.
    async fn read_resource(
        &self,
        _cx: &RequestContext,
        uri: &str,
    ) -> Result<ResourceResult, HostError> {
        Err(HostError::NotFound(format!("unknown resource {uri:?}")))
    }

    /// Adds to the system prompt of every turn (e.g. a skill index). Never stored.
    async fn augment_system_prompt(&self, _cx: &RequestContext, current: String) -> String {
        current
    }

    /// Every tool, including app-only and search-only ones, for visibility checks.
    async fn list_all_tools(&self, cx: &RequestContext) -> Result<Vec<Tool>, HostError> {
        self.list_tools(cx).await
    }

    /// Which server owns a tool. The default, `Unknown`, makes app-view checks fail closed;
    /// a single-source host returns `Unscoped`.
    async fn tool_source(&self, _cx: &RequestContext, _name: &str) -> ToolSource {
        ToolSource::Unknown
    }

    /// Resources of one source only (for views). The default lists everything when `source`
    /// is empty and refuses otherwise.
    async fn list_resources_from(
        &self,
        cx: &RequestContext,
        source: &str,
    ) -> Result<Vec<Resource>, HostError> {
        if source.is_empty() {
            self.list_resources(cx).await
        } else {
            Err(HostError::Unsupported(format!(
                "this host cannot list resources of {source:?}"
            )))
        }
    }

    /// Prompts of one source only (for views); defaults like [`Host::list_resources_from`].
    async fn list_prompts_from(
        &self,
        cx: &RequestContext,
        source: &str,
    ) -> Result<Vec<Prompt>, HostError> {
        if source.is_empty() {
            self.list_prompts(cx).await
        } else {
            Err(HostError::Unsupported(format!(
                "this host cannot list prompts of {source:?}"
            )))
        }
    }

    /// The full tool name a view means when it calls `name` (views know their server's tools by
    /// their own, un-namespaced names). `via` is the tool that mounted the view. The default
    /// keeps `name`; the MCP hub adds `via`'s server namespace.
    async fn resolve_view_tool(&self, _cx: &RequestContext, _via: &str, name: &str) -> String {
        name.to_owned()
    }

    /// Reads a resource from one source only (for views). The default reads from anywhere
    /// when `source` is empty and refuses otherwise.
    async fn read_resource_from(
        &self,
        cx: &RequestContext,
        source: &str,
        uri: &str,
    ) -> Result<ResourceResult, HostError> {
        if source.is_empty() {
            self.read_resource(cx, uri).await
        } else {
            Err(HostError::Unsupported(format!(
                "this host cannot read resources from source {source:?}"
            )))
        }
    }
}
