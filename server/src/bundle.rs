//! The embedded UI bundle: what is served at `{prefix}`
//! and below `{prefix}/assets/`. Pure lookups, no HTTP types; the `assets` route turns an
//! [`Asset`] into a response.
//!
//! - `./scripts/build-ui.sh` builds the UI into `server/assets/`; `build.rs` embeds every
//!   file there except an `index.html`, with its content type and a strong ETag computed at
//!   build time. Without a bundle the crate still builds and the loader shows how to build the UI.
//! - `{prefix}/assets/lmchatkit.js` is the **stable loader** (not immutable: serve it with
//!   `Cache-Control: no-cache` and its ETag). It imports the content-hashed JS glue relative to its
//!   own URL, starts the hashed wasm and links the hashed CSS, so the page and host pages never
//!   name a hash. The hashed files are [`Asset::immutable`] (`public, max-age=31536000, immutable`).
//! - The page at `{prefix}` is [`page_html`], rendered with the run-time prefix (an
//!   `index.html` is never served). It has no inline script or style, so a strict CSP
//!   (`script-src 'self'`, `style-src 'self'`) works. Host pages embed the UI with the same two
//!   elements: the mount `<div data-lmchatkit data-prefix="…">` and the loader `<script>`.
//! - The code highlighter (`lmchatkit-highlight-<hash>.js`, added by `scripts/build-ui.sh`) is
//!   one more hashed file; the loader publishes its URL for the UI, which loads it lazily.
//! - **Diagrams.** Mermaid (`lmchatkit-mermaid-<hash>.js`, npm `mermaid`'s one-file build) and
//!   the diagram frame's script (`lmchatkit-diagram-<hash>.js`) are served by
//!   [`diagram_script`] below `{prefix}/diagram/`, for the sandboxed frame [`diagram_page`] that
//!   the UI makes for each ```mermaid block; the chat's page never runs them (see
//!   `frontend/src/components/diagrams.rs`).
//! - **Wasm chunks.** The UI's wasm is split at its split points (the dialogs and MCP App views
//!   a first paint does not need): `lmchatkit-split-<hash>.js`, which the glue imports, fetches
//!   `split_<part>-<hash>.wasm` (and any `chunk_<n>-<hash>.wasm` it shares) the first time the
//!   part is shown. They are hashed files like the rest; the loader does not name them.
//! - **Precompressed.** `scripts/build-ui.sh` also writes a brotli (quality 11) and a gzip
//!   (level 9) copy of each JS, CSS and wasm file; they are embedded as [`Asset::br`] and
//!   [`Asset::gzip`] and [`Asset::encoded`] picks one by the request's `Accept-Encoding`, so the
//!   UI travels compressed (the wasm at about 40 % of its size) without a compression layer in
//!   the host and without compressing per request.

// The entry names are read by the tests only.
#[cfg_attr(not(test), allow(dead_code))]
mod table {
    #[allow(unused_imports)] // `Encoded` appears only when the bundle is built.
    use super::{Asset, Encoded};
    include!(concat!(env!("OUT_DIR"), "/bundle_table.rs"));
}

/// Path of the stable loader, relative to `{prefix}/assets/`.
pub(crate) const LOADER_PATH: &str = "lmchatkit.js";

/// One file served below `{prefix}/assets/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Asset {
    /// The file's bytes.
    pub body: &'static [u8],
    /// `Content-Type` header value.
    pub content_type: &'static str,
    /// Strong ETag, quotes included (`"0123456789abcdef"`).
    pub etag: &'static str,
    /// Content-hashed name: cache forever (`immutable`); otherwise revalidate (`no-cache`).
    pub immutable: bool,
    /// The gzip copy, if the bundle has one.
    pub gzip: Option<Encoded>,
    /// The brotli copy, if the bundle has one.
    pub br: Option<Encoded>,
}

/// A precompressed copy of an [`Asset`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Encoded {
    /// The compressed bytes.
    pub body: &'static [u8],
    /// Strong ETag of the compressed bytes (a different representation, so a different tag).
    pub etag: &'static str,
}

