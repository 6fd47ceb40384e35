//! Build script: embeds the UI bundle that `scripts/build-ui.sh` writes into `server/assets/`.
//! It writes two files into `OUT_DIR`, both used by `src/bundle.rs`:
//!
//! - `lmchatkit.js`: the **stable loader** served at `{prefix}/assets/lmchatkit.js`. When a bundle is
//!   present it imports the content-hashed JS glue relative to its own URL, links the hashed CSS and
//!   starts the wasm; otherwise it only writes a "the UI bundle is not built" message into the page.
//!   When `scripts/build-ui.sh` added the code highlighter (`lmchatkit-highlight-<hash>.js`), the
//!   loader also puts its absolute URL into `globalThis.__lmchatkit.highlighter`; the UI loads it
//!   on the first fenced code block (`frontend/src/markdown/hljs.rs`). Mermaid
//!   (`lmchatkit-mermaid-<hash>.js`) and the diagram frame's script (`lmchatkit-diagram-<hash>.js`)
//!   are named in the table for the diagram frame's page (`{prefix}/diagram`); the loader does
//!   not name them.
//! - `bundle_table.rs`: the table of embedded files (`include_bytes!` with absolute paths), each with
//!   its content type, a strong ETag (`"` + first 16 hex digits of its SHA-256 + `"`) and whether its
//!   name is content-hashed (then it is served `immutable`), plus which file is the JS entry,
//!   its wasm and its CSS. The precompressed copies `<file>.gz` and `<file>.br` that
//!   `scripts/build-ui.sh` writes are not files of their own: they are attached to `<file>` (each
//!   with its own ETag) and served in its place when the request accepts that encoding.
//!
//! A missing or empty `assets/` is normal (`cargo clippy`/`cargo test` never need the wasm
//! toolchain): the table is then empty and the loader is the "not built" one. An
//! `index.html` (a trunk build's page) and hidden entries are never embedded. The wasm chunks the
//! UI loads later (`split_<part>-<hash>.wasm`, `chunk_<n>-<hash>.wasm`) and the JS that loads
//! them are embedded like every other file; the glue names that JS, the loader does not.
//!
//! The ETag is the same function as the service's `api::etag_of`; the unit tests in
//! `src/bundle.rs` check every embedded ETag against it.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// Name of the stable loader, relative to `{prefix}/assets/`.
const LOADER: &str = "lmchatkit.js";

/// Shown (and logged) by the loader when the crate was built without a UI bundle.
const NOT_BUILT: &str = "The lmchatkit UI bundle is not built. Run ./scripts/setup.sh && \
                         ./scripts/build-ui.sh, then rebuild the server.";

struct Embedded {
    /// Path relative to `assets/`, with `/` separators.
    rel: String,
    abs: PathBuf,
    content_type: &'static str,
    etag: String,
    immutable: bool,
    /// `<rel>.gz` and `<rel>.br` (written by `scripts/build-ui.sh`): absolute path and ETag.
    gzip: Option<(PathBuf, String)>,
    br: Option<(PathBuf, String)>,
}

/// Suffixes of the precompressed copies `scripts/build-ui.sh` writes beside a file.
const ENCODED_SUFFIXES: [&str; 2] = [".gz", ".br"];

