//! [`PersonaDir`]: personas from a directory of TOML files, reloaded when it changes.
//!
//! One persona per `*.toml` file directly in the directory:
//!
//! ```toml
//! name = "Coder"                        # optional; falls back to the file stem
//! description = "Terse senior engineer" # optional
//! system_prompt = "You write Rust."     # optional
//! default_model = "gpt-4o-mini"         # optional
//!
//! [params]                              # optional; forwarded to the provider
//! temperature = 0.2                     # floats stay floats
//! max_tokens = 2048                     # integers stay integers
//! ```
//!
//! Rules (the Go loader's, plus fixes): the id is [`stable_id`] of the file stem, so renaming the
//! display name keeps the id; drafts (`_*.toml`) and hidden files are skipped; a malformed file
//! is skipped with a warning naming it (Go skipped silently); unknown keys are ignored. The
//! built-in [`Persona::default_persona`] always comes first, then the file personas sorted by
//! name (case-insensitively, then by id). TOML datetimes in `[params]` become strings; a
//! non-finite float (`nan`, `inf`) cannot be sent as JSON and is dropped with a warning.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use lmchatkit_protocol::{Params, Persona};
use serde::Deserialize;

use super::watch::{self, WatchedDir, stable_id};
use super::{OnChange, PersonaSource, PresetError};
use crate::host::RequestContext;

/// Personas loaded from the `*.toml` files of a directory.
///
/// Loaded eagerly by [`open`](Self::open); with feature `watch` the directory is watched and
/// reloaded after a debounce (then the optional `on_change` callback runs), and dropping the value
/// stops the watcher.
/// A missing directory is not an error: the list is just [`Persona::default_persona`], and the
/// watcher picks the directory up when it appears.
///
/// ```
/// use lmchatkit::presets::PersonaDir;
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(
///     dir.path().join("coder.toml"),
///     "name = \"Coder\"\nsystem_prompt = \"You write Rust.\"\n[params]\ntemperature = 0.2\n",
/// )
/// .unwrap();
///
/// let personas = PersonaDir::open(dir.path(), None);
/// let names: Vec<_> = personas.personas().into_iter().map(|p| p.name).collect();
/// assert_eq!(names, ["Default", "Coder"]);
/// ```
#[derive(Debug)]
pub struct PersonaDir {
    dir: WatchedDir<Persona>,
}

impl PersonaDir {
    /// Loads the personas in `dir` now. With feature `watch`, the directory is watched too:
    /// a burst of changes causes one reload after [`DEBOUNCE`](super::DEBOUNCE) of quiet,
    /// followed by one `on_change()` call (when given) if the list changed. The callback runs on
    /// the watcher's thread; keep it short. Never fails: problems are logged.
    pub fn open(dir: impl Into<PathBuf>, on_change: Option<OnChange>) -> Self {
        Self {
            dir: WatchedDir::open(dir.into(), load_dir, is_toml, on_change),
        }
    }

    /// A copy of the current list: [`Persona::default_persona`] first, then the file personas
    /// sorted by name.
    pub fn personas(&self) -> Vec<Persona> {
        self.dir.items()
    }

    super::watch::watched_dir_methods!();

    /// Parses one persona file's text; `stem` is the file name without `.toml` (it gives the id
    /// and the fallback name).
    ///
    /// ```
    /// use lmchatkit::presets::{PersonaDir, stable_id};
    ///
    /// let p = PersonaDir::parse("writer", "description = \"Prose\"\n[params]\ntop_k = 40\n").unwrap();
    /// assert_eq!(p.name, "writer");
    /// assert_eq!(p.id, stable_id("writer"));
    /// assert_eq!(p.params["top_k"], serde_json::json!(40));
    /// assert!(PersonaDir::parse("broken", "name = ").is_err());
    /// ```
    pub fn parse(stem: &str, text: &str) -> Result<Persona, PresetError> {
        let file: PersonaFile =
            toml::from_str(text).map_err(|err| PresetError::Source(err.to_string()))?;
        let name = file
            .name
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| stem.to_owned());
        let params = file
            .params
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(key, value)| match toml_to_json(value) {
                Some(value) => Some((key, value)),
                None => {
                    tracing::warn!(persona = stem, param = %key, "persona: dropping a non-finite float parameter");
                    None
                }
            })
            .collect::<Params>();
        Ok(Persona {
            id: stable_id(stem),
            name,
            description: non_empty(file.description),
            system_prompt: non_empty(file.system_prompt),
            default_model: non_empty(file.default_model),
            params,
        })
    }
}

#[async_trait]
impl PersonaSource for PersonaDir {
    async fn personas(&self, _cx: &RequestContext) -> Result<Vec<Persona>, PresetError> {
        Ok(self.dir.items())
    }
}

/// The keys a persona file may set.
#[derive(Deserialize)]
struct PersonaFile {
    name: Option<String>,
    description: Option<String>,
    system_prompt: Option<String>,
    default_model: Option<String>,
    params: Option<toml::Table>,
}

fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim().is_empty())
}

fn is_toml(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "toml")
}

/// Converts a TOML value to JSON; `None` for a non-finite float (at any depth).
fn toml_to_json(value: toml::Value) -> Option<serde_json::Value> {
    use serde_json::Value as J;
    Some(match value {
        toml::Value::String(s) => J::String(s),
        toml::Value::Integer(i) => J::from(i),
        toml::Value::Float(f) => J::Number(serde_json::Number::from_f64(f)?),
        toml::Value::Boolean(b) => J::Bool(b),
        toml::Value::Datetime(d) => J::String(d.to_string()),
        toml::Value::Array(items) => J::Array(
            items
                .into_iter()
                .map(toml_to_json)
                .collect::<Option<Vec<_>>>()?,
        ),
        toml::Value::Table(table) => J::Object(
            table
                .into_iter()
                .map(|(k, v)| Some((k, toml_to_json(v)?)))
                .collect::<Option<serde_json::Map<_, _>>>()?,
        ),
    })
}

/// Loads every persona of `dir`, Default first.
fn load_dir(dir: &Path) -> Vec<Persona> {
    let mut personas: Vec<Persona> = watch::list_files(dir, "toml")
        .into_iter()
        .filter_map(|file| {
            let text = watch::read_text(&file)?;
            match PersonaDir::parse(&file.stem, &text) {
                Ok(persona) => Some(persona),
                Err(err) => {
                    tracing::warn!(file = %file.path.display(), error = %err, "persona: skipping a malformed file");
                    None
                }
            }
        })
        .collect();
    personas.sort_by(|a, b| {
        a.name
            .to_lowercase()
            .cmp(&b.name.to_lowercase())
            .then_with(|| a.id.cmp(&b.id))
    });
    personas.insert(0, Persona::default_persona());
    personas
}

#[cfg(test)]
mod tests;
