//! OAuth sign-in to a user's own MCP server end to end, in Chromium, against the MCP
//! TypeScript SDK's example Streamable HTTP server with its demo authorization server
//! (`@modelcontextprotocol/sdk@1.32.2`, `simpleStreamableHttp.js --oauth`, installed by
//! `scripts/setup-test.sh`): add the server, a refresh says a sign-in is needed, the page
//! starts the sign-in, the browser opens the authorization URL and the demo server sends it to
//! our callback, the server is signed in, refresh and accept, and a chat turn where the mock
//! model calls the tool gets its result back. A second user cannot end the first one's sign-in.
//!
//! The service runs behind a small layer that takes the user from a `SameSite=Lax` cookie (set
//! by `/login?as=NAME`), as a host's session would: the authorization server's redirect is a
//! cross-site navigation (localhost → 127.0.0.1), which carries such a cookie. The operator's
//! outbound policy allows `localhost`, where both demo servers listen, for this test only.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, header};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::mcp::OutboundPolicy;
use lmchatkit::secrets::sealing::{Keyring, SealingKey};
use lmchatkit::user_mcp::{MemoryUserMcpStore, UserMcp};
use lmchatkit::{ChatService, Config, Principal, ResponseBody};
use lmchatkit_tests::browser::app::{ONE_AT_A_TIME, bundle_built, idle, start_chat};
use lmchatkit_tests::browser::{Browser, launch};
use lmchatkit_tests::mcp_server::{free_port, npm_file};
use lmchatkit_tests::mock_upstream::MockUpstream;
use lmchatkit_tests::test_host::TestHost;
use serde_json::{Value, json};

const COOKIE: &str = "lmck-test-user";
const DEMO: &str = "@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js";

/// The SDK's example server with `--oauth`: the MCP server on one port, its demo
/// authorization server (which approves at once) on another, both on `localhost`.
struct Demo {
    _child: tokio::process::Child,
    mcp: u16,
}

impl Demo {
    async fn start() -> Option<Self> {
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

    fn url(&self) -> String {
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
async fn serve(svc: ChatService) -> (String, tokio::task::JoinHandle<()>) {
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
async fn api(base: &str, who: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
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

/// Signs the browser in to the app as `who` (the host's session).
async fn log_in(b: &Browser, base: &str, who: &str) {
    b.client
        .goto(&format!("{base}/login?as={who}"))
        .await
        .unwrap();
}

/// `POST .../servers/demo/oauth` from the page, as the UI's sign-in button does: the
/// authorization URL.
async fn start_sign_in(b: &Browser) -> String {
    let script = "const done = arguments[arguments.length - 1]; \
        fetch('/chat/api/mcp/servers/demo/oauth', {method: 'POST'}) \
          .then(r => r.json().then(body => done({status: r.status, body}))) \
          .catch(e => done({status: 0, body: String(e)}));";
    let answer = b.client.execute_async(script, vec![]).await.unwrap();
    assert_eq!(answer["status"], 200, "{answer}");
    answer["body"]["authorization_url"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_user_signs_in_to_an_oauth_protected_server_in_the_browser_and_a_turn_calls_its_tool() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(demo) = Demo::start().await else {
        return;
    };
    let mock = MockUpstream::start().await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(mock.base_url()).with_api_key("sk-test"));
    let keyring = Keyring::new(SealingKey::generate("k1").unwrap());
    // Both demo servers listen on localhost: allowed for this test only.
    let policy = OutboundPolicy::new().with_allowed_host("localhost");
    let user_mcp = UserMcp::new(MemoryUserMcpStore::default(), keyring, policy);
    let config = Config::builder(TestHost(backend))
        .user_mcp(user_mcp)
        .build()
        .unwrap();
    let (base, _server) = serve(ChatService::new(config)).await;
    if !bundle_built(&format!("{base}/chat/assets/lmchatkit.js")).await {
        return;
    }
    let Some(b) = launch().await else {
        return;
    };
    let servers = "/chat/api/mcp/servers";

    // Add the server; a refresh says it needs a sign-in, and the server shows it.
    let add = json!({"slug": "demo", "name": "Demo", "url": demo.url()});
    let (status, body) = api(&base, "alice", "POST", servers, Some(add)).await;
    assert_eq!(status, 201, "{body}");
    let (status, err) = api(
        &base,
        "alice",
        "POST",
        &format!("{servers}/demo/refresh"),
        None,
    )
    .await;
    assert_eq!(status, 403, "{err}");
    assert!(err["error"].as_str().unwrap().contains("sign in"), "{err}");
    let (_, server) = api(&base, "alice", "GET", &format!("{servers}/demo"), None).await;
    assert_eq!(server["oauth"], "sign_in_required");

    // The page starts the sign-in; the browser opens the authorization page, which (the demo
    // approves at once) sends it to our callback.
    log_in(&b, &base, "alice").await;
    let url = start_sign_in(&b).await;
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    b.client.goto(&url).await.unwrap();
    b.wait_text("h1", "Signed in to Demo").await;
    let at = b.client.current_url().await.unwrap();
    assert!(
        at.as_str()
            .starts_with(&format!("{base}/chat/api/mcp/oauth/callback?")),
        "{at}"
    );
    let (_, server) = api(&base, "alice", "GET", &format!("{servers}/demo"), None).await;
    assert_eq!(server["oauth"], "signed_in");

    // Refresh (with the token now) and accept `greet`.
    let (status, review) = api(
        &base,
        "alice",
        "POST",
        &format!("{servers}/demo/refresh"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{review}");
    let greet = review["added"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "greet")
        .unwrap_or_else(|| panic!("no greet in {review}"));
    let accept = json!({"tools": [{"name": "greet", "hash": greet["hash"], "approval": "always"}]});
    let (status, body) = api(
        &base,
        "alice",
        "POST",
        &format!("{servers}/demo/accept"),
        Some(accept),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // A turn: the mock model calls the tool, the result comes back and reaches the reply.
    b.client.goto(&format!("{base}/chat")).await.unwrap();
    start_chat(&b).await;
    b.send_message(r#"call tool demo__greet {"name": "Ada"}"#)
        .await;
    b.wait_text(".lmck-tool-result", "Hello, Ada!").await;
    b.wait_text(".lmck-assistant .lmck-md", "Tool said: Hello, Ada!")
        .await;
    idle(&b).await;

    // A second user cannot end alice's sign-in: alice starts another, bob's browser ends it.
    let (status, start) = api(
        &base,
        "alice",
        "POST",
        &format!("{servers}/demo/oauth"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{start}");
    log_in(&b, &base, "bob").await;
    b.client
        .goto(start["authorization_url"].as_str().unwrap())
        .await
        .unwrap();
    b.wait_text("h1", "Sign-in not completed").await;
    b.wait_text("p", "started by another user").await;
    let (status, list) = api(&base, "bob", "GET", servers, None).await;
    assert_eq!((status, list), (200, json!([])));
    let (_, server) = api(&base, "alice", "GET", &format!("{servers}/demo"), None).await;
    assert_eq!(server["oauth"], "signed_in");
    b.screenshot("user_mcp_oauth").await;
}
