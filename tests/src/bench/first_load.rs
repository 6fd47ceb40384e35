//! The UI's first load as a browser receives it: the page, the stable loader and what the
//! loader fetches before the first paint (the wasm, its JS glue, the CSS), and every module
//! those scripts import statically (the glue imports the JS that loads the UI's wasm chunks),
//! each as the service sends it for `Accept-Encoding: br` and for `gzip`; and the **first reply**:
//! the first paint plus the files the first sent message loads (the wasm chunks of the turn, the
//! transcript and the Markdown parser). Which files those are is what headless Chromium fetched
//! ([`super::first_reply`]); where Chromium is not installed the first paint's files come from
//! the loader's static list (the page, the loader, what it names and what those scripts import
//! statically) and there is no first reply. The code highlighter, fetched only at the first
//! fenced code block, is in neither (the bench's reply has no code). The bytes are fetched over
//! HTTP from the running lmchatkit, once per encoding, so they count the embedded bundle and its
//! precompressed copies, not files on disk.

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

/// Bytes of a set of files, as sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Sums {
    /// Without compression.
    pub identity: usize,
    /// With `Accept-Encoding: gzip`.
    pub gzip: usize,
    /// With `Accept-Encoding: br`.
    pub br: usize,
}

impl Sums {
    /// The sums of `files`.
    pub fn of(files: &[File]) -> Self {
        files.iter().fold(Sums::default(), |s, f| Sums {
            identity: s.identity + f.identity,
            gzip: s.gzip + f.gzip,
            br: s.br + f.br,
        })
    }

    /// Both sets together.
    pub fn plus(self, other: Sums) -> Self {
        Sums {
            identity: self.identity + other.identity,
            gzip: self.gzip + other.gzip,
            br: self.br + other.br,
        }
    }
}

/// Some files and their sums.
#[derive(Debug, Clone, Serialize)]
pub struct Files {
    pub files: Vec<File>,
    #[serde(flatten)]
    pub sums: Sums,
}

impl Files {
    /// `files` with their sums.
    pub fn of(files: Vec<File>) -> Self {
        Files {
            sums: Sums::of(&files),
            files,
        }
    }
}

/// The first load (the first paint) and, measured in Chromium, the first reply: the first paint
/// plus what the first sent message loads.
#[derive(Debug, Clone, Serialize)]
pub struct FirstLoad {
    /// The first paint (`files`, `identity`, `gzip`, `br`).
    #[serde(flatten)]
    pub paint: Files,
    /// How the files were found: `Chromium <version>`, or the loader's static list and why.
    pub measured_by: String,
    /// What the first sent message loads, after the first paint (Chromium only).
    pub first_message: Option<Files>,
    /// The first paint plus the first message (Chromium only).
    pub first_reply: Option<Sums>,
}

impl FirstLoad {
    /// The first load of `paint`'s files, and of `first_message`'s when measured.
    pub fn of(paint: Vec<File>, first_message: Option<Vec<File>>, measured_by: String) -> Self {
        let paint = Files::of(paint);
        let first_message = first_message.map(Files::of);
        FirstLoad {
            first_reply: first_message.as_ref().map(|m| paint.sums.plus(m.sums)),
            paint,
            measured_by,
            first_message,
        }
    }
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

/// Measures the first load of the UI mounted at `prefix` (e.g. `/chat`) on `addr`: the files
/// headless Chromium fetches up to the first paint and then for the first reply
/// ([`super::first_reply`]); without Chromium, the first paint's files from the loader's static
/// list ([`static_list`]), and no first reply.
pub async fn measure(addr: SocketAddr, prefix: &str) -> Result<FirstLoad, String> {
    let client = reqwest::Client::new();
    let origin = format!("http://{addr}");
    let (paint, first_message, measured_by) =
        match super::first_reply::browse(&origin, prefix).await {
            Ok(Some(f)) => (f.paint, Some(f.first_message), f.browser),
            Ok(None) => (
                static_list(&client, addr, prefix).await?,
                None,
                "the loader's static list (Chromium not installed: no first reply)".to_owned(),
            ),
            Err(e) => (
                static_list(&client, addr, prefix).await?,
                None,
                format!("the loader's static list (Chromium failed: {e}; no first reply)"),
            ),
        };
    let paint = as_sent(&client, &origin, &paint).await?;
    let first_message = match first_message {
        Some(paths) => Some(as_sent(&client, &origin, &paths).await?),
        None => None,
    };
    Ok(FirstLoad::of(paint, first_message, measured_by))
}

/// Each of `paths` as the service at `origin` sends it without compression, for gzip and for br.
async fn as_sent(
    client: &reqwest::Client,
    origin: &str,
    paths: &[String],
) -> Result<Vec<File>, String> {
    let mut files = Vec::new();
    for path in paths {
        let url = format!("{origin}{path}");
        files.push(File {
            identity: sent(client, &url, "identity").await?.len(),
            gzip: sent(client, &url, "gzip").await?.len(),
            br: sent(client, &url, "br").await?.len(),
            path: path.clone(),
        });
    }
    Ok(files)
}

/// The first paint's files as the loader names them: the page, the stable loader, what it
/// fetches and what those scripts import statically.
pub async fn static_list(
    client: &reqwest::Client,
    addr: SocketAddr,
    prefix: &str,
) -> Result<Vec<String>, String> {
    let base = format!("http://{addr}{prefix}");
    let mut paths = vec![
        format!("{prefix}/"),
        format!("{prefix}/assets/lmchatkit.js"),
    ];
    let loader = sent(client, &format!("{base}/assets/lmchatkit.js"), "identity").await?;
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
        let script = sent(client, &format!("{base}/assets/{name}"), "identity").await?;
        for import in static_imports(&String::from_utf8_lossy(&script)) {
            if !names.contains(&import) {
                names.push(import);
            }
        }
    }
    paths.extend(names.iter().map(|n| format!("{prefix}/assets/{n}")));
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, identity: usize, gzip: usize, br: usize) -> File {
        File {
            path: path.into(),
            identity,
            gzip,
            br,
        }
    }

    #[test]
    fn the_first_reply_is_the_first_paint_plus_what_the_first_message_loads() {
        let paint = vec![
            file("/chat/", 10, 5, 4),
            file("/chat/assets/a.wasm", 100, 50, 40),
        ];
        let message = vec![file("/chat/assets/split_turn-0a.wasm", 30, 20, 15)];
        let f = FirstLoad::of(paint.clone(), Some(message), "Chromium 1".into());
        let sums = |identity, gzip, br| Sums { identity, gzip, br };
        assert_eq!(f.paint.sums, sums(110, 55, 44));
        assert_eq!(
            f.first_message.as_ref().map(|m| m.sums),
            Some(sums(30, 20, 15))
        );
        assert_eq!(f.first_reply, Some(sums(140, 75, 59)));
        let json = serde_json::to_value(&f).unwrap();
        assert_eq!(
            json["gzip"], 55,
            "the first paint's sums stay where they were: {json}"
        );
        assert_eq!(json["first_reply"]["gzip"], 75, "{json}");

        let without = FirstLoad::of(paint, None, "the loader's static list".into());
        assert_eq!(without.first_reply, None, "no Chromium, no first reply");
        assert_eq!(without.paint.sums, sums(110, 55, 44));
    }

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
