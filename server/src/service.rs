//! [`ChatService`]: the `tower::Service` a host mounts, and the dispatch — one `match` from each
//! endpoint of the route list (`routes::ROUTES`, which owns paths and methods) to its handler.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Buf;
use http::{Method, Request};
use http_body::Body;
use http_body_util::BodyExt;

use crate::access;
use crate::api::{ApiError, BoxError, Response};
use crate::config::Config;
use crate::host::RequestContext;
use crate::live::events::EventBroadcaster;
use crate::routes::{self, Endpoint, Guard, Lookup, Req, RequestBody};
use crate::state::State;

/// The chat service: every lmchatkit route behind one `tower::Service`. Cheap to clone.
///
/// Routing sees paths relative to the mount point. Served directly (hyper, actix) the request
/// path starts with the prefix and is stripped; nested under a router that strips it already
/// (axum's `nest_service`) it does not.
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
/// let svc = lmchatkit::ChatService::new(lmchatkit::Config::builder(MyHost).build().unwrap());
/// let req = http::Request::get("/chat/api/models").body(http_body_util::Empty::<bytes::Bytes>::new()).unwrap();
/// let res = svc.oneshot(req).await.unwrap();
/// assert_eq!(res.status(), 200);
/// # });
/// ```
#[derive(Clone)]
pub struct ChatService {
    config: Arc<Config>,
    state: Arc<State>,
    /// Answers the MCP Apps sandbox page only (see [`ChatService::sandbox_only`]).
    sandbox_only: bool,
}

impl std::fmt::Debug for ChatService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatService")
            .field("config", &self.config)
            .field("sandbox_only", &self.sandbox_only)
            .finish_non_exhaustive()
    }
}

impl ChatService {
    /// A service for `config`: builds the live state (opens and watches catalog directories,
    /// creates the view-token store and the turn cache). Clones share that state.
    pub fn new(config: Config) -> Self {
        crate::tls::install_provider();
        if config.settings.page && !crate::bundle::is_built() {
            tracing::warn!("the UI bundle is not built: run ./scripts/build-ui.sh and rebuild");
        }
        Self {
            state: Arc::new(State::new(config.clone())),
            config: Arc::new(config),
            sandbox_only: false,
        }
    }

    /// The same service restricted to the MCP Apps sandbox proxy page, to mount on the sandbox
    /// origin and its subdomains ([`ConfigBuilder::sandbox_origin`](crate::ConfigBuilder::sandbox_origin)):
    /// views run same-origin with that page, so nothing else of the service may answer there.
    /// Every other path is 404, with or without a principal. The full service behaves the same
    /// for a request naming a sandbox host.
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
    /// let config = lmchatkit::Config::builder(MyHost).sandbox_origin("http://localhost:8081").build().unwrap();
    /// let sandbox = lmchatkit::ChatService::new(config).sandbox_only();
    /// let req = http::Request::get("/chat/api/models").body(http_body_util::Empty::<bytes::Bytes>::new()).unwrap();
    /// assert_eq!(sandbox.oneshot(req).await.unwrap().status(), 404);
    /// # });
    /// ```
    pub fn sandbox_only(&self) -> Self {
        Self {
            config: self.config.clone(),
            state: self.state.clone(),
            sandbox_only: true,
        }
    }

    /// The settings the service was built from.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The event broadcaster, when `/api/events` is on (hosts send `tools_changed` etc. here).
    pub fn events(&self) -> Option<&EventBroadcaster> {
        self.state.events.as_ref()
    }

    /// The path relative to the mount point.
    fn relative<'a>(&self, path: &'a str) -> &'a str {
        let prefix = self.state.settings.prefix.as_str();
        match path.strip_prefix(prefix) {
            Some(rest) if !prefix.is_empty() && (rest.is_empty() || rest.starts_with('/')) => rest,
            _ => path,
        }
    }

    async fn handle(self, req: Request<RequestBody>) -> Response {
        let (parts, body) = req.into_parts();
        let state = &*self.state;
        let req = Req::new(
            RequestContext::from_parts(&parts),
            parts,
            body,
            state.settings.limits,
        );
        if let Err(e) = access::host_names::check(&state.settings.allowed_hosts, &req.parts) {
            return ApiError::from(e).into_response();
        }
        let path = self.relative(req.parts.uri.path()).to_owned();
        // A sandbox host name never reaches the API, whichever listener it came in on.
        let sandbox_only = self.sandbox_only
            || state
                .sandboxes
                .as_ref()
                .is_some_and(|s| s.is_sandbox_host(&req.parts));
        // On the sandbox origin only the open routes (the sandbox page) exist.
        let lookup = routes::lookup(state, &req.parts.method, &path, |r| {
            !sandbox_only || r.guard == Guard::Open
        });
        let result = match lookup {
            Lookup::Found(route, param) if route.guard != Guard::Principal => {
                dispatch(state, route.endpoint, param, req).await
            }
            _ if sandbox_only => Err(lookup_error(lookup)),
            _ => match guard(state, &req) {
                Err(e) => Err(e),
                Ok(()) => match lookup {
                    Lookup::Found(route, param) => {
                        dispatch(state, route.endpoint, param, req).await
                    }
                    other => Err(lookup_error(other)),
                },
            },
        };
        result.unwrap_or_else(ApiError::into_response)
    }
}

/// 405 with `Allow` when the path exists with other methods, else 404.
fn lookup_error(lookup: Lookup<'_>) -> ApiError {
    match lookup {
        Lookup::MethodNotAllowed(allow) => ApiError::MethodNotAllowed(allow),
        _ => ApiError::NotFound("not found".into()),
    }
}

