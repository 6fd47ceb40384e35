//! The page at `{prefix}` and the embedded bundle: stable loader with ETag + `no-cache`,
//! content-hashed files `immutable`, HEAD, 304, and nothing else reachable. `scripts/test.sh`
//! builds the UI first and sets `LMCHATKIT_EXPECT_BUNDLE=1`, so there the bundle must be present.

mod support;

use http::Request;
use http_body_util::Full;
use support::*;

#[tokio::test]
async fn page_carries_the_prefix_and_loads_the_stable_loader() {
    let svc = service(
        config(FakeHost::default())
            .prefix("/assist")
            .title("Team <Chat>"),
    );
    for path in ["/assist", "/assist/"] {
        let r = send(&svc, get(path)).await;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.headers["content-type"], "text/html; charset=utf-8");
        let html = r.text();
        assert!(
            html.contains(r#"<div data-lmchatkit data-prefix="/assist">"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<script type="module" src="/assist/assets/lmchatkit.js"></script>"#)
        );
        assert!(html.contains("<title>Team &lt;Chat&gt;</title>"));
    }
    let head = send(
        &svc,
        Request::head("/assist").body(Full::default()).unwrap(),
    )
    .await;
    assert_eq!((head.status.as_u16(), head.body.len()), (200, 0));
    let off = service(config(FakeHost::default()).page(false));
    assert_eq!(send(&off, get("/chat")).await.status, 404);
}

#[tokio::test]
async fn loader_revalidates_and_hashed_files_are_immutable() {
    let svc = service(config(FakeHost::default()));
    let r = send(&svc, get("/chat/assets/lmchatkit.js")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "text/javascript; charset=utf-8");
    assert_eq!(r.headers["cache-control"], "no-cache");
    let etag = r.headers["etag"].to_str().unwrap().to_owned();
    let again = Request::get("/chat/assets/lmchatkit.js")
        .header("if-none-match", &etag)
        .body(Full::default())
        .unwrap();
    let r304 = send(&svc, again).await;
    assert_eq!((r304.status.as_u16(), r304.body.len()), (304, 0));

    let loader = r.text();
    let hashed: Vec<String> = loader
        .split(['\'', '"'])
        .filter_map(|s| s.strip_prefix("./"))
        .filter(|s| s.ends_with(".js") || s.ends_with(".wasm") || s.ends_with(".css"))
        .map(str::to_owned)
        .collect();
    if std::env::var_os("LMCHATKIT_EXPECT_BUNDLE").is_some() {
        assert!(
            hashed.iter().any(|h| h.ends_with("_bg.wasm")),
            "no wasm named in the loader: {loader}"
        );
    } else if hashed.is_empty() {
        assert!(loader.contains("not built"), "{loader}");
    }
    for name in hashed {
        let r = send(&svc, get(&format!("/chat/assets/{name}"))).await;
        assert_eq!(r.status, 200, "{name}");
        assert_eq!(
            r.headers["cache-control"],
            "public, max-age=31536000, immutable"
        );
        if name.ends_with(".wasm") {
            assert_eq!(r.headers["content-type"], "application/wasm");
            assert!(r.body.starts_with(b"\0asm"));
        }
    }
}

#[tokio::test]
async fn nothing_else_is_reachable_under_assets() {
    let svc = service(config(FakeHost::default()));
    for path in [
        "index.html",
        "../Cargo.toml",
        "..%2FCargo.toml",
        "%2e%2e/build.rs",
        "",
        "nope.js",
    ] {
        let r = send(&svc, get(&format!("/chat/assets/{path}"))).await;
        assert_eq!(r.status, 404, "{path}");
    }
    let r = send(
        &svc,
        Request::post("/chat/assets/lmchatkit.js")
            .body(Full::default())
            .unwrap(),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.headers["allow"].to_str().unwrap()),
        (405, "GET, HEAD")
    );
}
