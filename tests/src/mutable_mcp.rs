//! A real MCP server (rmcp) over Streamable HTTP on loopback whose tool list a test changes
//! between calls, as a user's own server might after they accepted its tools. It records the
//! `x-api-key` header of every request and every call it ran. `/mcp` is the endpoint;
//! `/moved` redirects there (same origin), `/metadata` to the cloud metadata address and
//! `/to-loopback` from `localhost:N` to `127.0.0.1:N`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::routing::any;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use rmcp::model::*;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};

/// An MCP server whose tool list the test changes between refreshes.
#[derive(Clone, Default)]
pub struct Mutable {
    /// What `tools/list` answers.
    pub tools: Arc<Mutex<Vec<Tool>>>,
    /// `ran {name} {arguments}` of every call it ran.
    pub calls: Arc<Mutex<Vec<String>>>,
}

impl ServerHandler for Mutable {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mutable", "0.1.0"))
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: rmcp::service::RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(
            self.tools.lock().unwrap().clone(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: rmcp::service::RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let ran = format!("ran {} {args}", request.name);
        self.calls.lock().unwrap().push(ran.clone());
        Ok(CallToolResult::success(vec![ContentBlock::text(ran)]).into())
    }
}

/// A tool taking `{"q": string}`.
pub fn tool(name: impl Into<String>, description: impl Into<String>) -> Tool {
    let schema = json!({"type": "object", "properties": {"q": {"type": "string"}}});
    let Value::Object(schema) = schema else {
        unreachable!()
    };
    Tool::new(name.into(), description.into(), Arc::new(schema))
}

/// The first tools the server lists: `search` (read-only) and `delete_page`.
pub fn first_tools() -> Vec<Tool> {
    vec![
        tool("search", "Searches the docs").annotate(ToolAnnotations::new().read_only(true)),
        tool("delete_page", "Deletes a page"),
    ]
}

/// A running [`Mutable`] server; stopped when dropped.
pub struct Upstream {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its tools and calls.
    pub server: Mutable,
    /// Server instances made (one per request on a stateless connection).
    pub sessions: Arc<AtomicUsize>,
    /// The `x-api-key` of every request.
    pub keys: Arc<Mutex<Vec<Option<String>>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Upstream {
    /// `http://127.0.0.1:N/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

/// Serves `router` on 127.0.0.1.
async fn serve(router: axum::Router) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let svc = TowerToHyperService::new(router.clone());
            tokio::spawn(async move {
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (addr, task)
}

/// Starts the server listing [`first_tools`].
pub async fn upstream() -> Upstream {
    let server = Mutable::default();
    *server.tools.lock().unwrap() = first_tools();
    let sessions = Arc::new(AtomicUsize::new(0));
    let (s, count) = (server.clone(), sessions.clone());
    let mcp: StreamableHttpService<Mutable, LocalSessionManager> = StreamableHttpService::new(
        move || {
            count.fetch_add(1, Ordering::SeqCst);
            Ok(s.clone())
        },
        Default::default(),
        StreamableHttpServerConfig::default(),
    );
    let keys = Arc::new(Mutex::new(Vec::new()));
    let seen = keys.clone();
    let mcp = tower::ServiceBuilder::new()
        .map_request(move |req: http::Request<axum::body::Body>| {
            let key = req
                .headers()
                .get("x-api-key")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            seen.lock().unwrap().push(key);
            req
        })
        .service(mcp);
    let router = axum::Router::new()
        .route_service("/mcp", mcp)
        // Same origin: followed. Another origin (the metadata address): refused.
        .route(
            "/moved",
            any(|| async { axum::response::Redirect::temporary("/mcp") }),
        )
        .route(
            "/metadata",
            any(|| async {
                axum::response::Redirect::temporary("http://169.254.169.254/latest/meta-data")
            }),
        )
        // From `localhost:N` to `127.0.0.1:N`: this very server by its address.
        .route(
            "/to-loopback",
            any(|headers: http::HeaderMap| async move {
                let host = headers
                    .get("host")
                    .and_then(|h| h.to_str().ok())
                    .unwrap_or_default();
                let port = host.rsplit(':').next().unwrap_or_default();
                axum::response::Redirect::temporary(&format!("http://127.0.0.1:{port}/mcp"))
            }),
        );
    let (addr, task) = serve(router).await;
    Upstream {
        addr,
        server,
        sessions,
        keys,
        task,
    }
}
