//! [`ChatService`]: the `tower::Service` a host mounts, and the routing table — one `match`
//! from (method, path) to handler, the single place to find any route.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http::{Method, Request};
use http_body::Body;
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;

use crate::config::Config;
use crate::host::RequestContext;
use crate::http_util::{ApiError, BoxError, Response};
use crate::routes;

/// The request body every handler sees, whatever body type the host's server uses.
pub(crate) type RequestBody = UnsyncBoxBody<Bytes, BoxError>;

/// One request, as handlers receive it.
pub(crate) struct Req {
    pub cx: RequestContext,
    pub parts: http::request::Parts,
    pub body: RequestBody,
}

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
#[derive(Clone, Debug)]
pub struct ChatService {
    config: Arc<Config>,
    /// Answers the MCP Apps sandbox page only (see [`ChatService::sandbox_only`]).
    sandbox_only: bool,
}

impl ChatService {
    /// A service for `config`.
    pub fn new(config: Config) -> Self {
        if config.page && !crate::bundle::is_built() {
            tracing::warn!("the UI bundle is not built: run ./scripts/build-ui.sh and rebuild");
        }
        Self {
            config: Arc::new(config),
            sandbox_only: false,
        }
    }

    /// The same service restricted to the MCP Apps sandbox proxy page, to mount on the sandbox
    /// origin ([`ConfigBuilder::sandbox_origin`](crate::ConfigBuilder::sandbox_origin)): views run
    /// same-origin with that page, so nothing else of the service may answer there. Every
    /// other path is 404, with or without a principal.
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
            sandbox_only: true,
        }
    }

    /// The configuration (e.g. to reach [`Config::events`]).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The path relative to the mount point.
    fn relative<'a>(&self, path: &'a str) -> &'a str {
        let prefix = self.config.prefix.as_str();
        match path.strip_prefix(prefix) {
            Some(rest) if !prefix.is_empty() && (rest.is_empty() || rest.starts_with('/')) => rest,
            _ => path,
        }
    }

    async fn handle(self, req: Request<RequestBody>) -> Response {
        let (parts, body) = req.into_parts();
        let cx = RequestContext::from_parts(&parts);
        let path = self.relative(parts.uri.path()).to_owned();
        let method = parts.method.clone();
        let req = Req { cx, parts, body };
        let sandbox_page = method == Method::GET && path == "/apps/sandbox";
        let result = if self.sandbox_only || sandbox_page {
            // The sandbox origin gets no cookies, so no principal: the token is the key.
            match sandbox_page {
                true => routes::app_view::sandbox(&self.config, &req),
                false => Err(ApiError::NotFound("not found".into())),
            }
        } else {
            match guard(&self.config, &req) {
                Ok(()) => dispatch(&self.config, &method, &path, req).await,
                Err(e) => Err(e),
            }
        };
        result.unwrap_or_else(ApiError::into_response)
    }
}

/// Checks every request passes before routing: the principal (when required) and CSRF.
fn guard(config: &Config, req: &Req) -> Result<(), ApiError> {
    if config.require_principal && !req.cx.has_principal() {
        return Err(ApiError::Unauthorized);
    }
    routes::csrf::check(config, &req.parts)
}

/// Splits a path with a parameter into its pattern and the parameter.
fn pattern(path: &str) -> (&str, &str) {
    for (head, pat) in [
        ("/api/conversations/", "/api/conversations/{id}"),
        ("/assets/", "/assets/{path}"),
        ("/apps/view/", "/apps/view/{token}"),
    ] {
        if let Some(rest) = path.strip_prefix(head) {
            return (pat, rest);
        }
    }
    (path, "")
}

/// The routing table.
async fn dispatch(
    config: &Config,
    method: &Method,
    path: &str,
    req: Req,
) -> Result<Response, ApiError> {
    use routes::*;
    let (route, param) = pattern(path);
    let head = method == Method::HEAD;
    match (method.clone(), route) {
        (Method::GET | Method::HEAD, "" | "/") if config.page => assets::page(config, head),
        (Method::GET | Method::HEAD, "/assets/{path}") => assets::asset(&req, param, head),
        (Method::GET, "/api/personas") => catalog::personas(config, req).await,
        (Method::GET, "/api/commands") => catalog::commands(config, req).await,
        (Method::GET, "/api/models") => catalog::models(config, req).await,
        (Method::GET, "/api/config") => catalog::config(config, req),
        (Method::POST, "/api/chat") => chat::chat(config, req).await,
        (Method::POST, "/api/tools/call") => tools::call(config, req).await,
        (Method::GET, "/api/prompts") => prompts::list(config, req).await,
        (Method::POST, "/api/prompts/get") => prompts::get(config, req).await,
        (Method::GET, "/api/resources") => resources::list(config, req).await,
        (Method::POST, "/api/resources/read") => resources::read(config, req).await,
        (Method::POST, "/api/upload") if config.file_upload => upload::upload(config, req).await,
        (Method::POST, "/api/app-proxy") => app_proxy::proxy(config, req).await,
        (Method::POST, "/api/apps/view") => app_view::create(config, req).await,
        (Method::GET, "/apps/view/{token}") => app_view::page(config, &req, param),
        (Method::GET, "/api/events") if config.events.is_some() => events::subscribe(config, req),
        (Method::GET, "/api/conversations") => conversations::list(config, req).await,
        (Method::GET, "/api/conversations/{id}") => conversations::get(config, req, param).await,
        (Method::PUT, "/api/conversations/{id}") => conversations::put(config, req, param).await,
        (Method::PATCH, "/api/conversations/{id}") => {
            conversations::patch(config, req, param).await
        }
        (Method::DELETE, "/api/conversations/{id}") => {
            conversations::delete(config, req, param).await
        }
        _ => Err(unmatched(config, route)),
    }
}

/// 405 with `Allow` when the path exists with other methods, else 404.
fn unmatched(config: &Config, route: &str) -> ApiError {
    let methods: &[Method] = match route {
        "" | "/" if config.page => &[Method::GET, Method::HEAD],
        "/assets/{path}" => &[Method::GET, Method::HEAD],
        "/api/personas" | "/api/commands" | "/api/models" | "/api/config" | "/api/prompts"
        | "/api/resources" | "/api/conversations" => &[Method::GET],
        "/api/events" if config.events.is_some() => &[Method::GET],
        "/api/chat"
        | "/api/tools/call"
        | "/api/prompts/get"
        | "/api/resources/read"
        | "/api/app-proxy"
        | "/api/apps/view" => &[Method::POST],
        "/apps/view/{token}" => &[Method::GET],
        "/api/upload" if config.file_upload => &[Method::POST],
        "/api/conversations/{id}" => &[Method::GET, Method::PUT, Method::PATCH, Method::DELETE],
        _ => return ApiError::NotFound("not found".into()),
    };
    ApiError::MethodNotAllowed(methods.to_vec())
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
