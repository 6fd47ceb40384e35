//! The layers of the workspace's library crates, held against their code: each crate's top-level
//! modules sit in a table of layers (bottom first), and a module may import (`crate::x`) only from
//! its own layer or one below, and never around in a circle. `ARCHITECTURE.md` explains the layers.
//!
//! What is read: every `.rs` file under a crate's `src/` except its root (`lib.rs`, which
//! declares and re-exports the modules), binaries (`main.rs`, `bin/`) and test code (`tests.rs`,
//! `tests_*.rs`, `*_tests.rs`, `test_support.rs` files and `#[cfg(test)] mod … { … }` blocks).
//! Test code may reach across layers, as integration tests do. An import is any `crate::name`
//! outside comments and string literals, and each `name` in `crate::{…}`. A name that is not a
//! top-level module is an item of the crate root (small helpers such as the protocol crate's
//! `is_false` for serde): the root holds only those, module declarations and re-exports, so its
//! items may be imported from any layer.
//!
//! The imports that still break the rule are listed per crate ([`Crate::to_remove`]). The list
//! may only shrink: an import that breaks the rule and is not listed fails, and so does a listed
//! one that is gone (delete it from the list with the change that removed it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A library crate's layer table.
struct Crate {
    /// The crate's folder, relative to the workspace root.
    dir: &'static str,
    /// The layers, bottom first, each with its top-level modules.
    layers: &'static [(&'static str, &'static [&'static str])],
    /// Imports (`from`, `to`) that break the rule today: upward ones, and those that close a
    /// circle within a layer. Each is work still to do.
    to_remove: &'static [(&'static str, &'static str)],
}

const SERVER: Crate = Crate {
    dir: "server",
    layers: &[
        (
            "wire types and contracts",
            &["error", "event_stream", "host", "secrets", "tls"],
        ),
        (
            "stores, live state (runs, events, view tokens) and its engines, access, upstream backends, MCP",
            &[
                "store",
                "live",
                "access",
                "llm",
                "mcp",
                "user_mcp",
                "clap_tools",
                "presets",
                "models",
                "logs",
            ],
        ),
        (
            "the turn, agent loop, MCP App views",
            &["turn", "agent", "aisdk", "apps", "standard_host"],
        ),
        (
            "the HTTP edge",
            &[
                "config",
                "state",
                "service",
                "routes",
                "sse",
                "api",
                "limits",
                "bundle",
                "page_policy",
                "connection",
                "runtime",
            ],
        ),
    ],
    to_remove: &[],
};

const PROTOCOL: Crate = Crate {
    dir: "shared",
    layers: &[
        (
            "values",
            &[
                "approval",
                "input",
                "menus",
                "role",
                "runs",
                "sign_in_signal",
                "stale_tool",
                "user_mcp",
            ],
        ),
        ("MCP", &["mcp", "app_rpc"]),
        ("chat", &["chat", "history", "requests"]),
        ("AI SDK stream", &["ui_stream"]),
    ],
    to_remove: &[],
};

const FRONTEND: Crate = Crate {
    dir: "frontend",
    layers: &[
        (
            "server calls, values, renderers",
            &[
                "api",
                "stored",
                "sse",
                "lazy",
                "params",
                "think",
                "spend",
                "results",
                "input_history",
                "markdown",
                "commands",
                "bench",
                "storage",
                "text",
                "timer",
            ],
        ),
        ("the UI's state", &["servers", "state"]),
        (
            "flows",
            &[
                "history",
                "reply",
                "follow",
                "sync",
                "turn",
                "actions",
                "approvals",
                "transfer",
                "conversation",
                "queue",
            ],
        ),
        ("views", &["components", "apps"]),
    ],
    to_remove: &[],
};

