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

use super::watch::{self, WatchedDir, stable_id};
use super::{CommandSource, OnChange, PresetError};
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
/// use lmchatkit::presets::CommandDir;
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
    dir: WatchedDir<SlashCommand>,
}

impl CommandDir {
    /// Loads the commands in `dir` now. With feature `watch`, the directory is watched too:
    /// a burst of changes causes one reload after [`DEBOUNCE`](super::DEBOUNCE) of quiet,
    /// followed by one `on_change()` call (when given) if the list changed. The callback runs on
    /// the watcher's thread; keep it short. Never fails: problems are logged.
    pub fn open(dir: impl Into<PathBuf>, on_change: Option<OnChange>) -> Self {
        Self {
            dir: WatchedDir::open(dir.into(), load_dir, is_md, on_change),
        }
    }

    /// A copy of the current list, sorted by name.
    pub fn commands(&self) -> Vec<SlashCommand> {
        self.dir.items()
    }

    super::watch::watched_dir_methods!();

    /// Parses one command file; `file_name` is its name with the `.md` extension (it gives the
    /// command name, the id and `source`).
    ///
    /// ```
    /// use lmchatkit::presets::CommandDir;
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
    pub fn parse(file_name: &str, text: &str) -> Result<SlashCommand, PresetError> {
        let stem = file_name.strip_suffix(".md").unwrap_or(file_name);
        if !is_valid_name(stem) {
            return Err(PresetError::Source(format!(
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
    async fn commands(&self, _cx: &RequestContext) -> Result<Vec<SlashCommand>, PresetError> {
        Ok(self.dir.items())
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

fn malformed(msg: impl Into<String>) -> PresetError {
    PresetError::Source(msg.into())
}

fn parse_meta(yaml: &str) -> Result<Meta, PresetError> {
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
mod tests;
