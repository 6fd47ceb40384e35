//! The sidebar (a drawer on narrow screens): New chat, search, the conversation list with unread
//! dots, edit and delete (with confirmation) per entry, export of the open chat (JSON and
//! Markdown) and import (JSON) through [`crate::transfer`], and the "Tools & servers" button
//! when the user may add their own MCP servers.

use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsCast;

use crate::components::settings::{confirm_delete, edit_modal};
use crate::components::store;
use crate::history;
use crate::lazy::{Shell, lazily};
use crate::servers::ServersScreen;
use crate::transfer::{self, Format};

/// The sidebar.
#[component]
pub fn Sidebar() -> impl IntoView {
    let store = store();
    let search = RwSignal::new(String::new());
    let editing = RwSignal::new(None::<String>);
    let deleting = RwSignal::new(None::<(String, String)>);
    let current = move || store.chat.with(|c| c.as_ref().map(|c| c.id.get()));
    let list = move || {
        let q = search.get().to_lowercase();
        store
            .conversations
            .get()
            .into_iter()
            .filter(|c| q.is_empty() || c.title.to_lowercase().contains(&q))
            .collect::<Vec<_>>()
    };
    let on_import = move |ev: leptos::ev::Event| {
        let Some(input) = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
        else {
            return;
        };
        let Some(file) = input.files().and_then(|f| f.get(0)) else {
            return;
        };
        input.set_value("");
        transfer::import(store, file);
    };
    view! {
        <nav class="lmck-sidebar" class:lmck-open=move || store.sidebar_open.get() aria-label="Conversations"
            on:keydown=move |ev: leptos::ev::KeyboardEvent| if ev.key() == "Escape" { store.sidebar_open.set(false) }>
            <button class="lmck-btn lmck-primary lmck-new" on:click=move |_| {
                crate::follow::leave(store); store.chat.set(None); history::remember_current(None); store.sidebar_open.set(false);
            }>"+ New chat"</button>
            <input class="lmck-field lmck-search" type="search" placeholder="Search" aria-label="Search conversations"
                prop:value=move || search.get() on:input=move |ev| search.set(event_target_value(&ev)) />
            <ul class="lmck-conv-list">
                {move || {
                    let items = list();
                    if items.is_empty() {
                        return view! { <li class="lmck-muted">"No saved conversations."</li> }.into_any();
                    }
                    items.into_iter().map(|c| {
                        let (id, id2, id3, id4) = (c.id.clone(), c.id.clone(), c.id.clone(), c.id.clone());
                        let title = c.title.clone();
                        let id5 = c.id.clone();
                        let unread = move || store.unread.with(|u| u.contains(&id4));
                        view! {
                            <li class="lmck-conv" class:lmck-current=move || current().as_deref() == Some(id.as_str()) data-id=id5>
                                <button class="lmck-conv-open" on:click=move |_| spawn_local(crate::conversation::open(store, id2.clone()))>
                                    <Show when=unread.clone()><span class="lmck-dot" aria-label="unread"></span></Show>
                                    {c.title.clone()}
                                </button>
                                <button class="lmck-icon-btn" aria-label=format!("Edit {}", c.title) title="Edit"
                                    on:click=move |_| editing.set(Some(id3.clone()))>"✎"</button>
                                <button class="lmck-icon-btn" aria-label=format!("Delete {}", c.title) title="Delete"
                                    on:click={let id = c.id.clone(); move |_| deleting.set(Some((id.clone(), title.clone())))}>"✕"</button>
                            </li>
                        }
                    }).collect_view().into_any()
                }}
            </ul>
            <div class="lmck-sidebar-foot">
                <Show when=move || store.chat.with(Option::is_some)>
                    <button class="lmck-btn" on:click=move |_| transfer::export(store, Format::Json)>"Export JSON"</button>
                    <button class="lmck-btn" on:click=move |_| transfer::export(store, Format::Markdown)>"Export MD"</button>
                </Show>
                <label class="lmck-btn">"Import" <input type="file" accept=".json,application/json" class="lmck-hidden" on:change=on_import /></label>
                <Show when=move || store.user_mcp_on()>
                    <button class="lmck-btn lmck-servers-btn" aria-haspopup="dialog"
                        on:click=move |_| {
                            store.sidebar_open.set(false);
                            store.servers_screen.set(Some(ServersScreen::default()));
                        }>"Tools & servers"</button>
                </Show>
            </div>
        </nav>
        {move || editing.get().map(|id| {
            let on_close = Callback::new(move |()| editing.set(None));
            lazily(Shell::Dialog(on_close), move || edit_modal(id.clone(), on_close))
        })}
        {move || deleting.get().map(|(id, title)| {
            let on_close = Callback::new(move |()| deleting.set(None));
            lazily(Shell::Dialog(on_close), move || confirm_delete(id.clone(), title.clone(), on_close))
        })}
    }
}
