//! The route list walked: every route reaches its handler with each of its methods, every other
//! method of its path is 405 with exactly the list's methods in `Allow`, and switched-off
//! routes are absent.

use std::collections::BTreeSet;

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use lmchatkit_protocol::Model;
use tower::ServiceExt;

use super::{Guard, ROUTES, When};
use crate::host::{CompleteRequest, EventStream, Host, HostError, RequestContext};
use crate::store::MemoryStore;
use crate::{ChatService, Config};

struct Quiet;

#[async_trait::async_trait]
impl Host for Quiet {
    async fn models(&self, _: &RequestContext) -> Result<Vec<Model>, HostError> {
        Ok(vec![Model::new("m")])
    }
    fn complete(&self, _: &RequestContext, _: CompleteRequest) -> EventStream {
        Box::pin(futures_util::stream::empty())
    }
}

/// Each user's own MCP servers, in memory.
fn user_mcp() -> crate::user_mcp::UserMcp {
    use crate::secrets::sealing::{Keyring, SealingKey};
    let keyring = Keyring::new(SealingKey::generate("k1").expect("key id"));
    crate::user_mcp::UserMcp::new(
        crate::user_mcp::MemoryUserMcpStore::default(),
        keyring,
        crate::mcp::OutboundPolicy::new(),
    )
}

/// The operator's sign-ins, in memory.
fn mcp_oauth() -> crate::mcp::OperatorOAuth {
    use crate::secrets::sealing::{Keyring, SealingKey};
    let keyring = Keyring::new(SealingKey::generate("k1").expect("key id"));
    crate::mcp::OperatorOAuth::new(keyring, crate::mcp::MemoryGrantStore::default())
}

const SANDBOX: &str = "http://localhost:8081";
const METHODS: [Method; 6] = [
    Method::GET,
    Method::HEAD,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
];

fn everything_on() -> ChatService {
    let config = Config::builder(Quiet)
        .history(MemoryStore::new())
        .file_upload(true)
        .sandbox_origin(SANDBOX)
        .user_mcp(user_mcp())
        .mcp_oauth(mcp_oauth())
        .build()
        .expect("valid config");
    ChatService::new(config)
}

/// A concrete path for a pattern (`{param}` → a value the handler will look up).
fn concrete(pattern: &str) -> String {
    match pattern.split_once('{') {
        Some((head, _)) if head == "/assets/" => {
            format!("/chat{head}{}", crate::bundle::LOADER_PATH)
        }
        Some((head, _)) => format!("/chat{head}x"),
        None => format!("/chat{pattern}"),
    }
}

async fn send(
    svc: &ChatService,
    method: &Method,
    path: &str,
    open: bool,
) -> (StatusCode, http::HeaderMap, String) {
    let mut req = Request::builder()
        .method(method.clone())
        .uri(path)
        .header(header::CONTENT_TYPE, "application/json");
    // The sandbox page answers on the sandbox origin only.
    if open {
        req = req.header(header::HOST, "localhost:8081");
    }
    let req = req
        .body(Full::new(Bytes::from_static(b"{}")))
        .expect("request");
    let res = svc.clone().oneshot(req).await.expect("infallible");
    let (parts, body) = res.into_parts();
    let body = match parts.headers.get(header::CONTENT_TYPE) {
        // Don't wait on an event stream.
        Some(t) if t == "text/event-stream" => String::new(),
        _ => String::from_utf8_lossy(&body.collect().await.expect("body").to_bytes()).into_owned(),
    };
    (parts.status, parts.headers, body)
}

/// The router's own 404 (no route), as opposed to a handler's.
fn router_404(status: StatusCode, body: &str) -> bool {
    status == StatusCode::NOT_FOUND && body == r#"{"error":"not found"}"#
}

