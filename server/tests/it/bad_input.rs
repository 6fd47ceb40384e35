//! Bad input gets a clear 4xx JSON error — never a panic or a 5xx.

use crate::support;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use lmchatkit::Principal;
use serde_json::json;
use support::*;

/// The service as mounted on `chat.example` (a host name it must be told it serves).
fn svc() -> lmchatkit::ChatService {
    service(
        config(FakeHost::default())
            .body_limit(64 * 1024)
            .allowed_host("chat.example"),
    )
}

async fn expect(req: Request<Full<Bytes>>, status: u16, needle: &str) {
    let r = send(&svc(), req).await;
    assert_eq!(r.status.as_u16(), status, "{}", r.text());
    assert_eq!(r.headers["content-type"], "application/json; charset=utf-8");
    assert!(
        r.error().contains(needle),
        "{:?} lacks {needle:?}",
        r.error()
    );
}

#[tokio::test]
async fn malformed_json_wrong_types_and_missing_fields() {
    expect(
        with_json("POST", "/chat/api/chat", "{not json"),
        400,
        "invalid request body",
    )
    .await;
    expect(
        with_json("POST", "/chat/api/chat", r#"{"model": 5, "messages": []}"#),
        400,
        "invalid request body",
    )
    .await;
    expect(
        with_json("POST", "/chat/api/chat", r#"{"model": "m"}"#),
        400,
        "missing field `messages`",
    )
    .await;
    expect(
        with_json(
            "POST",
            "/chat/api/chat",
            r#"{"model":"m","messages":[{"role":"wizard","content":"x"}]}"#,
        ),
        400,
        "invalid request body",
    )
    .await;
    expect(
        with_json("POST", "/chat/api/tools/call", r#"{"arguments": {}}"#),
        400,
        "missing field `name`",
    )
    .await;
    expect(
        with_json("POST", "/chat/api/resources/read", "[]"),
        400,
        "invalid request body",
    )
    .await;
    expect(
        with_json("POST", "/chat/api/app-proxy", r#"{"method":"tools/call"}"#),
        400,
        "missing field `via`",
    )
    .await;
}

#[tokio::test]
async fn bodies_over_the_limit_are_413() {
    let big = format!(
        r#"{{"model":"m","messages":[{{"role":"user","content":"{}"}}]}}"#,
        "x".repeat(70 * 1024)
    );
    expect(
        with_json("POST", "/chat/api/chat", big.clone()),
        413,
        "exceeds 65536 bytes",
    )
    .await;
    // Without Content-Length (streamed body) the limit still holds.
    let stream = futures_util::stream::iter(
        big.into_bytes()
            .chunks(1000)
            .map(|c| {
                Ok::<_, std::convert::Infallible>(http_body::Frame::data(Bytes::copy_from_slice(c)))
            })
            .collect::<Vec<_>>(),
    );
    let req = Request::post("/chat/api/chat")
        .header("content-type", "application/json")
        .body(http_body_util::StreamBody::new(stream))
        .unwrap();
    let res = tower::ServiceExt::oneshot(svc(), req).await.unwrap();
    assert_eq!(res.status(), 413);
}

#[tokio::test]
async fn deeply_nested_json_and_invalid_utf8() {
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    expect(
        with_json(
            "POST",
            "/chat/api/tools/call",
            format!(r#"{{"name":"x","arguments":{deep}}}"#),
        ),
        400,
        "recursion limit",
    )
    .await;
    expect(
        with_json(
            "POST",
            "/chat/api/chat",
            Bytes::from_static(b"{\"model\":\"\xff\xfe\",\"messages\":[]}"),
        ),
        400,
        "invalid request body",
    )
    .await;
}

#[tokio::test]
async fn json_routes_require_json_content_type() {
    let req = Request::post("/chat/api/chat")
        .header("content-type", "text/plain")
        .body(Full::new(Bytes::from("{}")))
        .unwrap();
    expect(req, 415, "application/json").await;
    let req = Request::post("/chat/api/tools/call")
        .body(Full::new(Bytes::from("{}")))
        .unwrap();
    expect(req, 415, "application/json").await;
}

#[tokio::test]
async fn bad_conversation_ids() {
    let s = service(config(FakeHost::default()).history(lmchatkit::store::MemoryStore::new()));
    for id in ["a%2Fb", "..", "a..b", "a%00b", "%ff", "a%5Cb"] {
        let r = send(&s, get(&format!("/chat/api/conversations/{id}"))).await;
        assert_eq!(
            (r.status.as_u16(), r.error()),
            (400, "invalid conversation id".to_string()),
            "{id}"
        );
    }
    let r = send(&s, get("/chat/api/conversations/a/b")).await;
    assert_eq!(r.status, 400);
    let r = send(&s, put("/chat/api/conversations/", &json!({"id": "x"}))).await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn unknown_routes_and_methods() {
    expect(get("/chat/api/nope"), 404, "not found").await;
    expect(get("/elsewhere"), 404, "not found").await;
    let r = send(&svc(), get("/chat/api/chat")).await;
    assert_eq!(
        (r.status.as_u16(), r.headers["allow"].to_str().unwrap()),
        (405, "POST")
    );
    let r = send(
        &svc(),
        Request::post("/chat/api/models")
            .body(Full::default())
            .unwrap(),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.headers["allow"].to_str().unwrap()),
        (405, "GET")
    );
    let r = send(
        &svc(),
        Request::builder()
            .method("OPTIONS")
            .uri("/chat/api/conversations/c1")
            .body(Full::default())
            .unwrap(),
    )
    .await;
    assert_eq!(r.headers["allow"], "GET, PUT, PATCH, DELETE, POST");
    // Upload is off by default: the route does not exist.
    expect(
        Request::post("/chat/api/upload")
            .body(Full::default())
            .unwrap(),
        404,
        "not found",
    )
    .await;
}

#[tokio::test]
async fn cross_origin_mutations_are_refused() {
    let body = r#"{"name":"x"}"#;
    let req = |origin: &str| {
        Request::post("/chat/api/tools/call")
            .header("content-type", "application/json")
            .header("host", "chat.example:8080")
            .header("origin", origin)
            .body(Full::new(Bytes::from(body)))
            .unwrap()
    };
    expect(
        req("https://evil.example"),
        403,
        "cross-origin request from https://evil.example refused",
    )
    .await;
    expect(req("null"), 403, "cross-origin").await;
    // Same origin passes the CSRF check (and then fails visibility: the tool is unknown).
    expect(req("http://chat.example:8080"), 403, "not recognized").await;
    let allowed = service(
        config(FakeHost::default())
            .allowed_host("chat.example")
            .allowed_origin("https://app.example/"),
    );
    let r = send(&allowed, req("https://app.example")).await;
    assert!(r.error().contains("not recognized"));
    // Reads are not CSRF-relevant.
    let r = send(
        &svc(),
        Request::get("/chat/api/models")
            .header("origin", "https://evil.example")
            .body(Full::default())
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn a_required_principal_is_enforced() {
    let s = service(config(FakeHost::default()).require_principal(true));
    let r = send(&s, get("/chat/api/models")).await;
    assert_eq!(
        (r.status.as_u16(), r.error()),
        (401, "authentication required".into())
    );
    let mut req = get("/chat/api/models");
    req.extensions_mut().insert(Principal::new("alice"));
    assert_eq!(send(&s, req).await.status, 200);
}

#[tokio::test]
async fn prefix_is_stripped_when_present_and_optional_when_nested() {
    let s = service(config(FakeHost::default()).prefix("/assistant/"));
    assert_eq!(send(&s, get("/assistant/api/models")).await.status, 200);
    assert_eq!(send(&s, get("/api/models")).await.status, 200);
    assert_eq!(send(&s, get("/assistantx/api/models")).await.status, 404);
    assert!(
        lmchatkit::Config::builder(FakeHost::default())
            .prefix("chat")
            .build()
            .is_err()
    );
    assert!(
        lmchatkit::Config::builder(FakeHost::default())
            .prefix("/a/../b")
            .build()
            .is_err()
    );
    let root = service(config(FakeHost::default()).prefix(""));
    assert_eq!(send(&root, get("/api/models")).await.status, 200);
}
