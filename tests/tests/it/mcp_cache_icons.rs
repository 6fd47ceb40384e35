//! The hub's listing cache honouring `ttlMs` and `cacheScope`, and icons served through the
//! service, against a real MCP server written with the Python `mcp` package
//! (`tests/python/cache_icons_server.py`, installed by `scripts/setup-test.sh`): every
//! `tools/list` it answers lists a tool `gen_N` for its N-th listing, so a test sees whether it
//! got a cached listing or a fresh one. Icons: the server's, tools' and prompts' (`data:` URLs,
//! some refused), and http ones from a small image server of the test's own. Skipped with a
//! note when the Python package is missing.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::mcp::{McpHub, McpServerConfig, OutboundPolicy};
use lmchatkit::{ChatService, Config, Principal, RequestContext, Scope, StandardHost, ToolSource};
use lmchatkit_tests::PNG;
use lmchatkit_tests::mcp_server::python_bin;
use lmchatkit_tests::mock_upstream::MockUpstream;
use lmchatkit_tests::serve::{Served, serve, serve_as};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The hub's config of the Python server, or `None` (with a note) without Python's `mcp`.
fn server(ttl_ms: u64, scope: &str, extra: &[String]) -> Option<McpServerConfig> {
    let python = python_bin()?;
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/cache_icons_server.py");
    let mut args = vec![
        script.to_string_lossy().into_owned(),
        ttl_ms.to_string(),
        scope.to_owned(),
    ];
    args.extend(extra.iter().cloned());
    Some(McpServerConfig::stdio(
        "cache",
        python.to_string_lossy(),
        args,
    ))
}

fn scope_of(who: &str) -> Scope {
    Scope::user(RequestContext::new(Principal::new(who)))
}

/// The `gen_N` tools a principal is offered.
async fn generations(hub: &McpHub, scope: &Scope) -> Vec<String> {
    let tools = hub.list_tools(scope).await.expect("tools");
    let mut gens: Vec<String> = tools
        .into_iter()
        .map(|t| t.name)
        .filter(|n| n.starts_with("cache__gen_"))
        .collect();
    gens.sort();
    gens
}

#[tokio::test]
async fn a_listing_is_listed_again_once_its_ttl_has_passed_and_not_before() {
    let Some(cfg) = server(700, "public", &[]) else {
        return;
    };
    let hub = McpHub::new(vec![cfg]);
    hub.start().await;
    assert_eq!(
        hub.protocol_version("cache").await.as_deref(),
        Some("2026-07-28"),
        "ttlMs and cacheScope travel on 2026-07-28 connections"
    );
    let anyone = Scope::default();
    assert_eq!(generations(&hub, &anyone).await, ["cache__gen_1"]);
    assert_eq!(
        generations(&hub, &anyone).await,
        ["cache__gen_1"],
        "within its ttlMs the listing is served from the cache"
    );
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(
        generations(&hub, &anyone).await,
        ["cache__gen_2"],
        "after its ttlMs the first use lists again"
    );
    assert_eq!(generations(&hub, &anyone).await, ["cache__gen_2"]);
}

#[tokio::test]
async fn a_public_listing_is_one_listing_for_every_principal() {
    let Some(cfg) = server(60_000, "public", &[]) else {
        return;
    };
    let hub = McpHub::new(vec![cfg]);
    hub.start().await;
    assert_eq!(generations(&hub, &scope_of("ada")).await, ["cache__gen_1"]);
    assert_eq!(generations(&hub, &scope_of("bob")).await, ["cache__gen_1"]);
}