impl Asset {
    /// Whether the asset has precompressed copies (then responses vary on `Accept-Encoding`).
    pub(crate) fn has_encodings(&self) -> bool {
        self.gzip.is_some() || self.br.is_some()
    }

    /// The copy to send for a request whose `Accept-Encoding` allows `accepts(coding)`: brotli
    /// (smallest), else gzip, else `None` (the plain bytes). Returns the `Content-Encoding` value
    /// with the copy.
    pub(crate) fn encoded(
        &self,
        accepts: impl Fn(&str) -> bool,
    ) -> Option<(&'static str, Encoded)> {
        [("br", self.br), ("gzip", self.gzip)]
            .into_iter()
            .find_map(|(coding, copy)| copy.filter(|_| accepts(coding)).map(|c| (coding, c)))
    }
}

/// The file at `path`, relative to `{prefix}/assets/` (already percent-decoded, no leading `/`).
/// Only exact names of embedded files match, so `..`, absolute paths, `index.html` and anything
/// else unknown are `None`.
pub(crate) fn asset(path: &str) -> Option<Asset> {
    if path == LOADER_PATH {
        return Some(table::LOADER);
    }
    if path.is_empty() || path.starts_with('/') || path.split('/').any(|s| s == ".." || s == ".") {
        return None;
    }
    table::FILES
        .binary_search_by(|(p, _)| (*p).cmp(path))
        .ok()
        .map(|i| table::FILES[i].1)
}

/// The policy of the diagram frame's page (an HTTP header; the page's own, not the chat's):
/// sandboxed (an opaque origin: no cookies, storage or script access to the chat, no popups, no
/// navigation of the chat), no network at all (`default-src 'none'`: a diagram can fetch nothing,
/// so it can leak nothing), scripts only the two files the page names, and the inline styles
/// Mermaid's SVG carries, which stay inside the frame. Framed only by the chat's own pages.
pub(crate) const DIAGRAM_CSP: &str = "sandbox allow-scripts; default-src 'none'; \
     script-src 'self'; style-src 'unsafe-inline'; img-src data:; font-src data:; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'self'";

/// The page of the diagram frame, served at `{prefix}/diagram`: Mermaid and the frame's script
/// (`frontend/diagram.js`), which draws the diagram its URL's fragment holds and tells the chat
/// its height (or the parser's message). `None` when the bundle has no diagram renderer.
/// `prefix` is HTML-escaped.
pub(crate) fn diagram_page(prefix: &str) -> Option<String> {
    let (mermaid, script) = (table::MERMAID?, table::DIAGRAM_SCRIPT?);
    let prefix = escape_html(prefix.trim_end_matches('/'));
    Some(format!(
        "<!doctype html>\n\
         <html lang=\"en\">\n\
         <head>\n\
         <meta charset=\"utf-8\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>Diagram</title>\n\
         <style>html,body{{margin:0;padding:0;background:transparent;overflow:hidden}}\
         #diagram{{padding:4px 0;text-align:center}}\
         #diagram svg{{max-width:100%;height:auto}}</style>\n\
         </head>\n\
         <body>\n\
         <div id=\"diagram\"></div>\n\
         <script src=\"{prefix}/diagram/{mermaid}\"></script>\n\
         <script src=\"{prefix}/diagram/{script}\"></script>\n\
         </body>\n\
         </html>\n"
    ))
}

/// One of the diagram frame's two scripts, by name (`{prefix}/diagram/{name}`); any other name is
/// `None`.
pub(crate) fn diagram_script(name: &str) -> Option<Asset> {
    [table::MERMAID, table::DIAGRAM_SCRIPT]
        .into_iter()
        .flatten()
        .find(|n| *n == name)
        .and_then(asset)
}

/// Whether a UI bundle (the JS entry and its wasm) is embedded. When not, the loader only shows
/// how to build it.
pub(crate) fn is_built() -> bool {
    table::BUILT
}

