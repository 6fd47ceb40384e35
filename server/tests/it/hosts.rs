//! Only configured host names are served (DNS rebinding): a page at `http://rebind.example:8080`
//! whose name later resolves to 127.0.0.1 sends `Host: rebind.example:8080` and a matching
//! `Origin`, so the CSRF check alone lets it through. Before the host check, both requests
//! below answered 200.

use crate::support;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use lmchatkit::store::MemoryStore;
use serde_json::json;
use support::{FakeHost, config, send, service, tool};

fn host_with_tool() -> FakeHost {
    FakeHost {
        tools: vec![tool("dice", &[])],
        ..FakeHost::default()
    }
}

fn get_as(host: &str, path: &str) -> Request<Full<Bytes>> {
    Request::get(path)
        .header("host", host)
        .header("origin", format!("http://{host}"))
        .body(Full::default())
        .unwrap()
}

fn call_as(host: &str) -> Request<Full<Bytes>> {
    Request::post("/chat/api/tools/call")
        .header("host", host)
        .header("origin", format!("http://{host}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(json!({"name": "dice"}).to_string())))
        .unwrap()
}

#[tokio::test]
async fn a_foreign_host_name_is_refused_on_every_route() {
    let svc = service(config(host_with_tool()).history(MemoryStore::new()));
    for req in [
        get_as("rebind.example:8080", "/chat/api/conversations"),
        get_as("rebind.example:8080", "/chat"),
        get_as("rebind.example", "/chat/assets/lmchatkit.js"),
        call_as("rebind.example:8080"),
        // A loopback name as a suffix is still foreign.
        call_as("localhost.rebind.example:8080"),
        call_as("127.0.0.1.nip.example"),
    ] {
        let what = format!("{} {:?}", req.uri(), req.headers().get("host"));
        let r = send(&svc, req).await;
        assert_eq!(r.status, 403, "{what}: {}", r.text());
        assert!(
            r.error().contains("is not served here"),
            "{what}: {}",
            r.error()
        );
    }
}

fn post_as(host: &str, origin: &str, path: &str, body: serde_json::Value) -> Request<Full<Bytes>> {
    Request::post(path)
        .header("host", host)
        .header("origin", origin)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

/// The routes that start a run or follow one refuse a rebinding page, and the turns refuse a
/// sandboxed MCP App view (origin `null`): neither can start a reply or read one.
#[tokio::test]
async fn the_run_routes_refuse_a_foreign_host_and_an_app_view() {
    let svc = service(config(host_with_tool()).history(MemoryStore::new()));
    let native = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let aisdk = json!({"id": "t1", "trigger": "submit-message", "messages": [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]});
    let rebind = "rebind.example:8080";
    let page = "http://rebind.example:8080";
    let run = "/chat/api/runs/run-00000000000000000000000000000000/stream";
    for (req, why) in [
        (
            post_as(rebind, page, "/chat/api/chat", native.clone()),
            "is not served here",
        ),
        (
            post_as(rebind, page, "/chat/api/aisdk/chat", aisdk.clone()),
            "is not served here",
        ),
        (get_as(rebind, run), "is not served here"),
        (
            post_as("127.0.0.1:8080", "null", "/chat/api/chat", native),
            "cross-origin",
        ),
        (
            post_as("127.0.0.1:8080", "null", "/chat/api/aisdk/chat", aisdk),
            "cross-origin",
        ),
    ] {
        let what = format!("{} {:?}", req.uri(), req.headers().get("origin"));
        let r = send(&svc, req).await;
        assert_eq!(r.status, 403, "{what}: {}", r.text());
        assert!(r.error().contains(why), "{what}: {}", r.error());
    }
    // The same turn from the page itself gets past both checks.
    let own = post_as(
        "127.0.0.1:8080",
        "http://127.0.0.1:8080",
        "/chat/api/chat",
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
    );
    let r = send(&svc, own).await;
    assert_ne!(r.status, 403, "{}", r.text());
}

#[tokio::test]
async fn loopback_names_are_served_on_any_port() {
    let svc = service(config(host_with_tool()).history(MemoryStore::new()));
    for host in [
        "127.0.0.1:8080",
        "localhost:3000",
        "[::1]:9",
        "LOCALHOST",
        "127.0.0.1",
    ] {
        let r = send(&svc, get_as(host, "/chat/api/conversations")).await;
        assert_eq!(r.status, 200, "{host}: {}", r.text());
        let r = send(&svc, call_as(host)).await;
        assert_eq!(r.status, 200, "{host}: {}", r.text());
    }
}

#[tokio::test]

async fn configured_host_names_are_served_too() {
    let svc = service(
        config(host_with_tool())
            .history(MemoryStore::new())
            .allowed_host("chat.example.com")
            .allowed_host("intranet:8443"),
    );
    for (host, status) in [
        ("chat.example.com", 200),
        ("chat.example.com:443", 200),
        ("Chat.Example.Com", 200),
        ("intranet:8443", 200),
        ("intranet:8444", 403),
        ("evil.example.com", 403),
        ("localhost:8080", 200),
    ] {
        let r = send(&svc, get_as(host, "/chat/api/conversations")).await;
        assert_eq!(r.status, status, "{host}: {}", r.text());
    }
}

#[tokio::test]
async fn the_sandbox_host_is_served_by_the_sandbox_service() {
    let svc = service(config(FakeHost::default()).sandbox_origin("https://sandbox.chat.example"));
    let r = send(
        &svc.sandbox_only(),
        get_as("sandbox.chat.example", "/chat/apps/sandbox?t=nope"),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.error()),
        (404, "this view link expired".to_owned()),
        "reached the sandbox page"
    );
}
