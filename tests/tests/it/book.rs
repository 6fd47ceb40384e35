//! The book (`docs/`) and the README hold together: every chapter is in `SUMMARY.md` and every
//! listed file exists, every relative link reaches a file and its `#anchor` a heading there,
//! and every code block is Rust (compiled: the chapters are doctests of this crate,
//! `src/lib.rs`) or says it is configuration. `mdbook build docs` in `scripts/test.sh` renders
//! it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Languages of code blocks that are configuration or shell, not compiled.
const CONFIGURATION: [&str; 6] = ["toml", "sh", "html", "tsx", "text", "json"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn book() -> PathBuf {
    root().join("docs/src")
}

/// The anchor mdbook (and GitHub) gives a heading: lowercase, spaces to `-`, only letters,
/// digits, `-` and `_` kept.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The headings' anchors of a Markdown text (outside code blocks).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// The targets of the Markdown links and images of a text (outside code blocks and inline
/// code).
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        // Inline code is not a link.
        let mut plain = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                plain.push_str(part);
            }
        }
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            out.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    out
}

/// Every broken relative link of the Markdown file `file`: a missing file, or an anchor with
/// no heading.
fn broken_links(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let dir = file.parent().unwrap();
    let mut broken = Vec::new();
    for link in links(&text) {
        if link.contains("://") || link.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = link.split_once('#').unwrap_or((&link, ""));
        let target = if path.is_empty() {
            file.to_path_buf()
        } else {
            dir.join(path)
        };
        if !target.exists() {
            broken.push(format!("{}: {link} (no such file)", file.display()));
            continue;
        }
        if !anchor.is_empty() {
            let text = std::fs::read_to_string(&target).unwrap_or_default();
            if !anchors(&text).contains(anchor) {
                broken.push(format!("{}: {link} (no such heading)", file.display()));
            }
        }
    }
    broken
}

fn chapters() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(book())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    out.sort();
    out
}

#[test]
fn every_chapter_is_in_the_summary_and_every_listed_file_exists() {
    let summary = std::fs::read_to_string(book().join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = links(&summary).into_iter().collect();
    for target in &listed {
        assert!(book().join(target).is_file(), "SUMMARY.md lists {target}");
    }
    for chapter in chapters() {
        let name = chapter.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name == "SUMMARY.md" || listed.contains(&name),
            "{name} is not in SUMMARY.md"
        );
    }
}

#[test]
fn every_relative_link_of_the_book_and_the_readmes_reaches_its_file_and_heading() {
    let mut files = chapters();
    files.push(root().join("README.md"));
    files.push(root().join("shared/README.md"));
    files.push(root().join("ARCHITECTURE.md"));
    let broken: Vec<String> = files.iter().flat_map(|f| broken_links(f)).collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_code_block_is_rust_or_marked_as_configuration() {
    let mut files = chapters();
    files.push(root().join("README.md"));
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut in_code = false;
        for (n, line) in text.lines().enumerate() {
            let Some(info) = line.strip_prefix("```") else {
                continue;
            };
            if in_code {
                in_code = false;
                continue;
            }
            in_code = true;
            let lang = info.split(',').next().unwrap_or("").trim();
            let ok = (lang == "rust" && !info.contains("ignore")) || CONFIGURATION.contains(&lang);
            assert!(
                ok,
                "{}:{}: a code block must be compiled Rust (```rust, ```rust,no_run) or say \
                 which configuration it is ({CONFIGURATION:?}), not ```{info}",
                file.display(),
                n + 1
            );
        }
    }
}

#[test]
fn the_link_checker_finds_a_missing_file_and_a_missing_heading() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b.md"), "# Real heading\n").unwrap();
    let a = dir.path().join("a.md");
    std::fs::write(
        &a,
        "[ok](b.md#real-heading) [gone](c.md) [bad](b.md#nope) `[code](x.md)`\n\
         ```sh\n[in code](y.md)\n```\n[web](https://example.com/z.md)\n",
    )
    .unwrap();
    let broken = broken_links(&a);
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(broken[0].contains("c.md (no such file)"));
    assert!(broken[1].contains("b.md#nope (no such heading)"));
    assert_eq!(slug("Writing a `Host`"), "writing-a-host");
    assert_eq!(slug("Routes (under the prefix)"), "routes-under-the-prefix");
}