#[tokio::test]
async fn every_route_answers_its_methods_and_405_with_allow_otherwise() {
    let svc = everything_on();
    for r in &ROUTES {
        let path = concrete(r.path);
        let (status, _, body) = send(&svc, &r.method, &path, r.guard == Guard::Open).await;
        assert!(
            status != StatusCode::METHOD_NOT_ALLOWED && !router_404(status, &body),
            "{} {path} did not reach its handler: {status} {body}",
            r.method
        );
        assert!(
            status.as_u16() < 500,
            "{} {path}: {status} {body}",
            r.method
        );
    }
    let patterns: BTreeSet<&str> = ROUTES.iter().map(|r| r.path).collect();
    for pattern in patterns {
        let allowed: Vec<&Method> = ROUTES
            .iter()
            .filter(|r| r.path == pattern)
            .map(|r| &r.method)
            .collect();
        let path = concrete(pattern);
        let open = ROUTES
            .iter()
            .any(|r| r.path == pattern && r.guard == Guard::Open);
        for m in METHODS.iter().filter(|m| !allowed.contains(m)) {
            let (status, headers, _) = send(&svc, m, &path, open).await;
            assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{m} {path}");
            let allow: BTreeSet<String> = headers
                .get(header::ALLOW)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .split(',')
                .map(|s| s.trim().to_owned())
                .collect();
            let want: BTreeSet<String> = allowed.iter().map(|m| m.to_string()).collect();
            assert_eq!(allow, want, "Allow of {m} {path}");
        }
    }
}

#[tokio::test]
async fn switched_off_routes_are_absent() {
    let svc = ChatService::new(
        Config::builder(Quiet)
            .page(false)
            .events(false)
            .build()
            .expect("valid config"),
    );
    for r in ROUTES.iter().filter(|r| r.when != When::Always) {
        let path = concrete(r.path);
        let (status, _, body) = send(&svc, &r.method, &path, r.guard == Guard::Open).await;
        assert!(
            router_404(status, &body),
            "{} {path}: {status} {body}",
            r.method
        );
    }
}

#[tokio::test]
async fn the_sandbox_only_service_answers_the_sandbox_page_alone() {
    let svc = everything_on().sandbox_only();
    for r in &ROUTES {
        let path = concrete(r.path);
        let (status, _, body) = send(&svc, &r.method, &path, true).await;
        match r.guard {
            Guard::Open => assert!(!router_404(status, &body), "{path}: {status}"),
            Guard::Principal if r.path == "/apps/sandbox" => {}
            Guard::Principal | Guard::Public => assert!(
                router_404(status, &body),
                "{} {path}: {status} {body}",
                r.method
            ),
        }
    }
    // A known path with another method: 405 naming GET (it was 404 before the route list).
    let (status, headers, _) = send(&svc, &Method::POST, "/chat/apps/sandbox", true).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        headers.get(header::ALLOW).and_then(|v| v.to_str().ok()),
        Some("GET")
    );
}

/// Sends `method path` with extra headers, returning the status and body.
async fn send_with(
    svc: &ChatService,
    method: &Method,
    path: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, String) {
    let mut req = Request::builder()
        .method(method.clone())
        .uri(path)
        .header(header::CONTENT_TYPE, "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req
        .body(Full::new(Bytes::from_static(b"{}")))
        .expect("request");
    let res = svc.clone().oneshot(req).await.expect("infallible");
    let status = res.status();
    let body = res.into_body().collect().await.expect("body").to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn every_route_refuses_a_foreign_host_name() {
    let svc = everything_on();
    for r in &ROUTES {
        let path = concrete(r.path);
        let (status, body) =
            send_with(&svc, &r.method, &path, &[("host", "rebind.example:8080")]).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{} {path}: {body}", r.method);
        assert!(
            body.contains("is not served here"),
            "{} {path}: {body}",
            r.method
        );
    }
}

#[tokio::test]
async fn every_mutating_route_refuses_another_origin() {
    let svc = everything_on();
    let mutating = [Method::POST, Method::PUT, Method::PATCH, Method::DELETE];
    for r in ROUTES.iter().filter(|r| mutating.contains(&r.method)) {
        let path = concrete(r.path);
        let headers = [
            ("host", "localhost:8080"),
            ("origin", "https://evil.example"),
        ];
        let (status, body) = send_with(&svc, &r.method, &path, &headers).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{} {path}: {body}", r.method);
        assert!(body.contains("cross-origin"), "{} {path}: {body}", r.method);
    }
}

#[tokio::test]
async fn every_guarded_route_needs_a_principal_when_one_is_required() {
    let svc = ChatService::new(
        Config::builder(Quiet)
            .history(MemoryStore::new())
            .file_upload(true)
            .require_principal(true)
            .user_mcp(user_mcp())
            .mcp_oauth(mcp_oauth())
            .build()
            .expect("valid config"),
    );
    for r in ROUTES.iter().filter(|r| r.guard == Guard::Principal) {
        let path = concrete(r.path);
        let (status, body) = send_with(&svc, &r.method, &path, &[]).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{} {path}: {body}",
            r.method
        );
    }
}

#[tokio::test]
async fn the_operators_sign_in_routes_are_the_operators_alone() {
    let svc = ChatService::new(
        Config::builder(Quiet)
            .operator("root")
            .mcp_oauth(mcp_oauth())
            .build()
            .expect("valid config"),
    );
    let as_who = |who: Option<&'static str>, method: Method, path: &'static str| {
        let svc = svc.clone();
        async move {
            let mut req = Request::builder()
                .method(method)
                .uri(path)
                .header(header::HOST, "localhost:8080")
                .body(Full::new(Bytes::new()))
                .expect("request");
            if let Some(who) = who {
                req.extensions_mut().insert(crate::Principal::new(who));
            }
            let res = svc.oneshot(req).await.expect("infallible");
            let status = res.status();
            let body = res.into_body().collect().await.expect("body").to_bytes();
            (status, String::from_utf8_lossy(&body).into_owned())
        }
    };
    let routes = [
        (Method::GET, "/chat/mcp/operator"),
        (Method::POST, "/chat/mcp/operator/sign-in/docs"),
        (Method::GET, "/chat/mcp/operator/callback?code=c&state=s"),
    ];
    for (method, path) in routes {
        for who in [Some("bob"), None] {
            let (status, body) = as_who(who, method.clone(), path).await;
            assert_eq!(
                status,
                StatusCode::NOT_FOUND,
                "{who:?}: {method} {path}: {body}"
            );
        }
    }
    let (status, body) = as_who(Some("root"), Method::GET, "/chat/mcp/operator").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("No MCP server"), "{body}");
    // The metadata document is for everyone (authorization servers fetch it).
    let (status, body) = as_who(None, Method::GET, "/chat/oauth/client-metadata.json").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let doc: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(
        doc["client_id"],
        "http://localhost:8080/chat/oauth/client-metadata.json"
    );
    assert_eq!(
        doc["redirect_uris"],
        serde_json::json!(["http://localhost:8080/chat/mcp/operator/callback"])
    );
    assert_eq!(doc["token_endpoint_auth_method"], "none");
}

