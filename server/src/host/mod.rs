//! The [`Host`] contract: what the embedding application supplies (models, the completion
//! stream, and optionally MCP tools, prompts and resources), and the per-request
//! [`RequestContext`] every method receives.

mod icon;
mod scope;

pub use icon::{ICON_TYPES, IconImage, IconOf, IconRefused, MAX_ICON_BYTES, icon_type};
pub use scope::{Role, Scope, Sources};

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::BytesMut;
use futures_util::Stream;
use http::{Extensions, HeaderMap, HeaderValue};
use lmchatkit_protocol::{
    Event, Message, Model, Params, Prompt, PromptResult, Resource, ResourceResult, SetupProblem,
    Tool, ToolResult,
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

    /// Built from a request's parts. The headers are copied into one buffer of their own: hyper
    /// parses header values as views into the connection's read buffer, and a context lives as
    /// long as the turn it serves (minutes for a slow stream), so sharing them would pin that
    /// 8 KiB block and make hyper allocate a second one for the next read on the connection.
    pub fn from_parts(parts: &http::request::Parts) -> Self {
        Self {
            principal: parts.extensions.get::<Principal>().cloned(),
            extensions: parts.extensions.clone(),
            headers: owned_headers(&parts.headers),
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

    /// The context with `value` among its extensions (replacing one of its type).
    pub fn with_extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// The request's headers.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }
}

/// `headers` with every value copied into one allocation that shares nothing with the request.
fn owned_headers(headers: &HeaderMap) -> HeaderMap {
    let mut buffer = BytesMut::with_capacity(headers.values().map(|v| v.len()).sum());
    for value in headers.values() {
        buffer.extend_from_slice(value.as_bytes());
    }
    let mut buffer = buffer.freeze();
    let mut owned = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let bytes = buffer.split_to(value.len());
        // The bytes were a valid header value a moment ago; keep the original on the
        // impossible failure rather than drop the header.
        let mut copy = HeaderValue::from_maybe_shared(bytes).unwrap_or_else(|_| value.clone());
        copy.set_sensitive(value.is_sensitive());
        owned.append(name.clone(), copy);
    }
    owned
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

/// How far a running tool call is (MCP's `notifications/progress`), as its server says.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ToolProgress {
    /// The progress so far (increases).
    pub progress: f64,
    /// The total, when the server knows it.
    pub total: Option<f64>,
    /// What the server says of it.
    pub message: Option<String>,
}

impl ToolProgress {
    /// Progress without a total or message.
    pub fn new(progress: f64) -> Self {
        Self {
            progress,
            ..Self::default()
        }
    }
}

/// Where a tool call's progress goes: put into the [`RequestContext`]'s extensions of the
/// call's scope by the service ([`RequestContext::with_extension`]); a host whose tools report
/// progress (the MCP hub) calls it as reports come.
#[derive(Clone)]
pub struct ProgressSink(pub std::sync::Arc<dyn Fn(ToolProgress) + Send + Sync>);

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// The user's answers to a tool's request for input, for [`Host::call_tool_with_input`].
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ToolInput {
    /// An answer for every question the tool asked, by its key (`cancel` for those the user
    /// left, and for all of them when the request expired).
    pub answers: BTreeMap<String, lmchatkit_protocol::InputAnswer>,
    /// The server's `requestState`, as it sent it.
    pub request_state: Option<String>,
    /// The request expired before the user answered (the answers are all `cancel`).
    pub expired: bool,
    /// The task that asked, when the request came from inside a call's task (the answers
    /// then go to the task, MCP's `tasks/update`, and the task goes on).
    pub task_id: Option<String>,
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
#[non_exhaustive]
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
/// Methods that list, read or call receive the request's [`Scope`] (principal, role, and the
/// sources it may reach), computed by the access layer after its checks; a host can answer per
/// principal from it. Models and completions receive the [`RequestContext`].
///
/// ```
/// use lmchatkit::{async_trait, CompleteRequest, EventStream, Host, HostError, RequestContext};
/// use lmchatkit::{Scope, ToolSource};
/// use lmchatkit_protocol::{Event, FinishReason, Model, Tool, ToolResult};
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
///     // Optional: a tool, answered per principal.
///     async fn list_tools(&self, _: &Scope) -> Result<Vec<Tool>, HostError> {
///         Ok(vec![Tool::new("whoami")])
///     }
///     async fn call_tool(&self, scope: &Scope, _: &str, _: serde_json::Value) -> Result<ToolResult, HostError> {
///         Ok(ToolResult::text(format!("you are {:?}", scope.principal().id())))
///     }
///     // A single source: views may call every app-visible tool.
///     async fn tool_source(&self, _: &RequestContext, _: &str) -> ToolSource {
///         ToolSource::Unscoped
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

    /// Every tool in `scope` — model-visible, app-only and both — with its visibility; the
    /// access layer filters by the caller's role. With [`Sources::Server`](crate::Sources),
    /// only that server's tools.
    async fn list_tools(&self, _scope: &Scope) -> Result<Vec<Tool>, HostError> {
        Ok(Vec::new())
    }

    /// Calls a tool the access layer allowed in `scope`. A tool's own failure is `Ok` with
    /// `is_error: true`.
    async fn call_tool(
        &self,
        _scope: &Scope,
        name: &str,
        _arguments: Value,
    ) -> Result<ToolResult, HostError> {
        Err(HostError::NotFound(format!("unknown tool {name:?}")))
    }

    /// Calls a tool again with the user's answers to the request for input its last call
    /// answered with ([`ToolResult::input_required`](lmchatkit_protocol::ToolResult)): MCP's
    /// retry with `inputResponses` and the `requestState`. The access layer has checked that
    /// the answers belong to this call and this user. Hosts whose tools never ask for input
    /// keep the default, which says so.
    async fn call_tool_with_input(
        &self,
        _scope: &Scope,
        name: &str,
        _arguments: Value,
        _input: ToolInput,
    ) -> Result<ToolResult, HostError> {
        Err(HostError::Unsupported(format!(
            "tool {name:?} cannot be given the user's input here"
        )))
    }

    /// The state of a call that runs as a task on its server (MCP's tasks extension; the
    /// call's result had [`ToolResult::task`](lmchatkit_protocol::ToolResult)): the call's
    /// result once it is done, else the task again with its new state. With `cancel`, the
    /// task is cancelled first. The access layer has checked that the task belongs to this
    /// call and this user. Hosts whose tools never run as tasks keep the default, which says
    /// so.
    async fn poll_tool_task(
        &self,
        _scope: &Scope,
        name: &str,
        _task_id: &str,
        _cancel: bool,
    ) -> Result<ToolResult, HostError> {
        Err(HostError::Unsupported(format!(
            "tool {name:?} does not run as a task here"
        )))
    }

    /// MCP prompts in `scope`, offered as `/name` commands.
    async fn list_prompts(&self, _scope: &Scope) -> Result<Vec<Prompt>, HostError> {
        Ok(Vec::new())
    }

    /// Expands a prompt.
    async fn get_prompt(
        &self,
        _scope: &Scope,
        name: &str,
        _args: BTreeMap<String, String>,
    ) -> Result<PromptResult, HostError> {
        Err(HostError::NotFound(format!("unknown prompt {name:?}")))
    }

    /// Resources and resource templates in `scope`, offered as `@uri` attachments.
    async fn list_resources(&self, _scope: &Scope) -> Result<Vec<Resource>, HostError> {
        Ok(Vec::new())
    }

    /// Reads a resource. With [`Sources::All`](crate::Sources) the access layer has checked
    /// that a listing offers `uri`: read it from the source that lists it, never from each in
    /// turn. With [`Sources::Server`](crate::Sources), read it from that server only.
    async fn read_resource(&self, _scope: &Scope, uri: &str) -> Result<ResourceResult, HostError> {
        Err(HostError::NotFound(format!("unknown resource {uri:?}")))
    }

    /// The icon of a server, tool or prompt in `scope` (a tool or a prompt by the name it is
    /// offered under, a server by its name), or `None` when it has none or `scope` does not
    /// reach it. The service serves it from its own origin
    /// (`GET {prefix}/api/icons/{kind}/{name}`); the browser never fetches an icon from
    /// elsewhere (see [`IconImage`]). Hosts that wrap another forward it. Default: none.
    async fn icon(
        &self,
        _scope: &Scope,
        _of: IconOf,
        _name: &str,
    ) -> Result<Option<IconImage>, HostError> {
        Ok(None)
    }

    /// Adds to the system prompt of every turn (e.g. a skill index). Never stored.
    async fn augment_system_prompt(&self, _cx: &RequestContext, current: String) -> String {
        current
    }

    /// Which server owns a tool. The default, `Unknown`, makes app-view checks fail closed;
    /// a single-source host returns `Unscoped`.
    async fn tool_source(&self, _cx: &RequestContext, _name: &str) -> ToolSource {
        ToolSource::Unknown
    }

    /// The full tool name a view means when it calls `name` (views know their server's tools by
    /// their own, un-namespaced names); `scope` is the view's. The default keeps `name`; the
    /// MCP hub adds the server's namespace.
    async fn resolve_view_tool(&self, _scope: &Scope, name: &str) -> String {
        name.to_owned()
    }

    /// Mistakes in how this host is set up that its operator should fix, each with the likely
    /// fix: a provider whose base URL answers 404, a key the upstream refuses, an MCP server
    /// that does not start. Shown in `/api/config` (to the operator only, when one is set) and
    /// logged at start by the app.
    ///
    /// Answers from what the host already knows, without network I/O (`/api/config` calls it
    /// on every page load). The HTTP backends keep their last model listing's failure, so a
    /// host that wants problems named at start calls [`models`](Self::models) once then.
    /// Hosts that wrap another forward it. Default: none.
    fn setup_problems(&self) -> Vec<SetupProblem> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    #[test]
    fn a_request_context_keeps_no_view_of_the_connections_read_buffer() {
        // hyper parses a request's headers as views into the connection's read buffer; a
        // context that outlives the request (a running chat turn) must not keep that buffer.
        let wire = Bytes::from(b"text/plainsecret-tokena, b".to_vec());
        let mut parts = http::Request::new(()).into_parts().0;
        parts.headers.insert(
            "content-type",
            HeaderValue::from_maybe_shared(wire.slice(0..10)).expect("a header value"),
        );
        let mut token = HeaderValue::from_maybe_shared(wire.slice(10..22)).expect("a header value");
        token.set_sensitive(true);
        parts.headers.insert("authorization", token);
        parts.headers.append(
            "x-multi",
            HeaderValue::from_maybe_shared(wire.slice(22..23)).expect("a header value"),
        );
        parts.headers.append(
            "x-multi",
            HeaderValue::from_maybe_shared(wire.slice(25..26)).expect("a header value"),
        );

        let cx = RequestContext::from_parts(&parts);
        drop(parts);

        assert!(wire.is_unique(), "the context still shares the read buffer");
        let headers = cx.headers();
        assert_eq!(headers["content-type"], "text/plain");
        assert_eq!(headers["authorization"], "secret-token");
        assert!(headers["authorization"].is_sensitive());
        let multi: Vec<_> = headers.get_all("x-multi").iter().collect();
        assert_eq!(multi, ["a", "b"]);
    }
}