fn main() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let assets = manifest_dir.join("assets");

    println!("cargo:rerun-if-changed=build.rs");
    // `cfg(shared_engine)`: a shared engine (Redis or PostgreSQL) can be configured.
    println!("cargo::rustc-check-cfg=cfg(shared_engine)");
    // `cfg(docsrs)`: docs.rs's build (see `[package.metadata.docs.rs]`).
    println!("cargo::rustc-check-cfg=cfg(docsrs)");
    if env::var_os("CARGO_FEATURE_REDIS").is_some()
        || env::var_os("CARGO_FEATURE_POSTGRES").is_some()
    {
        println!("cargo::rustc-cfg=shared_engine");
    }
    if assets.is_dir() {
        // A directory is scanned recursively by cargo; files are listed too (below) for clarity.
        println!("cargo:rerun-if-changed={}", assets.display());
    } else {
        // A missing path would make cargo rerun this script (and rebuild the crate) on every
        // build. Watch the crate directory instead: it changes when `assets/` is created.
        println!("cargo:rerun-if-changed={}", manifest_dir.display());
    }

    let mut files = Vec::new();
    if assets.is_dir() {
        collect(&assets, &assets, &mut files);
    }
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.abs.display());
    }
    let files = attach_encoded(files);

    // wasm-bindgen (--target web) writes `<name>-<hash>.js` next to `<name>-<hash>_bg.wasm`.
    let top_level = |f: &&Embedded| !f.rel.contains('/');
    let mut entries = files.iter().filter(top_level).filter_map(|wasm| {
        let stem = wasm.rel.strip_suffix("_bg.wasm")?;
        let js = files.iter().find(|f| f.rel == format!("{stem}.js"))?;
        Some((js.rel.clone(), wasm.rel.clone()))
    });
    let entry = entries.next();
    if let Some((js, _)) = &entry
        && entries.next().is_some()
    {
        println!("cargo:warning=several wasm-bindgen entries in assets/; using {js}");
    }
    let css: Vec<String> = files
        .iter()
        .filter(top_level)
        .filter(|f| f.rel.ends_with(".css"))
        .map(|f| f.rel.clone())
        .collect();
    let highlighter = files
        .iter()
        .filter(top_level)
        .map(|f| f.rel.clone())
        .find(|rel| is_hashed_script(rel, "lmchatkit-highlight-"));
    // The diagram frame's two scripts: Mermaid and the frame's own (`{prefix}/diagram` names
    // them; the UI loads neither).
    let diagram_scripts = |prefix: &str| {
        files
            .iter()
            .filter(top_level)
            .map(|f| f.rel.clone())
            .find(|rel| is_hashed_script(rel, prefix))
    };
    let (mermaid, diagram_script) = (
        diagram_scripts("lmchatkit-mermaid-"),
        diagram_scripts("lmchatkit-diagram-"),
    );
    if entry.is_none() && !files.is_empty() {
        println!(
            "cargo:warning=server/assets/ holds files but no wasm-bindgen entry (x.js + x_bg.wasm); \
             the UI is treated as not built"
        );
    }

    // A packaged copy (crates.io's, or one `cargo package` made: cargo adds `Cargo.toml.orig`
    // to every package) must carry the bundle `scripts/package.sh` puts in it. Without one it
    // would build a service whose page only says "not built" and names scripts the package
    // does not contain, so it is a compile error instead. In the repository an unbuilt UI stays
    // a page, for work on everything else.
    let packaged = manifest_dir.join("Cargo.toml.orig").is_file();
    let missing_in_package = packaged && entry.is_none();
    let loader = match &entry {
        Some((js, wasm)) => built_loader(js, wasm, &css, highlighter.as_deref()),
        None => not_built_loader(),
    };
    let loader_path = out_dir.join(LOADER);
    fs::write(&loader_path, &loader).expect("write loader");

    let mut table = String::new();
    let _ = writeln!(
        table,
        "// @generated by server/build.rs from {:?}. Do not edit.\n",
        assets.display().to_string()
    );
    let _ = writeln!(
        table,
        "/// Whether a UI bundle (JS entry + wasm) is embedded."
    );
    let _ = writeln!(table, "pub(super) const BUILT: bool = {};", entry.is_some());
    if missing_in_package {
        let _ = writeln!(
            table,
            "compile_error!({:?});",
            "this copy of the lmchatkit crate carries no UI bundle (its assets/ folder holds no \
             wasm-bindgen entry), so it would serve a page that only says the UI is not built. \
             Packages made by scripts/package.sh (as published on crates.io) carry it: use one \
             of those, or build from the repository after ./scripts/build-ui.sh."
        );
    }
    let (js, wasm) = match &entry {
        Some((js, wasm)) => (format!("Some({js:?})"), format!("Some({wasm:?})")),
        None => ("None".to_owned(), "None".to_owned()),
    };
    let _ = writeln!(table, "/// The JS entry (wasm-bindgen glue).");
    let _ = writeln!(table, "pub(super) const JS_ENTRY: Option<&str> = {js};");
    let _ = writeln!(table, "/// The main wasm module.");
    let _ = writeln!(table, "pub(super) const WASM: Option<&str> = {wasm};");
    let _ = writeln!(table, "/// The stylesheets, in name order.");
    let _ = writeln!(table, "pub(super) const CSS: &[&str] = &{css:?};");
    let _ = writeln!(
        table,
        "/// The lazily loaded code highlighter (`lmchatkit-highlight-<hash>.js`), if built."
    );
    let _ = writeln!(
        table,
        "pub(super) const HIGHLIGHTER: Option<&str> = {};",
        match (&entry, &highlighter) {
            (Some(_), Some(h)) => format!("Some({h:?})"),
            _ => "None".to_owned(),
        }
    );
    let (mermaid, diagram_script) = match (&entry, mermaid, diagram_script) {
        (Some(_), Some(m), Some(d)) => (format!("Some({m:?})"), format!("Some({d:?})")),
        _ => ("None".to_owned(), "None".to_owned()),
    };
    let _ = writeln!(
        table,
        "/// Mermaid (`lmchatkit-mermaid-<hash>.js`), which the diagram frame loads, if built."
    );
    let _ = writeln!(table, "pub(super) const MERMAID: Option<&str> = {mermaid};");
    let _ = writeln!(
        table,
        "/// The diagram frame's script (`lmchatkit-diagram-<hash>.js`), if built."
    );
    let _ = writeln!(
        table,
        "pub(super) const DIAGRAM_SCRIPT: Option<&str> = {diagram_script};"
    );
    let _ = writeln!(table, "/// The stable loader (`{LOADER}`).");
    let _ = writeln!(table, "pub(super) const LOADER: Asset = Asset {{");
    let _ = writeln!(
        table,
        "    body: include_bytes!({:?}),",
        path_str(&loader_path)
    );
    let _ = writeln!(table, "    content_type: {:?},", content_type(LOADER));
    let _ = writeln!(table, "    etag: {:?},", etag(loader.as_bytes()));
    let _ = writeln!(
        table,
        "    immutable: false,\n    gzip: None,\n    br: None,\n}};"
    );
    let _ = writeln!(
        table,
        "/// Every embedded file but the loader, sorted by path."
    );
    let _ = writeln!(table, "pub(super) static FILES: &[(&str, Asset)] = &[");
    let encoded = |e: &Option<(PathBuf, String)>| match e {
        Some((abs, etag)) => format!(
            "Some(Encoded {{ body: include_bytes!({:?}), etag: {etag:?} }})",
            path_str(abs)
        ),
        None => "None".to_owned(),
    };
    for f in &files {
        let _ = writeln!(
            table,
            "    ({:?}, Asset {{ body: include_bytes!({:?}), content_type: {:?}, etag: {:?}, immutable: {}, gzip: {}, br: {} }}),",
            f.rel,
            path_str(&f.abs),
            f.content_type,
            f.etag,
            f.immutable,
            encoded(&f.gzip),
            encoded(&f.br),
        );
    }
    let _ = writeln!(table, "];");
    fs::write(out_dir.join("bundle_table.rs"), table).expect("write bundle table");
}