/// Checks every guarded request passes before its handler: the principal (when required) and
/// CSRF.
fn guard(state: &State, req: &Req) -> Result<(), ApiError> {
    if state.settings.require_principal && !req.cx.has_principal() {
        return Err(ApiError::Unauthorized("authentication required".into()));
    }
    routes::csrf::check(&state.settings, &req.parts)
}

/// The routing table: which handler answers each endpoint of [`routes::ROUTES`].
///
/// Each handler's future is boxed where it starts, so this future (and the one
/// [`ChatService`] boxes per request) stays the size of one arm's box, not of the largest
/// handler's state: unboxed, every request copied ~10 KB twice on its way in (2% of the
/// relay's instructions per streamed turn, under callgrind).
async fn dispatch(
    state: &State,
    endpoint: Endpoint,
    param: &str,
    req: Req,
) -> Result<Response, ApiError> {
    use futures_util::FutureExt;
    use routes::*;
    let head = req.parts.method == Method::HEAD;
    match endpoint {
        Endpoint::Page => assets::page(state, head),
        Endpoint::Asset => assets::asset(&req, param, head),
        Endpoint::Personas => lists::personas(state, req).boxed().await,
        Endpoint::Commands => lists::commands(state, req).boxed().await,
        Endpoint::Models => lists::models(state, req).boxed().await,
        Endpoint::Config => lists::config(state, req),
        Endpoint::Chat => chat::chat(state, req).boxed().await,
        Endpoint::ToolCall => tools::call(state, req).boxed().await,
        Endpoint::ToolApprovals => approvals::get(state, req).boxed().await,
        Endpoint::ToolApprovalsPut => approvals::put(state, req).boxed().await,
        Endpoint::Prompts => prompts::list(state, req).boxed().await,
        Endpoint::PromptGet => prompts::get(state, req).boxed().await,
        Endpoint::Resources => resources::list(state, req).boxed().await,
        Endpoint::ResourceRead => resources::read(state, req).boxed().await,
        Endpoint::Icon => icons::icon(state, req, param).boxed().await,
        Endpoint::Upload => upload::upload(state, req).boxed().await,
        Endpoint::AppProxy => app_proxy::proxy(state, req).boxed().await,
        Endpoint::AppViewCreate => app_view::create(state, req).boxed().await,
        Endpoint::AppViewPage => app_view::page(state, req, param).boxed().await,
        Endpoint::AppSandbox => app_view::sandbox(state, req).boxed().await,
        Endpoint::DiagramPage => assets::diagram_page(state),
        Endpoint::DiagramScript => assets::diagram_script(&req, param),
        Endpoint::Events => events::subscribe(state, req).boxed().await,
        Endpoint::Conversations => conversations::list(state, req).boxed().await,
        Endpoint::Search => conversations::search(state, req).boxed().await,
        Endpoint::ConversationGet => conversations::get(state, req, param).boxed().await,
        Endpoint::ConversationPut => conversations::put(state, req, param).boxed().await,
        Endpoint::ConversationPatch => conversations::patch(state, req, param).boxed().await,
        Endpoint::ConversationDelete => conversations::delete(state, req, param).boxed().await,
        Endpoint::ConversationAction => conversations::action(state, req, param).boxed().await,
        Endpoint::AiSdkChat => aisdk::chat(state, req).boxed().await,
        Endpoint::AiSdkResume => aisdk::resume(state, req, param).boxed().await,
        Endpoint::AiSdkThreads => aisdk::threads(state, req).boxed().await,
        Endpoint::AiSdkThread => aisdk::thread(state, req, param).boxed().await,
        Endpoint::AiSdkModels => aisdk::models(state, req).boxed().await,
        Endpoint::RunStream => runs::stream(state, req, param).boxed().await,
        Endpoint::RunStop => runs::stop(state, req, param).boxed().await,
        #[cfg(feature = "mcp")]
        Endpoint::UserMcpList
        | Endpoint::UserMcpCreate
        | Endpoint::UserMcpGet
        | Endpoint::UserMcpAction
        | Endpoint::UserMcpPatch
        | Endpoint::UserMcpDelete => {
            user_mcp::dispatch(state, endpoint, req, param)
                .boxed()
                .await
        }
        #[cfg(feature = "mcp")]
        Endpoint::UserMcpOAuthCallback => user_mcp_oauth::callback(state, req).boxed().await,
        #[cfg(feature = "mcp")]
        Endpoint::OperatorMcpPage => operator_mcp::page(state, req).boxed().await,
        #[cfg(feature = "mcp")]
        Endpoint::OperatorMcpSignIn => operator_mcp::sign_in(state, req, param).boxed().await,
        #[cfg(feature = "mcp")]
        Endpoint::OperatorMcpCallback => operator_mcp::callback(state, req).boxed().await,
        #[cfg(feature = "mcp")]
        Endpoint::ClientMetadata => operator_mcp::document(state, &req),
        // The routes are switched off without the feature (`When::UserMcp`).
        #[cfg(not(feature = "mcp"))]
        Endpoint::UserMcpList
        | Endpoint::UserMcpCreate
        | Endpoint::UserMcpGet
        | Endpoint::UserMcpAction
        | Endpoint::UserMcpPatch
        | Endpoint::UserMcpDelete
        | Endpoint::UserMcpOAuthCallback
        | Endpoint::OperatorMcpPage
        | Endpoint::OperatorMcpSignIn
        | Endpoint::OperatorMcpCallback
        | Endpoint::ClientMetadata => Err(ApiError::NotFound("not found".into())),
    }
}

impl<B> tower::Service<Request<B>> for ChatService
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let this = self.clone();
        let req = req.map(|b| {
            b.map_frame(|f| f.map_data(|mut d| d.copy_to_bytes(d.remaining())))
                .map_err(Into::into)
                .boxed_unsync()
        });
        Box::pin(async move { Ok(this.handle(req).await) })
    }
}