/// The crate root's own items (not modules): importable from any layer.
const ROOT: &str = "crate root";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Test code and binaries, left out (see the module docs).
fn is_left_out(rel: &str) -> bool {
    let file = rel.rsplit('/').next().unwrap_or(rel);
    rel == "lib.rs"
        || rel == "main.rs"
        || rel.starts_with("bin/")
        || rel.contains("/tests/")
        || file == "tests.rs"
        || file == "test_support.rs"
        || file.starts_with("tests_")
        || file.ends_with("_tests.rs")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `text` with comments and the contents of string and char literals blanked (newlines kept),
/// so a `crate::` or a brace in either is not read as code.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |c: u8| if c == b'\n' { b'\n' } else { b' ' };
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    out.push(b' ');
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        out.extend_from_slice(b"  ");
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        out.extend_from_slice(b"  ");
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        out.push(blank(b[i]));
                        i += 1;
                    }
                }
            }
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                // A raw string: r"…", r#"…"#, …
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push(b[i]);
                    i += 1;
                    continue;
                }
                out.resize(out.len() + (j + 1 - i), b' ');
                i = j + 1;
                while i < b.len() {
                    if b[i] == b'"'
                        && b[i + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|&&c| c == b'#')
                            .count()
                            == hashes
                    {
                        out.resize(out.len() + 1 + hashes, b' ');
                        i += 1 + hashes;
                        break;
                    }
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
            b'"' => {
                out.push(b' ');
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        out.push(b' ');
                        i += 1;
                    }
                    if i < b.len() {
                        out.push(blank(b[i]));
                        i += 1;
                    }
                }
                out.push(b' ');
                i += 1;
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
                let end = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..]
                        .iter()
                        .position(|&c| c == b'\'')
                        .map(|p| i + 2 + p)
                } else if b.get(i + 2) == Some(&b'\'') {
                    Some(i + 2)
                } else {
                    None
                };
                match end {
                    Some(end) => {
                        out.resize(out.len() + (end + 1 - i), b' ');
                        i = end + 1;
                    }
                    None => {
                        out.push(b[i]);
                        i += 1;
                    }
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out.truncate(b.len());
    String::from_utf8_lossy(&out).into_owned()
}

/// `code` without its `#[cfg(test)] mod name { … }` blocks (lines blanked).
fn without_test_modules(code: &str) -> String {
    let lines: Vec<&str> = code.lines().collect();
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let next = lines.get(i + 1).map(|l| l.trim_start()).unwrap_or("");
        let opens_module = next.contains("mod ") && next.trim_end().ends_with('{');
        if lines[i].trim() == "#[cfg(test)]" && opens_module {
            let mut depth = 0i32;
            let mut j = i + 1;
            while j < lines.len() {
                depth += lines[j].matches('{').count() as i32;
                depth -= lines[j].matches('}').count() as i32;
                j += 1;
                if depth <= 0 {
                    break;
                }
            }
            out.extend(std::iter::repeat_n("", j - i));
            i = j;
        } else {
            out.push(lines[i]);
            i += 1;
        }
    }
    out.join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The names a line of code imports through `crate::`.
fn crate_names(line: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(is_ident) {
            continue; // `$crate::`, `my_crate::`
        }
        if let Some(group) = rest.strip_prefix('{') {
            // crate::{a, b::c, d::{e, f}}: the first name of each item at depth 0.
            let mut depth = 0;
            let mut item_start = true;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && is_ident(c) => {
                        let name: String =
                            group[k..].chars().take_while(|&c| is_ident(c)).collect();
                        names.push(name);
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
            if !name.is_empty() {
                names.push(name);
            }
        }
    }
    names
}

/// Every import between top-level modules: (`from`, `to`) → where.
fn imports(krate: &Crate) -> BTreeMap<(String, String), Vec<String>> {
    let src = workspace().join(krate.dir).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<&str> = krate
        .layers
        .iter()
        .flat_map(|(_, m)| m.iter().copied())
        .collect();
    let mut found: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for path in files {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if is_left_out(&rel) {
            continue;
        }
        let from = rel
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let code = without_test_modules(&code_only(&text));
        for (n, line) in code.lines().enumerate() {
            for name in crate_names(line) {
                let to = if modules.contains(name.as_str()) {
                    name
                } else {
                    ROOT.to_owned()
                };
                if to != from {
                    let at = format!("{}/src/{rel}:{}", krate.dir, n + 1);
                    found.entry((from.clone(), to)).or_default().push(at);
                }
            }
        }
    }
    found
}

