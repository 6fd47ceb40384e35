//! The model fields shared by the start screen and the edit modal: the model menu's options
//! (grouped by provider, unconfigured models disabled with their reason; see [`crate::spend`])
//! and the reasoning-effort selector, shown only for a reasoning model.

use leptos::prelude::*;
use lmchatkit_protocol::{Model, ReasoningEffort};

use crate::components::combo::ComboOption;
use crate::spend::group_by_provider;

/// The value of the effort selector's "default" entry (the effort is then not sent).
const DEFAULT_EFFORT: &str = "";

/// The model menu as [`ComboOption`]s: grouped by provider, an unconfigured model disabled with
/// its reason.
pub fn model_options(models: &[Model]) -> Vec<ComboOption> {
    group_by_provider(models)
        .into_iter()
        .flat_map(|g| {
            g.models.into_iter().map(move |m| ComboOption {
                title: m.label.clone().unwrap_or_else(|| m.id.clone()),
                subtitle: m.id.clone(),
                group: g.provider.clone(),
                disabled: (!m.configured).then(|| {
                    m.unavailable_reason
                        .clone()
                        .unwrap_or_else(|| "its provider is not configured".into())
                }),
                id: m.id,
            })
        })
        .collect()
}

/// The `<option>`s of a native model `<select>`: one `<optgroup>` per provider, an unconfigured
/// model disabled with its reason (as text and tooltip); `current` is selected.
pub fn model_select_options(models: &[Model], current: &str) -> AnyView {
    let option = |o: ComboOption, current: &str| {
        let selected = o.id == current;
        let text = match &o.disabled {
            Some(r) => format!("{} — {r}", o.title),
            None => o.title.clone(),
        };
        view! {
            <option value=o.id.clone() selected=selected disabled=o.disabled.is_some() title=o.disabled.clone()>{text}</option>
        }
    };
    let options = model_options(models);
    let mut groups: Vec<(Option<String>, Vec<ComboOption>)> = Vec::new();
    for o in options {
        match groups.last_mut() {
            Some((g, list)) if *g == o.group => list.push(o),
            _ => groups.push((o.group.clone(), vec![o])),
        }
    }
    let current = current.to_owned();
    groups
        .into_iter()
        .map(|(group, list)| {
            let items = list.into_iter().map(|o| option(o, &current)).collect_view();
            match group {
                Some(label) => view! { <optgroup label=label>{items}</optgroup> }.into_any(),
                None => items.into_any(),
            }
        })
        .collect_view()
        .into_any()
}

/// How the selector names a level.
fn effort_label(e: ReasoningEffort) -> &'static str {
    match e {
        ReasoningEffort::Low => "Low",
        ReasoningEffort::Medium => "Medium",
        ReasoningEffort::High => "High",
    }
}

/// The reasoning-effort selector: "default" (not sent), then low, medium, high
/// ([`ReasoningEffort::ALL`]). Render it only for a reasoning model.
#[component]
pub fn EffortSelect(
    #[prop(into)] value: Signal<Option<ReasoningEffort>>,
    on_change: Callback<Option<ReasoningEffort>>,
) -> impl IntoView {
    let current = move || value.get().map_or(DEFAULT_EFFORT, ReasoningEffort::as_str);
    view! {
        <label class="lmck-label lmck-effort">"Reasoning effort"
            <select class="lmck-field lmck-effort-select" name="reasoning_effort"
                prop:value=current
                on:change=move |ev| on_change.run(ReasoningEffort::parse(&event_target_value(&ev)))>
                <option value=DEFAULT_EFFORT selected=move || value.get().is_none()>"Default"</option>
                {ReasoningEffort::ALL.into_iter().map(|e| view! {
                    <option value=e.as_str() selected=move || value.get() == Some(e)>{effort_label(e)}</option>
                }).collect_view()}
            </select>
        </label>
    }
}