/// The page served at `{prefix}`: the mount element carrying the prefix and the stable loader.
/// `prefix` is the public prefix (`/chat`, or `""` at the root; a trailing `/` is ignored); it and
/// `title` are HTML-escaped.
pub(crate) fn page_html(prefix: &str, title: &str) -> String {
    let prefix = escape_html(prefix.trim_end_matches('/'));
    let title = escape_html(title);
    format!(
        "<!doctype html>\n\
         <html lang=\"en\">\n\
         <head>\n\
         <meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n\
         <script type=\"module\" src=\"{prefix}/assets/{LOADER_PATH}\"></script>\n\
         </head>\n\
         <body>\n\
         <div data-lmchatkit data-prefix=\"{prefix}\"></div>\n\
         <noscript>lmchatkit needs JavaScript and WebAssembly.</noscript>\n\
         </body>\n\
         </html>\n"
    )
}

/// Escapes text for HTML element content and quoted attribute values.
pub(crate) fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    fn loader_text() -> &'static str {
        std::str::from_utf8(asset(LOADER_PATH).expect("loader").body).expect("utf-8 loader")
    }

    fn expected_etag(body: &[u8]) -> String {
        format!("\"{}\"", &hex::encode(Sha256::digest(body))[..16])
    }

    #[test]
    fn loader_matches_the_build_state() {
        let loader = asset(LOADER_PATH).unwrap();
        assert!(!loader.immutable, "the loader must be revalidated");
        assert_eq!(loader.content_type, "text/javascript; charset=utf-8");
        let text = loader_text();
        if is_built() {
            let js = table::JS_ENTRY.expect("js entry");
            let wasm = table::WASM.expect("wasm");
            assert!(text.contains(&format!("\"./{js}\"")), "{text}");
            assert!(text.contains(&format!("\"./{wasm}\"")), "{text}");
            assert!(text.contains("import.meta.url"));
            for css in table::CSS {
                assert!(text.contains(&format!("\"./{css}\"")), "{text}");
                assert!(asset(css).unwrap().content_type.starts_with("text/css"));
            }
            let js = asset(js).expect("hashed js embedded");
            assert!(js.immutable);
            assert_eq!(js.content_type, "text/javascript; charset=utf-8");
            let wasm = asset(wasm).expect("hashed wasm embedded");
            assert!(wasm.immutable);
            assert_eq!(wasm.content_type, "application/wasm");
            assert_eq!(&wasm.body[..4], b"\0asm");
            assert!(!text.contains("is not built"));
            match table::HIGHLIGHTER {
                Some(h) => {
                    assert!(text.contains("globalThis.__lmchatkit"), "{text}");
                    assert!(text.contains(&format!("new URL(\"./{h}\", import.meta.url)")));
                    let hl = asset(h).expect("highlighter embedded");
                    assert!(hl.immutable, "content-hashed name");
                    assert_eq!(hl.content_type, "text/javascript; charset=utf-8");
                    let body = std::str::from_utf8(hl.body).unwrap();
                    assert!(body.contains(".hljs = hljs;"), "publishes its instance");
                }
                None => assert!(
                    std::env::var_os("LMCHATKIT_EXPECT_BUNDLE").is_none(),
                    "scripts/build-ui.sh adds the code highlighter to a built bundle"
                ),
            }
            match (table::MERMAID, table::DIAGRAM_SCRIPT) {
                (Some(m), Some(d)) => {
                    assert!(
                        !text.contains(m) && !text.contains(d),
                        "lazy: the loader names neither"
                    );
                    let mermaid = diagram_script(m).expect("mermaid embedded");
                    assert!(mermaid.immutable && mermaid.br.is_some() && mermaid.gzip.is_some());
                    let body = std::str::from_utf8(mermaid.body).unwrap();
                    assert!(
                        body.contains("globalThis[\"mermaid\"]"),
                        "publishes mermaid"
                    );
                    let frame = diagram_script(d).expect("frame script embedded");
                    assert!(
                        std::str::from_utf8(frame.body)
                            .unwrap()
                            .contains("lmchatkit: \"diagram\"")
                    );
                    let page = diagram_page("/chat/").unwrap();
                    assert!(page.contains(&format!("<script src=\"/chat/diagram/{m}\"></script>")));
                    assert!(page.contains(&format!("<script src=\"/chat/diagram/{d}\"></script>")));
                    // Only those two: not the UI's glue, not the loader, not a path outside.
                    assert!(diagram_script(table::JS_ENTRY.unwrap()).is_none());
                    assert!(diagram_script(LOADER_PATH).is_none());
                    assert!(diagram_script(&format!("../{m}")).is_none());
                }
                _ => assert!(
                    std::env::var_os("LMCHATKIT_EXPECT_BUNDLE").is_none(),
                    "scripts/build-ui.sh adds the diagram renderer to a built bundle"
                ),
            }
        } else {
            assert!(table::JS_ENTRY.is_none() && table::WASM.is_none());
            assert!(table::HIGHLIGHTER.is_none());
            assert!(diagram_page("").is_none());
            assert!(text.contains(
                "The lmchatkit UI bundle is not built. Run ./scripts/setup.sh && \
                 ./scripts/build-ui.sh, then rebuild the server."
            ));
            assert!(
                text.contains("textContent"),
                "the message is text, not HTML"
            );
        }
    }

    #[test]
    fn etags_are_the_sha256_of_the_embedded_bytes() {
        let loader = asset(LOADER_PATH).unwrap();
        assert_eq!(loader.etag, expected_etag(loader.body));
        for (path, a) in table::FILES {
            assert_eq!(a.etag, expected_etag(a.body), "{path}");
            assert_eq!(asset(path), Some(*a));
        }
    }

    /// Paths below `dir` as build.rs embeds them (no hidden entries, no trunk `index.html`).
    fn servable_files(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<String>) {
        let Ok(read) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in read.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if name.starts_with('.') {
                continue;
            }
            if path.is_dir() {
                servable_files(root, &path, out);
                continue;
            }
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            // `<file>.gz` / `<file>.br` beside `<file>` are its encoded copies, not files.
            let copy_of = rel
                .strip_suffix(".gz")
                .or_else(|| rel.strip_suffix(".br"))
                .filter(|base| root.join(base).is_file());
            if rel != "index.html" && rel != LOADER_PATH && copy_of.is_none() {
                out.push(rel);
            }
        }
    }

    #[test]
    fn table_matches_the_assets_directory() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
        let mut on_disk = Vec::new();
        servable_files(&root, &root, &mut on_disk);
        on_disk.sort();
        let embedded: Vec<&str> = table::FILES.iter().map(|(p, _)| *p).collect();
        assert_eq!(
            embedded, on_disk,
            "build.rs must embed exactly server/assets/"
        );
        for (path, a) in table::FILES {
            let disk = std::fs::read(root.join(path)).unwrap();
            assert_eq!(a.body, &disk[..], "{path} changed since the build");
            for (suffix, copy) in [(".gz", a.gzip), (".br", a.br)] {
                let on_disk = std::fs::read(root.join(format!("{path}{suffix}"))).ok();
                assert_eq!(copy.map(|c| c.body), on_disk.as_deref(), "{path}{suffix}");
            }
        }
    }

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(bytes), &mut out).unwrap();
        out
    }

    fn unbrotli(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut reader = brotli_decompressor::Decompressor::new(bytes, 4096);
        std::io::Read::read_to_end(&mut reader, &mut out).unwrap();
        out
    }

    #[test]
    fn encoded_copies_decode_to_the_file_and_are_smaller() {
        for (path, a) in table::FILES {
            if let Some(gz) = a.gzip {
                assert_eq!(gunzip(gz.body), a.body, "{path}.gz");
                assert!(gz.body.len() < a.body.len(), "{path}.gz");
                assert_eq!(gz.etag, expected_etag(gz.body), "{path}.gz");
            }
            if let Some(br) = a.br {
                assert_eq!(unbrotli(br.body), a.body, "{path}.br");
                assert!(br.body.len() < a.body.len(), "{path}.br");
                assert_eq!(br.etag, expected_etag(br.body), "{path}.br");
            }
        }
        if std::env::var_os("LMCHATKIT_EXPECT_BUNDLE").is_some() {
            // scripts/build-ui.sh compresses the entry JS, the wasm, the CSS and the highlighter.
            let mut main = vec![table::JS_ENTRY.unwrap(), table::WASM.unwrap()];
            main.extend(table::CSS);
            main.extend(table::HIGHLIGHTER);
            for path in main {
                let a = asset(path).unwrap();
                assert!(
                    a.gzip.is_some() && a.br.is_some(),
                    "{path} has no encoded copies"
                );
            }
        }
    }

    #[test]
    fn the_smallest_accepted_copy_is_chosen() {
        let gzip = Encoded {
            body: b"gz",
            etag: "\"g\"",
        };
        let br = Encoded {
            body: b"br",
            etag: "\"b\"",
        };
        let plain = Asset {
            body: b"plain",
            content_type: "text/css",
            etag: "\"p\"",
            immutable: true,
            gzip: None,
            br: None,
        };
        let both = Asset {
            gzip: Some(gzip),
            br: Some(br),
            ..plain
        };
        assert!(!plain.has_encodings() && both.has_encodings());
        assert_eq!(plain.encoded(|_| true), None);
        assert_eq!(both.encoded(|_| true), Some(("br", br)));
        assert_eq!(both.encoded(|c| c == "gzip"), Some(("gzip", gzip)));
        assert_eq!(both.encoded(|_| false), None);
        let gzip_only = Asset { br: None, ..both };
        assert_eq!(gzip_only.encoded(|c| c == "br"), None);
    }

    #[test]
    fn files_are_sorted_and_trunk_index_is_not_served() {
        assert!(table::FILES.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(asset("index.html"), None);
    }

    #[test]
    fn unknown_and_traversal_paths_are_none() {
        assert_eq!(asset("nope.js"), None);
        assert_eq!(asset(""), None);
        assert_eq!(asset("../x"), None);
        assert_eq!(asset("../Cargo.toml"), None);
        assert_eq!(asset("./lmchatkit.js"), None);
        assert_eq!(asset("/lmchatkit.js"), None);
        assert_eq!(asset("snippets/../../build.rs"), None);
        if let Some(js) = table::JS_ENTRY {
            assert_eq!(asset(&format!("../{js}")), None);
            assert_eq!(asset(&format!("x/../{js}")), None);
        }
    }

    #[test]
    fn page_loads_the_stable_loader_with_the_prefix() {
        let page = page_html("/chat/", "lmchatkit");
        assert!(page.starts_with("<!doctype html>"));
        assert!(page.contains("<meta charset=\"utf-8\">"));
        assert!(page.contains("<meta name=\"viewport\""));
        assert!(page.contains("<title>lmchatkit</title>"));
        assert!(page.contains("<div data-lmchatkit data-prefix=\"/chat\"></div>"));
        assert!(
            page.contains("<script type=\"module\" src=\"/chat/assets/lmchatkit.js\"></script>")
        );
        assert_eq!(page.matches("<script").count(), 1, "no inline script");
        assert!(!page.contains("<style"), "no inline style");
        let root = page_html("", "t");
        assert!(root.contains("data-prefix=\"\""));
        assert!(root.contains("src=\"/assets/lmchatkit.js\""));
    }

    #[test]
    fn page_escapes_prefix_and_title() {
        let page = page_html("/a\"><script>&'", "<b>\"Tom & Jerry\"</b>");
        assert!(page.contains("<title>&lt;b&gt;&quot;Tom &amp; Jerry&quot;&lt;/b&gt;</title>"));
        assert!(page.contains("data-prefix=\"/a&quot;&gt;&lt;script&gt;&amp;&#39;\""));
        assert!(page.contains("src=\"/a&quot;&gt;&lt;script&gt;&amp;&#39;/assets/lmchatkit.js\""));
        assert_eq!(page.matches("<script").count(), 1);
        assert!(!page.contains("Tom & Jerry"));
    }
}
