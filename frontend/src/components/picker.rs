//! The start screen: searchable, keyboard-driven persona and model pickers
//! ([`Combo`]), the persona's description, the reasoning-effort selector (for a reasoning model
//! only), the six parameter fields seeded from the persona, and Start. Choosing a persona
//! selects its default model (when it is offered and configured), its effort and fills the
//! fields. The model picker groups models by provider and shows unconfigured ones disabled with
//! their reason; none of them is ever selected for the user. With exactly one persona and one
//! model the picker is skipped (see `App`).

use leptos::prelude::*;

use crate::NO_MODEL_NOTICE;
use crate::actions::start_chat;
use crate::components::combo::{Combo, ComboOption};
use crate::components::model_fields::{EffortSelect, model_options};
use crate::components::store;
use crate::spend::{effort_of, is_reasoning, usable};
use crate::state::{PARAM_FIELDS, Store, fields_from_params};

/// Applies a persona choice to the setup.
pub fn choose_persona(store: Store, id: &str) {
    let persona = store.persona(id);
    let models = store.model_list();
    store.setup.update(|s| {
        s.persona_id = id.to_owned();
        if let Some(p) = &persona {
            s.fields = fields_from_params(&p.params);
            s.effort = effort_of(&p.params);
            if let Some(m) = &p.default_model
                && usable(&models, m)
            {
                s.model = m.clone();
            }
        }
    });
}

/// The start screen.
#[component]
pub fn Picker() -> impl IntoView {
    let store = store();
    let personas = Signal::derive(move || {
        store
            .personas
            .get()
            .into_iter()
            .map(|p| ComboOption::new(p.id, p.name, p.description.unwrap_or_default()))
            .collect()
    });
    let models = Signal::derive(move || model_options(&store.model_list()));
    let reasoning = move || {
        store
            .setup
            .with(|s| is_reasoning(&store.model_list(), &s.model))
    };
    let effort = Signal::derive(move || store.setup.with(|s| s.effort));
    let persona_value = Signal::derive(move || store.setup.with(|s| s.persona_id.clone()));
    let model_value = Signal::derive(move || store.setup.with(|s| s.model.clone()));
    let description = move || {
        store
            .setup
            .with(|s| store.persona(&s.persona_id))
            .and_then(|p| p.description)
    };
    let no_models = move || {
        store.models.with(|m| match m {
            Some(Ok(list)) if list.is_empty() => Some(None),
            Some(Err(e)) => Some(Some(e.to_string())),
            _ => None,
        })
    };
    view! {
        <div class="lmck-picker">
            <h2 class="lmck-h2">"New chat"</h2>
            {move || no_models().map(|detail| view! {
                <div class="lmck-notice" role="status"><p>{NO_MODEL_NOTICE}</p>
                    {detail.map(|d| view! { <p class="lmck-muted">{format!("Could not load the model list ({d}).")}</p> })}</div>
            })}
            <Combo label="Persona" options=personas value=persona_value
                on_select=Callback::new(move |id: String| choose_persona(store, &id)) />
            <p class="lmck-muted lmck-persona-desc">{description}</p>
            <Combo label="Model" options=models value=model_value
                on_select=Callback::new(move |id: String| store.setup.update(|s| s.model = id)) />
            <Show when=reasoning>
                <EffortSelect value=effort on_change=Callback::new(move |e| store.setup.update(|s| s.effort = e)) />
            </Show>
            <details class="lmck-params">
                <summary>"Parameters"</summary>
                <div class="lmck-param-grid">
                    {PARAM_FIELDS.iter().enumerate().map(|(i, (key, label, step))| view! {
                        <label class="lmck-label">{*label}
                            <input class="lmck-field" type="number" step=*step placeholder="default"
                                name=*key prop:value=move || store.setup.with(|s| s.fields[i].clone())
                                on:input=move |ev| store.setup.update(|s| s.fields[i] = event_target_value(&ev)) />
                        </label>
                    }).collect_view()}
                </div>
            </details>
            <button class="lmck-btn lmck-primary lmck-start" disabled=move || store.setup.with(|s| !usable(&store.model_list(), &s.model))
                on:click=move |_| { start_chat(store); }>"Start chat"</button>
        </div>
    }
}
