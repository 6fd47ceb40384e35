//! Picking the model a turn runs on from the menu the caller sees ([`pick`]), and what the
//! turn cost ([`cost_of`]).
//!
//! Decisions:
//! - The menu is what `GET {prefix}/api/models` answers the same caller: the host's models
//!   described by the catalog, plus the models of providers registered as not configured. A
//!   turn may only run on a configured model of that menu, on both protocols; nothing unknown
//!   is sent upstream.
//! - An exact id wins; a bare model name (`gpt-4o` for `openai/gpt-4o`) resolves when exactly
//!   one model on the menu has it. The errors are [`LookupError`]s, whose messages name the
//!   menu or the candidates, fit for a 400.
//! - No model asked for (the AI SDK route allows it) means the first configured one.

use lmchatkit_protocol::{Model, Usage};

use super::{Catalog, LookupError, TokenUsage};

/// The model `asked` names on `menu` (or the first configured one when `None`).
///
/// ```
/// use lmchatkit::models::{LookupError, pick};
/// use lmchatkit::protocol::Model;
///
/// let off = Model { configured: false, unavailable_reason: Some("no key".into()), ..Model::new("anthropic/claude") };
/// let menu = vec![off, Model::new("openai/gpt-4o")];
/// assert_eq!(pick(&menu, Some("gpt-4o")).unwrap().id, "openai/gpt-4o");
/// assert_eq!(pick(&menu, None).unwrap().id, "openai/gpt-4o");
/// assert!(matches!(pick(&menu, Some("claude")), Err(LookupError::NotConfigured { .. })));
/// assert!(matches!(pick(&menu, Some("gpt-7")), Err(LookupError::Unknown { .. })));
/// ```
pub fn pick<'a>(menu: &'a [Model], asked: Option<&str>) -> Result<&'a Model, LookupError> {
    let Some(asked) = asked else {
        return menu.iter().find(|m| m.configured).ok_or(LookupError::Empty);
    };
    let found = match menu.iter().find(|m| m.id == asked) {
        Some(m) => m,
        None => {
            let bare = |m: &&Model| m.id.split_once('/').is_some_and(|(_, name)| name == asked);
            let matches: Vec<&Model> = menu.iter().filter(bare).collect();
            match matches.as_slice() {
                [m] => *m,
                [] => {
                    return Err(LookupError::Unknown {
                        id: asked.to_owned(),
                        menu: menu.iter().map(|m| m.id.clone()).collect(),
                    });
                }
                several => {
                    return Err(LookupError::Ambiguous {
                        id: asked.to_owned(),
                        candidates: several.iter().map(|m| m.id.clone()).collect(),
                    });
                }
            }
        }
    };
    if found.configured {
        return Ok(found);
    }
    Err(LookupError::NotConfigured {
        id: found.id.clone(),
        provider: found.provider.clone().unwrap_or_default(),
        reason: found
            .unavailable_reason
            .clone()
            .unwrap_or_else(|| "its provider is not configured".into()),
    })
}

/// What `usage` cost on model `id` in USD, by the catalog's price for it; `None` when the
/// price is unknown (never `0` for unknown).
///
/// ```
/// use lmchatkit::models::{Catalog, ModelSpec, Price, cost_of};
/// use lmchatkit::protocol::Usage;
///
/// let catalog = Catalog::new().with_model(ModelSpec::new("local/llama3").with_price(Price::new(3.0, 15.0)))?;
/// let usage = Usage { prompt_tokens: Some(1_234), completion_tokens: Some(567), ..Usage::default() };
/// assert_eq!(cost_of(&catalog, "local/llama3", &usage), Some(0.012207));
/// assert_eq!(cost_of(&catalog, "local/unknown", &usage), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn cost_of(catalog: &Catalog, id: &str, usage: &Usage) -> Option<f64> {
    Some(catalog.price(id)?.cost(&TokenUsage::from(usage)))
}

impl From<&Usage> for TokenUsage {
    /// The counts of a protocol [`Usage`] (what was not reported counts `0`).
    fn from(u: &Usage) -> Self {
        TokenUsage {
            input: u.prompt_tokens.unwrap_or(0),
            output: u.completion_tokens.unwrap_or(0),
            reasoning: u.reasoning_tokens,
            cached_input: u.cached_prompt_tokens,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn menu() -> Vec<Model> {
        vec![
            Model::new("openai/gpt-4o"),
            Model::new("azure/gpt-4o"),
            Model::new("local/llama3"),
            Model {
                configured: false,
                unavailable_reason: Some("ANTHROPIC_API_KEY is not set".into()),
                ..Model::new("anthropic/claude-sonnet-4-5")
            },
        ]
    }

    #[test]
    fn an_exact_id_wins_and_a_bare_name_resolves_only_when_one_provider_has_it() {
        let menu = menu();
        assert_eq!(
            pick(&menu, Some("azure/gpt-4o")).unwrap().id,
            "azure/gpt-4o"
        );
        assert_eq!(pick(&menu, Some("llama3")).unwrap().id, "local/llama3");
        let err = pick(&menu, Some("gpt-4o")).unwrap_err();
        assert!(matches!(err, LookupError::Ambiguous { .. }), "{err}");
        assert!(
            err.to_string().contains("openai/gpt-4o, azure/gpt-4o"),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_id_names_the_menu_and_an_unconfigured_one_the_reason() {
        let menu = menu();
        let err = pick(&menu, Some("gpt-7")).unwrap_err().to_string();
        assert!(
            err.contains("gpt-7") && err.contains("local/llama3"),
            "{err}"
        );
        let err = pick(&menu, Some("claude-sonnet-4-5"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("ANTHROPIC_API_KEY is not set"), "{err}");
    }

    #[test]
    fn no_model_asked_means_the_first_configured_one() {
        let mut menu = menu();
        menu.rotate_left(3);
        assert_eq!(menu[0].id, "anthropic/claude-sonnet-4-5");
        assert_eq!(pick(&menu, None).unwrap().id, "openai/gpt-4o");
        assert!(matches!(pick(&menu[..1], None), Err(LookupError::Empty)));
        assert!(matches!(pick(&[], None), Err(LookupError::Empty)));
    }

    #[test]
    fn the_cost_uses_the_cached_and_reasoning_shares() {
        let catalog = Catalog::new().with_entry(
            super::super::ModelEntry::new("x", "m")
                .with_price(super::super::Price::new(2.0, 8.0).with_cached_input(0.5)),
        );
        let usage = Usage {
            prompt_tokens: Some(1_000_000),
            cached_prompt_tokens: Some(400_000),
            completion_tokens: Some(100_000),
            reasoning_tokens: Some(60_000),
            ..Usage::default()
        };
        // 600k uncached × $2 + 400k cached × $0.5 + 100k output (reasoning inside) × $8.
        assert_eq!(cost_of(&catalog, "x/m", &usage), Some(1.2 + 0.2 + 0.8));
        assert_eq!(cost_of(&catalog, "m", &usage), Some(2.2));
    }
}
