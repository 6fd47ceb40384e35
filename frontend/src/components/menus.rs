//! The `/` and `@` autocomplete menus above the composer: built-ins, file commands and MCP
//! prompts (with argument hints), then resources and templates. Keyboard handling lives in the
//! composer; this renders the list as a listbox and reports clicks.

use leptos::prelude::*;

use crate::commands::{
    SlashItem, SlashKind, at_query, resource_insert, resource_matches, slash_matches,
};
use crate::state::Store;

/// One entry of either menu.
#[derive(Debug, Clone, PartialEq)]
pub enum MenuItem {
    /// A `/` entry.
    Slash(SlashItem),
    /// An `@` entry: (text to insert, label, is template).
    Resource(String, String, bool),
}

/// The menu entries for the current draft.
pub fn items_for(store: Store, draft: &str) -> Vec<MenuItem> {
    if draft.starts_with('/') {
        return store
            .commands
            .with(|c| store.prompts.with(|p| slash_matches(draft, c, p)))
            .into_iter()
            .map(MenuItem::Slash)
            .collect();
    }
    if let Some(q) = at_query(draft) {
        return store.resources.with(|rs| {
            resource_matches(q, rs)
                .into_iter()
                .map(|r| {
                    MenuItem::Resource(
                        resource_insert(r),
                        r.name.clone().unwrap_or_default(),
                        r.template,
                    )
                })
                .collect()
        });
    }
    Vec::new()
}

/// The open menu.
#[component]
pub fn Menu(
    items: Signal<Vec<MenuItem>>,
    selected: RwSignal<usize>,
    on_pick: Callback<MenuItem>,
) -> impl IntoView {
    view! {
        <Show when=move || items.with(|i| !i.is_empty())>
            <ul class="lmck-menu" role="listbox" aria-label="Suggestions">
                {move || items.get().into_iter().enumerate().map(|(i, item)| {
                    let it = item.clone();
                    let (title, detail, badge) = match &item {
                        MenuItem::Slash(s) => (
                            format!("/{}", s.name),
                            format!("{} {}", s.hint, s.description),
                            match s.kind { SlashKind::Builtin => "built-in", SlashKind::File(_) => "command", SlashKind::Prompt(_) => "prompt" },
                        ),
                        MenuItem::Resource(uri, name, t) => (format!("@{uri}"), name.clone(), if *t { "template" } else { "resource" }),
                    };
                    view! {
                        <li role="option" class="lmck-menu-item" class:lmck-selected=move || selected.get() == i
                            aria-selected=move || (selected.get() == i).to_string()
                            on:mousedown=move |ev| { ev.prevent_default(); on_pick.run(it.clone()); }>
                            <span class="lmck-menu-title">{title}</span>
                            <span class="lmck-badge">{badge}</span>
                            <span class="lmck-muted">{detail}</span>
                        </li>
                    }
                }).collect_view()}
            </ul>
        </Show>
    }
}
