//! [`CommandDir`]: slash commands from a directory of Markdown files, reloaded when it changes.
//!
//! One command per `*.md` file directly in the directory; the command name is the file stem,
//! **lowercased** (the browser lowercases what the user types, so `Help.md` is `/help`):
//!
//! ```markdown
//! ---
//! description: Review the staged changes
//! argument-hint: "[focus]"
//! allowed-tools: Bash(git diff:*), Read
//! ---
//! Review the current diff. Focus on: $ARGUMENTS
//! ```
//!
//! Rules (the Go loader's, plus fixes):
//! - Drafts (`_*.md`) and hidden files are skipped. A name must be letters, digits, `-` and `_`
//!   only (Unicode letters allowed); other files (`bad name.md`) are skipped with a warning.
//! - Two files that lowercase to the same name: the one whose stem is already lowercase wins,
//!   else the smaller file name; the other is skipped with a warning.
//! - The frontmatter sits between a leading `---` line (after leading blank space) and the next
//!   `---` line and is parsed as YAML (Go split lines at `:`). Keys: `description`,
//!   `argument-hint`, `allowed-tools`; others are ignored. Scalars of any YAML type are taken as
//!   text. Malformed YAML, a frontmatter that is not a mapping, or a non-scalar `description`
//!   skips the file with a warning. Claude-style `argument-hint: [message]` parses as a YAML list;
//!   it is turned back into the text `[message]`.
//! - `allowed-tools` is a YAML list or a comma-separated string (commas inside parentheses do
//!   not split); each entry is trimmed and cut at `(` (`Bash(git:*)` → `Bash`); empty entries and
//!   repeats are dropped.
//! - The body is the text after the frontmatter, trimmed; without frontmatter (or without a
//!   closing `---`) it is the whole file, trimmed.
//! - id = [`stable_id`] of the file stem as written (not lowercased, as in Go); `source` = the
//!   file name. The list is sorted by name.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use lmchatkit_protocol::SlashCommand;
use yaml_rust2::{Yaml, YamlLoader};

use super::watch::{self, DirCatalog, stable_id};
use super::{CatalogError, CommandSource, OnChange};
use crate::host::RequestContext;

