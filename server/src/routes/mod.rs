//! One file per route family, and [`ROUTES`]: the route list. Each entry owns a path pattern,
//! a method and the [`Endpoint`] that answers it; dispatch ([`crate::service`]), the 405
//! `Allow` header and the test that walks every route all read this one list.
//!
//! Decisions:
//! - A pattern ends in at most one `{param}`, which takes the rest of the path.
//! - A route can be switched off by a setting ([`When`]); a switched-off route is absent (404),
//!   not forbidden.
//! - Only the MCP Apps sandbox page is [`Guard::Open`]: it is served on the sandbox origin,
//!   which gets no cookies and so no principal (its one-time token is the key). Every other
//!   route passes the principal and CSRF checks first.

pub(crate) mod aisdk;
pub(crate) mod app_proxy;
pub(crate) mod app_view;
pub(crate) mod approvals;
pub(crate) mod assets;
pub(crate) mod chat;
pub(crate) mod conversations;
pub(crate) mod csrf;
pub(crate) mod events;
pub(crate) mod icons;
pub(crate) mod lists;
#[cfg(feature = "mcp")]
pub(crate) mod operator_mcp;
pub(crate) mod prompts;
mod req;
pub(crate) mod resources;
pub(crate) mod runs;
pub(crate) mod tools;
pub(crate) mod upload;
#[cfg(feature = "mcp")]
pub(crate) mod user_mcp;
#[cfg(feature = "mcp")]
pub(crate) mod user_mcp_oauth;

#[cfg(test)]
mod tests;

use http::Method;

pub(crate) use req::{Req, RequestBody};

use crate::state::State;

/// What answers a route (the handler each maps to is in [`crate::service`]'s dispatch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Page,
    Asset,
    Personas,
    Commands,
    Models,
    Config,
    Chat,
    ToolCall,
    ToolApprovals,
    ToolApprovalsPut,
    Prompts,
    PromptGet,
    Resources,
    ResourceRead,
    Icon,
    Upload,
    AppProxy,
    AppViewCreate,
    AppViewPage,
    AppSandbox,
    DiagramPage,
    DiagramScript,
    Events,
    Conversations,
    Search,
    ConversationGet,
    ConversationPut,
    ConversationPatch,
    ConversationDelete,
    ConversationAction,
    AiSdkChat,
    AiSdkResume,
    AiSdkThreads,
    AiSdkThread,
    AiSdkModels,
    RunStream,
    RunStop,
    UserMcpList,
    UserMcpCreate,
    UserMcpGet,
    UserMcpAction,
    UserMcpPatch,
    UserMcpDelete,
    UserMcpOAuthCallback,
    OperatorMcpPage,
    OperatorMcpSignIn,
    OperatorMcpCallback,
    ClientMetadata,
}

/// A setting that switches a route on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum When {
    Always,
    /// `Config::page`.
    Page,
    /// `Config::file_upload`.
    Upload,
    /// `/api/events` on.
    Events,
    /// A sandbox origin is configured (MCP App views in proxy mode).
    Sandbox,
    /// Each user's own MCP servers are on (`ConfigBuilder::user_mcp`).
    UserMcp,
    /// The operator's OAuth sign-ins are on (`ConfigBuilder::mcp_oauth`).
    McpOAuth,
    /// Either sign-in is on (users' servers or the operator's OAuth).
    OAuth,
}

/// The checks a request passes before its handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Guard {
    /// The principal (when required) and CSRF.
    Principal,
    /// None: the sandbox page, served on the sandbox origin.
    Open,
    /// None, on the chat's own host names only: the diagram frame's page and scripts, requested
    /// from a sandboxed frame's opaque origin (which carries no session cookie) and the same for
    /// everyone (`routes/assets.rs`).
    Public,
}

/// One route.
#[derive(Debug)]
pub(crate) struct Route {
    pub(crate) method: Method,
    pub(crate) path: &'static str,
    pub(crate) endpoint: Endpoint,
    pub(crate) when: When,
    pub(crate) guard: Guard,
}

