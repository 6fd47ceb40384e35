//! [`Catalog`]: the menu of models, the providers that serve them, and lookup by id.
//!
//! Decisions:
//! - Lookup: an exact `provider/model` id wins; otherwise the id is taken as a bare model
//!   name and resolves when exactly one provider has that model. Several is
//!   [`LookupError::Ambiguous`] (naming the candidates), none is [`LookupError::Unknown`]
//!   (naming the menu). Ids are compared exactly (no case folding, no trimming).
//! - Menu order: registered providers in the order they were registered, then providers that
//!   only the built-in table or operator entries name, in the order they first appear; within a
//!   provider, the order entries were first added (an override keeps its entry's place).
//! - A provider is configured when it was registered with `configured = true`; a provider
//!   never registered (a built-in table's provider the operator did not set up) is not.

use super::{ModelEntry, ModelSpec, Price, SpecError, builtin};

/// Whether a provider can serve its models, and why not.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderStatus {
    /// The provider's name (the prefix of its models' ids).
    pub name: String,
    /// Its key is there (or it needs none): its models can be used.
    pub configured: bool,
    /// Why it is not configured (for the menu); `None` when it is.
    pub reason: Option<String>,
}

/// Why a model id did not resolve to a usable model. The messages are fit for a 400.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LookupError {
    /// No model has this id or model name.
    #[error("unknown model {id:?}; {}", menu_phrase(.menu))]
    Unknown {
        /// The id asked for.
        id: String,
        /// Every id on the menu, in menu order.
        menu: Vec<String>,
    },
    /// A bare model name that several providers have.
    #[error("model {id:?} is offered by several providers; choose one of: {}", .candidates.join(", "))]
    Ambiguous {
        /// The id asked for.
        id: String,
        /// The full ids that match, in menu order.
        candidates: Vec<String>,
    },
    /// The model is known but its provider cannot serve it.
    #[error("model {id:?} is not available: {reason}")]
    NotConfigured {
        /// The model's full id.
        id: String,
        /// Its provider.
        provider: String,
        /// Why the provider is not configured.
        reason: String,
    },
    /// No model was named and none on the menu can be used.
    #[error("no model is available")]
    Empty,
}

fn menu_phrase(menu: &[String]) -> String {
    if menu.is_empty() {
        "the model menu is empty".to_owned()
    } else {
        format!("the model menu: {}", menu.join(", "))
    }
}

/// The model menu: built-in facts, the operator's entries, the models upstreams list, and the
/// providers' status.
///
/// ```
/// use lmchatkit::models::{Catalog, LookupError, ModelSpec, Price};
///
/// let catalog = Catalog::builtin()
///     .with_provider("anthropic", true, None)
///     .with_provider("openai", false, Some("OPENAI_API_KEY is not set".into()))
///     .with_model(ModelSpec::new("local/llama3").with_price(Price::new(0.0, 0.0)))?;
/// assert_eq!(catalog.lookup("claude-sonnet-4-5")?.id, "anthropic/claude-sonnet-4-5");
/// assert!(matches!(catalog.lookup("gpt-7"), Err(LookupError::Unknown { .. })));
/// assert!(matches!(
///     catalog.lookup_configured("openai/gpt-4o"),
///     Err(LookupError::NotConfigured { .. })
/// ));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    entries: Vec<ModelEntry>,
    providers: Vec<ProviderStatus>,
}

impl Catalog {
    /// An empty catalog: no models, no providers.
    pub fn new() -> Self {
        Self::default()
    }

    /// The built-in table of well-known models, no provider registered yet.
    pub fn builtin() -> Self {
        let mut catalog = Self::new();
        for entry in builtin() {
            catalog.upsert(entry);
        }
        catalog
    }

    /// Registers provider `name`: `configured` when its key is there (or it needs none), else
    /// `reason_if_not` says why (a generic reason when `None`). Registering a name again
    /// replaces its status and keeps its place.
    pub fn with_provider(
        mut self,
        name: impl Into<String>,
        configured: bool,
        reason_if_not: Option<String>,
    ) -> Self {
        let name = name.into();
        let reason = (!configured)
            .then(|| reason_if_not.unwrap_or_else(|| format!("provider {name} has no API key")));
        let status = ProviderStatus {
            name,
            configured,
            reason,
        };
        match self.providers.iter_mut().find(|p| p.name == status.name) {
            Some(existing) => *existing = status,
            None => self.providers.push(status),
        }
        self
    }

    /// Adds `entry`, replacing the entry with the same id whole (keeping its place).
    pub fn with_entry(mut self, entry: ModelEntry) -> Self {
        self.upsert(entry);
        self
    }

    /// Applies an operator's entry: extends the catalog, or overrides the given fields of the
    /// entry with the same id.
    pub fn with_model(mut self, spec: ModelSpec) -> Result<Self, SpecError> {
        let base = self.get(&spec.id).cloned();
        let entry = spec.apply(base.as_ref())?;
        self.upsert(entry);
        Ok(self)
    }