/// Walks `dir`, adding every servable file below `root`.
fn collect(root: &Path, dir: &Path, files: &mut Vec<Embedded>) {
    let Ok(read) = fs::read_dir(dir) else {
        println!("cargo:warning=cannot read {}", dir.display());
        return;
    };
    for entry in read.flatten() {
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            println!("cargo:warning=skipping non-UTF-8 name {}", path.display());
            continue;
        };
        if name.starts_with('.') {
            continue; // a build's staging directory, editor files, ...
        }
        let Ok(meta) = fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            collect(root, &path, files);
            continue;
        }
        let rel = path
            .strip_prefix(root)
            .expect("below root")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        if rel == "index.html" {
            continue; // a trunk build's page; the service renders its own at `{prefix}`.
        }
        if rel == LOADER {
            println!("cargo:warning=assets/{LOADER} is shadowed by the generated loader");
            continue;
        }
        let body = fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        files.push(Embedded {
            content_type: content_type(&rel),
            etag: etag(&body),
            immutable: is_hashed(&rel),
            abs: path,
            rel,
            gzip: None,
            br: None,
        });
    }
}

/// Moves each `<rel>.gz` / `<rel>.br` onto the file `<rel>` as its encoded copy (served only
/// through `Accept-Encoding`, never by its own name). A copy without its file is dropped.
fn attach_encoded(files: Vec<Embedded>) -> Vec<Embedded> {
    let (encoded, mut plain): (Vec<Embedded>, Vec<Embedded>) = files
        .into_iter()
        .partition(|f| ENCODED_SUFFIXES.iter().any(|s| f.rel.ends_with(s)));
    for e in encoded {
        let (base, gzip) = match e.rel.strip_suffix(".gz") {
            Some(base) => (base, true),
            None => (e.rel.strip_suffix(".br").expect("an encoded suffix"), false),
        };
        match plain.iter_mut().find(|f| f.rel == base) {
            Some(f) if gzip => f.gzip = Some((e.abs, e.etag)),
            Some(f) => f.br = Some((e.abs, e.etag)),
            None => println!(
                "cargo:warning=assets/{} has no assets/{base}; not served",
                e.rel
            ),
        }
    }
    plain
}

fn path_str(path: &Path) -> String {
    path.to_str()
        .unwrap_or_else(|| panic!("non-UTF-8 path {}", path.display()))
        .to_owned()
}

