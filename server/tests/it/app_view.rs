//! MCP App views: `POST /api/apps/view`, the default-mode page `/apps/view/{token}` and the
//! proxy-mode sandbox page `/apps/sandbox`.

use crate::support;

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use lmchatkit::Principal;
use lmchatkit::protocol::*;
use serde_json::json;
use support::*;

const HTML: &str = "<!doctype html><html><body>view</body></html>";

fn view_resource(uri: &str, csp: Option<serde_json::Value>) -> ResourceResult {
    let ui = json!({"csp": csp, "permissions": {"camera": {}, "clipboardWrite": {}}, "prefersBorder": false});
    ResourceResult {
        uri: uri.into(),
        text: Some(HTML.into()),
        mime_type: Some("text/html;profile=mcp-app".into()),
        ui: Some(serde_json::from_value(ui).unwrap()),
        ..Default::default()
    }
}

/// Tools `show` (server a) and `other` (server b); views on both servers.
fn host() -> FakeHost {
    let mut h = FakeHost::default();
    h.sources.insert("show".into(), "a".into());
    h.sources.insert("other".into(), "b".into());
    let csp = json!({"connectDomains": ["https://api.example", "https://x.example; script-src *"],
                     "resourceDomains": ["https://cdn.example"]});
    let a = view_resource("ui://a/view", Some(csp));
    h.contents.insert(a.uri.clone(), ("a".into(), a));
    let plain = view_resource("ui://a/plain", None);
    h.contents.insert(plain.uri.clone(), ("a".into(), plain));
    let b = view_resource("ui://b/view", None);
    h.contents.insert(b.uri.clone(), ("b".into(), b));
    let text = ResourceResult {
        uri: "ui://a/text".into(),
        text: Some("hello".into()),
        mime_type: Some("text/plain".into()),
        ..Default::default()
    };
    h.contents.insert(text.uri.clone(), ("a".into(), text));
    let blob = ResourceResult {
        uri: "ui://a/blob".into(),
        blob: Some("PHA+YmxvYjwvcD4=".into()), // "<p>blob</p>"
        mime_type: Some("text/html;profile=mcp-app".into()),
        ..Default::default()
    };
    h.contents.insert(blob.uri.clone(), ("a".into(), blob));
    h
}

const EXPECTED_CSP: &str = "default-src 'none'; \
    script-src 'self' 'unsafe-inline' https://cdn.example; \
    style-src 'self' 'unsafe-inline' https://cdn.example; \
    connect-src 'self' https://api.example; \
    img-src 'self' data: https://cdn.example; font-src 'self' https://cdn.example; \
    media-src 'self' data: https://cdn.example; frame-src 'none'; object-src 'none'; base-uri 'self'; \
    form-action https://api.example";

/// Default mode adds the iframe's sandbox to the policy, so the page is sandboxed even opened
/// on its own.
fn default_mode_csp(csp: &str) -> String {
    format!("{csp}; sandbox allow-scripts allow-forms")
}

fn as_user(mut req: Request<Full<Bytes>>, who: &str) -> Request<Full<Bytes>> {
    req.extensions_mut().insert(Principal::new(who));
    req
}

fn ask(via: &str, uri: &str) -> Request<Full<Bytes>> {
    post("/chat/api/apps/view", &json!({"via": via, "uri": uri}))
}

fn header<'a>(r: &'a Reply, name: &str) -> &'a str {
    r.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

