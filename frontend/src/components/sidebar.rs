//! The sidebar (a drawer on narrow screens): New chat, search (titles as you type; with server-side
//! history also the text of every message, `GET {prefix}/api/search`, shown under the list as
//! snippets whose matched words are `<mark>`ed text nodes, never HTML; a hit opens its
//! conversation scrolled to the message, outlined), the conversation list with unread
//! dots, edit and delete (with confirmation) per entry, export of the open chat (JSON and
//! Markdown) and import (JSON) through [`crate::transfer`], and the "Tools & servers" button
//! when the user may add their own MCP servers.

use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::{HistoryMode, SearchHit};
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
    let hits = RwSignal::new(Vec::<SearchHit>::new());
    // The newest search typed: an answer to an older one is dropped.
    let generation = StoredValue::new(0u64);
    let on_search = move |ev: leptos::ev::Event| {
        let q = event_target_value(&ev);
        search.set(q.clone());
        let n = generation.get_value() + 1;
        generation.set_value(n);
        if store.history_mode() != Some(HistoryMode::Server) || q.trim().is_empty() {
            hits.set(Vec::new());
            return;
        }
        spawn_local(async move {
            // Typing on: only the search the user paused on is sent.
            crate::timer::sleep(SEARCH_PAUSE_MS).await;
            if generation.get_value() != n {
                return;
            }
            let found = store.api().search(&q).await;
            if generation.get_value() == n {
                // A query with no word to look for is a 400: no hits.
                hits.set(found.map(|r| r.results).unwrap_or_default());
            }
        });
    };
    let editing = RwSignal::new(None::<String>);
    let deleting = RwSignal::new(None::<(String, String)>);
    let current = move || store.chat.with(|c| c.as_ref().map(|c| c.id.get()));
    let list = move || {
        let q = crate::text::lower(&search.get());
        store
            .conversations
            .get()
            .into_iter()
            .filter(|c| q.is_empty() || crate::text::lower(&c.title).contains(&q))
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
                prop:value=move || search.get() on:input=on_search />
            <ul class="lmck-conv-list">
                {move || {
                    let items = list();
                    if items.is_empty() {
                        let empty = if search.with(|q| q.trim().is_empty()) { "No saved conversations." } else { "No title matches." };
                        return view! { <li class="lmck-muted">{empty}</li> }.into_any();
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
            <Show when=move || !hits.with(Vec::is_empty)>
                <section class="lmck-search-results" aria-label="Messages found">
                    <h3 class="lmck-search-head">"Messages"</h3>
                    <ul class="lmck-search-list">
                        {move || hits.get().into_iter().map(|hit| {
                            let (id, message, node) = (hit.conversation_id.clone(), hit.message_id.clone(), hit.node);
                            let parts = snippet_parts(&hit.snippet, &hit.matches);
                            view! {
                                <li>
                                    <button class="lmck-search-hit" data-id=hit.conversation_id.clone()
                                        on:click=move |_| spawn_local(open_hit(store, id.clone(), message.clone(), node))>
                                        <span class="lmck-search-title">{hit.title.clone()}</span>
                                        <span class="lmck-search-snippet">
                                            {parts.into_iter().map(|(text, matched)| if matched {
                                                view! { <mark>{text}</mark> }.into_any()
                                            } else {
                                                text.into_any()
                                            }).collect_view()}
                                        </span>
                                    </button>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                </section>
            </Show>
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

/// How long typing pauses before a search is sent, in milliseconds.
const SEARCH_PAUSE_MS: u32 = 250;

/// A snippet cut at its matches' character ranges: (text, matched) in order. Ranges out of order,
/// overlapping or past the end are skipped; nothing is lost.
pub(crate) fn snippet_parts(snippet: &str, matches: &[[u32; 2]]) -> Vec<(String, bool)> {
    let chars: Vec<char> = snippet.chars().collect();
    let mut parts = Vec::new();
    let mut at = 0;
    for &[start, end] in matches {
        let (start, end) = (start as usize, end as usize);
        if start < at || end <= start || end > chars.len() {
            continue;
        }
        if start > at {
            parts.push((chars[at..start].iter().collect(), false));
        }
        parts.push((chars[start..end].iter().collect(), true));
        at = end;
    }
    if at < chars.len() {
        parts.push((chars[at..].iter().collect(), false));
    }
    parts
}

/// Opens a hit's conversation and outlines its message, scrolled into view.
async fn open_hit(
    store: crate::state::Store,
    id: String,
    message: Option<String>,
    node: Option<u64>,
) {
    store.sidebar_open.set(false);
    // A hit on another branch: that branch becomes the one shown (a node already on the
    // shown branch keeps it). Should the switch fail, the conversation opens as it is.
    if let Some(node) = node {
        let _ = store.api().switch_branch(&id, node).await;
    }
    crate::conversation::open(store, id).await;
    let Some(message) = message else {
        return;
    };
    // The transcript renders after the open: look for the message for a second, from the
    // next task on (the transcript shown before may hold an element with the same key: a
    // version of the same message, when the hit was on another branch).
    for _ in 0..20 {
        crate::timer::sleep(50).await;
        if let Some(el) = message_element(&message) {
            let _ = el.class_list().add_1("lmck-search-target");
            let options = web_sys::ScrollIntoViewOptions::new();
            options.set_block(web_sys::ScrollLogicalPosition::Center);
            el.scroll_into_view_with_scroll_into_view_options(&options);
            return;
        }
    }
}

/// The transcript's element of the message with id `key` (compared as text: no selector is
/// built from the id).
fn message_element(key: &str) -> Option<web_sys::Element> {
    let document = web_sys::window()?.document()?;
    // The outline of an earlier hit goes.
    if let Ok(old) = document.query_selector_all(".lmck-search-target") {
        for i in 0..old.length() {
            if let Some(el) = old
                .item(i)
                .and_then(|n| n.dyn_into::<web_sys::Element>().ok())
            {
                let _ = el.class_list().remove_1("lmck-search-target");
            }
        }
    }
    let all = document.query_selector_all(".lmck-msg[data-key]").ok()?;
    (0..all.length())
        .filter_map(|i| all.item(i)?.dyn_into::<web_sys::Element>().ok())
        .find(|el| el.get_attribute("data-key").as_deref() == Some(key))
}

#[cfg(test)]
mod tests {
    use super::snippet_parts;

    #[test]
    fn a_snippet_is_cut_at_its_matches_by_character() {
        let parts = snippet_parts("Größe <b>x</b> größer", &[[0, 3], [15, 18]]);
        assert_eq!(
            parts,
            [
                ("Grö".to_owned(), true),
                ("ße <b>x</b> ".to_owned(), false),
                ("grö".to_owned(), true),
                ("ßer".to_owned(), false),
            ]
        );
    }

    #[test]
    fn bad_ranges_are_skipped_and_nothing_is_lost() {
        let parts = snippet_parts("abcdef", &[[2, 1], [4, 99], [1, 2], [0, 1]]);
        let text: String = parts.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(text, "abcdef");
        assert_eq!(parts.iter().filter(|(_, m)| *m).count(), 1);
    }
}