#[tokio::test]
async fn the_diagram_frame_needs_no_principal_and_runs_sandboxed_without_network() {
    let svc = ChatService::new(
        Config::builder(Quiet)
            .require_principal(true)
            .build()
            .expect("valid config"),
    );
    let get = |path: String| {
        let svc = svc.clone();
        async move { send(&svc, &Method::GET, &path, false).await }
    };
    let (status, headers, body) = get("/chat/diagram".into()).await;
    if crate::bundle::diagram_page("").is_none() {
        assert!(
            std::env::var_os("LMCHATKIT_EXPECT_BUNDLE").is_none(),
            "a built bundle has the diagram renderer"
        );
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert!(body.contains("no diagram renderer"), "{body}");
        return;
    }
    assert_eq!(status, StatusCode::OK, "{body}");
    let csp = headers
        .get(header::CONTENT_SECURITY_POLICY)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert_eq!(csp, crate::bundle::DIAGRAM_CSP);
    for directive in [
        "sandbox allow-scripts;",
        "default-src 'none';",
        "script-src 'self';",
        "frame-ancestors 'self'",
    ] {
        assert!(csp.contains(directive), "{directive} in {csp}");
    }
    for loosening in [
        "allow-same-origin",
        "allow-popups",
        "allow-top",
        "connect-src",
        "*",
    ] {
        assert!(!csp.contains(loosening), "{loosening} in {csp}");
    }
    // Its two scripts answer without a principal too, cached for good.
    let scripts: Vec<String> = body
        .split("<script src=\"/chat/diagram/")
        .skip(1)
        .filter_map(|s| s.split('"').next().map(str::to_owned))
        .collect();
    assert_eq!(scripts.len(), 2, "{body}");
    for script in &scripts {
        let (status, headers, _) = get(format!("/chat/diagram/{script}")).await;
        assert_eq!(status, StatusCode::OK, "{script}");
        assert_eq!(
            headers
                .get(header::CACHE_CONTROL)
                .and_then(|v| v.to_str().ok()),
            Some("public, max-age=31536000, immutable")
        );
    }
    // Nothing else of the bundle through that path, and the chat's own files stay guarded.
    for other in ["lmchatkit.js", "..%2Flmchatkit.js", "x"] {
        let (status, _, body) = get(format!("/chat/diagram/{other}")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{other}: {body}");
    }
    let (status, _, _) = get(format!("/chat/assets/{}", scripts[0])).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}
