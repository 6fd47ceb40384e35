//! The UI's first load as a browser receives it: the page, the stable loader and what the
//! loader fetches before the first paint (the wasm, its JS glue, the CSS), and every module
//! those scripts import statically (the glue imports the JS that loads the UI's wasm chunks),
//! each as the service sends it for `Accept-Encoding: br` and for `gzip`. The code highlighter,
//! fetched only at the first fenced code block, and the wasm chunks, fetched the first time their
//! part of the UI is shown, are not counted. Measured over HTTP against a running lmchatkit,
//! so it counts the embedded bundle and its precompressed copies, not files on disk.

use std::net::SocketAddr;

use serde::Serialize;

/// One file of the first load, its bytes on the wire.
#[derive(Debug, Clone, Serialize)]
pub struct File {
    /// The path below the prefix.
    pub path: String,
    /// Without compression.
    pub identity: usize,
    /// With `Accept-Encoding: gzip`.
    pub gzip: usize,
    /// With `Accept-Encoding: br`.
    pub br: usize,
}

/// The first load: its files and their sums.
#[derive(Debug, Clone, Serialize)]
pub struct FirstLoad {
    pub files: Vec<File>,
    pub identity: usize,
    pub gzip: usize,
    pub br: usize,
}

/// The body bytes of `url` as sent for `encoding` (reqwest here decodes nothing).
async fn sent(client: &reqwest::Client, url: &str, encoding: &str) -> Result<Vec<u8>, String> {
    let res = client
        .get(url)
        .header("Accept-Encoding", encoding)
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    if !res.status().is_success() {
        return Err(format!("GET {url}: {}", res.status()));
    }
    let body = res.bytes().await.map_err(|e| format!("GET {url}: {e}"))?;
    Ok(body.to_vec())
}

/// The files a loader names (`"./name"` literals), the lazily loaded highlighter excepted.
pub fn loaded_at_start(loader: &str) -> Vec<String> {
    loader
        .split('"')
        .skip(1)
        .step_by(2)
        .filter_map(|s| s.strip_prefix("./"))
        .filter(|s| !s.is_empty() && !s.starts_with("lmchatkit-highlight-"))
        .map(str::to_owned)
        .collect()
}

/// The modules a script imports statically (`import … from "./name"`, `import "./name"`,
/// `export … from "./name"`), in order. A dynamic `import(…)` or a `fetch(new URL("./name", …))`
/// loads later, so it is not one.
pub fn static_imports(script: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for statement in script.split([';', '\n']) {
        let statement = statement.trim_start();
        if !(statement.starts_with("import ") || statement.starts_with("export ")) {
            continue;
        }
        let Some(at) = statement.rfind("\"./") else {
            continue;
        };
        let before = statement[..at].trim_end();
        if !(before.ends_with(" from") || before == "import") {
            continue;
        }
        let name = &statement[at + 3..];
        if let Some(end) = name.find('"')
            && !out.iter().any(|n| n == &name[..end])
        {
            out.push(name[..end].to_owned());
        }
    }
    out
}

/// Measures the first load of the UI mounted at `prefix` (e.g. `/chat`) on `addr`.
pub async fn measure(addr: SocketAddr, prefix: &str) -> Result<FirstLoad, String> {
    let client = reqwest::Client::new();
    let base = format!("http://{addr}{prefix}");
    let mut paths = vec![
        format!("{prefix}/"),
        format!("{prefix}/assets/lmchatkit.js"),
    ];
    let loader = sent(&client, &format!("{base}/assets/lmchatkit.js"), "identity").await?;
    let names = loaded_at_start(&String::from_utf8_lossy(&loader));
    if names.is_empty() {
        return Err("the loader names no bundle: was the UI built (scripts/build-ui.sh)?".into());
    }
    // Follow the scripts' static imports (the glue imports the split loader, which imports the
    // glue back: each file once).
    let mut names = names;
    let mut next = 0;
    while next < names.len() {
        let name = names[next].clone();
        next += 1;
        if !name.ends_with(".js") {
            continue;
        }
        let script = sent(&client, &format!("{base}/assets/{name}"), "identity").await?;
        for import in static_imports(&String::from_utf8_lossy(&script)) {
            if !names.contains(&import) {
                names.push(import);
            }
        }
    }
    paths.extend(names.iter().map(|n| format!("{prefix}/assets/{n}")));
    let mut files = Vec::new();
    for path in paths {
        let url = format!("http://{addr}{path}");
        files.push(File {
            identity: sent(&client, &url, "identity").await?.len(),
            gzip: sent(&client, &url, "gzip").await?.len(),
            br: sent(&client, &url, "br").await?.len(),
            path,
        });
    }
    Ok(FirstLoad {
        identity: files.iter().map(|f| f.identity).sum(),
        gzip: files.iter().map(|f| f.gzip).sum(),
        br: files.iter().map(|f| f.br).sum(),
        files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loader_names_its_bundle_but_not_the_lazy_highlighter() {
        let loader = r#"(globalThis.__lmchatkit).highlighter =
  new URL("./lmchatkit-highlight-0123.js", import.meta.url).href;
for (const href of ["./app-ab.css"]) {}
const wasm = fetch(new URL("./app-cd_bg.wasm", import.meta.url));
const { default: init } = await import(new URL("./app-cd.js", import.meta.url).href);
lmckShowMessage("The lmchatkit UI failed to load: " + error);"#;
        assert_eq!(
            loaded_at_start(loader),
            ["app-ab.css", "app-cd_bg.wasm", "app-cd.js"]
        );
    }

    #[test]
    fn static_imports_count_but_chunks_fetched_later_do_not() {
        let glue = r#"import * as import1 from "./lmchatkit-split-0a.js"
import * as import2 from "./lmchatkit-split-0a.js"
import { x } from "./other.js";
import "./side-effect.js";
export { y } from "./re-export.js";
let wasm;
const later = import("./dynamic.js");
        "./lmchatkit-split-0a.js": import1,"#;
        assert_eq!(
            static_imports(glue),
            [
                "lmchatkit-split-0a.js",
                "other.js",
                "side-effect.js",
                "re-export.js"
            ]
        );
        let split = r#"import { initSync } from "./lmchatkit-web-0a.js";
const __chunk_4 = makeLoad(() => {
    const src = fetch(new URL("./chunk_4-0a.wasm", import.meta.url));
export const __wasm_split_load_views = wrapAsyncCb(makeLoad(() => {
    const src = fetch(new URL("./split_views-0a.wasm", import.meta.url));"#;
        assert_eq!(static_imports(split), ["lmchatkit-web-0a.js"]);
    }
}