const fn route(method: Method, path: &'static str, endpoint: Endpoint) -> Route {
    Route {
        method,
        path,
        endpoint,
        when: When::Always,
        guard: Guard::Principal,
    }
}

const fn when(mut r: Route, when: When) -> Route {
    r.when = when;
    r
}

const fn open(mut r: Route) -> Route {
    r.guard = Guard::Open;
    r
}

const fn public(mut r: Route) -> Route {
    r.guard = Guard::Public;
    r
}

/// Every route of the service, relative to the mount point (`""` is the page).
pub(crate) static ROUTES: [Route; 52] = {
    use Endpoint as E;
    use Method as M;
    [
        when(route(M::GET, "", E::Page), When::Page),
        when(route(M::HEAD, "", E::Page), When::Page),
        route(M::GET, "/assets/{path}", E::Asset),
        route(M::HEAD, "/assets/{path}", E::Asset),
        route(M::GET, "/api/personas", E::Personas),
        route(M::GET, "/api/commands", E::Commands),
        route(M::GET, "/api/models", E::Models),
        route(M::GET, "/api/config", E::Config),
        route(M::POST, "/api/chat", E::Chat),
        route(M::POST, "/api/tools/call", E::ToolCall),
        route(M::GET, "/api/tools/approvals", E::ToolApprovals),
        route(M::PUT, "/api/tools/approvals", E::ToolApprovalsPut),
        route(M::GET, "/api/prompts", E::Prompts),
        route(M::POST, "/api/prompts/get", E::PromptGet),
        route(M::GET, "/api/resources", E::Resources),
        route(M::POST, "/api/resources/read", E::ResourceRead),
        // `{kind}/{name}`: `server/…`, `tool/…`, `prompt/…`.
        route(M::GET, "/api/icons/{kind}", E::Icon),
        when(route(M::POST, "/api/upload", E::Upload), When::Upload),
        route(M::POST, "/api/app-proxy", E::AppProxy),
        route(M::POST, "/api/apps/view", E::AppViewCreate),
        route(M::GET, "/apps/view/{token}", E::AppViewPage),
        when(
            open(route(M::GET, "/apps/sandbox", E::AppSandbox)),
            When::Sandbox,
        ),
        public(route(M::GET, "/diagram", E::DiagramPage)),
        public(route(M::GET, "/diagram/{file}", E::DiagramScript)),
        when(route(M::GET, "/api/events", E::Events), When::Events),
        route(M::GET, "/api/conversations", E::Conversations),
        route(M::GET, "/api/search", E::Search),
        route(M::GET, "/api/conversations/{id}", E::ConversationGet),
        route(M::PUT, "/api/conversations/{id}", E::ConversationPut),
        route(M::PATCH, "/api/conversations/{id}", E::ConversationPatch),
        // `{id}` for DELETE (the conversation) and `{id}/messages/{node}` (a branch);
        // `{id}/branch` for POST.
        route(M::DELETE, "/api/conversations/{id}", E::ConversationDelete),
        route(M::POST, "/api/conversations/{id}", E::ConversationAction),
        route(M::POST, "/api/aisdk/chat", E::AiSdkChat),
        route(M::GET, "/api/aisdk/chat/{id}", E::AiSdkResume),
        route(M::GET, "/api/aisdk/threads", E::AiSdkThreads),
        route(M::GET, "/api/aisdk/threads/{id}", E::AiSdkThread),
        route(M::GET, "/api/aisdk/models", E::AiSdkModels),
        // `{id}/stream` for GET, `{id}/stop` for POST.
        route(M::GET, "/api/runs/{id}", E::RunStream),
        route(M::POST, "/api/runs/{id}", E::RunStop),
        // `{slug}` for GET, PATCH and DELETE; `{slug}/refresh`, `{slug}/accept` and
        // `{slug}/oauth` for POST.
        when(
            route(M::GET, "/api/mcp/servers", E::UserMcpList),
            When::UserMcp,
        ),
        when(
            route(M::POST, "/api/mcp/servers", E::UserMcpCreate),
            When::UserMcp,
        ),
        when(
            route(M::GET, "/api/mcp/servers/{slug}", E::UserMcpGet),
            When::UserMcp,
        ),
        when(
            route(M::POST, "/api/mcp/servers/{slug}", E::UserMcpAction),
            When::UserMcp,
        ),
        when(
            route(M::PATCH, "/api/mcp/servers/{slug}", E::UserMcpPatch),
            When::UserMcp,
        ),
        when(
            route(M::DELETE, "/api/mcp/servers/{slug}", E::UserMcpDelete),
            When::UserMcp,
        ),
        // The end of an OAuth sign-in: a top-level navigation from the authorization server
        // (guarded like every route; see `user_mcp::oauth`).
        when(
            route(M::GET, "/api/mcp/oauth/callback", E::UserMcpOAuthCallback),
            When::UserMcp,
        ),
        // The operator's sign-ins to their OAuth MCP servers (the operator only; see
        // `routes::operator_mcp`), and the client ID metadata document authorization servers
        // fetch without a session.
        when(
            route(M::GET, "/mcp/operator", E::OperatorMcpPage),
            When::McpOAuth,
        ),
        when(
            route(
                M::POST,
                "/mcp/operator/sign-in/{server}",
                E::OperatorMcpSignIn,
            ),
            When::McpOAuth,
        ),
        when(
            route(M::GET, "/mcp/operator/callback", E::OperatorMcpCallback),
            When::McpOAuth,
        ),
        when(
            public(route(
                M::GET,
                "/oauth/client-metadata.json",
                E::ClientMetadata,
            )),
            When::OAuth,
        ),
        // `/` is the page too.
        when(route(M::GET, "/", E::Page), When::Page),
        when(route(M::HEAD, "/", E::Page), When::Page),
    ]
};

