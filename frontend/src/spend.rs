//! What the UI shows of models and spend, as pure functions (unit-tested natively): the model
//! menu grouped by provider, the reasoning effort kept in a conversation's params, a cost as
//! text, and the context gauge.
//!
//! Decisions:
//! - **Groups** follow the order the service lists models in (its menu is already grouped by
//!   provider, in provider order); a model without a provider is in a group with no heading.
//! - **No default on an unusable model**: [`usable`] is what the picker may pick on its own (a
//!   persona's default model, the first model, the last setup); a model with `configured: false`
//!   is only ever shown, disabled, with its reason.
//! - **Effort** lives in the conversation's params under
//!   [`REASONING_EFFORT_PARAM`](lmchatkit_protocol::REASONING_EFFORT_PARAM) (saved with the
//!   conversation like any param); "default" is its absence. It is only set for a reasoning
//!   model (the server strips it for the others anyway).
//! - **Costs** are never invented: an unknown cost is `None` and shows nothing (never `$0`). A
//!   known cost shows two significant digits below a dollar (`$0.0012`), cents above.
//! - **Totals** come from [`ConversationTotals::of`](lmchatkit_protocol::ConversationTotals::of)
//!   over the open chat's messages: the very function the server's store runs on every save, so
//!   both history modes show what the server stores, with one code path.
//! - **Gauge**: `last_context_tokens / context_window` of the chat's model, hidden when either
//!   is unknown; it warns from [`CONTEXT_WARN_PERCENT`] on and then offers `/compact`.
//! - **Compaction keeps the spend**: the summary that replaces a transcript carries the usage
//!   and cost of the messages it replaces plus the summary call's own ([`summary_spend`]), so
//!   the thread's totals survive it; its context is the summary call's output, which is what
//!   the next turn starts from.

use lmchatkit_protocol::{
    ConversationTotals, Message, Model, Params, REASONING_EFFORT_PARAM, ReasoningEffort, Usage,
};

/// The usage and cost the summary of a compaction carries: those of `replaced` plus the summary
/// call's (`call`, `call_cost`), with the call's output as the context (`0` when the call
/// reported no usage). The cost is `None` when none of them is known.
pub fn summary_spend(
    replaced: &[Message],
    call: Option<Usage>,
    call_cost: Option<f64>,
) -> (Usage, Option<f64>) {
    let before = ConversationTotals::of(replaced);
    let call = call.unwrap_or_default();
    let usage = Usage {
        prompt_tokens: Some(before.total_input_tokens + call.prompt_tokens.unwrap_or(0)),
        completion_tokens: Some(before.total_output_tokens + call.completion_tokens.unwrap_or(0)),
        context_tokens: Some(call.completion_tokens.unwrap_or(0)),
        ..Usage::default()
    };
    let cost = match (before.total_cost_usd, call_cost) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    };
    (usage, cost)
}

/// The context gauge warns (and offers `/compact`) from this fill level on, in percent.
pub const CONTEXT_WARN_PERCENT: u64 = 80;

/// The models of one provider, in menu order.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelGroup {
    /// The provider's name (`None`: models that name none).
    pub provider: Option<String>,
    /// Its models, in menu order.
    pub models: Vec<Model>,
}

/// Groups `models` by provider: groups in the order their first model appears, models in menu
/// order within a group (a provider listed again later joins its group).
pub fn group_by_provider(models: &[Model]) -> Vec<ModelGroup> {
    let mut groups: Vec<ModelGroup> = Vec::new();
    for m in models {
        match groups.iter_mut().find(|g| g.provider == m.provider) {
            Some(g) => g.models.push(m.clone()),
            None => groups.push(ModelGroup {
                provider: m.provider.clone(),
                models: vec![m.clone()],
            }),
        }
    }
    groups
}

/// Whether `id` names a model on `models` that a turn can run on now (configured).
pub fn usable(models: &[Model], id: &str) -> bool {
    models.iter().any(|m| m.id == id && m.configured)
}

/// The first model a turn can run on, if any.
pub fn first_usable(models: &[Model]) -> Option<&Model> {
    models.iter().find(|m| m.configured)
}

/// Whether model `id` on `models` takes a reasoning effort.
pub fn is_reasoning(models: &[Model], id: &str) -> bool {
    models.iter().any(|m| m.id == id && m.reasoning)
}

/// The effort `params` carry (`None`: the default, or a value that is not a level).
pub fn effort_of(params: &Params) -> Option<ReasoningEffort> {
    params
        .get(REASONING_EFFORT_PARAM)
        .and_then(serde_json::Value::as_str)
        .and_then(ReasoningEffort::parse)
}

