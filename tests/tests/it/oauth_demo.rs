//! The harness of `user_mcp_oauth.rs`: the MCP TypeScript SDK's example Streamable HTTP server
//! with its demo authorization server (`@modelcontextprotocol/sdk@1.32.2`,
//! `simpleStreamableHttp.js --oauth`, installed by `scripts/setup-test.sh`), and the service
//! behind a small layer that takes the user from a `SameSite=Lax` cookie (set by
//! `/login?as=NAME`), as a host's session would: the authorization server's redirect is a
//! cross-site navigation (localhost → 127.0.0.1), which carries such a cookie.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, header};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use lmchatkit::{ChatService, Principal, ResponseBody};
use lmchatkit_tests::browser::Browser;
use lmchatkit_tests::mcp_server::{free_port, npm_file};
use serde_json::Value;

/// The session cookie `serve`'s layer takes the user from.
pub const COOKIE: &str = "lmck-test-user";
const DEMO: &str = "@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js";

/// The SDK's example server with `--oauth`: the MCP server on one port, its demo
/// authorization server (which approves at once) on another, both on `localhost`.
pub struct Demo {
    _child: tokio::process::Child,
    mcp: u16,
}

impl Demo {
    /// Starts it, or `None` when the npm package is not installed (and not expected).
    pub async fn start() -> Option<Self> {
        let script = npm_file(DEMO)?;
        let (mcp, auth) = (free_port(), free_port());
        let child = tokio::process::Command::new("node")
            .arg(script)
            .arg("--oauth")
            .env("MCP_PORT", mcp.to_string())
            .env("MCP_AUTH_PORT", auth.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start the SDK's example server");
        for port in [mcp, auth] {
            let mut up = false;
            for _ in 0..200 {
                if tokio::net::TcpStream::connect(("localhost", port))
                    .await
                    .is_ok()
                {
                    up = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert!(up, "the example server did not listen on {port}");
        }
        Some(Self { _child: child, mcp })
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://localhost:{}/mcp", self.mcp)
    }
}

/// The host's session, as a test needs it: `/login?as=NAME` sets a `SameSite=Lax` cookie and
/// goes to the chat; every other request is the cookie's user.
#[derive(Clone)]
struct CookieSession(ChatService);

fn user_of<B>(req: &Request<B>) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, v)| v.to_owned())
}

impl tower::Service<Request<hyper::body::Incoming>> for CookieSession {
    type Response = http::Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<hyper::body::Incoming>) -> Self::Future {
        if req.uri().path() == "/login" {
            let who = req
                .uri()
                .query()
                .and_then(|q| q.strip_prefix("as="))
                .unwrap_or("");
            let res = http::Response::builder()
                .status(303)
                .header(header::LOCATION, "/chat")
                .header(
                    header::SET_COOKIE,
                    format!("{COOKIE}={who}; Path=/; HttpOnly; SameSite=Lax"),
                )
                .body(Empty::new().map_err(|never| match never {}).boxed_unsync())
                .unwrap();
            return Box::pin(async move { Ok(res) });
        }
        if let Some(user) = user_of(&req) {
            req.extensions_mut().insert(Principal::new(user));
        }
        let mut svc = self.0.clone();
        Box::pin(async move { tower::Service::call(&mut svc, req).await })
    }
}

/// Serves `svc` behind the cookie session on 127.0.0.1; its base URL.
pub async fn serve(svc: ChatService) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let session = CookieSession(svc);
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let svc = TowerToHyperService::new(session.clone());
            tokio::spawn(async move {
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (base, task)
}

/// A request to the service as `who` (by the session cookie).
pub async fn api(
    base: &str,
    who: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let client = reqwest::Client::new();
    let mut req = client
        .request(method.parse().unwrap(), format!("{base}{path}"))
        .header(header::COOKIE, format!("{COOKIE}={who}"));
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// Signs `who` in to the server `slug` without a browser: starts the sign-in, follows the
/// authorization server's redirect (it approves at once) and lands on the callback with
/// `who`'s cookie. The callback page's status and HTML.
pub async fn sign_in_over_http(base: &str, who: &str, slug: &str) -> (u16, String) {
    let path = format!("/chat/api/mcp/servers/{slug}/oauth");
    let (status, start) = api(base, who, "POST", &path, None).await;
    assert_eq!(status, 200, "{start}");
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let authorize = client
        .get(start["authorization_url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert!(authorize.status().is_redirection(), "{authorize:?}");
    let callback = authorize.headers()[header::LOCATION].to_str().unwrap();
    assert!(
        callback.starts_with(&format!("{base}/chat/api/mcp/oauth/callback?")),
        "{callback}"
    );
    let page = client
        .get(callback)
        .header(header::COOKIE, format!("{COOKIE}={who}"))
        .send()
        .await
        .unwrap();
    (page.status().as_u16(), page.text().await.unwrap())
}

/// Signs the browser in to the app as `who` (the host's session).
pub async fn log_in(b: &Browser, base: &str, who: &str) {
    b.client
        .goto(&format!("{base}/login?as={who}"))
        .await
        .unwrap();
}