/// Slash commands loaded from the `*.md` files of a directory.
///
/// Loaded eagerly by [`open`](Self::open); with feature `watch` the directory is watched and
/// reloaded after a debounce (then the optional `on_change` callback runs), and dropping the value
/// stops the watcher.
/// A missing directory is not an error: the list is empty, and the watcher picks the directory up
/// when it appears.
///
/// ```
/// use lmchatkit::catalog::CommandDir;
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(
///     dir.path().join("ELI5.md"),
///     "---\ndescription: Explain simply\n---\nExplain like I'm five: $ARGUMENTS\n",
/// )
/// .unwrap();
///
/// let commands = CommandDir::open(dir.path(), None).commands();
/// assert_eq!(commands[0].name, "eli5");
/// assert_eq!(commands[0].description.as_deref(), Some("Explain simply"));
/// assert_eq!(commands[0].body, "Explain like I'm five: $ARGUMENTS");
/// assert_eq!(commands[0].source, "ELI5.md");
/// ```
#[derive(Debug)]
pub struct CommandDir {
    catalog: DirCatalog<SlashCommand>,
}

impl CommandDir {
    /// Loads the commands in `dir` now. With feature `watch`, the directory is watched too:
    /// a burst of changes causes one reload after [`DEBOUNCE`](super::DEBOUNCE) of quiet,
    /// followed by one `on_change()` call (when given) if the list changed. The callback runs on
    /// the watcher's thread; keep it short. Never fails: problems are logged.
    pub fn open(dir: impl Into<PathBuf>, on_change: Option<OnChange>) -> Self {
        Self {
            catalog: DirCatalog::open(dir.into(), load_dir, is_md, on_change),
        }
    }

    /// A copy of the current list, sorted by name.
    pub fn commands(&self) -> Vec<SlashCommand> {
        self.catalog.items()
    }

    /// Loads the directory again now (without waiting for the watcher, or without the `watch`
    /// feature). Returns true when the list changed. Does not call `on_change`.
    pub fn reload(&self) -> bool {
        self.catalog.reload()
    }

    /// The directory, made absolute.
    pub fn dir(&self) -> &Path {
        self.catalog.dir()
    }

    /// True while a watcher runs (feature `watch`, and the watcher could start).
    pub fn is_watching(&self) -> bool {
        self.catalog.is_watching()
    }

    /// Parses one command file; `file_name` is its name with the `.md` extension (it gives the
    /// command name, the id and `source`).
    ///
    /// ```
    /// use lmchatkit::catalog::CommandDir;
    ///
    /// let cmd = CommandDir::parse(
    ///     "Review.md",
    ///     "---\nallowed-tools: Bash(git diff:*), Read\nargument-hint: [focus]\n---\n\nReview $ARGUMENTS\n",
    /// )
    /// .unwrap();
    /// assert_eq!(cmd.name, "review");
    /// assert_eq!(cmd.allowed_tools, ["Bash", "Read"]);
    /// assert_eq!(cmd.argument_hint.as_deref(), Some("[focus]"));
    /// assert_eq!(cmd.body, "Review $ARGUMENTS");
    ///
    /// assert!(CommandDir::parse("bad name.md", "x").is_err());
    /// assert!(CommandDir::parse("x.md", "---\ndescription: [oops\n---\nbody").is_err());
    /// ```
    pub fn parse(file_name: &str, text: &str) -> Result<SlashCommand, CatalogError> {
        let stem = file_name.strip_suffix(".md").unwrap_or(file_name);
        if !is_valid_name(stem) {
            return Err(CatalogError::Source(format!(
                "invalid command name {stem:?}: use letters, digits, '-' and '_'"
            )));
        }
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let (meta, body) = match split_frontmatter(text) {
            Some((yaml, body)) => (parse_meta(yaml)?, body),
            None => (Meta::default(), text),
        };
        Ok(SlashCommand {
            id: stable_id(stem),
            name: stem.to_lowercase(),
            description: meta.description,
            argument_hint: meta.argument_hint,
            allowed_tools: meta.allowed_tools,
            body: body.trim().to_owned(),
            source: file_name.to_owned(),
        })
    }
}

#[async_trait]
impl CommandSource for CommandDir {
    async fn commands(&self, _cx: &RequestContext) -> Result<Vec<SlashCommand>, CatalogError> {
        Ok(self.catalog.items())
    }
}

fn is_md(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "md")
}

/// Non-empty; letters, digits, `-` and `_` only.
fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
}

