//! OAuth sign-in to a user's MCP server against a small OAuth server of this test's own (on
//! loopback, over real HTTP): an authorization server (metadata, dynamic registration, an
//! authorization endpoint that approves at once, a token endpoint checking PKCE and issuing
//! short-lived tokens with refresh tokens) in front of a real rmcp MCP server that wants a
//! bearer token. What the TypeScript SDK's demo server cannot do is tested here: refresh of
//! short-lived tokens, a refused authorization server address, no code or token in any answer
//! or log line. The browser flow against that demo is `user_mcp_oauth.rs`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use base64::Engine;
use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use lmchatkit::mcp::OutboundPolicy;
use lmchatkit::secrets::sealing::{Keyring, SealingKey};
use lmchatkit::user_mcp::{MemoryUserMcpStore, UserMcp};
use lmchatkit::{
    ChatService, CompleteRequest, Config, EventStream, Host, HostError, Principal, RequestContext,
    async_trait,
};
use rmcp::model::*;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tower::ServiceExt;

/// In every code and token the server issues: never in an answer or a log line.
const CANARY: &str = "oauth-canary-51c2";
const BASE: &str = "/chat/api/mcp/servers";

/// What the OAuth server does.
#[derive(Clone)]
struct Opts {
    /// Access token lifetime (seconds).
    lifetime: u64,
    /// Whether tokens come with a refresh token.
    refresh: bool,
    /// The authorization server the protected resource metadata names (default: itself).
    authorization_server: Option<String>,
    /// The registration endpoint its metadata names (default: its own).
    registration_endpoint: Option<String>,
}

