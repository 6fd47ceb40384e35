//! The model catalog: which models exist, what they can do, what they cost, and which of them
//! the configured providers can serve. A pure library module: no I/O, no clock.
//!
//! Decisions:
//! - A model's id is `provider/model`, the provider being the operator's name for an upstream
//!   (`openai`, `anthropic`, `local`, …). The model part may itself contain `/` (OpenRouter's
//!   `meta-llama/llama-3`), so an id splits at its first `/` only.
//! - Facts come from three places, later ones winning: the built-in table of well-known models
//!   ([`builtin`], list prices with the date and source they were taken from), the operator's
//!   entries ([`ModelSpec`], the app file's `[[models]]`; a field left out keeps the built-in
//!   fact), and the models an upstream lists ([`Catalog::add_listed`]: a known one keeps its
//!   facts, an unknown one appears with no price, context window or reasoning flag).
//! - An unknown price stays unknown: [`ModelEntry::cost`] is `None`, never `0`.
//! - Lookup fails loud (a bare id resolves only when exactly one provider has it; a miss names
//!   the menu), as the aichat seed's `LookupModel` does; nothing is silently substituted.
//! - A provider without its key is "not configured": its models stay on the menu (the UI shows
//!   them disabled, with the reason) and [`Catalog::lookup_configured`] refuses them.

mod catalog;
mod menu;
mod price;
mod spec;
mod table;

pub use catalog::{Catalog, LookupError, ProviderStatus};
pub use menu::{cost_of, pick};
pub use price::{Price, TokenUsage};
pub use spec::{ModelSpec, SpecError};
pub use table::{BUILTIN_PRICES_TAKEN, builtin};

use serde::Serialize;

/// One model on the menu.
///
/// ```
/// use lmchatkit::models::{ModelEntry, Price, TokenUsage};
///
/// let entry = ModelEntry::new("local", "llama3")
///     .with_label("Llama 3")
///     .with_context_window(8_192)
///     .with_price(Price::new(0.0, 0.0));
/// assert_eq!(entry.id, "local/llama3");
/// assert_eq!(entry.model(), "llama3");
/// assert_eq!(entry.cost(&TokenUsage::new(10, 5)), Some(0.0));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ModelEntry {
    /// `provider/model`.
    pub id: String,
    /// The provider's name (the part of `id` before the first `/`).
    pub provider: String,
    /// The name the menu shows (the model part of the id unless set).
    pub label: String,
    /// The model honours a reasoning effort.
    pub reasoning: bool,
    /// Its context window in tokens, when known.
    pub context_window: Option<u64>,
    /// Its list price, when known.
    pub price: Option<Price>,
}

impl ModelEntry {
    /// Model `model` of provider `provider`, labelled with its model name, with no known
    /// facts.
    pub fn new(provider: impl Into<String>, model: impl AsRef<str>) -> Self {
        let provider = provider.into();
        let model = model.as_ref();
        Self {
            id: format!("{provider}/{model}"),
            provider,
            label: model.to_owned(),
            reasoning: false,
            context_window: None,
            price: None,
        }
    }

    /// The same entry with another label.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// The same entry, saying whether it honours a reasoning effort.
    pub fn with_reasoning(mut self, reasoning: bool) -> Self {
        self.reasoning = reasoning;
        self
    }

    /// The same entry with a context window of `tokens`.
    pub fn with_context_window(mut self, tokens: u64) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// The same entry with a price.
    pub fn with_price(mut self, price: Price) -> Self {
        self.price = Some(price);
        self
    }

    /// The model part of the id: what is sent upstream as `model`.
    pub fn model(&self) -> &str {
        self.id
            .strip_prefix(self.provider.as_str())
            .and_then(|rest| rest.strip_prefix('/'))
            .unwrap_or(&self.id)
    }

    /// What `usage` cost on this model in USD; `None` when its price is unknown.
    pub fn cost(&self, usage: &TokenUsage) -> Option<f64> {
        self.price.map(|price| price.cost(usage))
    }

    /// The entry as the protocol's menu item (`GET {prefix}/api/models`).
    pub fn to_wire(&self) -> lmchatkit_protocol::Model {
        let mut model = lmchatkit_protocol::Model::new(self.id.clone());
        model.label = Some(self.label.clone());
        model.provider = Some(self.provider.clone());
        model.reasoning = self.reasoning;
        model.context_window = self.context_window;
        model
    }
}

/// Splits `provider/model` at its first `/`; `None` when either side is empty or there is no
/// `/`.
fn split_id(id: &str) -> Option<(&str, &str)> {
    id.split_once('/')
        .filter(|(provider, model)| !provider.is_empty() && !model.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_without_a_price_has_no_cost_rather_than_zero() {
        let entry = ModelEntry::new("local", "llama3");
        assert_eq!(entry.cost(&TokenUsage::new(1_000, 1_000)), None);
        let priced = entry.with_price(Price::new(3.0, 15.0));
        assert_eq!(priced.cost(&TokenUsage::new(1_234, 567)), Some(0.012207));
    }

    #[test]
    fn the_model_part_of_an_id_keeps_its_own_slashes() {
        let entry = ModelEntry::new("openrouter", "meta-llama/llama-3-70b");
        assert_eq!(entry.id, "openrouter/meta-llama/llama-3-70b");
        assert_eq!(entry.model(), "meta-llama/llama-3-70b");
        assert_eq!(entry.label, "meta-llama/llama-3-70b");
        assert_eq!(
            split_id("openrouter/meta-llama/llama-3-70b"),
            Some(("openrouter", "meta-llama/llama-3-70b"))
        );
        assert_eq!(split_id("gpt-4o"), None);
        assert_eq!(split_id("/gpt-4o"), None);
        assert_eq!(split_id("openai/"), None);
    }

    #[test]
    fn the_wire_model_carries_provider_label_reasoning_and_context_window() {
        let wire = ModelEntry::new("openai", "o3")
            .with_label("o3")
            .with_reasoning(true)
            .with_context_window(200_000)
            .to_wire();
        assert_eq!(wire.id, "openai/o3");
        assert_eq!(wire.provider.as_deref(), Some("openai"));
        assert_eq!(wire.label.as_deref(), Some("o3"));
        assert!(wire.reasoning);
        assert_eq!(wire.context_window, Some(200_000));
    }
}
