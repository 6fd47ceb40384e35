//! Dialogs and settings: the conversation edit modal (title, persona, model grouped by provider
//! with unconfigured ones disabled, the reasoning effort for a reasoning model, the six params;
//! PATCH in server mode), the delete confirmation (Esc cancels, Enter confirms) and the theme
//! toggle (system → light → dark).

use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::{ConversationPatch, HistoryMode};

use crate::components::model_fields::{EffortSelect, model_select_options};
use crate::components::store;
use crate::history;
use crate::spend::{effort_of, is_reasoning, usable, with_effort};
use crate::state::{PARAM_FIELDS, Theme, fields_from_params, params_from_fields};

crate::lazy::split_point! {
    /// [`EditModal`], from the `edit` chunk (see [`crate::lazy`]).
    edit: fn edit_modal(id: String, on_close: Callback<()>) {
        view! { <EditModal id on_close /> }.into_any()
    }
}

crate::lazy::split_point! {
    /// [`ConfirmDelete`], from the `edit` chunk (see [`crate::lazy`]).
    edit: fn confirm_delete(id: String, title: String, on_close: Callback<()>) {
        view! { <ConfirmDelete id title on_close /> }.into_any()
    }
}

/// Edits a conversation's title and setup.
#[component]
pub fn EditModal(id: String, on_close: Callback<()>) -> impl IntoView {
    let store = store();
    let summary = store
        .conversations
        .with_untracked(|l| l.iter().find(|c| c.id == id).cloned())
        .unwrap_or_default();
    let title = RwSignal::new(summary.title.clone());
    let persona = RwSignal::new(summary.persona_id.clone());
    let model = RwSignal::new(summary.model.clone());
    let fields = RwSignal::new(fields_from_params(&summary.params));
    let effort = RwSignal::new(effort_of(&summary.params));
    let reasoning = move || is_reasoning(&store.model_list(), &model.get());
    let first = NodeRef::<html::Input>::new();
    Effect::new(move |_| {
        if let Some(i) = first.get() {
            let _ = i.focus();
        }
    });
    let save = move || {
        let t = title.get_untracked().trim().to_owned();
        if t.is_empty() {
            return;
        }
        let params = with_effort(
            params_from_fields(&Default::default(), &fields.get_untracked()),
            effort.get_untracked(),
            is_reasoning(&store.model_list_untracked(), &model.get_untracked()),
        );
        let patch = ConversationPatch {
            title: t.clone(),
            model: Some(model.get_untracked()),
            persona_id: Some(persona.get_untracked()),
            params: Some(params.clone()),
        };
        let id = id.clone();
        if let Some(chat) = store
            .chat
            .get_untracked()
            .filter(|c| c.id.get_untracked() == id)
        {
            chat.title.set(t);
            chat.model.set(patch.model.clone().unwrap_or_default());
            chat.persona_id
                .set(patch.persona_id.clone().unwrap_or_default());
            chat.params.set(params);
        }
        spawn_local(async move {
            if store.history_mode() == Some(HistoryMode::Server) {
                if let Err(e) = store.api().patch(&id, &patch).await {
                    store.notice.set(Some(format!("Could not save ({e}).")));
                }
            } else if let Some(chat) = store.chat.get_untracked() {
                history::save(store, chat).await;
            }
            history::refresh_list(store).await;
        });
        on_close.run(());
    };
    let save2 = save.clone();
    view! {
        <div class="lmck-modal-back" on:click=move |_| on_close.run(())>
            <div class="lmck-modal" role="dialog" aria-modal="true" aria-label="Edit conversation" on:click=|ev| ev.stop_propagation()
                on:keydown=move |ev: leptos::ev::KeyboardEvent| if ev.key() == "Escape" { on_close.run(()) }>
                <h2 class="lmck-h2">"Edit conversation"</h2>
                <label class="lmck-label">"Title"<input class="lmck-field" node_ref=first prop:value=move || title.get()
                    on:input=move |ev| title.set(event_target_value(&ev))
                    on:keydown=move |ev: leptos::ev::KeyboardEvent| if ev.key() == "Enter" { save2() } /></label>
                <label class="lmck-label">"Persona"<select class="lmck-field" on:change=move |ev| {
                    let v = event_target_value(&ev);
                    if let Some(p) = store.persona(&v) {
                        fields.set(fields_from_params(&p.params));
                        effort.set(effort_of(&p.params));
                        if let Some(m) = p.default_model.filter(|m| usable(&store.model_list_untracked(), m)) { model.set(m); }
                    }
                    persona.set(v);
                }>
                    {store.personas.get_untracked().into_iter().map(|p| view! {
                        <option value=p.id.clone() selected=persona.get_untracked() == p.id>{p.name}</option>
                    }).collect_view()}
                </select></label>
                <label class="lmck-label">"Model"<select class="lmck-field" prop:value=move || model.get() on:change=move |ev| model.set(event_target_value(&ev))>
                    {model_select_options(&store.model_list_untracked(), &model.get_untracked())}
                </select></label>
                <Show when=reasoning>
                    <EffortSelect value=effort on_change=Callback::new(move |e| effort.set(e)) />
                </Show>
                <div class="lmck-param-grid">
                    {PARAM_FIELDS.iter().enumerate().map(|(i, (_, label, step))| view! {
                        <label class="lmck-label">{*label}<input class="lmck-field" type="number" step=*step
                            placeholder="default" prop:value=move || fields.with(|f| f[i].clone())
                            on:input=move |ev| fields.update(|f| f[i] = event_target_value(&ev)) /></label>
                    }).collect_view()}
                </div>
                <div class="lmck-row">
                    <button class="lmck-btn lmck-primary" disabled=move || title.with(|t| t.trim().is_empty()) on:click=move |_| save()>"Save"</button>
                    <button class="lmck-btn" on:click=move |_| on_close.run(())>"Cancel"</button>
                </div>
            </div>
        </div>
    }
}