#[tokio::test]
async fn two_principals_never_see_each_others_private_listing() {
    let Some(cfg) = server(60_000, "private", &[]) else {
        return;
    };
    let hub = McpHub::new(vec![cfg]);
    // The start lists for nobody: a private answer is kept for no one.
    hub.start().await;
    let (ada, bob) = (scope_of("ada"), scope_of("bob"));
    assert_eq!(generations(&hub, &ada).await, ["cache__gen_2"]);
    assert_eq!(
        generations(&hub, &bob).await,
        ["cache__gen_3"],
        "bob gets a listing of his own, not ada's"
    );
    assert_eq!(
        generations(&hub, &ada).await,
        ["cache__gen_2"],
        "each keeps their own for its ttlMs"
    );
    assert_eq!(generations(&hub, &bob).await, ["cache__gen_3"]);
    assert_eq!(
        generations(&hub, &Scope::default()).await,
        ["cache__gen_4"],
        "the anonymous user is a principal too"
    );

    // Calls resolve in the caller's own listing only.
    let r = hub
        .call_tool(&ada, "cache__gen_2", json!({}))
        .await
        .unwrap();
    assert_eq!(r.content, "called gen_2");
    assert!(
        hub.call_tool(&bob, "cache__gen_2", json!({}))
            .await
            .is_err(),
        "bob cannot call a tool only ada's listing offers"
    );
    assert_eq!(
        hub.tool_source(&bob, "cache__gen_2").await,
        ToolSource::Unknown
    );
    // Nor does its icon show: an icon is looked up in the caller's own listing.
    let of = lmchatkit::host::IconOf::Tool;
    assert!(hub.icon(&ada, of, "cache__gen_2").await.unwrap().is_some());
    assert!(
        hub.icon(&bob, of, "cache__gen_2").await.unwrap().is_none(),
        "bob gets no icon of a tool only ada's listing offers"
    );
}

/// The prompt names the prompts route answers.
async fn prompt_names(served: &Served) -> Vec<String> {
    let prompts: serde_json::Value = reqwest::get(served.url("/chat/api/prompts"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    prompts
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn two_signed_in_users_never_see_each_others_private_prompts_through_the_route() {
    let Some(cfg) = server(60_000, "private", &[]) else {
        return;
    };
    let hub = McpHub::new(vec![cfg]);
    hub.start().await;
    let (_mock, svc) = service(hub).await;
    let ada = serve_as(svc.clone(), Principal::new("ada")).await;
    let bob = serve_as(svc, Principal::new("bob")).await;
    let names =
        |n: usize| ["cache__greet", "cache__bare", &format!("cache__pgen_{n}")].map(String::from);
    assert_eq!(prompt_names(&ada).await, names(2));
    assert_eq!(prompt_names(&bob).await, names(3));
    assert_eq!(prompt_names(&ada).await, names(2));
    assert_eq!(prompt_names(&bob).await, names(3));
}

#[tokio::test]
async fn a_ttl_of_zero_lists_again_on_every_use() {
    let Some(cfg) = server(0, "public", &[]) else {
        return;
    };
    let hub = McpHub::new(vec![cfg]);
    hub.start().await;
    let anyone = Scope::default();
    assert_eq!(generations(&hub, &anyone).await, ["cache__gen_2"]);
    assert_eq!(generations(&hub, &anyone).await, ["cache__gen_3"]);
}

async fn service(hub: McpHub) -> (MockUpstream, ChatService) {
    let mock = MockUpstream::start().await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(mock.base_url()));
    let host = StandardHost::new(backend).with_mcp(hub);
    let config = Config::builder(host).build().unwrap();
    (mock, ChatService::new(config))
}

/// `GET path`: status, content type, body, and the headers the icon route sets.
async fn get(served: &Served, path: &str) -> (u16, String, Vec<u8>, reqwest::header::HeaderMap) {
    let res = reqwest::get(served.url(path)).await.unwrap();
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let mime = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, mime, res.bytes().await.unwrap().to_vec(), headers)
}

#[tokio::test]
async fn icons_are_served_from_the_service_as_images_only_and_capped() {
    let Some(cfg) = server(60_000, "public", &[]) else {
        return;
    };
    let hub = McpHub::new(vec![cfg]);
    hub.start().await;
    let (_mock, svc) = service(hub).await;
    let served = serve(svc).await;

    // A tool's own icon: a PNG from a data: URL, served as bytes from our origin.
    let (status, mime, body, headers) = get(&served, "/chat/api/icons/tool/cache__pic").await;
    assert_eq!((status, mime.as_str()), (200, "image/png"));
    assert_eq!(body, [PNG, b"pic"].concat());
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("sandbox"),
        "{csp}"
    );

    // HTML (declared as such, or dressed as a PNG) and an image over the cap are refused; the
    // tool then shows its server's icon, never the refused bytes.
    for tool in ["page", "disguised", "big", "plain"] {
        let (status, mime, body, _) =
            get(&served, &format!("/chat/api/icons/tool/cache__{tool}")).await;
        assert_eq!((status, mime.as_str()), (200, "image/png"), "{tool}");
        assert_eq!(body, PNG, "{tool} shows the server's icon");
    }
    // The server's own, and a prompt's SVG (served with the sandboxing CSP).
    let (status, _, body, _) = get(&served, "/chat/api/icons/server/cache").await;
    assert_eq!((status, body.as_slice()), (200, PNG));
    let (status, mime, body, headers) = get(&served, "/chat/api/icons/prompt/cache__greet").await;
    assert_eq!((status, mime.as_str()), (200, "image/svg+xml"));
    assert!(String::from_utf8_lossy(&body).starts_with("<svg"));
    assert!(
        headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("sandbox")
    );
    // Nothing known: a 404 the UI hides.
    for path in [
        "/chat/api/icons/tool/cache__nope",
        "/chat/api/icons/server/elsewhere",
        "/chat/api/icons/widget/cache__pic",
        "/chat/api/icons/tool",
    ] {
        let (status, _, body, _) = get(&served, path).await;
        assert_eq!(status, 404, "{path}");
        assert_eq!(body, br#"{"error":"no icon"}"#, "{path}");
    }

    // The prompt list says which prompts have an icon, and carries no icon URL or bytes.
    let (_, _, body, _) = get(&served, "/chat/api/prompts").await;
    let prompts: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        prompts,
        json!([
            {"name": "cache__greet", "description": "A greeting.", "icon": true},
            {"name": "cache__bare", "description": "No icon of its own.", "icon": true},
            {"name": "cache__pgen_1", "icon": true},
        ])
    );
    // The page's CSP is unchanged: images from our origin, data: and blob: only.
    let (_, _, _, headers) = get(&served, "/chat").await;
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("img-src 'self' data: blob:;"), "{csp}");
}