/// `params` with `effort` set (or removed when `None` or the model is not a reasoning one).
pub fn with_effort(mut params: Params, effort: Option<ReasoningEffort>, reasoning: bool) -> Params {
    match effort.filter(|_| reasoning) {
        Some(e) => {
            params.insert(REASONING_EFFORT_PARAM.to_owned(), e.as_str().into());
        }
        None => {
            params.remove(REASONING_EFFORT_PARAM);
        }
    }
    params
}

/// A known cost in US dollars as text: two significant digits below a dollar (`$0.0021`,
/// `$0.00011`), cents from a dollar on (`$1.23`), `$0` for a free model, and
/// `<$0.000001` below a millionth of a dollar.
pub fn format_cost(usd: f64) -> String {
    if !usd.is_finite() || usd < 0.0 {
        return "$?".into();
    }
    if usd == 0.0 {
        return "$0".into();
    }
    if usd < 0.000_001 {
        return "<$0.000001".into();
    }
    let decimals = if usd >= 1.0 {
        2
    } else {
        ((-usd.log10()).ceil() as u32 + 1).clamp(2, 6)
    };
    // Rounded in integers and printed as two of them: formatting the `f64` itself would link
    // the float printer (~10 KB) into the first load for this one label.
    let scale = 10u128.pow(decimals);
    let scaled = (usd * scale as f64).round() as u128;
    let width = decimals as usize;
    format!("${}.{:0width$}", scaled / scale, scaled % scale)
}

/// A reply's reported counts, for its footer's tooltip (`?` for what was not reported).
pub fn usage_detail(u: &Usage) -> String {
    let n = |v: Option<u64>| v.map_or_else(|| "?".to_owned(), |v| v.to_string());
    let mut s = format!(
        "prompt {} / completion {}",
        n(u.prompt_tokens),
        n(u.completion_tokens)
    );
    if let Some(r) = u.reasoning_tokens {
        s.push_str(&format!(" (reasoning {r})"));
    }
    if let Some(c) = u.cached_prompt_tokens {
        s.push_str(&format!(", cached prompt {c}"));
    }
    s
}

/// How full the context window is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gauge {
    /// Tokens in the window after the latest reply.
    pub used: u64,
    /// The model's context window.
    pub window: u64,
    /// `used / window` in whole percent (rounded down; may exceed 100).
    pub percent: u64,
    /// At or past [`CONTEXT_WARN_PERCENT`].
    pub warn: bool,
}

impl Gauge {
    /// The `<meter>`'s `low` and `high` bound: a thousandth of a token under the warning
    /// threshold, so a whole `used` at the threshold itself shows in the bad colour. Exact
    /// decimal from integers (`102399.999` for 80% of 128,000), not a float printed.
    pub fn meter_high(&self) -> String {
        let thousandths =
            (u128::from(self.window) * u128::from(CONTEXT_WARN_PERCENT) * 10).saturating_sub(1);
        format!("{}.{:03}", thousandths / 1000, thousandths % 1000)
    }
}

