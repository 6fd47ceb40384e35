//! Prices and the cost of one reply.
//!
//! Decisions:
//! - Prices are USD per million tokens, as providers publish them.
//! - Token counts follow the convention the OpenAI API, the AI SDK and (once a backend adds its
//!   cache reads to `input_tokens`) Anthropic share: `cached_input` is the part of `input` that
//!   was read from the provider's prompt cache, and `reasoning` is the part of `output` the
//!   model spent thinking. So cached tokens are billed at [`Price::cached_input`] (at the input
//!   price when the model has none) instead of the input price, and reasoning tokens are billed
//!   as output without being counted twice.
//! - A count that cannot be a part of its whole (more cached than input tokens) is clamped to
//!   the whole, so a confused upstream never yields a negative cost.
//! - The sum is divided by a million once, at the end: integer prices give the exact decimal
//!   (1,234 in + 567 out at $3/$15 is `0.012207`, not `0.012207000000000001`).

use serde::{Deserialize, Serialize};

/// What a model costs, in USD per million tokens. Reasoning tokens are billed as output.
///
/// ```
/// use lmchatkit::models::{Price, TokenUsage};
///
/// let price = Price::new(3.0, 15.0);
/// assert_eq!(price.cost(&TokenUsage::new(1_234, 567)), 0.012207);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Price {
    /// USD per million input tokens not read from the prompt cache.
    pub input: f64,
    /// USD per million output tokens (reasoning tokens included).
    pub output: f64,
    /// USD per million input tokens read from the prompt cache; `None` bills them as input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
}

impl Price {
    /// A price without a cached-input rate.
    pub fn new(input: f64, output: f64) -> Self {
        Self {
            input,
            output,
            cached_input: None,
        }
    }

    /// The same price with a cached-input rate.
    pub fn with_cached_input(mut self, cached_input: f64) -> Self {
        self.cached_input = Some(cached_input);
        self
    }

    /// Every rate is a finite number of dollars, zero or more (what an operator's file must
    /// give).
    pub fn is_valid(&self) -> bool {
        [self.input, self.output, self.cached_input.unwrap_or(0.0)]
            .iter()
            .all(|rate| rate.is_finite() && *rate >= 0.0)
    }

    /// The cost in USD of `usage` at this price (see the module docs for the convention).
    pub fn cost(&self, usage: &TokenUsage) -> f64 {
        let cached = usage.cached_input.unwrap_or(0).min(usage.input);
        let uncached = usage.input - cached;
        let cached_rate = self.cached_input.unwrap_or(self.input);
        let micro_dollars = uncached as f64 * self.input
            + cached as f64 * cached_rate
            + usage.output as f64 * self.output;
        micro_dollars / 1_000_000.0
    }
}

/// The tokens one reply used, as its upstream reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TokenUsage {
    /// Prompt tokens, cached ones included.
    pub input: u64,
    /// Generated tokens, reasoning ones included.
    pub output: u64,
    /// The part of `output` spent on reasoning, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
    /// The part of `input` read from the prompt cache, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<u64>,
}

impl TokenUsage {
    /// `input` prompt tokens and `output` generated tokens.
    pub fn new(input: u64, output: u64) -> Self {
        Self {
            input,
            output,
            reasoning: None,
            cached_input: None,
        }
    }

    /// The same usage, `reasoning` of whose output tokens were reasoning.
    pub fn with_reasoning(mut self, reasoning: u64) -> Self {
        self.reasoning = Some(reasoning);
        self
    }

    /// The same usage, `cached_input` of whose input tokens were read from the prompt cache.
    pub fn with_cached_input(mut self, cached_input: u64) -> Self {
        self.cached_input = Some(cached_input);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_and_output_are_billed_per_million_tokens() {
        let price = Price::new(3.0, 15.0);
        assert_eq!(price.cost(&TokenUsage::new(1_234, 567)), 0.012207);
        assert_eq!(price.cost(&TokenUsage::new(1_000_000, 0)), 3.0);
        assert_eq!(price.cost(&TokenUsage::new(0, 1_000_000)), 15.0);
        assert_eq!(price.cost(&TokenUsage::default()), 0.0);
    }

    #[test]
    fn cached_input_tokens_are_part_of_input_and_billed_at_the_cached_rate() {
        // 1,234 input of which 1,000 cached: 234 at $3, 1,000 at $0.30, 567 out at $15.
        let price = Price::new(3.0, 15.0).with_cached_input(0.3);
        let usage = TokenUsage::new(1_234, 567).with_cached_input(1_000);
        let expected = (234.0 * 3.0 + 1_000.0 * 0.3 + 567.0 * 15.0) / 1e6;
        assert!((price.cost(&usage) - expected).abs() < 1e-15);
        assert!((price.cost(&usage) - 0.009507).abs() < 1e-12);
    }

    #[test]
    fn cached_input_without_a_cached_rate_is_billed_as_input() {
        let price = Price::new(3.0, 15.0);
        let usage = TokenUsage::new(1_234, 567).with_cached_input(1_000);
        assert_eq!(price.cost(&usage), 0.012207);
    }

    #[test]
    fn reasoning_tokens_are_output_and_not_billed_twice() {
        let price = Price::new(2.0, 8.0);
        let plain = price.cost(&TokenUsage::new(500, 4_200));
        let with_reasoning = price.cost(&TokenUsage::new(500, 4_200).with_reasoning(4_000));
        assert_eq!(with_reasoning, plain);
        assert_eq!(with_reasoning, 0.0346);
    }

    #[test]
    fn more_cached_than_input_tokens_is_clamped_to_the_input() {
        let price = Price::new(3.0, 15.0).with_cached_input(0.3);
        let usage = TokenUsage::new(100, 0).with_cached_input(1_000);
        assert!((price.cost(&usage) - 100.0 * 0.3 / 1e6).abs() < 1e-15);
    }

    #[test]
    fn a_price_with_a_negative_or_non_finite_rate_is_invalid() {
        assert!(Price::new(0.0, 0.0).is_valid());
        assert!(Price::new(3.0, 15.0).with_cached_input(0.3).is_valid());
        assert!(!Price::new(-1.0, 15.0).is_valid());
        assert!(!Price::new(3.0, f64::NAN).is_valid());
        assert!(
            !Price::new(3.0, 15.0)
                .with_cached_input(f64::INFINITY)
                .is_valid()
        );
    }

    #[test]
    fn a_price_reads_from_the_app_file_shape() {
        let price: Price = toml::from_str("input = 3.0\noutput = 15\ncached_input = 0.3").unwrap();
        assert_eq!(price, Price::new(3.0, 15.0).with_cached_input(0.3));
        let price: Price = toml::from_str("input = 0.0\noutput = 0.0").unwrap();
        assert_eq!(price.cached_input, None);
        assert!(toml::from_str::<Price>("input = 1\noutput = 1\ncache = 1").is_err());
    }
}