/// Whether the build put a content hash in the name: some path component (extension and a
/// wasm-bindgen `_bg` suffix removed) has a `-`-separated part of at least 8 hex digits, as in
/// `lmchatkit-web-1a2b3c4d5e6f7a8b.js`, `..._bg.wasm`, `style-<hash>.css`, `<hash>-logo.svg`
/// (copied files) or `snippets/<crate>-<hash>/inline0.js`.
fn is_hashed(rel: &str) -> bool {
    rel.split('/').any(|component| {
        let stem = component.split('.').next().unwrap_or(component);
        let stem = stem.strip_suffix("_bg").unwrap_or(stem);
        stem.split('-')
            .any(|part| part.len() >= 8 && part.bytes().all(|b| b.is_ascii_hexdigit()))
    })
}

/// `<prefix><hex hash>.js`: the highlighter (`lmchatkit-highlight-`), Mermaid
/// (`lmchatkit-mermaid-`) and the diagram frame's script (`lmchatkit-diagram-`), which
/// `scripts/build-ui.sh` writes.
fn is_hashed_script(rel: &str, prefix: &str) -> bool {
    rel.strip_prefix(prefix)
        .and_then(|r| r.strip_suffix(".js"))
        .is_some_and(|h| h.len() >= 8 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn content_type(rel: &str) -> &'static str {
    let ext = rel.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("css") => "text/css; charset=utf-8",
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("json" | "map") => "application/json",
        Some("webmanifest") => "application/manifest+json",
        Some("txt") => "text/plain; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("avif") => "image/avif",
        Some("ico") => "image/x-icon",
        Some("woff2") => "font/woff2",
        Some("woff") => "font/woff",
        Some("ttf") => "font/ttf",
        Some("otf") => "font/otf",
        _ => "application/octet-stream",
    }
}

/// Strong ETag: `"` + the first 16 hex digits of the SHA-256 of `body` + `"`.
fn etag(body: &[u8]) -> String {
    use sha2::Digest;
    format!("\"{}\"", hex::encode(&sha2::Sha256::digest(body)[..8]))
}

/// A JavaScript string literal (double-quoted) holding `s`.
fn js_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' => out.push_str("\\u003c"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Shows `message` in the mount element (or the body) once the DOM is there. `textContent`, not
/// HTML, so nothing needs escaping beyond the JS string literal.
const SHOW_MESSAGE_JS: &str = r#"function lmckShowMessage(message) {
  const show = () => {
    const root = document.querySelector("[data-lmchatkit]") || document.body;
    const p = document.createElement("p");
    p.className = "lmck-load-error";
    p.setAttribute("role", "alert");
    p.textContent = message;
    root.appendChild(p);
  };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", show, { once: true });
  } else {
    show();
  }
  console.error(message);
}
"#;

fn built_loader(js: &str, wasm: &str, css: &[String], highlighter: Option<&str>) -> String {
    // The UI reads the highlighter's URL from here when it meets its first fenced code block.
    let highlighter = highlighter
        .map(|h| {
            format!(
                "(globalThis.__lmchatkit = globalThis.__lmchatkit || {{}}).highlighter =\n  \
                 new URL({}, import.meta.url).href;\n",
                js_string(&format!("./{h}"))
            )
        })
        .unwrap_or_default();
    let css_list = css
        .iter()
        .map(|c| js_string(&format!("./{c}")))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        r#"// lmchatkit UI loader, generated by server/build.rs. Stable URL ({prefix}/assets/{LOADER}),
// served with `Cache-Control: no-cache` + ETag. It loads the content-hashed bundle next to it,
// resolved against this module's own URL (so it works under any prefix and from host pages),
// and starts the app, which mounts into [data-lmchatkit] (else <body>).
{SHOW_MESSAGE_JS}
{highlighter}for (const href of [{css_list}]) {{
  const url = new URL(href, import.meta.url).href;
  if (![...document.querySelectorAll("link[rel=stylesheet]")].some((l) => l.href === url)) {{
    const link = document.createElement("link");
    link.rel = "stylesheet";
    link.href = url;
    document.head.appendChild(link);
  }}
}}

// Fetch the wasm in parallel with the JS glue; wasm-bindgen's init awaits the response.
const wasm = fetch(new URL({wasm_url}, import.meta.url));
wasm.catch(() => {{}}); // reported through init below
try {{
  const {{ default: init }} = await import(new URL({js_url}, import.meta.url).href);
  await init({{ module_or_path: wasm }});
}} catch (error) {{
  lmckShowMessage("The lmchatkit UI failed to load: " + error);
}}
"#,
        prefix = "{prefix}",
        js_url = js_string(&format!("./{js}")),
        wasm_url = js_string(&format!("./{wasm}")),
    )
}

fn not_built_loader() -> String {
    format!(
        r#"// lmchatkit UI loader, generated by server/build.rs: this server was built without the UI bundle.
{SHOW_MESSAGE_JS}
lmckShowMessage({message});
"#,
        message = js_string(NOT_BUILT)
    )
}