/// The strongly connected parts of more than one module (Tarjan's algorithm).
fn circles(edges: &BTreeSet<(String, String)>) -> Vec<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in edges {
        next.entry(a).or_default().push(b);
        next.entry(b).or_default();
    }
    struct Walk<'a> {
        next: BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(v: &'a str, w: &mut Walk<'a>) {
        let i = w.index.len();
        w.index.insert(v, i);
        w.low.insert(v, i);
        w.stack.push(v);
        for u in w.next[v].clone() {
            if !w.index.contains_key(u) {
                visit(u, w);
                let low = w.low[v].min(w.low[u]);
                w.low.insert(v, low);
            } else if w.stack.contains(&u) {
                let low = w.low[v].min(w.index[u]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let at = w.stack.iter().position(|&x| x == v).unwrap_or(0);
            let part: Vec<String> = w.stack.drain(at..).map(str::to_owned).collect();
            if part.len() > 1 {
                w.found.push(part);
            }
        }
    }
    let nodes: Vec<&str> = next.keys().copied().collect();
    let mut walk = Walk {
        next,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in nodes {
        if !walk.index.contains_key(v) {
            visit(v, &mut walk);
        }
    }
    walk.found
}

/// Whether `edges` lead from `from` to `to`.
fn reaches(edges: &BTreeSet<(String, String)>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::from([from.to_owned()]);
    let mut todo = vec![from.to_owned()];
    while let Some(v) = todo.pop() {
        if v == to {
            return true;
        }
        for (_, b) in edges.iter().filter(|(a, _)| *a == v) {
            if seen.insert(b.clone()) {
                todo.push(b.clone());
            }
        }
    }
    false
}

/// Everything wrong with a crate's imports against its table, one line each.
fn check(krate: &Crate) -> Vec<String> {
    let layer_of: BTreeMap<&str, usize> = krate
        .layers
        .iter()
        .enumerate()
        .flat_map(|(i, (_, mods))| mods.iter().map(move |m| (*m, i)))
        .collect();
    let src = workspace().join(krate.dir).join("src");
    let mut wrong = Vec::new();
    // Every top-level module has a layer.
    for entry in std::fs::read_dir(&src).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let module = name.trim_end_matches(".rs");
        if !["lib", "main", "bin"].contains(&module) && !layer_of.contains_key(module) {
            wrong.push(format!(
                "{}: module `{module}` has no layer in the table",
                krate.dir
            ));
        }
    }
    let found = imports(krate);
    let listed: BTreeSet<(String, String)> = krate
        .to_remove
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    for ((from, to), at) in &found {
        let (Some(&lf), Some(&lt)) = (layer_of.get(from.as_str()), layer_of.get(to.as_str()))
        else {
            continue; // the crate root's items
        };
        if lt > lf && !listed.contains(&(from.clone(), to.clone())) {
            wrong.push(format!(
                "{}: `{from}` ({}) imports `{to}` ({}), a higher layer, at {}",
                krate.dir,
                krate.layers[lf].0,
                krate.layers[lt].0,
                at.join(", ")
            ));
        }
    }
    for (from, to) in &listed {
        if !found.contains_key(&(from.clone(), to.clone())) {
            wrong.push(format!(
                "{}: `{from}` no longer imports `{to}`: take it off `to_remove`",
                krate.dir
            ));
        }
    }
    let kept: BTreeSet<(String, String)> = found
        .keys()
        .filter(|e| !listed.contains(e))
        .cloned()
        .collect();
    for (from, to) in listed.iter().filter(|e| found.contains_key(*e)) {
        let upward = match (layer_of.get(from.as_str()), layer_of.get(to.as_str())) {
            (Some(lf), Some(lt)) => lt > lf,
            _ => false,
        };
        if !upward && !reaches(&kept, to, from) {
            wrong.push(format!(
                "{}: `{from}` -> `{to}` breaks no rule any more (not upward, closes no circle): \
                 take it off `to_remove`",
                krate.dir
            ));
        }
    }
    for circle in circles(&kept) {
        let edges: Vec<String> = kept
            .iter()
            .filter(|(a, b)| circle.contains(a) && circle.contains(b))
            .map(|(a, b)| format!("{a} -> {b} ({})", found[&(a.clone(), b.clone())][0]))
            .collect();
        wrong.push(format!(
            "{}: an import circle: {}",
            krate.dir,
            edges.join("; ")
        ));
    }
    wrong
}

#[test]
fn each_library_crate_imports_only_down_its_layers_and_never_in_a_circle() {
    let mut wrong = Vec::new();
    for krate in [&SERVER, &PROTOCOL, &FRONTEND] {
        let all: BTreeSet<(String, String)> = imports(krate).into_keys().collect();
        let biggest = circles(&all).iter().map(Vec::len).max().unwrap_or(0);
        eprintln!(
            "{}: {} imports between top-level modules, {} still to remove, largest circle {biggest} modules",
            krate.dir,
            all.len(),
            krate.to_remove.len()
        );
        wrong.extend(check(krate));
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// The checker itself, on a crate made for it: it must see a plain upward import, one inside a
/// `crate::{…}` group, ignore comments, strings and test modules, and find a circle.
#[test]
fn the_layer_check_sees_upward_imports_and_circles_and_ignores_comments_strings_and_tests() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("top")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(src.join(name), text).unwrap();
    write("lib.rs", "mod low; mod mid; mod top;");
    write(
        "low.rs",
        "// crate::top in a comment\nconst S: &str = \"crate::top\";\nconst R: &str = r#\"crate::top\"#;\n\
         use crate::{mid::X, other};\n#[cfg(test)]\nmod tests {\n    use crate::top::T;\n}\n",
    );
    write(
        "mid.rs",
        "use crate::low::Y;\nfn f<'a>(c: char) -> bool { c == '{' }\n",
    );
    write("top/mod.rs", "use crate::mid;\n");
    write("top/tests.rs", "use crate::top;\nuse crate::low;\n");
    // The workspace path is joined with `dir`, so an absolute path reads the temporary crate.
    let dir_str: &'static str =
        Box::leak(dir.path().to_string_lossy().into_owned().into_boxed_str());
    let krate = Crate {
        dir: dir_str,
        layers: &[("low", &["low"]), ("mid", &["mid"]), ("top", &["top"])],
        to_remove: &[],
    };
    let found = imports(&krate);
    let pairs: Vec<(&str, &str)> = found
        .keys()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("low", "crate root"),
            ("low", "mid"),
            ("mid", "low"),
            ("top", "mid")
        ]
    );
    let wrong = check(&krate);
    assert!(
        wrong
            .iter()
            .any(|w| w.contains("`low` (low) imports `mid`")),
        "{wrong:#?}"
    );
    assert!(
        !wrong.iter().any(|w| w.contains("crate root")),
        "{wrong:#?}"
    );
    assert!(
        wrong.iter().any(|w| w.contains("an import circle")),
        "{wrong:#?}"
    );
    // Listing the upward imports leaves no circle and nothing wrong; a stale entry is wrong.
    let listed = Crate {
        to_remove: &[("low", "mid")],
        ..krate
    };
    assert_eq!(check(&listed), Vec::<String>::new());
    let needless = Crate {
        to_remove: &[("low", "mid"), ("top", "mid")],
        ..listed
    };
    assert_eq!(
        check(&needless),
        [format!(
            "{dir_str}: `top` -> `mid` breaks no rule any more (not upward, closes no circle): \
             take it off `to_remove`"
        )]
    );
    let stale = Crate {
        to_remove: &[("low", "mid"), ("top", "low")],
        ..listed
    };
    assert_eq!(
        check(&stale),
        [format!(
            "{dir_str}: `top` no longer imports `low`: take it off `to_remove`"
        )]
    );
}

/// One module-file convention across the workspace: a module with submodules is a folder with a
/// `mod.rs`, never a `name.rs` beside a `name/` folder.
#[test]
fn a_module_with_submodules_is_a_folder_with_mod_rs_in_every_crate() {
    let mut mixed = Vec::new();
    for dir in ["shared", "server", "app", "frontend", "tests"] {
        let mut files = Vec::new();
        rust_files(&workspace().join(dir).join("src"), &mut files);
        for file in files {
            if file
                .file_name()
                .is_some_and(|n| n != "mod.rs" && n != "lib.rs" && n != "main.rs")
                && file.with_extension("").is_dir()
            {
                mixed.push(
                    file.strip_prefix(workspace())
                        .unwrap()
                        .display()
                        .to_string(),
                );
            }
        }
    }
    assert!(
        mixed.is_empty(),
        "move each into its folder as mod.rs: {mixed:?}"
    );
}
