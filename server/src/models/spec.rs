//! An operator's model entry (the app file's `[[models]]`), which extends the catalog or
//! overrides the facts of a model it already has.
//!
//! Decision: only the fields given override; one left out keeps what the catalog knew (so
//! `[[models]] id = "openai/gpt-4o" label = "4o"` relabels the model and keeps its price). An
//! entry the catalog did not know starts with no facts.

use serde::Deserialize;

use super::{ModelEntry, Price, split_id};

/// One `[[models]]` entry of the app file.
///
/// ```
/// use lmchatkit::models::ModelSpec;
///
/// let spec: ModelSpec = toml::from_str(r#"
///     id = "local/llama3"
///     label = "Llama 3"
///     context_window = 8192
///     reasoning = false
///     price = { input = 0.0, output = 0.0 }
/// "#).unwrap();
/// assert_eq!(spec.id, "local/llama3");
/// ```
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ModelSpec {
    /// `provider/model`.
    pub id: String,
    /// The menu's label.
    #[serde(default)]
    pub label: Option<String>,
    /// The context window in tokens.
    #[serde(default)]
    pub context_window: Option<u64>,
    /// Whether the model honours a reasoning effort.
    #[serde(default)]
    pub reasoning: Option<bool>,
    /// The price in USD per million tokens.
    #[serde(default)]
    pub price: Option<Price>,
}

/// Why an operator's model entry was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// The id is not `provider/model`.
    #[error("model id {id:?} must be provider/model (for example \"openai/gpt-4o\")")]
    NotProviderSlashModel {
        /// The id as given.
        id: String,
    },
    /// A rate is negative or not a number.
    #[error("model {id:?}: prices are USD per million tokens, zero or more")]
    BadPrice {
        /// The model's id.
        id: String,
    },
}

impl ModelSpec {
    /// An entry for `id` that changes nothing yet.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            ..Self::default()
        }
    }

    /// The same entry with a label.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// The same entry with a context window.
    pub fn with_context_window(mut self, tokens: u64) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// The same entry with a reasoning flag.
    pub fn with_reasoning(mut self, reasoning: bool) -> Self {
        self.reasoning = Some(reasoning);
        self
    }

    /// The same entry with a price.
    pub fn with_price(mut self, price: Price) -> Self {
        self.price = Some(price);
        self
    }

    /// Checks the entry and returns `base` (the catalog's entry for the same id, if any) with
    /// the given fields applied.
    pub(super) fn apply(self, base: Option<&ModelEntry>) -> Result<ModelEntry, SpecError> {
        let Some((provider, model)) = split_id(&self.id) else {
            return Err(SpecError::NotProviderSlashModel { id: self.id });
        };
        if self.price.is_some_and(|price| !price.is_valid()) {
            return Err(SpecError::BadPrice { id: self.id });
        }
        let mut entry = base
            .cloned()
            .unwrap_or_else(|| ModelEntry::new(provider, model));
        if let Some(label) = self.label {
            entry.label = label;
        }
        if let Some(tokens) = self.context_window {
            entry.context_window = Some(tokens);
        }
        if let Some(reasoning) = self.reasoning {
            entry.reasoning = reasoning;
        }
        if let Some(price) = self.price {
            entry.price = Some(price);
        }
        Ok(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_without_a_provider_is_refused() {
        for id in ["llama3", "/llama3", "local/", ""] {
            let err = ModelSpec::new(id).apply(None).unwrap_err();
            assert_eq!(err, SpecError::NotProviderSlashModel { id: id.into() });
            assert!(err.to_string().contains("provider/model"), "{err}");
        }
    }

    #[test]
    fn a_negative_price_is_refused() {
        let spec = ModelSpec::new("local/llama3").with_price(Price::new(-1.0, 0.0));
        assert_eq!(
            spec.apply(None),
            Err(SpecError::BadPrice {
                id: "local/llama3".into()
            })
        );
    }

    #[test]
    fn an_unknown_field_in_the_file_is_an_error() {
        let parsed = toml::from_str::<ModelSpec>("id = \"local/x\"\ncontext = 8192");
        assert!(parsed.is_err());
    }
}
