//! What runs when nothing is configured: the shipped example personas and slash commands
//! (`examples/` at the repository root, compiled in so an installed binary has them), and the
//! stand-in host when there is neither an upstream nor the demo model.

use lmchatkit::presets::{CommandDir, PersonaDir, StaticCommands, StaticPersonas};
use lmchatkit::protocol::{Event, Model, Persona};
use lmchatkit::{CompleteRequest, EventStream, Host, HostError, RequestContext, async_trait};

/// `(file stem, text)`; drafts (`_*.toml`) are left out, as a directory source skips them.
const PERSONAS: &[(&str, &str)] = &[
    ("coder", include_str!("../defaults/personas/coder.toml")),
    ("writer", include_str!("../defaults/personas/writer.toml")),
];

/// `(file name, text)`; drafts (`_*.md`) are left out.
const COMMANDS: &[(&str, &str)] = &[
    ("eli5.md", include_str!("../defaults/commands/eli5.md")),
    ("help.md", include_str!("../defaults/commands/help.md")),
    ("review.md", include_str!("../defaults/commands/review.md")),
];

/// The example personas after the built-in Default one, as a persona directory lists them.
pub fn personas() -> StaticPersonas {
    let mut list: Vec<Persona> = PERSONAS
        .iter()
        .filter_map(|(stem, text)| {
            PersonaDir::parse(stem, text)
                .inspect_err(|e| tracing::warn!(persona = stem, error = %e, "built-in persona"))
                .ok()
        })
        .collect();
    list.sort_by_key(|p| p.name.to_lowercase());
    list.insert(0, Persona::default_persona());
    StaticPersonas(list)
}

/// The example slash commands.
pub fn commands() -> StaticCommands {
    StaticCommands(
        COMMANDS
            .iter()
            .filter_map(|(file, text)| {
                CommandDir::parse(file, text)
                    .inspect_err(|e| tracing::warn!(command = file, error = %e, "built-in command"))
                    .ok()
            })
            .collect(),
    )
}

/// Stands in when no upstream is configured and the demo model is off: no models, and a clear
/// error if asked anyway.
pub struct NoUpstream;

#[async_trait]
impl Host for NoUpstream {
    async fn models(&self, _: &RequestContext) -> Result<Vec<Model>, HostError> {
        Ok(Vec::new())
    }
    fn complete(&self, _: &RequestContext, _: CompleteRequest) -> EventStream {
        Box::pin(futures_util::stream::once(async {
            Event::error(
                "No model is configured. Start lmchatkit with OPENAI_BASE_URL pointing at an OpenAI-compatible endpoint.",
            )
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every non-draft file in `examples/` is compiled in, and each one parses.
    #[test]
    fn every_shipped_example_is_built_in_and_parses() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("defaults");
        let shipped = |dir: &str| -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(root.join(dir))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('_'))
                .collect();
            names.sort();
            names
        };
        let persona_files: Vec<String> =
            PERSONAS.iter().map(|(s, _)| format!("{s}.toml")).collect();
        let command_files: Vec<String> = COMMANDS.iter().map(|(f, _)| f.to_string()).collect();
        assert_eq!(persona_files, shipped("personas"));
        assert_eq!(command_files, shipped("commands"));
        let names: Vec<String> = personas().0.into_iter().map(|p| p.name).collect();
        assert_eq!(names.len(), 1 + PERSONAS.len(), "{names:?}");
        assert_eq!(commands().0.len(), COMMANDS.len());
    }
}
