//! The page at `{prefix}` and the embedded bundle: stable loader with ETag + `no-cache`,
//! content-hashed files `immutable`, HEAD, 304, and nothing else reachable. `scripts/test.sh`
//! builds the UI first and sets `LMCHATKIT_EXPECT_BUNDLE=1`, so there the bundle must be present.

use crate::support;

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

/// The wasm's path, read from the loader (None when the crate was built without a bundle).
async fn wasm_path(svc: &lmchatkit::ChatService) -> Option<String> {
    let loader = send(svc, get("/chat/assets/lmchatkit.js")).await.text();
    loader
        .split('"')
        .filter_map(|s| s.strip_prefix("./"))
        .find(|s| s.ends_with("_bg.wasm"))
        .map(|s| format!("/chat/assets/{s}"))
}

fn get_accepting(uri: &str, accept_encoding: &str) -> Request<Full<bytes::Bytes>> {
    Request::get(uri)
        .header("accept-encoding", accept_encoding)
        .body(Full::default())
        .unwrap()
}

#[tokio::test]
async fn the_bundle_travels_compressed_when_the_browser_accepts_it() {
    let svc = service(config(FakeHost::default()));
    let Some(wasm) = wasm_path(&svc).await else {
        assert!(std::env::var_os("LMCHATKIT_EXPECT_BUNDLE").is_none());
        return;
    };
    let plain = send(&svc, get(&wasm)).await;
    assert_eq!(plain.status, 200);
    assert!(plain.headers.get("content-encoding").is_none());
    assert_eq!(plain.headers["vary"], "accept-encoding");
    assert!(plain.body.starts_with(b"\0asm"));

    // What Chromium sends: brotli is the smallest.
    let br = send(&svc, get_accepting(&wasm, "gzip, deflate, br, zstd")).await;
    assert_eq!(br.headers["content-encoding"], "br");
    assert_eq!(br.headers["vary"], "accept-encoding");
    assert_eq!(br.headers["content-type"], "application/wasm");
    assert!(
        br.body.len() * 2 < plain.body.len(),
        "{} vs {}",
        br.body.len(),
        plain.body.len()
    );
    let mut decoded = Vec::new();
    std::io::Read::read_to_end(
        &mut brotli_decompressor::Decompressor::new(&br.body[..], 4096),
        &mut decoded,
    )
    .unwrap();
    assert_eq!(decoded, plain.body);

    let gz = send(&svc, get_accepting(&wasm, "gzip, br;q=0")).await;
    assert_eq!(gz.headers["content-encoding"], "gzip");
    let mut decoded = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(&gz.body[..]),
        &mut decoded,
    )
    .unwrap();
    assert_eq!(decoded, plain.body);
    assert!(br.body.len() < gz.body.len());

    let refused = send(&svc, get_accepting(&wasm, "identity, *;q=0")).await;
    assert!(refused.headers.get("content-encoding").is_none());
    assert_eq!(refused.body, plain.body);

    // Each representation has its own ETag; revalidating the brotli copy answers 304.
    let etags = [&plain, &gz, &br].map(|r| r.headers["etag"].to_str().unwrap().to_owned());
    assert!(etags[0] != etags[1] && etags[1] != etags[2] && etags[0] != etags[2]);
    let again = Request::get(&wasm)
        .header("accept-encoding", "br")
        .header("if-none-match", &etags[2])
        .body(Full::default())
        .unwrap();
    let r304 = send(&svc, again).await;
    assert_eq!((r304.status.as_u16(), r304.body.len()), (304, 0));
    // The plain copy's tag does not validate the brotli one.
    let stale = Request::get(&wasm)
        .header("accept-encoding", "br")
        .header("if-none-match", &etags[0])
        .body(Full::default())
        .unwrap();
    assert_eq!(send(&svc, stale).await.status, 200);

    let head = Request::head(&wasm)
        .header("accept-encoding", "br")
        .body(Full::default())
        .unwrap();
    let head = send(&svc, head).await;
    assert_eq!((head.status.as_u16(), head.body.len()), (200, 0));
    assert_eq!(head.headers["content-encoding"], "br");
}

#[tokio::test]
async fn the_loader_is_never_sent_encoded() {
    let svc = service(config(FakeHost::default()));
    let r = send(&svc, get_accepting("/chat/assets/lmchatkit.js", "br, gzip")).await;
    assert_eq!(r.status, 200);
    assert!(r.headers.get("content-encoding").is_none());
    assert!(r.headers.get("vary").is_none());
}

