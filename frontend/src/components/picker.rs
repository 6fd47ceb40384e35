//! The start screen: searchable, keyboard-driven persona and model pickers (↑/↓/Enter/Esc), the
//! persona's description, the six parameter fields seeded from the persona, and Start. Choosing a
//! persona selects its default model (when offered) and fills the fields. With exactly one
//! persona and one model the picker is skipped (see `App`). The open list names its highlighted
//! option in the input's `aria-activedescendant` and keeps it scrolled into view.

use leptos::prelude::*;

use crate::NO_MODEL_NOTICE;
use crate::actions::start_chat;
use crate::components::menus::reveal_option;
use crate::components::store;
use crate::state::{PARAM_FIELDS, Store, fields_from_params};

/// Applies a persona choice to the setup.
pub fn choose_persona(store: Store, id: &str) {
    let persona = store.persona(id);
    let models = store.model_list();
    store.setup.update(|s| {
        s.persona_id = id.to_owned();
        if let Some(p) = &persona {
            s.fields = fields_from_params(&p.params);
            if let Some(m) = &p.default_model
                && models.iter().any(|x| &x.id == m)
            {
                s.model = m.clone();
            }
        }
    });
}

/// A searchable single-choice list: `(id, title, subtitle)` options.
#[component]
pub fn Combo(
    label: &'static str,
    options: Signal<Vec<(String, String, String)>>,
    value: Signal<String>,
    on_select: Callback<String>,
) -> impl IntoView {
    let query = RwSignal::new(String::new());
    let open = RwSignal::new(false);
    let active = RwSignal::new(0usize);
    let filtered = Signal::derive(move || {
        let q = query.get().to_lowercase();
        options
            .get()
            .into_iter()
            .filter(|(id, t, s)| {
                q.is_empty()
                    || id.to_lowercase().contains(&q)
                    || t.to_lowercase().contains(&q)
                    || s.to_lowercase().contains(&q)
            })
            .collect::<Vec<_>>()
    });
    let shown = move || {
        let v = value.get();
        options
            .with(|o| {
                o.iter()
                    .find(|(id, _, _)| *id == v)
                    .map(|(_, t, _)| t.clone())
            })
            .unwrap_or_default()
    };
    let pick = move |id: String| {
        on_select.run(id);
        open.set(false);
        query.set(String::new());
    };
    let list_id = format!("lmck-combo-{}", label.to_lowercase());
    Effect::new(move |_| {
        let n = filtered.with(Vec::len);
        if open.get() && n > 0 {
            reveal_option(format!(
                "lmck-combo-{}-opt-{}",
                label.to_lowercase(),
                active.get().min(n - 1)
            ));
        }
    });
    // The highlighted option, named by the input's `aria-activedescendant` while the list is open.
    let active_option = {
        let list_id = list_id.clone();
        move || {
            let n = filtered.with(Vec::len);
            (open.get() && n > 0).then(|| format!("{list_id}-opt-{}", active.get().min(n - 1)))
        }
    };

    view! {
        <div class="lmck-combo">
            <label class="lmck-label">{label}
                <input class="lmck-field lmck-combo-input" type="text" role="combobox"
                    aria-expanded=move || open.get().to_string() aria-controls=list_id.clone() autocomplete="off"
                    aria-autocomplete="list" aria-activedescendant=active_option
                    placeholder=shown
                    prop:value=move || if open.get() { query.get() } else { shown() }
                    on:focus=move |_| { open.set(true); query.set(String::new()); active.set(0); }
                    on:blur=move |_| open.set(false)
                    on:input=move |ev| { query.set(event_target_value(&ev)); active.set(0); open.set(true); }
                    on:keydown=move |ev: leptos::ev::KeyboardEvent| {
                        let n = filtered.with_untracked(Vec::len);
                        match ev.key().as_str() {
                            "ArrowDown" if n > 0 => { ev.prevent_default(); open.set(true); active.update(|a| *a = (*a + 1) % n); }
                            "ArrowUp" if n > 0 => { ev.prevent_default(); active.update(|a| *a = (*a + n - 1) % n); }
                            "Enter" => {
                                ev.prevent_default();
                                if let Some((id, _, _)) = filtered.with_untracked(|f| f.get(active.get_untracked()).cloned()) { pick(id); }
                            }
                            "Escape" => open.set(false),
                            _ => {}
                        }
                    } />
            </label>
            <Show when=move || open.get()>
                <ul class="lmck-menu lmck-combo-list" role="listbox" id=list_id.clone()>
                    {move || filtered.get().into_iter().enumerate().map(|(i, (id, title, sub))| {
                        let id2 = id.clone();
                        view! {
                            <li role="option" class="lmck-menu-item" data-id=id.clone() id=format!("lmck-combo-{}-opt-{i}", label.to_lowercase())
                                class:lmck-selected=move || active.get() == i
                                aria-selected=move || (active.get() == i).to_string()
                                on:mousedown=move |ev| { ev.prevent_default(); pick(id2.clone()); }>
                                <span class="lmck-menu-title">{title}</span>
                                <span class="lmck-muted">{sub}</span>
                            </li>
                        }
                    }).collect_view()}
                </ul>
            </Show>
        </div>
    }
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
            .map(|p| (p.id, p.name, p.description.unwrap_or_default()))
            .collect()
    });
    let models = Signal::derive(move || {
        store
            .model_list()
            .into_iter()
            .map(|m| {
                (
                    m.id.clone(),
                    m.label.unwrap_or(m.id),
                    m.provider.unwrap_or_default(),
                )
            })
            .collect()
    });
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
            <details class="lmck-params">
                <summary>"Parameters"</summary>
                <div class="lmck-param-grid">
                    {PARAM_FIELDS.iter().enumerate().map(|(i, (key, label, step))| view! {
                        <label class="lmck-label">{*label}
                            <input class="lmck-field" type="number" step=step.to_string() placeholder="default"
                                name=*key prop:value=move || store.setup.with(|s| s.fields[i].clone())
                                on:input=move |ev| store.setup.update(|s| s.fields[i] = event_target_value(&ev)) />
                        </label>
                    }).collect_view()}
                </div>
            </details>
            <button class="lmck-btn lmck-primary lmck-start" disabled=move || store.setup.with(|s| s.model.is_empty())
                on:click=move |_| { start_chat(store); }>"Start chat"</button>
        </div>
    }
}