/// A small image server: `/icon.png` a PNG, `/page.png` HTML labelled `text/html`,
/// `/big.png` a PNG over the cap. Counts the requests.
async fn image_server() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let (mime, body): (&str, Vec<u8>) = match path.as_str() {
                    "/icon.png" => ("image/png", [PNG, b"remote"].concat()),
                    "/page.png" => ("text/html", b"<script>alert(1)</script>".to_vec()),
                    "/big.png" => ("image/png", [PNG, &vec![0u8; 70 * 1024]].concat()),
                    _ => ("text/plain", b"no".to_vec()),
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {mime}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(&body).await;
            });
        }
    });
    (port, hits)
}

#[tokio::test]
async fn remote_icons_are_fetched_by_the_service_under_its_policy_never_by_the_browser() {
    let (port, hits) = image_server().await;
    let base = format!("http://127.0.0.1:{port}");
    let extra = [
        "--no-server-icon".to_owned(),
        "--icon-base".to_owned(),
        base.clone(),
    ];
    let Some(cfg) = server(60_000, "public", &extra) else {
        return;
    };

    // By default the policy refuses plain http to a loopback address: no icon at all.
    let hub = McpHub::new(vec![cfg.clone()]);
    hub.start().await;
    let (_mock, svc) = service(hub).await;
    let served = serve(svc).await;
    let (status, _, _, _) = get(&served, "/chat/api/icons/tool/cache__remote").await;
    assert_eq!(status, 404);
    assert_eq!(hits.load(Ordering::SeqCst), 0, "nothing was fetched");

    // Allowed by the operator: the service fetches it and serves the bytes itself.
    let hub = McpHub::new(vec![cfg])
        .with_icon_policy(OutboundPolicy::new().with_allowed_host("127.0.0.1"));
    hub.start().await;
    let (_mock, svc) = service(hub).await;
    let served = serve(svc).await;
    for _ in 0..2 {
        let (status, mime, body, headers) =
            get(&served, "/chat/api/icons/tool/cache__remote").await;
        assert_eq!((status, mime.as_str()), (200, "image/png"));
        assert_eq!(body, [PNG, b"remote"].concat());
        assert!(headers.get("location").is_none());
    }
    assert_eq!(hits.load(Ordering::SeqCst), 1, "fetched once, then cached");
    // A page labelled text/html and an image over the cap are refused.
    for tool in ["remote_html", "remote_big"] {
        let (status, _, body, _) =
            get(&served, &format!("/chat/api/icons/tool/cache__{tool}")).await;
        assert_eq!(status, 404, "{tool}: {}", String::from_utf8_lossy(&body));
    }
    // No listing the browser reads names the image server.
    let (_, _, body, _) = get(&served, "/chat/api/prompts").await;
    assert!(!String::from_utf8_lossy(&body).contains(&base));
}
