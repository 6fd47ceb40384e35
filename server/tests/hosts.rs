//! Only configured host names are served (DNS rebinding): a page at `http://rebind.example:8080`
//! whose name later resolves to 127.0.0.1 sends `Host: rebind.example:8080` and a matching
//! `Origin`, so the CSRF check alone lets it through. Before the host check, both requests
//! below answered 200.

mod support;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use lmchatkit::history::MemoryStore;
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
