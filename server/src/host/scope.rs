//! [`Scope`]: who acts in a request, in which role, and which sources a host may answer from.

use super::{Principal, RequestContext};

/// Who acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Role {
    /// The user, through the UI: lists, `@uri` references, `/prompt` commands.
    User,
    /// The model, through a tool call (approved in the UI).
    Model,
    /// An MCP App view, through the app proxy.
    App,
}

/// Which tool sources (MCP servers) a host may answer from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sources {
    /// Every source the principal may use. A read then goes to the source that lists the URI.
    All,
    /// This server only: the one owning the tool that mounted the calling view. A host that
    /// reports [`ToolSource::Scoped`](crate::ToolSource::Scoped) must honour it; one that
    /// never does (a single-source host) never receives it.
    Server(String),
}

/// The scope of one request, computed by the access layer and handed to every [`Host`]
/// method that lists, reads or calls something.
///
/// ```
/// use lmchatkit::access::Role;
/// use lmchatkit::{Principal, RequestContext, Scope, Sources};
/// let cx = RequestContext::new(Principal::new("alice"));
/// let scope = Scope::view(cx.clone(), Some("fs".into()));
/// assert_eq!(scope.role(), Role::App);
/// assert_eq!(scope.sources(), &Sources::Server("fs".into()));
/// assert_eq!(scope.principal().id(), "alice");
/// assert!(scope.allows("fs") && !scope.allows("web"));
/// assert!(Scope::user(cx).allows("web"));
/// ```
///
/// [`Host`]: crate::Host
#[derive(Debug, Clone)]
pub struct Scope {
    cx: RequestContext,
    role: Role,
    sources: Sources,
}

/// The anonymous user over every source (for tests and background work).
impl Default for Scope {
    fn default() -> Self {
        Self::user(RequestContext::default())
    }
}

impl Scope {
    /// The user acting through the UI, over every source.
    pub fn user(cx: RequestContext) -> Self {
        Self {
            cx,
            role: Role::User,
            sources: Sources::All,
        }
    }

    /// The model calling a tool, over every source.
    pub fn model(cx: RequestContext) -> Self {
        Self {
            cx,
            role: Role::Model,
            sources: Sources::All,
        }
    }

    /// An MCP App view of `server` (`None` for a host with a single source).
    pub fn view(cx: RequestContext, server: Option<String>) -> Self {
        Self {
            cx,
            role: Role::App,
            sources: server.map_or(Sources::All, Sources::Server),
        }
    }

    /// The request's context (principal, headers, extensions).
    pub fn cx(&self) -> &RequestContext {
        &self.cx
    }

    /// The scope with `value` among its context's extensions (e.g. a
    /// [`ProgressSink`](crate::host::ProgressSink) for one call).
    pub fn with_extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.cx = self.cx.with_extension(value);
        self
    }

    /// The caller.
    pub fn principal(&self) -> Principal {
        self.cx.principal()
    }

    /// Who acts.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Which sources the host may answer from.
    pub fn sources(&self) -> &Sources {
        &self.sources
    }

    /// The one server this scope is limited to, if any.
    pub fn server(&self) -> Option<&str> {
        match &self.sources {
            Sources::Server(s) => Some(s),
            Sources::All => None,
        }
    }

    /// True when the scope may reach `server`.
    pub fn allows(&self, server: &str) -> bool {
        self.server().is_none_or(|s| s == server)
    }
}