impl Route {
    /// The parameter when `path` matches this route's pattern (`""` for a pattern without one).
    pub(crate) fn matches<'a>(&self, path: &'a str) -> Option<&'a str> {
        match self.path.split_once('{') {
            Some((head, _)) => path.strip_prefix(head),
            None => (path == self.path).then_some(""),
        }
    }

    /// Whether the settings switch this route on.
    pub(crate) fn enabled(&self, state: &State) -> bool {
        match self.when {
            When::Always => true,
            When::Page => state.settings.page,
            When::Upload => state.settings.file_upload,
            When::Events => state.events.is_some(),
            When::Sandbox => state.settings.sandbox_origin.is_some(),
            #[cfg(feature = "mcp")]
            When::UserMcp => state.user_mcp.is_some(),
            #[cfg(not(feature = "mcp"))]
            When::UserMcp => false,
            #[cfg(feature = "mcp")]
            When::McpOAuth => state.mcp_oauth.is_some(),
            #[cfg(feature = "mcp")]
            When::OAuth => state.mcp_oauth.is_some() || state.user_mcp.is_some(),
            #[cfg(not(feature = "mcp"))]
            When::McpOAuth | When::OAuth => false,
        }
    }
}

/// What the route list says about a request.
#[derive(Debug)]
pub(crate) enum Lookup<'a> {
    /// This route answers; with its parameter.
    Found(&'static Route, &'a str),
    /// The path exists with these methods only (405 with `Allow`).
    MethodNotAllowed(Vec<Method>),
    /// No such path (404).
    NotFound,
}

/// Finds the route for `method` and `path` among the enabled routes that `visible` keeps.
pub(crate) fn lookup<'a>(
    state: &State,
    method: &Method,
    path: &'a str,
    visible: impl Fn(&Route) -> bool,
) -> Lookup<'a> {
    let mut allow = Vec::new();
    for r in ROUTES.iter().filter(|r| visible(r) && r.enabled(state)) {
        let Some(param) = r.matches(path) else {
            continue;
        };
        if r.method == *method {
            return Lookup::Found(r, param);
        }
        if !allow.contains(&r.method) {
            allow.push(r.method.clone());
        }
    }
    match allow.is_empty() {
        true => Lookup::NotFound,
        false => Lookup::MethodNotAllowed(allow),
    }
}
