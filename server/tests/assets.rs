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
