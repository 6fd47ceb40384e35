//! The built-in table of well-known models: context windows and list prices as facts.
//!
//! Taken on 2026-12-01 from the providers' own pages, each figure seen in at least two places
//! (the provider's page and a model registry or gateway page that quotes it):
//! - OpenAI: the model pages under `developers.openai.com/api/docs/models/` (GPT-5 family,
//!   GPT-5 nano and mini with their cached-input rates) and `developers.openai.com/api/docs/pricing`;
//!   GPT-4.1, GPT-4o and o-series rates as the OpenAI rows of Vercel AI Gateway's and Helicone's
//!   model pages quote them. o3 is at its June 2025 price ($2 / $8).
//! - Anthropic: `platform.claude.com/docs/en/about-claude/pricing`, "Model pricing" (the
//!   "Cache hits & refreshes" column is the cached-input rate; cache writes, 1.25x input for
//!   5 minutes, are not modelled). Context windows are the standard 200K (the 1M beta with its
//!   long-context prices is not modelled).
//! - Google, through its OpenAI-compatible endpoint: `ai.google.dev/gemini-api/docs/pricing`
//!   as quoted by OpenRouter's and Deploybase's Gemini pricing pages. Gemini 2.5 Flash's
//!   cached-input rate was not confirmed, so cached tokens are billed as input; Gemini 2.5 Pro
//!   bills prompts over 200K tokens at a higher rate this table cannot express, so its price is
//!   left unknown.
//!
//! Reasoning tokens are billed as output by all three. A model missing here, or a figure that
//! could not be sourced, stays unknown; an operator adds or corrects it with `[[models]]`.

use super::{ModelEntry, Price};

/// The day the built-in prices were taken (ISO 8601).
pub const BUILTIN_PRICES_TAKEN: &str = "2026-12-01";

/// One row: provider, model, label, reasoning, context window, price (input, output, cached
/// input; USD per million tokens).
type Row = (
    &'static str,
    &'static str,
    &'static str,
    bool,
    Option<u64>,
    Option<(f64, f64, Option<f64>)>,
);

const GPT_4_1_CONTEXT: Option<u64> = Some(1_047_576);
const GEMINI_2_5_CONTEXT: Option<u64> = Some(1_048_576);

#[rustfmt::skip]
const ROWS: &[Row] = &[
    ("openai", "gpt-5", "GPT-5", true, Some(400_000), Some((1.25, 10.0, Some(0.125)))),
    ("openai", "gpt-5-mini", "GPT-5 mini", true, Some(400_000), Some((0.25, 2.0, Some(0.025)))),
    ("openai", "gpt-5-nano", "GPT-5 nano", true, Some(400_000), Some((0.05, 0.4, Some(0.005)))),
    ("openai", "gpt-4.1", "GPT-4.1", false, GPT_4_1_CONTEXT, Some((2.0, 8.0, Some(0.5)))),
    ("openai", "gpt-4.1-mini", "GPT-4.1 mini", false, GPT_4_1_CONTEXT, Some((0.4, 1.6, Some(0.1)))),
    ("openai", "gpt-4.1-nano", "GPT-4.1 nano", false, GPT_4_1_CONTEXT, Some((0.1, 0.4, Some(0.025)))),
    ("openai", "gpt-4o", "GPT-4o", false, Some(128_000), Some((2.5, 10.0, Some(1.25)))),
    ("openai", "gpt-4o-mini", "GPT-4o mini", false, Some(128_000), Some((0.15, 0.6, Some(0.075)))),
    ("openai", "o3", "o3", true, Some(200_000), Some((2.0, 8.0, Some(0.5)))),
    ("openai", "o4-mini", "o4-mini", true, Some(200_000), Some((1.1, 4.4, Some(0.275)))),
    ("anthropic", "claude-opus-4-5", "Claude Opus 4.5", true, Some(200_000), Some((5.0, 25.0, Some(0.5)))),
    ("anthropic", "claude-opus-4-1", "Claude Opus 4.1", true, Some(200_000), Some((15.0, 75.0, Some(1.5)))),
    ("anthropic", "claude-sonnet-4-5", "Claude Sonnet 4.5", true, Some(200_000), Some((3.0, 15.0, Some(0.3)))),
    ("anthropic", "claude-haiku-4-5", "Claude Haiku 4.5", true, Some(200_000), Some((1.0, 5.0, Some(0.1)))),
    ("google", "gemini-2.5-pro", "Gemini 2.5 Pro", true, GEMINI_2_5_CONTEXT, None),
    ("google", "gemini-2.5-flash", "Gemini 2.5 Flash", true, GEMINI_2_5_CONTEXT, Some((0.3, 2.5, None))),
];

/// The built-in table, in its order (grouped by provider).
pub fn builtin() -> impl Iterator<Item = ModelEntry> {
    ROWS.iter().map(
        |&(provider, model, label, reasoning, context_window, price)| {
            let mut entry = ModelEntry::new(provider, model)
                .with_label(label)
                .with_reasoning(reasoning);
            entry.context_window = context_window;
            entry.price = price.map(|(input, output, cached_input)| Price {
                input,
                output,
                cached_input,
            });
            entry
        },
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_builtin_id_is_unique_and_every_price_valid() {
        let entries: Vec<_> = builtin().collect();
        let ids: HashSet<_> = entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids.len(), entries.len());
        for entry in &entries {
            assert_eq!(entry.id, format!("{}/{}", entry.provider, entry.model()));
            assert!(entry.price.is_none_or(|p| p.is_valid()), "{}", entry.id);
            if let Some(Price {
                input,
                cached_input: Some(cached),
                ..
            }) = entry.price
            {
                assert!(cached <= input, "{}: cached above input", entry.id);
            }
        }
    }

    #[test]
    fn builtin_facts_are_the_sourced_list_prices() {
        let get = |id: &str| builtin().find(|e| e.id == id).unwrap();
        let sonnet = get("anthropic/claude-sonnet-4-5");
        assert_eq!(
            sonnet.price,
            Some(Price::new(3.0, 15.0).with_cached_input(0.3))
        );
        assert_eq!(sonnet.context_window, Some(200_000));
        assert!(sonnet.reasoning);
        let gpt4o = get("openai/gpt-4o");
        assert_eq!(
            gpt4o.price,
            Some(Price::new(2.5, 10.0).with_cached_input(1.25))
        );
        assert!(!gpt4o.reasoning);
        assert_eq!(get("google/gemini-2.5-pro").price, None);
    }
}
