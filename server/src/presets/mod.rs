//! Presets: personas (a system prompt, a model and its parameters) and slash commands (a saved
//! prompt), what the operator offers on the start screen and in the composer. The source
//! traits, static sources, and directory-backed sources that reload on change
//! ([`PersonaDir`], [`CommandDir`]; debounced watching with the `watch` feature, see
//! [`DEBOUNCE`]). (The model catalog is [`models::Catalog`](crate::models::Catalog); this module
//! was `catalog` in 0.1, and that path still works.)

use std::sync::Arc;

use async_trait::async_trait;
use lmchatkit_protocol::{Persona, SlashCommand};

use crate::host::RequestContext;

mod commands;
mod personas;
mod watch;

pub use commands::CommandDir;
pub use personas::PersonaDir;
/// Captured log output for tests anywhere in the crate.
#[cfg(test)]
pub(crate) use watch::test_support::{capture_logs, capture_with};
pub use watch::{DEBOUNCE, MAX_DELAY, POLL_MISSING, stable_id};

/// Called after a watched directory changed and was reloaded.
pub type OnChange = Arc<dyn Fn() + Send + Sync>;

/// Errors of a preset source (personas or slash commands).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PresetError {
    /// The source failed; the message says why.
    #[error("presets: {0}")]
    Source(String),
}

/// [`PresetError`] under its name in 0.1.
#[doc(hidden)]
pub type CatalogError = PresetError;

/// Where personas come from. Consulted on every request, so a database-backed source needs no
/// watcher.
#[async_trait]
pub trait PersonaSource: Send + Sync + 'static {
    /// The personas offered to the caller of `cx`.
    async fn personas(&self, cx: &RequestContext) -> Result<Vec<Persona>, PresetError>;
}

/// Where slash commands come from. Consulted on every request.
#[async_trait]
pub trait CommandSource: Send + Sync + 'static {
    /// The slash commands offered to the caller of `cx`.
    async fn commands(&self, cx: &RequestContext) -> Result<Vec<SlashCommand>, PresetError>;
}

/// A fixed list of personas.
#[derive(Debug, Clone, Default)]
pub struct StaticPersonas(pub Vec<Persona>);

#[async_trait]
impl PersonaSource for StaticPersonas {
    async fn personas(&self, _cx: &RequestContext) -> Result<Vec<Persona>, PresetError> {
        Ok(self.0.clone())
    }
}

/// A fixed list of slash commands.
#[derive(Debug, Clone, Default)]
pub struct StaticCommands(pub Vec<SlashCommand>);

#[async_trait]
impl CommandSource for StaticCommands {
    async fn commands(&self, _cx: &RequestContext) -> Result<Vec<SlashCommand>, PresetError> {
        Ok(self.0.clone())
    }
}
