//! The operator signs the service in to a remote MCP server they configured with OAuth, against
//! the local OAuth server of `oauth_server.rs` (over real HTTP, on loopback): the page only the
//! operator sees, the sign-in by the service's client ID metadata document (which the
//! authorization server fetches back from the service) or by dynamic registration, the `iss`
//! check, the hub then listing and calling the server's tools with the token (Streamable HTTP
//! and HTTP+SSE), a refresh of a token about to expire and of one the server stops taking, a
//! sign-in that survives a restart, and no code or token in an answer, a `Debug` or a log line.

use std::sync::atomic::Ordering;
use std::time::Duration;

use http::header;
use lmchatkit::mcp::{FileGrantStore, McpHub, McpServerConfig, MemoryGrantStore, OperatorOAuth};
use lmchatkit::secrets::sealing::{Keyring, SealingKey};
use lmchatkit::{ChatService, Config, RequestContext, Scope};
use serde_json::{Value, json};

use crate::oauth_demo::{COOKIE, serve};
use crate::oauth_server::{CANARY, OAuthServer, Opts};

const PAGE: &str = "/chat/mcp/operator";

/// A host with no models: these tests never chat.
struct Quiet;

#[lmchatkit::async_trait]
impl lmchatkit::Host for Quiet {
    async fn models(
        &self,
        _: &RequestContext,
    ) -> Result<Vec<lmchatkit::protocol::Model>, lmchatkit::HostError> {
        Ok(Vec::new())
    }
    fn complete(
        &self,
        _: &RequestContext,
        _: lmchatkit::CompleteRequest,
    ) -> lmchatkit::EventStream {
        Box::pin(futures_util::stream::empty())
    }
}

/// The service (operator `root`), served on loopback, and the hub over the protected server.
struct Setup {
    base: String,
    hub: McpHub,
    oauth: OperatorOAuth,
    _task: tokio::task::JoinHandle<()>,
}

fn hub_for(up: &OAuthServer, oauth: &OperatorOAuth) -> McpHub {
    McpHub::new(vec![McpServerConfig::http("docs", up.url()).with_oauth()])
        .with_listing_wait(Duration::from_secs(10))
        .with_oauth(oauth.clone())
}

async fn setup_with(up: &OAuthServer, oauth: OperatorOAuth) -> Setup {
    serve_hub(hub_for(up, &oauth), oauth).await
}

/// The service over `hub`, whose sign-ins are `oauth`.
async fn serve_hub(hub: McpHub, oauth: OperatorOAuth) -> Setup {
    let status = hub.clone();
    let config = Config::builder(Quiet)
        .operator("root")
        .mcp_oauth(oauth.clone())
        .mcp_status(move || status.status())
        .build()
        .unwrap();
    let (base, task) = serve(ChatService::new(config)).await;
    Setup {
        base,
        hub,
        oauth,
        _task: task,
    }
}

fn keyring() -> Keyring {
    Keyring::new(SealingKey::generate("k1").unwrap())
}