/// The page's `Content-Security-Policy` as directive → value (value without the name).
fn page_policy(r: &Reply) -> std::collections::BTreeMap<String, String> {
    let csp = r
        .headers
        .get("content-security-policy")
        .unwrap_or_else(|| panic!("the page has no CSP: {:?}", r.headers))
        .to_str()
        .unwrap();
    csp.split(';')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| match d.split_once(' ') {
            Some((name, value)) => (name.to_owned(), value.to_owned()),
            None => (d.to_owned(), String::new()),
        })
        .collect()
}

#[tokio::test]
async fn the_page_is_served_with_a_strict_csp_and_may_only_be_framed_by_itself() {
    let svc = service(config(FakeHost::default()));
    let head = Request::head("/chat").body(Full::default()).unwrap();
    for r in [send(&svc, get("/chat")).await, send(&svc, head).await] {
        assert_eq!(r.status, 200);
        let p = page_policy(&r);
        assert_eq!(p["default-src"], "'self'");
        assert_eq!(p["img-src"], "'self' data: blob:");
        assert_eq!(p["frame-ancestors"], "'self'");
        // The loader and the lazy highlighter are scripts of this origin; the wasm needs
        // 'wasm-unsafe-eval'; nothing inline, no eval.
        assert_eq!(p["script-src"], "'self' 'wasm-unsafe-eval'");
        assert_eq!(p["style-src"], "'self'");
        // Default-mode views are framed from this origin.
        assert_eq!(p["frame-src"], "'self'");
        assert_eq!(p["object-src"], "'none'");
        assert_eq!(p["base-uri"], "'none'");
        assert!(
            !p.values()
                .any(|v| v.contains("unsafe-inline") || v.contains("'unsafe-eval'")),
            "{p:?}"
        );
        assert_eq!(r.headers["x-frame-options"], "SAMEORIGIN");
    }
}

#[tokio::test]
async fn configured_frame_ancestors_are_allowed_and_x_frame_options_is_left_out() {
    let svc = service(
        config(FakeHost::default())
            .frame_ancestor("https://x.example/")
            .frame_ancestor("http://intranet.example:8443"),
    );
    let r = send(&svc, get("/chat")).await;
    let p = page_policy(&r);
    assert_eq!(
        p["frame-ancestors"],
        "'self' https://x.example http://intranet.example:8443"
    );
    assert!(
        r.headers.get("x-frame-options").is_none(),
        "X-Frame-Options cannot name origins, so it must not be sent: {:?}",
        r.headers
    );
    let one = service(config(FakeHost::default()).frame_ancestor("https://x.example"));
    let p = page_policy(&send(&one, get("/chat")).await);
    assert_eq!(p["frame-ancestors"], "'self' https://x.example");
}

#[tokio::test]
async fn in_proxy_mode_the_page_may_frame_the_sandbox_origin() {
    let svc = service(config(FakeHost::default()).sandbox_origin("http://sandbox.localhost:8181"));
    let p = page_policy(&send(&svc, get("/chat")).await);
    assert_eq!(
        p["frame-src"],
        "'self' http://sandbox.localhost:8181 http://*.sandbox.localhost:8181"
    );
}

#[test]
fn a_bad_frame_ancestor_fails_the_build() {
    for bad in [
        "x.example",
        "https://x.example/embed",
        "https://x.example; script-src *",
        "https://x.example 'unsafe-inline'",
        "'self'",
        "*",
        "javascript:alert(1)",
        "ftp://x.example",
        "https://",
        "https://user@x.example",
        "https://x.example:port",
        "",
    ] {
        let err = config(FakeHost::default())
            .frame_ancestor(bad)
            .build()
            .err()
            .unwrap_or_else(|| panic!("{bad:?} was accepted"));
        assert_eq!(
            err,
            lmchatkit::ConfigError::InvalidFrameAncestor(bad.to_owned()),
            "{bad:?}"
        );
        assert!(err.to_string().contains("https://"), "{err}");
    }
    for good in [
        "https://x.example",
        "https://*.x.example",
        "http://[::1]:8080",
    ] {
        assert!(
            config(FakeHost::default())
                .frame_ancestor(good)
                .build()
                .is_ok(),
            "{good}"
        );
    }
}
