//! The local OAuth server of `user_mcp_oauth_local.rs` and `operator_mcp_oauth.rs`: an
//! authorization server (metadata, dynamic registration, an authorization endpoint that approves
//! at once, a token endpoint that checks PKCE and issues short-lived tokens with refresh tokens)
//! in front of a real rmcp MCP server that wants a live bearer token (`/mcp`), plus the same MCP
//! server open (`/open`), and a small one on the older HTTP+SSE transport behind the same token
//! (`/sse`, its messages at `/messages`), on one loopback port. Every code and token carries [`CANARY`].
//!
//! With [`Opts::cimd`] it advertises client ID metadata documents and takes a URL as a
//! `client_id` only after fetching it (over HTTP, from whoever serves it) and finding the
//! `redirect_uri` among its `redirect_uris`; with [`Opts::iss`] it advertises RFC 9207 and
//! sends an `iss` (its own, or a wrong one) with the code.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use base64::Engine;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use rmcp::model::*;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// In every code and token the server issues: never in an answer or a log line.
pub const CANARY: &str = "oauth-canary-51c2";

/// What the OAuth server does.
#[derive(Clone)]
pub struct Opts {
    /// Access token lifetime (seconds).
    pub lifetime: u64,
    /// Whether tokens come with a refresh token.
    pub refresh: bool,
    /// The authorization server the protected resource metadata names (default: itself).
    pub authorization_server: Option<String>,
    /// The registration endpoint its metadata names (default: its own).
    pub registration_endpoint: Option<String>,
    /// Advertises `client_id_metadata_document_supported` and fetches URL client ids.
    pub cimd: bool,
    /// Advertises `authorization_response_iss_parameter_supported` and sends this `iss`
    /// (`Some("")`: its own issuer).
    pub iss: Option<String>,
}

impl Default for Opts {
    fn default() -> Self {
        Self {
            lifetime: 3600,
            refresh: true,
            authorization_server: None,
            registration_endpoint: None,
            cimd: false,
            iss: None,
        }
    }
}

struct Issued {
    challenge: String,
    redirect_uri: String,
    client_id: String,
}

/// What the OAuth server saw and issued.
#[derive(Default)]
pub struct Seen {
    n: AtomicUsize,
    pub metadata: AtomicUsize,
    codes: Mutex<HashMap<String, Issued>>,
    pub access: Mutex<HashMap<String, Instant>>,
    pub refresh: Mutex<HashSet<String>>,
    /// Every form the token endpoint got.
    pub token_forms: Mutex<Vec<HashMap<String, String>>>,
    /// Every authorization request's query.
    pub authorize: Mutex<Vec<HashMap<String, String>>>,
    /// The `Authorization` header of every MCP request, per path.
    pub bearers: Mutex<Vec<(String, Option<String>)>>,
    /// Tool calls that ran.
    pub calls: Mutex<Vec<String>>,
    /// Dynamic registrations.
    pub registrations: AtomicUsize,
    /// The client ID metadata documents fetched: the URL and what it answered.
    pub documents: Mutex<Vec<(String, Value)>>,
    /// The open event streams of `/sse`, by session.
    streams: Mutex<HashMap<String, tokio::sync::mpsc::UnboundedSender<String>>>,
}

impl Seen {
    fn next(&self) -> usize {
        self.n.fetch_add(1, Ordering::SeqCst) + 1
    }
    pub fn grants(&self, kind: &str) -> usize {
        let forms = self.token_forms.lock().unwrap();
        forms
            .iter()
            .filter(|f| f.get("grant_type").map(String::as_str) == Some(kind))
            .count()
    }
    pub fn bearers_at(&self, path: &str) -> Vec<Option<String>> {
        let all = self.bearers.lock().unwrap();
        all.iter()
            .filter(|(p, _)| p == path)
            .map(|(_, b)| b.clone())
            .collect()
    }
}

#[derive(Clone)]
struct Greeter(Arc<Seen>);

impl ServerHandler for Greeter {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("greeter", "0.1.0"))
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: rmcp::service::RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "greet",
            "Greets someone",
            Arc::new(schema.as_object().unwrap().clone()),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: rmcp::service::RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.clone().unwrap_or_default();
        let name = args.get("name").and_then(Value::as_str).unwrap_or("you");
        let text = format!("Hello, {name}!");
        self.0.calls.lock().unwrap().push(text.clone());
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

type Ctx = (Arc<Seen>, Opts);

/// `http://{Host}`: the server answers as whatever name it was reached by.
fn origin(headers: &HeaderMap) -> String {
    let host = headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    format!("http://{host}")
}

/// The protected resource metadata of the server at `path`.
fn resource_metadata_of(opts: &Opts, headers: &HeaderMap, path: &str) -> Response {
    let me = origin(headers);
    let server = opts.authorization_server.clone().unwrap_or(me.clone());
    axum::Json(
        json!({"resource": format!("{me}{path}"), "authorization_servers": [server],
                      "scopes_supported": ["mcp:tools"]}),
    )
    .into_response()
}