/// `(frontmatter, body)` when `text` starts (after blank space) with a `---` line and a later
/// line is `---`.
fn split_frontmatter(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start();
    let (first, rest) = text.split_once('\n')?;
    if first.trim() != "---" {
        return None;
    }
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

#[derive(Default)]
struct Meta {
    description: Option<String>,
    argument_hint: Option<String>,
    allowed_tools: Vec<String>,
}

fn malformed(msg: impl Into<String>) -> CatalogError {
    CatalogError::Source(msg.into())
}

fn parse_meta(yaml: &str) -> Result<Meta, CatalogError> {
    let docs = YamlLoader::load_from_str(yaml)
        .map_err(|err| malformed(format!("frontmatter is not valid YAML: {err}")))?;
    let map = match docs.into_iter().next() {
        None | Some(Yaml::Null) => return Ok(Meta::default()),
        Some(Yaml::Hash(map)) => map,
        Some(_) => return Err(malformed("frontmatter is not a mapping")),
    };
    let mut meta = Meta::default();
    for (key, value) in map {
        match key.as_str() {
            Some("description") => {
                meta.description = scalar(&value)
                    .ok_or_else(|| malformed("`description` must be text"))?
                    .filter(|s| !s.is_empty());
            }
            Some("argument-hint") => {
                meta.argument_hint = argument_hint(&value)
                    .ok_or_else(|| malformed("`argument-hint` must be text"))?
                    .filter(|s| !s.is_empty());
            }
            Some("allowed-tools") => {
                meta.allowed_tools = allowed_tools(&value)
                    .ok_or_else(|| malformed("`allowed-tools` must be a list or text"))?;
            }
            _ => {}
        }
    }
    Ok(meta)
}

/// A scalar as trimmed text: `Some(None)` for null, `None` for a list or mapping.
fn scalar(value: &Yaml) -> Option<Option<String>> {
    Some(Some(match value {
        Yaml::String(s) | Yaml::Real(s) => s.trim().to_owned(),
        Yaml::Integer(i) => i.to_string(),
        Yaml::Boolean(b) => b.to_string(),
        Yaml::Null => return Some(None),
        _ => return None,
    }))
}

/// Text, or a list of scalars written Claude-style (`[file] [line]` comes back as text).
fn argument_hint(value: &Yaml) -> Option<Option<String>> {
    if let Yaml::Array(items) = value {
        let parts = items
            .iter()
            .map(|item| Some(format!("[{}]", scalar(item)??)))
            .collect::<Option<Vec<_>>>()?;
        return Some(Some(parts.join(" ")));
    }
    scalar(value)
}

fn allowed_tools(value: &Yaml) -> Option<Vec<String>> {
    let raw: Vec<String> = match value {
        Yaml::Array(items) => items
            .iter()
            .map(|item| scalar(item).map(Option::unwrap_or_default))
            .collect::<Option<_>>()?,
        Yaml::Null => Vec::new(),
        other => split_top_level(&scalar(other)??),
    };
    let mut tools: Vec<String> = Vec::new();
    for entry in raw {
        let name = entry.split('(').next().unwrap_or_default().trim();
        if !name.is_empty() && !tools.iter().any(|t| t == name) {
            tools.push(name.to_owned());
        }
    }
    Some(tools)
}

/// Splits at commas outside parentheses: `Bash(git add:*, git rm:*), Read` is two entries.
fn split_top_level(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    out.push(current);
    out
}

/// Loads every command of `dir`, sorted by name, one per name.
fn load_dir(dir: &Path) -> Vec<SlashCommand> {
    let mut commands: Vec<SlashCommand> = watch::list_files(dir, "md")
        .into_iter()
        .filter_map(|file| {
            let text = watch::read_text(&file)?;
            match CommandDir::parse(&file.file_name, &text) {
                Ok(command) => Some(command),
                Err(err) => {
                    tracing::warn!(file = %file.path.display(), error = %err, "slash command: skipping file");
                    None
                }
            }
        })
        .collect();
    // Per name: an already-lowercase file first, then by file name.
    let not_lowercase = |c: &SlashCommand| c.source.strip_suffix(".md") != Some(c.name.as_str());
    commands.sort_by(|a, b| {
        a.name
            .cmp(&b.name)
            .then_with(|| not_lowercase(a).cmp(&not_lowercase(b)))
            .then_with(|| a.source.cmp(&b.source))
    });
    commands.dedup_by(|later, kept| {
        let duplicate = later.name == kept.name;
        if duplicate {
            tracing::warn!(
                dir = %dir.display(),
                name = %kept.name,
                kept = %kept.source,
                skipped = %later.source,
                "slash command: two files have the same lowercase name; skipping one"
            );
        }
        duplicate
    });
    commands
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::watch::test_support::capture_warnings;
    use std::fs;

    fn write(dir: &Path, name: &str, text: &str) {
        fs::write(dir.join(name), text).unwrap();
    }

    fn load(files: &[(&str, &str)]) -> Vec<SlashCommand> {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            write(dir.path(), name, text);
        }
        CommandDir::open(dir.path(), None).commands()
    }

    fn names(list: &[SlashCommand]) -> Vec<&str> {
        list.iter().map(|c| c.name.as_str()).collect()
    }

    #[test]
    fn frontmatter_keys_and_body() {
        let list = load(&[(
            "review.md",
            "\n---\ndescription: Review code\nargument-hint: \"[focus]\"\nallowed-tools:\n  - search\n  - Bash(git:*)\nother: ignored\n---\n\n  Review $ARGUMENTS  \n\n",
        )]);
        let c = &list[0];
        assert_eq!(c.id, stable_id("review"));
        assert_eq!(c.name, "review");
        assert_eq!(c.description.as_deref(), Some("Review code"));
        assert_eq!(c.argument_hint.as_deref(), Some("[focus]"));
        assert_eq!(c.allowed_tools, ["search", "Bash"]);
        assert_eq!(c.body, "Review $ARGUMENTS");
        assert_eq!(c.source, "review.md");
    }

    #[test]
    fn allowed_tools_as_comma_string() {
        let c = CommandDir::parse(
            "x.md",
            "---\nallowed-tools: search , execute_tool, Bash(git add:*, git rm:*), Bash(git:*),\n---\nb",
        )
        .unwrap();
        assert_eq!(c.allowed_tools, ["search", "execute_tool", "Bash"]);
    }

    #[test]
    fn scalars_of_any_type_are_text_and_claude_hints_survive() {
        let c = CommandDir::parse(
            "x.md",
            "---\ndescription: 3.10\nargument-hint: [file] \n---\nb",
        )
        .unwrap();
        assert_eq!(c.description.as_deref(), Some("3.10"));
        assert_eq!(c.argument_hint.as_deref(), Some("[file]"));
        let c = CommandDir::parse("x.md", "---\nargument-hint: (none)\n---\nb").unwrap();
        assert_eq!(c.argument_hint.as_deref(), Some("(none)"));
        let c =
            CommandDir::parse("x.md", "\u{feff}---\r\ndescription: d\r\n---\r\nbody\r\n").unwrap();
        assert_eq!(c.description.as_deref(), Some("d"));
        assert_eq!(c.body, "body");
    }

    #[test]
    fn without_frontmatter_the_whole_file_is_the_body() {
        let list = load(&[
            ("plain.md", "\n\nJust say hi.\n---\nnot meta\n"),
            ("unclosed.md", "---\ndescription: x\nbody\n"),
            ("empty.md", "---\n---\nonly body"),
        ]);
        assert_eq!(names(&list), ["empty", "plain", "unclosed"]);
        assert_eq!(list[0].body, "only body");
        assert_eq!(list[0].description, None);
        assert_eq!(list[1].body, "Just say hi.\n---\nnot meta");
        assert_eq!(list[1].description, None);
        assert_eq!(list[2].body, "---\ndescription: x\nbody");
    }

    #[test]
    fn names_are_lowercased_and_validated_drafts_skipped() {
        let list = load(&[
            ("Help.md", "help"),
            ("bad name.md", "x"),
            ("bad.name.md", "x"),
            ("_draft.md", "x"),
            ("ünï-cödé_2.md", "x"),
            ("notes.txt", "x"),
        ]);
        assert_eq!(names(&list), ["help", "ünï-cödé_2"]);
        assert_eq!(list[0].source, "Help.md");
        assert_eq!(list[0].id, stable_id("Help"));
    }

    #[test]
    fn duplicate_names_keep_one_deterministically() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "HELP.md", "upper");
        write(dir.path(), "Help.md", "title");
        let probe = dir.path().join("help.md");
        if probe.exists() {
            return; // case-insensitive file system: the files cannot coexist
        }
        let list = CommandDir::open(dir.path(), None).commands();
        assert_eq!(names(&list), ["help"]);
        assert_eq!(list[0].source, "HELP.md", "smaller file name wins");

        write(dir.path(), "help.md", "lower");
        let list = CommandDir::open(dir.path(), None).commands();
        assert_eq!(names(&list), ["help"]);
        assert_eq!(list[0].body, "lower", "the lowercase file wins");
    }

    #[test]
    fn malformed_yaml_is_skipped() {
        let list = load(&[
            ("bad.md", "---\ndescription: [unclosed\n---\nbody"),
            ("list.md", "---\n- a\n- b\n---\nbody"),
            ("nested.md", "---\ndescription:\n  a: b\n---\nbody"),
            ("good.md", "---\ndescription: ok\n---\nbody"),
        ]);
        assert_eq!(names(&list), ["good"]);
    }

    #[test]
    fn skipped_files_are_named_in_warnings() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "bad name.md", "x");
        write(dir.path(), "broken.md", "---\ndescription: [x\n---\nb");
        write(dir.path(), "Dup.md", "x");
        write(dir.path(), "dup.md", "x");
        let log = capture_warnings(|| {
            let list = CommandDir::open(dir.path(), None).commands();
            assert_eq!(names(&list), ["dup"]);
        });
        assert!(log.contains("bad name.md"), "{log}");
        assert!(log.contains("broken.md"), "{log}");
        if !dir.path().join("DUP.md").exists() {
            assert!(log.contains("Dup.md"), "{log}");
        }
    }

    #[test]
    fn the_shipped_examples_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/commands");
        let log = capture_warnings(|| {
            let list = CommandDir::open(&dir, None).commands();
            assert_eq!(names(&list), ["eli5", "help", "review"]);
            assert!(list.iter().all(|c| c.description.is_some()));
            assert!(list[0].body.contains("$ARGUMENTS"));
            assert_eq!(list[1].argument_hint.as_deref(), Some("(none)"));
            assert_eq!(list[2].allowed_tools, ["search", "execute_tool", "Bash"]);
        });
        assert!(log.is_empty(), "{log}");
    }

    #[test]
    fn sorted_by_name_and_missing_dir_is_empty() {
        let list = load(&[("b.md", "b"), ("A.md", "a"), ("c.md", "c")]);
        assert_eq!(names(&list), ["a", "b", "c"]);
        let dir = tempfile::tempdir().unwrap();
        assert!(
            CommandDir::open(dir.path().join("missing"), None)
                .commands()
                .is_empty()
        );
    }

    #[tokio::test]
    async fn implements_command_source() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.md", "a");
        let source: std::sync::Arc<dyn CommandSource> =
            std::sync::Arc::new(CommandDir::open(dir.path(), None));
        let list = source.commands(&RequestContext::default()).await.unwrap();
        assert_eq!(names(&list), ["a"]);
    }

    #[cfg(feature = "watch")]
    mod watching {
        use super::*;
        use crate::catalog::watch::test_support::Counter;

        #[test]
        fn a_burst_reloads_once_and_a_later_change_again() {
            let dir = tempfile::tempdir().unwrap();
            let counter = Counter::default();
            let store = CommandDir::open(dir.path(), Some(counter.callback()));
            for i in 0..20 {
                write(dir.path(), &format!("c{i:02}.md"), "body");
            }
            counter.wait_for(1);
            assert_eq!(store.commands().len(), 20);
            counter.assert_stays(1);

            // Unrelated files and drafts do not count; an edit does.
            write(dir.path(), "notes.txt", "x");
            write(dir.path(), "c00.md", "---\ndescription: edited\n---\nbody");
            counter.wait_for(2);
            assert_eq!(store.commands()[0].description.as_deref(), Some("edited"));
            counter.assert_stays(2);

            fs::remove_file(dir.path().join("c01.md")).unwrap();
            counter.wait_for(3);
            assert_eq!(store.commands().len(), 19);
        }

        #[test]
        fn a_deleted_and_recreated_directory_is_watched_again() {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("commands");
            fs::create_dir(&dir).unwrap();
            write(&dir, "a.md", "a");
            let counter = Counter::default();
            let store = CommandDir::open(&dir, Some(counter.callback()));
            assert_eq!(store.commands().len(), 1);

            fs::remove_dir_all(&dir).unwrap();
            counter.wait_for(1);
            assert!(store.commands().is_empty());

            fs::create_dir(&dir).unwrap();
            write(&dir, "b.md", "b");
            counter.wait_for(2);
            // The directory may have been seen before or after `b.md` was written.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while store.commands().is_empty() {
                assert!(std::time::Instant::now() < deadline, "b.md never appeared");
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            assert_eq!(names(&store.commands()), ["b"]);
        }
    }
}
