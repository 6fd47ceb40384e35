//! The sidebar (a drawer on narrow screens): New chat, search, the conversation list with unread
//! dots, edit and delete (with confirmation) per entry, export of the open chat (JSON and
//! Markdown) and import (JSON), and the "Tools & servers" button when the user may add their own
//! MCP servers.

use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::{Role, StoredConversation};
use wasm_bindgen::JsCast;

use crate::components::settings::{confirm_delete, edit_modal};
use crate::components::store;
use crate::history;
use crate::lazy::{Shell, lazily};
use crate::servers::ServersScreen;

/// A conversation as Markdown.
pub fn to_markdown(c: &StoredConversation) -> String {
    let mut out = format!("# {}\n\n", c.title);
    for m in &c.messages {
        let who = match m.role {
            Role::User => "User",
            Role::Assistant if m.info.is_none() => "Assistant",
            _ => continue,
        };
        let text = m.content.joined_text("\n\n");
        out.push_str(&format!("**{who}:**\n\n{text}\n\n"));
        for c in &m.tool_calls {
            out.push_str(&format!("> tool call `{}` {}\n\n", c.name, c.arguments));
        }
    }
    out
}

fn download(name: &str, mime: &str, text: &str) {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &opts) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    if let Some(doc) = web_sys::window().and_then(|w| w.document())
        && let Ok(a) = doc.create_element("a")
    {
        let a: web_sys::HtmlAnchorElement = a.unchecked_into();
        a.set_href(&url);
        a.set_download(name);
        a.click();
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}

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
    let export = move |md: bool| {
        let Some(chat) = store.chat.get_untracked() else {
            return;
        };
        let c = chat.to_stored();
        if md {
            download(&format!("{}.md", c.id), "text/markdown", &to_markdown(&c));
        } else {
            download(
                &format!("{}.json", c.id),
                "application/json",
                &serde_json::to_string_pretty(&c).unwrap_or_default(),
            );
        }
    };
    let on_import = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = ev.target().unwrap().unchecked_into();
        let Some(file) = input.files().and_then(|f| f.get(0)) else {
            return;
        };
        input.set_value("");
        spawn_local(async move {
            let Ok(text) = wasm_bindgen_futures::JsFuture::from(file.text()).await else {
                return;
            };
            let text = text.as_string().unwrap_or_default();
            match history::import(store, &text).await {
                Ok(n) => store
                    .notice
                    .set(Some(format!("Imported {n} conversation(s)."))),
                Err(e) => store.notice.set(Some(format!("Import failed: {e}"))),
            }
        });
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
                                <button class="lmck-conv-open" on:click=move |_| spawn_local(history::open(store, id2.clone()))>
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
                    <button class="lmck-btn" on:click=move |_| export(false)>"Export JSON"</button>
                    <button class="lmck-btn" on:click=move |_| export(true)>"Export MD"</button>
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