async fn resource_metadata(State((_, opts)): State<Ctx>, headers: HeaderMap) -> Response {
    resource_metadata_of(&opts, &headers, "/mcp")
}

async fn sse_resource_metadata(State((_, opts)): State<Ctx>, headers: HeaderMap) -> Response {
    resource_metadata_of(&opts, &headers, "/sse")
}

async fn server_metadata(State((seen, opts)): State<Ctx>, headers: HeaderMap) -> Response {
    seen.metadata.fetch_add(1, Ordering::SeqCst);
    let me = origin(&headers);
    let register = opts
        .registration_endpoint
        .clone()
        .unwrap_or(format!("{me}/register"));
    let mut metadata = json!({
        "issuer": me, "authorization_endpoint": format!("{me}/authorize"),
        "token_endpoint": format!("{me}/token"), "registration_endpoint": register,
        "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["none"], "scopes_supported": ["mcp:tools"],
    });
    if opts.cimd {
        metadata["client_id_metadata_document_supported"] = true.into();
    }
    if opts.iss.is_some() {
        metadata["authorization_response_iss_parameter_supported"] = true.into();
    }
    axum::Json(metadata).into_response()
}

async fn register(State((seen, _)): State<Ctx>, axum::Json(body): axum::Json<Value>) -> Response {
    seen.registrations.fetch_add(1, Ordering::SeqCst);
    let id = format!("client-{}", seen.next());
    let reply = json!({"client_id": id, "redirect_uris": body["redirect_uris"],
                       "client_name": body["client_name"], "token_endpoint_auth_method": "none"});
    (StatusCode::CREATED, axum::Json(reply)).into_response()
}

/// Fetches the client ID metadata document at `url`; whether it names itself and lists
/// `redirect_uri`.
async fn document_allows(seen: &Seen, url: &str, redirect_uri: &str) -> bool {
    let Ok(res) = reqwest::get(url).await else {
        return false;
    };
    let Ok(doc) = res.json::<Value>().await else {
        return false;
    };
    seen.documents
        .lock()
        .unwrap()
        .push((url.to_owned(), doc.clone()));
    doc["client_id"] == url
        && doc["token_endpoint_auth_method"] == "none"
        && doc["redirect_uris"]
            .as_array()
            .is_some_and(|uris| uris.iter().any(|u| u == redirect_uri))
}

async fn authorize(
    State((seen, opts)): State<Ctx>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    seen.authorize.lock().unwrap().push(q.clone());
    let field = |k: &str| q.get(k).cloned().unwrap_or_default();
    if field("response_type") != "code" || field("code_challenge_method") != "S256" {
        return (StatusCode::BAD_REQUEST, "code flow with S256 only").into_response();
    }
    let client_id = field("client_id");
    if client_id.starts_with("http")
        && (!opts.cimd || !document_allows(&seen, &client_id, &field("redirect_uri")).await)
    {
        return (StatusCode::BAD_REQUEST, "unusable client metadata document").into_response();
    }
    let code = format!("code-{CANARY}-{}", seen.next());
    let issued = Issued {
        challenge: field("code_challenge"),
        redirect_uri: field("redirect_uri"),
        client_id: field("client_id"),
    };
    seen.codes.lock().unwrap().insert(code.clone(), issued);
    let mut back = reqwest::Url::parse(&field("redirect_uri")).unwrap();
    back.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &field("state"));
    match opts.iss.as_deref() {
        Some("") => {
            back.query_pairs_mut().append_pair("iss", &origin(&headers));
        }
        Some(other) => {
            back.query_pairs_mut().append_pair("iss", other);
        }
        None => {}
    }
    Redirect::to(back.as_str()).into_response()
}

fn tokens(seen: &Seen, opts: &Opts) -> Response {
    let n = seen.next();
    let access = format!("at-{CANARY}-{n}");
    let expires = Instant::now() + Duration::from_secs(opts.lifetime);
    seen.access.lock().unwrap().insert(access.clone(), expires);
    let mut reply = json!({"access_token": access, "token_type": "Bearer",
                           "expires_in": opts.lifetime, "scope": "mcp:tools"});
    if opts.refresh {
        let refresh = format!("rt-{CANARY}-{n}");
        seen.refresh.lock().unwrap().insert(refresh.clone());
        reply["refresh_token"] = refresh.into();
    }
    axum::Json(reply).into_response()
}

fn invalid_grant() -> Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(json!({"error": "invalid_grant"})),
    )
        .into_response()
}