impl Default for Opts {
    fn default() -> Self {
        Self {
            lifetime: 3600,
            refresh: true,
            authorization_server: None,
            registration_endpoint: None,
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
struct Seen {
    n: AtomicUsize,
    metadata: AtomicUsize,
    codes: Mutex<HashMap<String, Issued>>,
    access: Mutex<HashMap<String, Instant>>,
    refresh: Mutex<HashSet<String>>,
    /// Every form the token endpoint got.
    token_forms: Mutex<Vec<HashMap<String, String>>>,
    /// Every authorization request's query.
    authorize: Mutex<Vec<HashMap<String, String>>>,
    /// The `Authorization` header of every MCP request, per path.
    bearers: Mutex<Vec<(String, Option<String>)>>,
    /// Tool calls that ran.
    calls: Mutex<Vec<String>>,
}

impl Seen {
    fn next(&self) -> usize {
        self.n.fetch_add(1, Ordering::SeqCst) + 1
    }
    fn grants(&self, kind: &str) -> usize {
        let forms = self.token_forms.lock().unwrap();
        forms
            .iter()
            .filter(|f| f.get("grant_type").map(String::as_str) == Some(kind))
            .count()
    }
    fn bearers_at(&self, path: &str) -> Vec<Option<String>> {
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

async fn resource_metadata(State((_, opts)): State<Ctx>, headers: HeaderMap) -> Response {
    let me = origin(&headers);
    let server = opts.authorization_server.clone().unwrap_or(me.clone());
    axum::Json(
        json!({"resource": format!("{me}/mcp"), "authorization_servers": [server],
                      "scopes_supported": ["mcp:tools"]}),
    )
    .into_response()
}

async fn server_metadata(State((seen, opts)): State<Ctx>, headers: HeaderMap) -> Response {
    seen.metadata.fetch_add(1, Ordering::SeqCst);
    let me = origin(&headers);
    let register = opts
        .registration_endpoint
        .clone()
        .unwrap_or(format!("{me}/register"));
    axum::Json(json!({
        "issuer": me, "authorization_endpoint": format!("{me}/authorize"),
        "token_endpoint": format!("{me}/token"), "registration_endpoint": register,
        "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["none"], "scopes_supported": ["mcp:tools"],
    }))
    .into_response()
}

async fn register(State((seen, _)): State<Ctx>, axum::Json(body): axum::Json<Value>) -> Response {
    let id = format!("client-{}", seen.next());
    let reply = json!({"client_id": id, "redirect_uris": body["redirect_uris"],
                       "client_name": body["client_name"], "token_endpoint_auth_method": "none"});
    (StatusCode::CREATED, axum::Json(reply)).into_response()
}

async fn authorize(
    State((seen, _)): State<Ctx>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    seen.authorize.lock().unwrap().push(q.clone());
    let field = |k: &str| q.get(k).cloned().unwrap_or_default();
    if field("response_type") != "code" || field("code_challenge_method") != "S256" {
        return (StatusCode::BAD_REQUEST, "code flow with S256 only").into_response();
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
    let challenge = format!(
        "Bearer error=\"invalid_token\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
        origin(req.headers())
    );
    (StatusCode::UNAUTHORIZED, [("www-authenticate", challenge)]).into_response()
}

/// The OAuth-protected MCP server (`/mcp`), an open one (`/open`) and the authorization
/// server, on one loopback port.
struct OAuthServer {
    port: u16,
    seen: Arc<Seen>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl OAuthServer {
    async fn start(opts: Opts) -> Self {
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
            .layer(axum::middleware::from_fn_with_state(ctx.clone(), guard))
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                get(resource_metadata),
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
    fn url(&self) -> String {
        format!("http://localhost:{}/mcp", self.port)
    }
}

/// A host with no models: these routes never reach it.
struct Quiet;

#[async_trait]
impl Host for Quiet {
    async fn models(
        &self,
        _: &RequestContext,
    ) -> Result<Vec<lmchatkit::protocol::Model>, HostError> {
        Ok(Vec::new())
    }
    fn complete(&self, _: &RequestContext, _: CompleteRequest) -> EventStream {
        Box::pin(futures_util::stream::empty())
    }
}

fn service_with(policy: OutboundPolicy) -> ChatService {
    let keyring = Keyring::new(SealingKey::generate("k1").unwrap());
    let user_mcp = UserMcp::new(MemoryUserMcpStore::default(), keyring, policy);
    let config = Config::builder(Quiet).user_mcp(user_mcp).build().unwrap();
    ChatService::new(config)
}

/// The operator allows `localhost` (the test servers' name) and nothing else.
fn service() -> ChatService {
    service_with(OutboundPolicy::new().with_allowed_host("localhost"))
}

/// Sends a request as `who` (named `localhost:8080`), asserting no code or token is in the
/// answer; the status and the body as JSON (or as a string when it is not JSON).
async fn call(
    svc: &ChatService,
    who: &str,
    method: &str,
    uri: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut b = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "localhost:8080");
    if body.is_some() {
        b = b.header("content-type", "application/json");
    }
    let bytes = body
        .map(|v| serde_json::to_vec(&v).unwrap())
        .unwrap_or_default();
    let mut req = b.body(Full::new(Bytes::from(bytes))).unwrap();
    req.extensions_mut().insert(Principal::new(who));
    let res = svc.clone().oneshot(req).await.unwrap();
    let status = res.status().as_u16();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&body).into_owned();
    assert!(
        !text.contains(CANARY),
        "a code or token in an answer: {text}"
    );
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, value)
}

/// Adds `docs` at `url` for `who`.
async fn add(svc: &ChatService, who: &str, url: &str) {
    let (status, body) = call(
        svc,
        who,
        "POST",
        BASE,
        Some(json!({"slug": "docs", "url": url})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["oauth"], "not_used");
}

/// Starts a sign-in as `who`: the authorization URL.
async fn start(svc: &ChatService, who: &str) -> String {
    let (status, body) = call(svc, who, "POST", &format!("{BASE}/docs/oauth"), None).await;
    assert_eq!(status, 200, "{body}");
    body["authorization_url"].as_str().unwrap().to_owned()
}

/// What a browser does at the authorization page (it approves at once): the callback URL the
/// authorization server redirects to, relative to the service.
async fn approve(authorization_url: &str) -> String {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let res = client.get(authorization_url).send().await.unwrap();
    assert_eq!(
        res.status(),
        303,
        "{}",
        res.text().await.unwrap_or_default()
    );
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    let back = reqwest::Url::parse(&location).unwrap();
    assert_eq!(back.origin().ascii_serialization(), "http://localhost:8080");
    format!("{}?{}", back.path(), back.query().unwrap())
}

async fn status_of(svc: &ChatService, who: &str) -> Value {
    call(svc, who, "GET", &format!("{BASE}/docs"), None).await.1["oauth"].clone()
}

/// Refreshes and accepts `greet` (approval: always).
async fn accept_greet(svc: &ChatService) {
    let (status, review) = call(svc, "alice", "POST", &format!("{BASE}/docs/refresh"), None).await;
    assert_eq!(status, 200, "{review}");
    let hash = review["added"][0]["hash"].clone();
    let accept = json!({"tools": [{"name": "greet", "hash": hash, "approval": "always"}]});
    let (status, body) = call(
        svc,
        "alice",
        "POST",
        &format!("{BASE}/docs/accept"),
        Some(accept),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

async fn greet(svc: &ChatService) -> Value {
    let body = json!({"name": "docs__greet", "arguments": {"name": "Ada"}});
    let (status, result) = call(svc, "alice", "POST", "/chat/api/tools/call", Some(body)).await;
    assert_eq!(status, 200, "{result}");
    result
}

#[tokio::test]
async fn a_sign_in_stores_the_tokens_sends_them_as_bearer_and_refreshes_one_about_to_expire() {
    let up = OAuthServer::start(Opts {
        lifetime: 4,
        ..Opts::default()
    })
    .await;
    let svc = service();
    add(&svc, "alice", &up.url()).await;

    // The server wants a sign-in: the refresh says so, and the server is marked.
    let (status, err) = call(&svc, "alice", "POST", &format!("{BASE}/docs/refresh"), None).await;
    assert_eq!(status, 403, "{err}");
    assert!(err["error"].as_str().unwrap().contains("sign in"), "{err}");
    assert_eq!(status_of(&svc, "alice").await, "sign_in_required");

    // The authorization URL: the code flow with an S256 challenge, the resource, our callback.
    let url = start(&svc, "alice").await;
    let parsed = reqwest::Url::parse(&url).unwrap();
    let q: HashMap<String, String> = parsed.query_pairs().into_owned().collect();
    assert_eq!(parsed.path(), "/authorize");
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["resource"], up.url());
    assert_eq!(
        q["redirect_uri"],
        "http://localhost:8080/chat/api/mcp/oauth/callback"
    );
    assert!(q["client_id"].starts_with("client-"), "registered: {q:?}");
    assert!(!q["state"].is_empty());

    let back = approve(&url).await;
    let (status, page) = call(&svc, "alice", "GET", &back, None).await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.as_str().unwrap().contains("Signed in to docs"),
        "{page}"
    );
    assert_eq!(status_of(&svc, "alice").await, "signed_in");
    let forms = up.seen.token_forms.lock().unwrap().clone();
    assert_eq!(
        forms[0]["resource"],
        up.url(),
        "the token request names the resource"
    );
    // The callback works once.
    let (status, page) = call(&svc, "alice", "GET", &back, None).await;
    assert_eq!(status, 400, "{page}");

    // Refresh and call with the bearer token.
    accept_greet(&svc).await;
    let result = greet(&svc).await;
    assert_eq!(result["content"], "Hello, Ada!", "{result}");
    let first = format!("Bearer at-{CANARY}-");
    assert!(
        up.seen
            .bearers_at("/mcp")
            .iter()
            .flatten()
            .all(|b| b.starts_with(&first)),
        "every request after the sign-in carried the token"
    );
    assert_eq!(up.seen.grants("refresh_token"), 0);

    // Two seconds later the 4 s token has half its life left: refreshed before the call,
    // stored, and the next call uses the new one without refreshing again.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let result = greet(&svc).await;
    assert_eq!(result["content"], "Hello, Ada!", "{result}");
    assert_eq!(up.seen.grants("refresh_token"), 1);
    let refreshed = up
        .seen
        .bearers_at("/mcp")
        .last()
        .cloned()
        .flatten()
        .unwrap();
    let result = greet(&svc).await;
    assert_eq!(result["content"], "Hello, Ada!", "{result}");
    assert_eq!(
        up.seen.grants("refresh_token"),
        1,
        "the refreshed token was stored"
    );
    assert_eq!(
        up.seen.bearers_at("/mcp").last().cloned().flatten(),
        Some(refreshed)
    );
    assert_eq!(up.seen.calls.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn a_state_another_principal_started_cannot_end_a_sign_in() {
    let up = OAuthServer::start(Opts::default()).await;
    let svc = service();
    add(&svc, "alice", &up.url()).await;
    add(&svc, "mallory", &up.url()).await;

    // Mallory obtained alice's authorization URL, signs in at the authorization server with
    // her own account, and sends the callback from her own session: refused, and alice's
    // server gets no tokens.
    let alices = start(&svc, "alice").await;
    let back = approve(&alices).await;
    let (status, page) = call(&svc, "mallory", "GET", &back, None).await;
    assert_eq!(status, 403, "{page}");
    assert!(page.as_str().unwrap().contains("another user"), "{page}");
    assert_eq!(status_of(&svc, "alice").await, "not_used");
    assert_eq!(status_of(&svc, "mallory").await, "not_used");
    assert_eq!(
        up.seen.grants("authorization_code"),
        0,
        "no code was exchanged"
    );

    // The other way round: mallory's own sign-in ending in alice's session (a link mallory
    // made alice open) lands nowhere either.
    let mallorys = start(&svc, "mallory").await;
    let back = approve(&mallorys).await;
    let (status, _) = call(&svc, "alice", "GET", &back, None).await;
    assert_eq!(status, 403);
    assert_eq!(status_of(&svc, "alice").await, "not_used");

    // Alice's own sign-in still works.
    let back = approve(&alices).await;
    let (status, page) = call(&svc, "alice", "GET", &back, None).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(status_of(&svc, "alice").await, "signed_in");
    assert_eq!(status_of(&svc, "mallory").await, "not_used");
}

#[tokio::test]
async fn an_authorization_server_at_a_refused_address_is_refused_unless_allowed() {
    // The resource names an authorization server at 127.0.0.1, which the operator did not
    // allow (only `localhost` is): nothing is sent to it.
    let up = OAuthServer::start(Opts::default()).await;
    let loopback = OAuthServer::start(Opts {
        authorization_server: Some(format!("http://127.0.0.1:{}", up.port)),
        ..Opts::default()
    })
    .await;
    let svc = service();
    add(&svc, "alice", &loopback.url()).await;
    let (status, err) = call(&svc, "alice", "POST", &format!("{BASE}/docs/oauth"), None).await;
    assert_eq!(status, 502, "{err}");
    assert!(
        err["error"].as_str().unwrap().contains("127.0.0.1"),
        "{err}"
    );
    assert_eq!(
        up.seen.metadata.load(Ordering::SeqCst),
        0,
        "the refused server was asked"
    );
    // Allowed by the operator, the same sign-in starts.
    let svc = service_with(
        OutboundPolicy::new()
            .with_allowed_host("localhost")
            .with_allowed_host("127.0.0.1"),
    );
    add(&svc, "alice", &loopback.url()).await;
    let url = start(&svc, "alice").await;
    assert!(
        url.starts_with(&format!("http://127.0.0.1:{}/authorize?", up.port)),
        "{url}"
    );

    // A registration endpoint at the cloud metadata address: refused, even over https.
    let metadata = OAuthServer::start(Opts {
        registration_endpoint: Some("https://169.254.169.254/register".into()),
        ..Opts::default()
    })
    .await;
    let svc = service();
    add(&svc, "alice", &metadata.url()).await;
    let (status, err) = call(&svc, "alice", "POST", &format!("{BASE}/docs/oauth"), None).await;
    assert_eq!(status, 502, "{err}");
    assert!(
        err["error"].as_str().unwrap().contains("link-local"),
        "{err}"
    );
    // An authorization server there: refused too.
    let named = OAuthServer::start(Opts {
        authorization_server: Some("https://169.254.169.254/".into()),
        ..Opts::default()
    })
    .await;
    let svc = service();
    add(&svc, "alice", &named.url()).await;
    let (status, err) = call(&svc, "alice", "POST", &format!("{BASE}/docs/oauth"), None).await;
    assert_eq!(status, 502, "{err}");
}

#[tokio::test]
async fn an_expired_token_without_a_refresh_token_asks_for_a_sign_in_and_a_new_url_drops_the_tokens()
 {
    let up = OAuthServer::start(Opts {
        lifetime: 4,
        refresh: false,
        ..Opts::default()
    })
    .await;
    let svc = service();
    add(&svc, "alice", &up.url()).await;
    let back = approve(&start(&svc, "alice").await).await;
    assert_eq!(call(&svc, "alice", "GET", &back, None).await.0, 200);
    accept_greet(&svc).await;
    assert_eq!(greet(&svc).await["content"], "Hello, Ada!");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let result = greet(&svc).await;
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        result["content"].as_str().unwrap().contains("sign in"),
        "{result}"
    );
    assert_eq!(status_of(&svc, "alice").await, "sign_in_required");
    assert_eq!(up.seen.calls.lock().unwrap().len(), 1);

    // Signed in again, then the URL changes: the tokens are not sent to the new server.
    let back = approve(&start(&svc, "alice").await).await;
    assert_eq!(call(&svc, "alice", "GET", &back, None).await.0, 200);
    let open = format!("http://localhost:{}/open", up.port);
    let (status, body) = call(
        &svc,
        "alice",
        "PATCH",
        &format!("{BASE}/docs"),
        Some(json!({"url": open})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["oauth"], "not_used");
    let (status, review) = call(&svc, "alice", "POST", &format!("{BASE}/docs/refresh"), None).await;
    assert_eq!(status, 200, "{review}");
    let sent = up.seen.bearers_at("/open");
    assert!(
        !sent.is_empty() && sent.iter().all(Option::is_none),
        "{sent:?}"
    );
}

#[tokio::test]
async fn a_token_the_server_stops_taking_is_refreshed_during_the_connection_and_kept() {
    let up = OAuthServer::start(Opts::default()).await;
    let svc = service();
    add(&svc, "alice", &up.url()).await;
    let back = approve(&start(&svc, "alice").await).await;
    assert_eq!(call(&svc, "alice", "GET", &back, None).await.0, 200);
    accept_greet(&svc).await;
    // The server forgets every token (revoked) though it has an hour to live: the connection
    // meets a 401, rmcp refreshes once and retries, and the new token is stored.
    up.seen.access.lock().unwrap().clear();
    assert_eq!(greet(&svc).await["content"], "Hello, Ada!");
    assert_eq!(up.seen.grants("refresh_token"), 1);
    let fresh = up
        .seen
        .bearers_at("/mcp")
        .last()
        .cloned()
        .flatten()
        .unwrap();
    assert_eq!(greet(&svc).await["content"], "Hello, Ada!");
    assert_eq!(
        up.seen.grants("refresh_token"),
        1,
        "the refreshed token was kept"
    );
    let sent = up.seen.bearers_at("/mcp").last().cloned().flatten();
    assert_eq!(sent, Some(fresh));
    assert_eq!(status_of(&svc, "alice").await, "signed_in");
    // Revoked with its refresh token too: the server needs a sign-in again.
    up.seen.access.lock().unwrap().clear();
    up.seen.refresh.lock().unwrap().clear();
    let result = greet(&svc).await;
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(status_of(&svc, "alice").await, "sign_in_required");
}

/// Every log line, at every level and from every crate, of what runs on this test's thread.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[tokio::test]
async fn no_log_line_carries_a_code_or_a_token() {
    let logs = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(logs.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let up = OAuthServer::start(Opts {
        lifetime: 4,
        ..Opts::default()
    })
    .await;
    let svc = service();
    add(&svc, "alice", &up.url()).await;
    call(&svc, "alice", "POST", &format!("{BASE}/docs/refresh"), None).await;
    let back = approve(&start(&svc, "alice").await).await;
    assert_eq!(call(&svc, "alice", "GET", &back, None).await.0, 200);
    call(&svc, "alice", "GET", &back, None).await;
    accept_greet(&svc).await;
    greet(&svc).await;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    greet(&svc).await;
    assert_eq!(
        up.seen.grants("refresh_token"),
        1,
        "a refresh was logged too"
    );
    let text = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(
        text.contains("signed in to a user's MCP server"),
        "logs were captured: {text}"
    );
    let leaks: Vec<&str> = text.lines().filter(|l| l.contains(CANARY)).collect();
    assert!(
        leaks.is_empty(),
        "{} log lines carry a code or a token:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
}
