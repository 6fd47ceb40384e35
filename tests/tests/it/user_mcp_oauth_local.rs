//! OAuth sign-in to a user's MCP server against a small OAuth server of this test's own (on
//! loopback, over real HTTP): an authorization server (metadata, dynamic registration, an
//! authorization endpoint that approves at once, a token endpoint checking PKCE and issuing
//! short-lived tokens with refresh tokens) in front of a real rmcp MCP server that wants a
//! bearer token. What the TypeScript SDK's demo server cannot do is tested here: refresh of
//! short-lived tokens, a refused authorization server address, no code or token in any answer
//! or log line, and the service's client ID metadata document as the client id where the
//! authorization server takes it. The browser flow against that demo is `user_mcp_oauth.rs`.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use lmchatkit::mcp::OutboundPolicy;
use lmchatkit::secrets::sealing::{Keyring, SealingKey};
use lmchatkit::user_mcp::{MemoryUserMcpStore, UserMcp};
use lmchatkit::{
    ChatService, CompleteRequest, Config, EventStream, Host, HostError, Principal, RequestContext,
    async_trait,
};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::oauth_server;

use oauth_server::{CANARY, OAuthServer, Opts};
const BASE: &str = "/chat/api/mcp/servers";

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

#[tokio::test]
async fn no_log_line_carries_a_code_or_a_token() {
    let logs = lmchatkit_tests::captured::Captured::default();
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
    let text = logs.text();
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

#[tokio::test]
async fn a_users_sign_in_uses_the_services_metadata_document_where_the_authorization_server_takes_it()
 {
    use crate::oauth_demo::{api, serve, sign_in_over_http};
    let up = OAuthServer::start(Opts {
        cimd: true,
        iss: Some(String::new()),
        ..Opts::default()
    })
    .await;
    let (base, _task) = serve(service()).await;
    let (status, body) = api(
        &base,
        "alice",
        "POST",
        BASE,
        Some(json!({"slug": "docs", "url": up.url()})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, page) = sign_in_over_http(&base, "alice", "docs").await;
    assert_eq!(status, 200, "{page}");
    assert!(!page.contains(CANARY), "{page}");
    // The client id was the service's document, which the authorization server fetched; no
    // registration.
    let document = format!("{base}/chat/oauth/client-metadata.json");
    let asked = up.seen.authorize.lock().unwrap().last().cloned().unwrap();
    assert_eq!(asked["client_id"], document);
    assert_eq!(up.seen.registrations.load(Ordering::SeqCst), 0);
    let fetched = up.seen.documents.lock().unwrap().clone();
    assert_eq!(fetched.len(), 1, "{fetched:?}");
    assert_eq!(
        fetched[0].1["redirect_uris"],
        json!([format!("{base}/chat/api/mcp/oauth/callback")])
    );
    let (_, server) = api(&base, "alice", "GET", &format!("{BASE}/docs"), None).await;
    assert_eq!(server["oauth"], "signed_in");
}