#[tokio::test]
async fn default_mode_serves_the_view_once_under_its_csp() {
    let svc = service(config(host()));
    let r = send(&svc, ask("show", "ui://a/view")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v: AppViewResponse = serde_json::from_slice(&r.body).unwrap();
    let token = v.url.strip_prefix("/chat/apps/view/").expect("a token URL");
    assert_eq!(token.len(), 48);
    assert_eq!(v.allow, "camera; clipboard-write");
    assert_eq!(v.prefers_border, Some(false));
    assert_eq!(
        v.external_domains,
        ["https://cdn.example", "https://api.example"]
    );
    assert!(
        !v.proxy && v.html.is_none(),
        "default mode never hands out the HTML"
    );

    let page = send(&svc, get(&v.url)).await;
    assert_eq!(page.status, 200);
    assert_eq!(page.text(), HTML);
    assert_eq!(header(&page, "content-type"), "text/html; charset=utf-8");
    assert_eq!(
        header(&page, "content-security-policy"),
        default_mode_csp(EXPECTED_CSP)
    );
    assert_eq!(header(&page, "x-frame-options"), "SAMEORIGIN");
    assert_eq!(header(&page, "cache-control"), "no-store");
    let again = send(&svc, get(&v.url)).await;
    assert_eq!(again.status, 404, "a view URL opens once");
    assert_eq!(again.error(), "this view link expired or is not yours");
}

#[tokio::test]
async fn no_declared_csp_gets_the_restrictive_default() {
    let svc = service(config(host()));
    let v = send(&svc, ask("show", "ui://a/plain")).await.json();
    let page = send(&svc, get(v["url"].as_str().unwrap())).await;
    assert_eq!(
        header(&page, "content-security-policy"),
        "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data:; media-src 'self' data:; connect-src 'none'; frame-src 'none'; \
         object-src 'none'; base-uri 'self'; form-action 'none'; sandbox allow-scripts allow-forms"
    );
}

#[tokio::test]
async fn a_view_url_is_bound_to_its_principal() {
    let svc = service(config(host()));
    let v = send(&svc, as_user(ask("show", "ui://a/view"), "alice"))
        .await
        .json();
    let url = v["url"].as_str().unwrap();
    assert_eq!(send(&svc, as_user(get(url), "bob")).await.status, 404);
    assert_eq!(
        send(&svc, get(url)).await.status,
        404,
        "anonymous is not alice"
    );
    assert_eq!(
        send(&svc, as_user(get(url), "alice")).await.status,
        200,
        "refusals do not burn it"
    );
}

#[tokio::test]
async fn view_urls_expire() {
    let svc = service(config(host()).app_view_ttl(Duration::from_millis(50)));
    let v = send(&svc, ask("show", "ui://a/view")).await.json();
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert_eq!(
        send(&svc, get(v["url"].as_str().unwrap())).await.status,
        404
    );
}

#[tokio::test]
async fn refusals_and_fallbacks() {
    let svc = service(config(host()));
    let cases = [
        (
            ask("ghost", "ui://a/view"),
            403,
            "tool \"ghost\" is not recognized",
        ),
        (
            ask("other", "ui://a/view"),
            404,
            "no resource ui://a/view on b",
        ),
        (
            ask("show", "ui://b/view"),
            404,
            "no resource ui://b/view on a",
        ),
        (
            ask("show", "https://a/view"),
            400,
            "uri \"https://a/view\" is not a ui:// resource",
        ),
        (ask(" ", "ui://a/view"), 400, "via is required"),
        (
            ask("show", "ui://a/text"),
            422,
            "ui://a/text is \"text/plain\", not an MCP App view (text/html;profile=mcp-app)",
        ),
    ];
    for (req, status, error) in cases {
        let r = send(&svc, req).await;
        assert_eq!((r.status.as_u16(), r.error()), (status, error.to_owned()));
    }
    assert_eq!(send(&svc, get("/chat/apps/view/nope")).await.status, 404);
    assert_eq!(
        send(&svc, get("/chat/apps/sandbox?t=x")).await.status,
        404,
        "no sandbox configured"
    );
    let r = send(&svc, get("/chat/api/apps/view")).await;
    assert_eq!(r.status, 405);
}

#[tokio::test]
async fn base64_views_are_decoded() {
    let svc = service(config(host()));
    let v = send(&svc, ask("show", "ui://a/blob")).await.json();
    assert_eq!(
        send(&svc, get(v["url"].as_str().unwrap())).await.text(),
        "<p>blob</p>"
    );
}

fn from_page(req: Request<Full<Bytes>>) -> Request<Full<Bytes>> {
    let mut req = req;
    req.headers_mut()
        .insert("origin", "http://127.0.0.1:8080".parse().unwrap());
    req.headers_mut()
        .insert("host", "127.0.0.1:8080".parse().unwrap());
    req
}

/// The `host:port` of an absolute URL.
fn authority(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next().unwrap_or_default()
}

/// The sandbox page request of `url`, sent with `Host: host`.
fn on_sandbox(url: &str, host: &str) -> Request<Full<Bytes>> {
    let path = &url[url.find("/chat/").unwrap()..];
    Request::get(path)
        .header("host", host)
        .body(Full::default())
        .unwrap()
}

#[tokio::test]
async fn proxy_mode_serves_the_sandbox_pinned_to_the_page_origin() {
    let svc = service(
        config(host())
            .sandbox_origin("http://localhost:8081/")
            .require_principal(true),
    );
    let r = send(
        &svc,
        as_user(from_page(ask("show", "ui://a/view")), "alice"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v: AppViewResponse = serde_json::from_slice(&r.body).unwrap();
    assert!(v.proxy);
    assert_eq!(
        v.html.as_deref(),
        Some(HTML),
        "the UI sends it in sandbox-resource-ready"
    );
    let own = authority(&v.url).to_owned();
    assert!(
        own.ends_with(".localhost:8081") && v.url.contains("/chat/apps/sandbox?t="),
        "{}",
        v.url
    );

    // Served on the host's own origin it would be same-origin with the chat: refused.
    assert_eq!(
        send(&svc, on_sandbox(&v.url, "127.0.0.1:8080"))
            .await
            .status,
        404
    );
    // The sandbox origin gets no cookies: no principal is needed, the token is the key.
    let page = send(&svc, on_sandbox(&v.url, &own)).await;
    assert_eq!(page.status, 200, "{}", page.text());
    assert_eq!(header(&page, "content-security-policy"), EXPECTED_CSP);
    assert_eq!(
        header(&page, "x-frame-options"),
        "",
        "framed cross-origin by the chat"
    );
    let body = page.text();
    assert!(
        body.contains(r#"var HOST = "http://127.0.0.1:8080";"#),
        "{body}"
    );
    assert!(
        body.contains("window.self === window.top"),
        "refuses to run top-level"
    );
    assert!(body.contains("ui/notifications/sandbox-proxy-ready"));
    assert_eq!(
        send(&svc, on_sandbox(&v.url, &own)).await.status,
        404,
        "once"
    );

    // Without the page's Origin the proxy cannot be pinned.
    let r = send(&svc, as_user(ask("show", "ui://a/view"), "alice")).await;
    assert_eq!(
        (r.status.as_u16(), r.error()),
        (400, "proxy mode needs the page's Origin header".into())
    );
}

#[tokio::test]
async fn the_sandbox_only_service_answers_nothing_else() {
    let svc = service(config(host()).sandbox_origin("http://localhost:8081"));
    let sandbox = svc.sandbox_only();
    let v = send(&svc, from_page(ask("show", "ui://a/view")))
        .await
        .json();
    for path in [
        "/chat/api/models",
        "/chat/api/conversations",
        "/chat",
        "/chat/assets/lmchatkit.js",
    ] {
        let r = send(
            &sandbox,
            Request::get(path)
                .header("host", "localhost:8081")
                .body(Full::default())
                .unwrap(),
        )
        .await;
        assert_eq!(r.status, 404, "{path}");
    }
    let r = send(
        &sandbox,
        post("/chat/api/tools/call", &json!({"name": "show"})),
    )
    .await;
    assert_eq!(r.status, 404, "no tool calls from the sandbox origin");
    let url = v["url"].as_str().unwrap();
    let page = send(&sandbox, on_sandbox(url, authority(url))).await;
    assert_eq!(page.status, 200);
}

#[tokio::test]
async fn proxy_mode_gives_each_server_its_own_sandbox_origin() {
    let svc = service(config(host()).sandbox_origin("http://localhost:8081"));
    let url = |v: serde_json::Value| v["url"].as_str().unwrap().to_owned();
    let a = url(send(&svc, from_page(ask("show", "ui://a/view")))
        .await
        .json());
    let a2 = url(send(&svc, from_page(ask("show", "ui://a/plain")))
        .await
        .json());
    let b = url(send(&svc, from_page(ask("other", "ui://b/view")))
        .await
        .json());
    assert_eq!(authority(&a), authority(&a2), "one origin per server");
    assert_ne!(
        authority(&a),
        authority(&b),
        "views of two servers never share an origin"
    );
    for u in [&a, &b] {
        assert!(
            u.starts_with("http://") && authority(u).ends_with(".localhost:8081"),
            "{u}"
        );
    }
    // A view's token opens only on its own server's origin.
    assert_eq!(send(&svc, on_sandbox(&a, authority(&b))).await.status, 404);
    assert_eq!(send(&svc, on_sandbox(&a, authority(&a))).await.status, 200);
    let page = send(&svc, on_sandbox(&b, authority(&b))).await;
    assert_eq!(page.status, 200);
    assert!(
        page.text().contains("location.hostname"),
        "the proxy compares host names, not whole origins"
    );
}

#[tokio::test]
async fn a_declared_sandbox_domain_is_honoured_under_the_sandbox_host_only() {
    let mut h = host();
    for (uri, domain) in [
        ("ui://a/mine", "budget.localhost"),
        ("ui://a/foreign", "evil.example"),
    ] {
        let mut r = view_resource(uri, None);
        r.ui.as_mut().unwrap().domain = Some(domain.into());
        h.contents.insert(uri.into(), ("a".into(), r));
    }
    let svc = service(config(h).sandbox_origin("http://localhost:8081"));
    let url = |v: serde_json::Value| v["url"].as_str().unwrap().to_owned();
    let mine = url(send(&svc, from_page(ask("show", "ui://a/mine")))
        .await
        .json());
    assert_eq!(authority(&mine), "budget.localhost:8081");
    let foreign = url(send(&svc, from_page(ask("show", "ui://a/foreign")))
        .await
        .json());
    let plain = url(send(&svc, from_page(ask("show", "ui://a/plain")))
        .await
        .json());
    assert_eq!(
        authority(&foreign),
        authority(&plain),
        "a domain outside the sandbox host falls back to the server's origin"
    );
    assert_eq!(
        send(&svc, on_sandbox(&mine, authority(&mine))).await.status,
        200
    );
}

#[tokio::test]
async fn api_routes_never_answer_on_a_sandbox_host_name() {
    let svc = service(config(host()).sandbox_origin("http://localhost:8081"));
    let v = send(&svc, from_page(ask("show", "ui://a/view")))
        .await
        .json();
    let own = authority(v["url"].as_str().unwrap()).to_owned();
    for host in [own.as_str(), "localhost:8081", "x.localhost:8081"] {
        for path in ["/chat/api/models", "/chat/api/conversations", "/chat"] {
            let r = send(
                &svc,
                Request::get(path)
                    .header("host", host)
                    .body(Full::default())
                    .unwrap(),
            )
            .await;
            assert_eq!(r.status, 404, "{path} on {host}");
        }
        let mut call = post("/chat/api/tools/call", &json!({"name": "show"}));
        call.headers_mut().insert("host", host.parse().unwrap());
        call.headers_mut()
            .insert("origin", format!("http://{host}").parse().unwrap());
        assert_eq!(send(&svc, call).await.status, 404, "tools/call on {host}");
    }
    // The chat's own names still answer.
    let r = send(
        &svc,
        Request::get("/chat/api/models")
            .header("host", "localhost:8080")
            .body(Full::default())
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 200);
}