/// The gauge for `used` tokens of a `window`; `None` when either is unknown (or the window 0).
pub fn gauge(used: Option<u64>, window: Option<u64>) -> Option<Gauge> {
    let (used, window) = (used?, window.filter(|w| *w > 0)?);
    let percent = used.saturating_mul(100) / window;
    Some(Gauge {
        used,
        window,
        percent,
        warn: percent >= CONTEXT_WARN_PERCENT,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(id: &str, provider: Option<&str>) -> Model {
        Model {
            provider: provider.map(str::to_owned),
            ..Model::new(id)
        }
    }

    #[test]
    fn the_meter_turns_a_thousandth_of_a_token_under_the_warning_threshold() {
        let high = |window| gauge(Some(0), Some(window)).map(|g| g.meter_high());
        assert_eq!(high(128_000).as_deref(), Some("102399.999"));
        assert_eq!(high(1_001).as_deref(), Some("800.799"));
        assert_eq!(high(1).as_deref(), Some("0.799"));
        assert_eq!(high(u64::MAX).as_deref(), Some("14757395258967641291.999"));
    }

    #[test]
    fn models_are_grouped_by_provider_in_menu_order() {
        let menu = [
            model("a/m1", Some("a")),
            model("b/x", Some("b")),
            model("a/m2", Some("a")),
            model("bare", None),
        ];
        let groups = group_by_provider(&menu);
        let shape: Vec<(Option<&str>, Vec<&str>)> = groups
            .iter()
            .map(|g| {
                (
                    g.provider.as_deref(),
                    g.models.iter().map(|m| m.id.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                (Some("a"), vec!["a/m1", "a/m2"]),
                (Some("b"), vec!["b/x"]),
                (None, vec!["bare"]),
            ]
        );
    }

    #[test]
    fn an_unconfigured_model_is_never_usable_or_first() {
        let off = Model {
            configured: false,
            unavailable_reason: Some("B_KEY is not set".into()),
            ..model("b/x", Some("b"))
        };
        let menu = [off, model("a/m1", Some("a"))];
        assert!(!usable(&menu, "b/x"));
        assert!(usable(&menu, "a/m1"));
        assert!(!usable(&menu, "a/nope"));
        assert_eq!(first_usable(&menu).map(|m| m.id.as_str()), Some("a/m1"));
        assert_eq!(first_usable(&menu[..1]), None);
    }

    #[test]
    fn the_effort_is_kept_in_params_only_for_a_reasoning_model() {
        let mut base = Params::new();
        base.insert("temperature".into(), 0.5.into());
        let p = with_effort(base.clone(), Some(ReasoningEffort::High), true);
        assert_eq!(p[REASONING_EFFORT_PARAM], "high");
        assert_eq!(p["temperature"], 0.5);
        assert_eq!(effort_of(&p), Some(ReasoningEffort::High));
        assert!(
            !with_effort(p.clone(), Some(ReasoningEffort::Low), false)
                .contains_key(REASONING_EFFORT_PARAM)
        );
        assert!(!with_effort(p, None, true).contains_key(REASONING_EFFORT_PARAM));
        base.insert(REASONING_EFFORT_PARAM.into(), "max".into());
        assert_eq!(effort_of(&base), None);
    }

    #[test]
    fn costs_show_two_significant_digits_below_a_dollar_and_cents_above() {
        assert_eq!(format_cost(0.0021), "$0.0021");
        assert_eq!(format_cost(0.0012), "$0.0012");
        assert_eq!(format_cost(0.000108), "$0.00011");
        assert_eq!(format_cost(0.012207), "$0.012");
        assert_eq!(format_cost(0.5), "$0.50");
        assert_eq!(format_cost(0.1), "$0.10");
        assert_eq!(format_cost(1.2345), "$1.23");
        assert_eq!(format_cost(12.5), "$12.50");
        assert_eq!(format_cost(0.999), "$1.00");
        assert_eq!(format_cost(0.0015), "$0.0015");
        assert_eq!(format_cost(0.000_001_4), "$0.000001");
        assert_eq!(format_cost(1234567.891), "$1234567.89");
        assert_eq!(format_cost(0.0), "$0");
        assert_eq!(format_cost(0.000_000_4), "<$0.000001");
        assert_eq!(format_cost(f64::NAN), "$?");
    }

    #[test]
    fn the_usage_tooltip_names_what_was_reported() {
        let u = Usage {
            prompt_tokens: Some(11),
            completion_tokens: Some(5),
            reasoning_tokens: Some(2),
            cached_prompt_tokens: Some(4),
            ..Usage::default()
        };
        assert_eq!(
            usage_detail(&u),
            "prompt 11 / completion 5 (reasoning 2), cached prompt 4"
        );
        assert_eq!(usage_detail(&Usage::default()), "prompt ? / completion ?");
    }

    #[test]
    fn the_gauge_needs_both_numbers_and_warns_from_eighty_percent() {
        assert_eq!(gauge(None, Some(1000)), None);
        assert_eq!(gauge(Some(10), None), None);
        assert_eq!(gauge(Some(10), Some(0)), None);
        let g = gauge(Some(799), Some(1000)).unwrap();
        assert_eq!((g.percent, g.warn), (79, false));
        let g = gauge(Some(16), Some(20)).unwrap();
        assert_eq!((g.used, g.window, g.percent, g.warn), (16, 20, 80, true));
        assert_eq!(gauge(Some(30), Some(20)).unwrap().percent, 150);
    }

    #[test]
    fn a_compaction_summary_keeps_the_threads_spend_and_starts_the_context_afresh() {
        let reply = |p, c, cost| {
            let mut m = Message::assistant("a");
            m.usage = Some(Usage {
                prompt_tokens: Some(p),
                completion_tokens: Some(c),
                ..Usage::default()
            });
            m.cost_usd = cost;
            m
        };
        let replaced = [
            Message::user("q"),
            reply(100, 10, Some(0.5)),
            reply(300, 30, None),
        ];
        let call = Usage {
            prompt_tokens: Some(400),
            completion_tokens: Some(50),
            ..Usage::default()
        };
        let (usage, cost) = summary_spend(&replaced, Some(call), Some(0.25));
        let mut summary = Message::assistant("summary");
        summary.usage = Some(usage);
        summary.cost_usd = cost;
        let t = ConversationTotals::of(&[summary]);
        assert_eq!((t.total_input_tokens, t.total_output_tokens), (800, 90));
        assert_eq!(t.total_cost_usd, Some(0.75));
        assert_eq!(t.last_context_tokens, Some(50));
        let (_, none) = summary_spend(&[Message::user("q")], None, None);
        assert_eq!(none, None);
    }
}