/// Asks before deleting a conversation.
#[component]
pub fn ConfirmDelete(id: String, title: String, on_close: Callback<()>) -> impl IntoView {
    let store = store();
    let confirm_ref = NodeRef::<html::Button>::new();
    Effect::new(move |_| {
        if let Some(b) = confirm_ref.get() {
            let _ = b.focus();
        }
    });
    let go = move || {
        spawn_local(history::delete(store, id.clone()));
        on_close.run(());
    };
    let go2 = go.clone();
    view! {
        <div class="lmck-modal-back" on:click=move |_| on_close.run(())>
            <div class="lmck-modal" role="alertdialog" aria-modal="true" aria-label="Delete conversation" on:click=|ev| ev.stop_propagation()
                on:keydown=move |ev: leptos::ev::KeyboardEvent| match ev.key().as_str() {
                    "Escape" => on_close.run(()), "Enter" => { ev.prevent_default(); go2() } _ => {} }>
                <h2 class="lmck-h2">"Delete conversation"</h2>
                <p>"Delete “" {title} "”? This cannot be undone."</p>
                <div class="lmck-row">
                    <button class="lmck-btn lmck-danger lmck-confirm" node_ref=confirm_ref on:click=move |_| go()>"Delete"</button>
                    <button class="lmck-btn" on:click=move |_| on_close.run(())>"Cancel"</button>
                </div>
            </div>
        </div>
    }
}

/// Cycles the theme: system → light → dark.
#[component]
pub fn ThemeToggle() -> impl IntoView {
    let store = store();
    // The accessible name holds the visible word (WCAG 2.5.3, label in name); the symbol is
    // decoration.
    let parts = move || match store.theme.get() {
        Theme::System => ("◐", "Auto"),
        Theme::Light => ("☀", "Light"),
        Theme::Dark => ("☾", "Dark"),
    };
    view! {
        <button class="lmck-icon-btn lmck-theme" aria-label=move || format!("Theme: {}", parts().1) title="Theme"
            on:click=move |_| {
                store.theme.update(|t| *t = match t { Theme::System => Theme::Light, Theme::Light => Theme::Dark, Theme::Dark => Theme::System });
                save_theme(store.theme.get_untracked());
            }>
            <span aria-hidden="true">{move || parts().0}</span>" "{move || parts().1}
        </button>
    }
}

const THEME_KEY: &str = "lmchatkit:theme";

fn local() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

fn save_theme(t: Theme) {
    if let Some(s) = local() {
        let v = match t {
            Theme::System => "system",
            Theme::Light => "light",
            Theme::Dark => "dark",
        };
        let _ = s.set_item(THEME_KEY, v);
    }
}

/// The theme chosen earlier in this browser (localStorage), else following the system.
pub fn load_theme() -> Theme {
    match local()
        .and_then(|s| s.get_item(THEME_KEY).ok().flatten())
        .as_deref()
    {
        Some("light") => Theme::Light,
        Some("dark") => Theme::Dark,
        _ => Theme::System,
    }
}