async fn token(
    State((seen, opts)): State<Ctx>,
    Form(f): Form<HashMap<String, String>>,
) -> Response {
    seen.token_forms.lock().unwrap().push(f.clone());
    let field = |k: &str| f.get(k).cloned().unwrap_or_default();
    match field("grant_type").as_str() {
        "authorization_code" => {
            let Some(issued) = seen.codes.lock().unwrap().remove(&field("code")) else {
                return invalid_grant();
            };
            let digest = Sha256::digest(field("code_verifier").as_bytes());
            let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
            let client_ok = f.get("client_id").is_none_or(|c| *c == issued.client_id);
            if challenge != issued.challenge
                || field("redirect_uri") != issued.redirect_uri
                || !client_ok
            {
                return invalid_grant();
            }
            tokens(&seen, &opts)
        }
        "refresh_token" => {
            if !seen.refresh.lock().unwrap().remove(&field("refresh_token")) {
                return invalid_grant();
            }
            tokens(&seen, &opts)
        }
        _ => invalid_grant(),
    }
}

/// Lets a request through to the MCP server only with a live bearer token.
async fn guard(
    State((seen, _)): State<Ctx>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let path = req.uri().path().to_owned();
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    seen.bearers
        .lock()
        .unwrap()
        .push((path.clone(), auth.clone()));
    if path == "/open" {
        return next.run(req).await;
    }
    let live = auth
        .as_deref()
        .and_then(|a| a.strip_prefix("Bearer "))
        .and_then(|t| seen.access.lock().unwrap().get(t).copied())
        .is_some_and(|until| until > Instant::now());
    if live {
        return next.run(req).await;
    }
    let resource = if path == "/mcp" { "mcp" } else { "sse" };
    let challenge = format!(
        "Bearer error=\"invalid_token\", resource_metadata=\"{}/.well-known/oauth-protected-resource/{resource}\"",
        origin(req.headers())
    );
    (StatusCode::UNAUTHORIZED, [("www-authenticate", challenge)]).into_response()
}

/// `GET /sse`: an HTTP+SSE event stream whose first event names its session's endpoint.
async fn sse(State((seen, _)): State<Ctx>) -> Response {
    let session = format!("s{}", seen.next());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let _ = tx.send(format!(
        "event: endpoint\ndata: /messages?session={session}\n\n"
    ));
    seen.streams.lock().unwrap().insert(session, tx);
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|frame| (Ok::<_, std::convert::Infallible>(frame), rx))
    });
    (
        [("content-type", "text/event-stream")],
        axum::body::Body::from_stream(body),
    )
        .into_response()
}

/// `POST /messages?session=…`: one JSON-RPC message; the answer goes out on the stream.
async fn sse_message(
    State((seen, _)): State<Ctx>,
    Query(q): Query<HashMap<String, String>>,
    axum::Json(m): axum::Json<Value>,
) -> Response {
    let Some(tx) = q
        .get("session")
        .and_then(|s| seen.streams.lock().unwrap().get(s).cloned())
    else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let Some(id) = m.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match m["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "greeter-sse", "version": "0.1.0"}}),
        "tools/list" => json!({"tools": [{"name": "greet", "description": "Greets someone",
            "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}]}),
        "tools/call" => {
            let name = m["params"]["arguments"]["name"].as_str().unwrap_or("you");
            let text = format!("Hello, {name}!");
            seen.calls.lock().unwrap().push(text.clone());
            json!({"content": [{"type": "text", "text": text}]})
        }
        "ping" => json!({}),
        _ => {
            let reply = json!({"jsonrpc": "2.0", "id": id,
                               "error": {"code": -32601, "message": "method not found"}});
            let _ = tx.send(format!("event: message\ndata: {reply}\n\n"));
            return StatusCode::ACCEPTED.into_response();
        }
    };
    let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
    let _ = tx.send(format!("event: message\ndata: {reply}\n\n"));
    StatusCode::ACCEPTED.into_response()
}

/// The OAuth-protected MCP server (`/mcp`), an open one (`/open`) and the authorization
/// server, on one loopback port.
pub struct OAuthServer {
    pub port: u16,
    pub seen: Arc<Seen>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl OAuthServer {
    pub async fn start(opts: Opts) -> Self {
        let seen = Arc::new(Seen::default());
        let s = seen.clone();
        let mcp: StreamableHttpService<Greeter, LocalSessionManager> = StreamableHttpService::new(
            move || Ok(Greeter(s.clone())),
            Default::default(),
            StreamableHttpServerConfig::default(),
        );
        let ctx: Ctx = (seen.clone(), opts);
        let router = axum::Router::new()
            .route_service("/mcp", mcp.clone())
            .route_service("/open", mcp)
            .route("/sse", get(sse))
            .route("/messages", post(sse_message))
            .layer(axum::middleware::from_fn_with_state(ctx.clone(), guard))
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                get(resource_metadata),
            )
            .route(
                "/.well-known/oauth-protected-resource/sse",
                get(sse_resource_metadata),
            )
            .route(
                "/.well-known/oauth-authorization-server",
                get(server_metadata),
            )
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(ctx);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
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
        Self { port, seen, task }
    }

    /// The protected MCP server's URL, by the name `localhost`.
    pub fn url(&self) -> String {
        format!("http://localhost:{}/mcp", self.port)
    }

    /// The protected HTTP+SSE server's event stream, by the name `localhost`.
    pub fn sse_url(&self) -> String {
        format!("http://localhost:{}/sse", self.port)
    }
}
