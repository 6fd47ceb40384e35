//! Personas and slash commands: the source traits, static sources, and directory-backed
//! sources that reload on change ([`PersonaDir`], [`CommandDir`]; debounced watching with the
//! `watch` feature, see [`DEBOUNCE`]).

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

/// Errors of a catalog source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// The source failed; the message says why.
    #[error("catalog: {0}")]
    Source(String),
}

/// Where personas come from. Consulted on every request, so a database-backed source needs no
/// watcher.
#[async_trait]
pub trait PersonaSource: Send + Sync + 'static {
    /// The personas offered to the caller of `cx`.
    async fn personas(&self, cx: &RequestContext) -> Result<Vec<Persona>, CatalogError>;
}

/// Where slash commands come from. Consulted on every request.
#[async_trait]
pub trait CommandSource: Send + Sync + 'static {
    /// The slash commands offered to the caller of `cx`.
    async fn commands(&self, cx: &RequestContext) -> Result<Vec<SlashCommand>, CatalogError>;
}

/// A fixed list of personas.
#[derive(Debug, Clone, Default)]
pub struct StaticPersonas(pub Vec<Persona>);

#[async_trait]
impl PersonaSource for StaticPersonas {
    async fn personas(&self, _cx: &RequestContext) -> Result<Vec<Persona>, CatalogError> {
        Ok(self.0.clone())
    }
}

/// A fixed list of slash commands.
#[derive(Debug, Clone, Default)]
pub struct StaticCommands(pub Vec<SlashCommand>);

#[async_trait]
impl CommandSource for StaticCommands {
    async fn commands(&self, _cx: &RequestContext) -> Result<Vec<SlashCommand>, CatalogError> {
        Ok(self.0.clone())
    }
}