    /// Adds the models `provider`'s upstream lists (model names as the upstream spells them,
    /// without the provider prefix). A model the catalog knows keeps its facts; an unknown one
    /// appears with no facts (so no price and no cost).
    pub fn add_listed<I, S>(&mut self, provider: &str, models: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        for model in models {
            let entry = ModelEntry::new(provider, model);
            if self.get(&entry.id).is_none() {
                self.entries.push(entry);
            }
        }
    }

    /// Resolves `id` (`provider/model`, or a bare model name one provider has) to its entry,
    /// configured or not.
    pub fn lookup(&self, id: &str) -> Result<&ModelEntry, LookupError> {
        if let Some(entry) = self.find(id) {
            return Ok(entry);
        }
        // A miss: the error names the menu (or the candidates) in menu order.
        let menu = self.menu();
        let matches: Vec<&ModelEntry> = menu.iter().copied().filter(|e| e.model() == id).collect();
        match matches.as_slice() {
            [entry] => Ok(entry),
            [] => Err(LookupError::Unknown {
                id: id.to_owned(),
                menu: menu.iter().map(|e| e.id.clone()).collect(),
            }),
            several => Err(LookupError::Ambiguous {
                id: id.to_owned(),
                candidates: several.iter().map(|e| e.id.clone()).collect(),
            }),
        }
    }

    /// A host's model with the facts the catalog knows of it (when its id resolves, exactly or
    /// as an unambiguous bare id): the reasoning flag, and the context window and provider when
    /// the host gave none. The host's id and label stay.
    ///
    /// ```
    /// use lmchatkit::models::Catalog;
    /// let m = Catalog::builtin().describe(lmchatkit::protocol::Model::new("o3"));
    /// assert!(m.reasoning && m.context_window.is_some());
    /// let unknown = Catalog::builtin().describe(lmchatkit::protocol::Model::new("my-llama"));
    /// assert!(!unknown.reasoning && unknown.context_window.is_none());
    /// ```
    pub fn describe(&self, mut model: lmchatkit_protocol::Model) -> lmchatkit_protocol::Model {
        if let Some(entry) = self.find(&model.id) {
            model.reasoning |= entry.reasoning;
            model.context_window = model.context_window.or(entry.context_window);
            if model.provider.is_none() {
                model.provider = Some(entry.provider.clone());
            }
        }
        model
    }

    /// The list price of model `id` (resolved as [`lookup`](Self::lookup) does), when known.
    pub fn price(&self, id: &str) -> Option<Price> {
        self.find(id)?.price
    }

    /// [`lookup`](Self::lookup), refusing a model whose provider is not configured.
    pub fn lookup_configured(&self, id: &str) -> Result<&ModelEntry, LookupError> {
        let entry = self.lookup(id)?;
        match self.unavailable_reason(&entry.provider) {
            None => Ok(entry),
            Some(reason) => Err(LookupError::NotConfigured {
                id: entry.id.clone(),
                provider: entry.provider.clone(),
                reason,
            }),
        }
    }

    /// Every model, grouped by provider in a stable order (see the module docs).
    pub fn menu(&self) -> Vec<&ModelEntry> {
        let mut order: Vec<&str> = self.providers.iter().map(|p| p.name.as_str()).collect();
        for entry in &self.entries {
            if !order.contains(&entry.provider.as_str()) {
                order.push(&entry.provider);
            }
        }
        order
            .into_iter()
            .flat_map(|provider| self.entries.iter().filter(move |e| e.provider == provider))
            .collect()
    }

    /// The status of provider `name`, when it was registered.
    pub fn provider(&self, name: &str) -> Option<&ProviderStatus> {
        self.providers.iter().find(|p| p.name == name)
    }

    /// The registered providers, in registration order.
    pub fn providers(&self) -> &[ProviderStatus] {
        &self.providers
    }

    /// Whether `entry`'s provider is registered and configured.
    pub fn is_configured(&self, entry: &ModelEntry) -> bool {
        self.unavailable_reason(&entry.provider).is_none()
    }

    /// Why provider `name` cannot serve its models; `None` when it can.
    pub fn unavailable_reason(&self, name: &str) -> Option<String> {
        match self.provider(name) {
            Some(status) if status.configured => None,
            Some(status) => Some(
                status
                    .reason
                    .clone()
                    .unwrap_or_else(|| format!("provider {name} has no API key")),
            ),
            None => Some(format!("provider {name} is not set up")),
        }
    }

    /// [`lookup`](Self::lookup) without the error: no allocation, for the per-turn callers
    /// ([`describe`](Self::describe), [`price`](Self::price)) that drop it anyway.
    fn find(&self, id: &str) -> Option<&ModelEntry> {
        if let Some(entry) = self.get(id) {
            return Some(entry);
        }
        let mut bare = self.entries.iter().filter(|e| e.model() == id);
        match (bare.next(), bare.next()) {
            (Some(entry), None) => Some(entry),
            _ => None,
        }
    }

    fn get(&self, id: &str) -> Option<&ModelEntry> {
        self.entries.iter().find(|e| e.id == id)
    }

    fn upsert(&mut self, entry: ModelEntry) {
        match self.entries.iter_mut().find(|e| e.id == entry.id) {
            Some(existing) => *existing = entry,
            None => self.entries.push(entry),
        }
    }
}

#[cfg(test)]
mod tests;