async fn setup(up: &OAuthServer) -> Setup {
    setup_with(
        up,
        OperatorOAuth::new(keyring(), MemoryGrantStore::default()),
    )
    .await
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A request to the service as `who`, from its own page (`Origin`); the status, the
/// `Location` and the body, which never carries a code or a token.
async fn send(base: &str, who: &str, method: &str, path: &str) -> (u16, String, String) {
    let res = client()
        .request(method.parse().unwrap(), format!("{base}{path}"))
        .header(header::COOKIE, format!("{COOKIE}={who}"))
        .header(header::ORIGIN, base)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let location = res
        .headers()
        .get(header::LOCATION)
        .map(|l| l.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = res.text().await.unwrap();
    assert!(
        !body.contains(CANARY),
        "a code or token in an answer: {body}"
    );
    (status, location, body)
}

/// What the operator's browser does: Sign in on the page, through the authorization server
/// (which approves at once), back to the callback. The callback's path and query.
async fn authorize(s: &Setup, who: &str) -> String {
    let (status, at, body) = send(&s.base, who, "POST", &format!("{PAGE}/sign-in/docs")).await;
    assert_eq!(status, 303, "{body}");
    let res = client().get(&at).send().await.unwrap();
    assert_eq!(
        res.status(),
        303,
        "{}",
        res.text().await.unwrap_or_default()
    );
    let back = res.headers()[header::LOCATION].to_str().unwrap().to_owned();
    let prefix = format!("{}/chat/mcp/operator/callback?", s.base);
    assert!(back.starts_with(&prefix), "{back}");
    back.trim_start_matches(&s.base).to_owned()
}

/// The page's `data-status` of `docs`, as `who` sees it.
async fn status_on_page(s: &Setup, who: &str) -> String {
    let (status, _, page) = send(&s.base, who, "GET", PAGE).await;
    assert_eq!(status, 200, "{page}");
    let at = page
        .find("data-server=\"docs\" data-status=\"")
        .expect(&page);
    page[at..].split('"').nth(3).unwrap_or_default().to_owned()
}

async fn try_greet(
    hub: &McpHub,
    name: &str,
) -> Result<lmchatkit::protocol::ToolResult, lmchatkit::HostError> {
    let scope = Scope::default();
    hub.call_tool(&scope, "docs__greet", json!({ "name": name }))
        .await
}

async fn greet(hub: &McpHub, name: &str) -> lmchatkit::protocol::ToolResult {
    try_greet(hub, name).await.unwrap()
}

#[tokio::test]
async fn the_operator_signs_in_once_by_the_metadata_document_and_the_hub_then_calls_the_servers_tools()
 {
    let logs = lmchatkit_tests::captured::Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(logs.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let up = OAuthServer::start(Opts {
        cimd: true,
        iss: Some(String::new()),
        ..Opts::default()
    })
    .await;
    let s = setup(&up).await;

    // Before: the server waits for the operator (no tools), and says so to the operator.
    let tools = s.hub.list_tools(&Scope::default()).await.unwrap();
    assert!(tools.is_empty(), "{tools:?}");
    assert!(try_greet(&s.hub, "Ada").await.is_err());
    let (_, _, config) = send(&s.base, "root", "GET", "/chat/api/config").await;
    let config: Value = serde_json::from_str(&config).unwrap();
    assert!(
        config["mcp"].to_string().contains("operator must sign"),
        "{config}"
    );
    assert_eq!(status_on_page(&s, "root").await, "sign-in-required");

    // Sign in: the client id is the service's metadata document, which the authorization
    // server fetched back from the service; no registration.
    let callback = authorize(&s, "root").await;
    let asked = up.seen.authorize.lock().unwrap().last().cloned().unwrap();
    let document = format!("{}/chat/oauth/client-metadata.json", s.base);
    assert_eq!(asked["client_id"], document);
    assert_eq!(
        asked["redirect_uri"],
        format!("{}/chat/mcp/operator/callback", s.base)
    );
    assert_eq!(up.seen.registrations.load(Ordering::SeqCst), 0);
    let fetched = up.seen.documents.lock().unwrap().clone();
    assert_eq!(fetched.len(), 1, "{fetched:?}");
    assert_eq!(fetched[0].1["client_name"], "lmchatkit");
    assert_eq!(
        fetched[0].1["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );
    assert!(callback.contains("iss="), "{callback}");
    let (status, _, page) = send(&s.base, "root", "GET", &callback).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Signed in to docs"), "{page}");
    assert_eq!(status_on_page(&s, "root").await, "signed-in");
    assert!(s.oauth.is_signed_in("docs").await);

    // The hub lists and calls the server's tools with the token.
    let tools = s.hub.list_tools(&Scope::default()).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "docs__greet"), "{tools:?}");
    let r = greet(&s.hub, "Ada").await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(r.content, "Hello, Ada!");
    let bearers = up.seen.bearers_at("/mcp");
    let last = bearers.last().cloned().flatten().unwrap_or_default();
    assert!(last.starts_with(&format!("Bearer at-{CANARY}")), "{last}");

    // The same callback again: used.
    let (status, _, page) = send(&s.base, "root", "GET", &callback).await;
    assert_eq!(status, 400, "{page}");

    // Nothing of the grant in a `Debug`, nor in any log line.
    let shown = format!("{:?} {:?}", s.oauth, s.hub);
    assert!(!shown.contains(CANARY), "{shown}");
    let text = logs.text();
    assert!(
        text.contains("signed the service in"),
        "logs were captured: {text}"
    );
    assert!(
        !text.contains(CANARY),
        "a code or token in the logs: {text}"
    );
}

#[tokio::test]
async fn without_metadata_documents_the_operator_signs_in_by_registration_and_a_token_about_to_expire_is_refreshed()
 {
    let up = OAuthServer::start(Opts {
        lifetime: 6,
        ..Opts::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let grants = dir.path().join("operator-mcp.json");
    let key = keyring();
    let s = setup_with(
        &up,
        OperatorOAuth::new(key.clone(), FileGrantStore::new(&grants)),
    )
    .await;
    let callback = authorize(&s, "root").await;
    assert_eq!(up.seen.registrations.load(Ordering::SeqCst), 1);
    assert!(up.seen.documents.lock().unwrap().is_empty());
    let asked = up.seen.authorize.lock().unwrap().last().cloned().unwrap();
    assert_eq!(asked["client_id"], "client-1");
    let (status, _, page) = send(&s.base, "root", "GET", &callback).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(greet(&s.hub, "Ada").await.content, "Hello, Ada!");
    assert_eq!(up.seen.grants("refresh_token"), 0);
    let first = up.seen.bearers_at("/mcp").last().cloned().flatten();

    // The file holds only what was sealed.
    let stored = std::fs::read_to_string(&grants).unwrap();
    assert!(!stored.contains(CANARY), "{stored}");
    assert!(stored.contains("\"docs\""), "{stored}");

    // Three seconds left of six: refreshed before the next call, which reconnects with it.
    tokio::time::sleep(Duration::from_millis(3200)).await;
    let r = greet(&s.hub, "Bob").await;
    assert_eq!(r.content, "Hello, Bob!", "{r:?}");
    assert_eq!(up.seen.grants("refresh_token"), 1);
    let now = up.seen.bearers_at("/mcp").last().cloned().flatten();
    assert_ne!(first, now, "the refreshed token is sent");

    // A restart: a new hub over the same file and key is signed in.
    let again = OperatorOAuth::new(key, FileGrantStore::new(&grants));
    let hub = hub_for(&up, &again);
    assert!(again.is_signed_in("docs").await);
    assert_eq!(greet(&hub, "Cy").await.content, "Hello, Cy!");
    // Another key opens nothing: the server needs the operator again.
    let other = OperatorOAuth::new(keyring(), FileGrantStore::new(&grants));
    let hub = hub_for(&up, &other);
    assert!(!other.is_signed_in("docs").await);
    assert!(try_greet(&hub, "Di").await.is_err());
}

#[tokio::test]
async fn an_authorization_response_from_another_issuer_is_refused() {
    let up = OAuthServer::start(Opts {
        iss: Some("http://evil.example".into()),
        ..Opts::default()
    })
    .await;
    let s = setup(&up).await;
    let callback = authorize(&s, "root").await;
    assert!(
        callback.contains("iss=http%3A%2F%2Fevil.example"),
        "{callback}"
    );
    let (status, _, page) = send(&s.base, "root", "GET", &callback).await;
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("RFC 9207"), "{page}");
    assert_eq!(
        up.seen.grants("authorization_code"),
        0,
        "the code was exchanged"
    );
    assert!(!s.oauth.is_signed_in("docs").await);
    // The sign-in is spent: the same callback is refused again.
    let (status, _, page) = send(&s.base, "root", "GET", &callback).await;
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("unknown, was used already"), "{page}");
}

#[tokio::test]
async fn only_the_operator_sees_the_page_and_ends_a_sign_in() {
    let up = OAuthServer::start(Opts::default()).await;
    let s = setup(&up).await;
    for (method, path) in [
        ("GET", PAGE.to_owned()),
        ("POST", format!("{PAGE}/sign-in/docs")),
    ] {
        let (status, _, body) = send(&s.base, "bob", method, &path).await;
        assert_eq!(status, 404, "{method} {path}: {body}");
    }
    // Bob lands on root's callback: refused before it is looked at, so root's sign-in stays
    // good and ends.
    let callback = authorize(&s, "root").await;
    let (status, _, body) = send(&s.base, "bob", "GET", &callback).await;
    assert_eq!(status, 404, "{body}");
    assert!(!s.oauth.is_signed_in("docs").await);
    let (status, _, page) = send(&s.base, "root", "GET", &callback).await;
    assert_eq!(status, 200, "{page}");
    // A cross-site form cannot start one.
    let res = client()
        .post(format!("{}{PAGE}/sign-in/docs", s.base))
        .header(header::COOKIE, format!("{COOKIE}=root"))
        .header(header::ORIGIN, "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
}

#[tokio::test]
async fn a_token_the_server_stops_taking_is_refreshed_and_a_refused_refresh_waits_for_the_operator()
{
    let up = OAuthServer::start(Opts::default()).await;
    let s = setup(&up).await;
    let callback = authorize(&s, "root").await;
    let (status, _, page) = send(&s.base, "root", "GET", &callback).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(greet(&s.hub, "Ada").await.content, "Hello, Ada!");
    // The server forgets every token (revoked) though it has an hour to live: the next call
    // meets a 401, and the hub refreshes once and connects again.
    up.seen.access.lock().unwrap().clear();
    let r = greet(&s.hub, "Bob").await;
    assert_eq!(r.content, "Hello, Bob!", "{r:?}");
    assert_eq!(up.seen.grants("refresh_token"), 1);
    // Revoked with its refresh token too: the grant is dropped and the page says so.
    up.seen.access.lock().unwrap().clear();
    up.seen.refresh.lock().unwrap().clear();
    let r = try_greet(&s.hub, "Cy").await;
    assert!(r.as_ref().map_or(true, |r| r.is_error), "{r:?}");
    let r = try_greet(&s.hub, "Cy").await;
    assert!(r.as_ref().map_or(true, |r| r.is_error), "{r:?}");
    assert!(!s.oauth.is_signed_in("docs").await);
    assert_eq!(status_on_page(&s, "root").await, "sign-in-required");
}

#[tokio::test]
async fn a_server_on_the_older_sse_transport_gets_the_operators_token_too() {
    let up = OAuthServer::start(Opts::default()).await;
    let oauth = OperatorOAuth::new(keyring(), MemoryGrantStore::default());
    let hub = McpHub::new(vec![
        McpServerConfig::sse("docs", up.sse_url()).with_oauth(),
    ])
    .with_listing_wait(Duration::from_secs(10))
    .with_oauth(oauth.clone());
    let s = serve_hub(hub, oauth).await;
    assert!(try_greet(&s.hub, "Ada").await.is_err(), "no token yet");
    let callback = authorize(&s, "root").await;
    let (status, _, page) = send(&s.base, "root", "GET", &callback).await;
    assert_eq!(status, 200, "{page}");
    let r = greet(&s.hub, "Ada").await;
    assert_eq!(r.content, "Hello, Ada!", "{r:?}");
    let sent = up.seen.bearers_at("/sse");
    let last = sent.last().cloned().flatten().unwrap_or_default();
    assert!(last.starts_with(&format!("Bearer at-{CANARY}")), "{sent:?}");
    let posted = up.seen.bearers_at("/messages");
    assert!(
        posted
            .iter()
            .all(|b| b.as_deref().is_some_and(|b| b.starts_with("Bearer at-"))),
        "{posted:?}"
    );
}
