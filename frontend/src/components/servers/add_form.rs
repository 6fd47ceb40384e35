//! Adding a server: name (the slug follows it until edited), slug, URL and header rows. The
//! service's 4xx message (a slug taken, a URL the operator's policy refuses, a header the
//! transport owns) shows inline; on success the list shows the new server with its Refresh
//! focused, and the typed header values are gone.

use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::components::servers::header_fields::{HeaderFields, HeaderRow, header_pairs};
use crate::components::servers::{Pane, screen};
use crate::components::store;
use crate::servers::{create_body, slug_from};

/// The add form.
#[component]
pub fn AddServerForm() -> impl IntoView {
    let store = store();
    let screen = screen();
    let name = RwSignal::new(String::new());
    let slug = RwSignal::new(String::new());
    let slug_edited = RwSignal::new(false);
    let url = RwSignal::new(String::new());
    let rows = RwSignal::new(Vec::<HeaderRow>::new());
    let error = RwSignal::new(None::<String>);
    let saving = RwSignal::new(false);
    let first = NodeRef::<html::Input>::new();
    Effect::new(move |_| {
        if let Some(i) = first.get() {
            let _ = i.focus();
        }
    });
    let submit = move || {
        if saving.get_untracked() {
            return;
        }
        let body = match create_body(
            &name.get_untracked(),
            &slug.get_untracked(),
            &url.get_untracked(),
            &header_pairs(&rows.get_untracked()),
        ) {
            Ok(b) => b,
            Err(e) => return error.set(Some(e)),
        };
        error.set(None);
        saving.set(true);
        spawn_local(async move {
            let res = store.api().add_user_mcp_server(&body).await;
            saving.set(false);
            match res {
                Ok(s) => {
                    let slug = s.slug.clone();
                    screen.put(s);
                    screen.to_list(Some(slug));
                }
                Err(e) => error.set(Some(e.message())),
            }
        });
    };
    view! {
        <form class="lmck-add-server-form" aria-label="Add a server" novalidate=true
            on:submit=move |ev| { ev.prevent_default(); submit(); }>
            <h3 class="lmck-info-title">"Add an MCP server"</h3>
            <label class="lmck-label">"Name"
                <input class="lmck-field" name="name" node_ref=first autocomplete="off"
                    prop:value=move || name.get()
                    on:input=move |ev| {
                        let v = event_target_value(&ev);
                        if !slug_edited.get_untracked() {
                            slug.set(slug_from(&v));
                        }
                        name.set(v);
                    } />
            </label>
            <label class="lmck-label">"Slug (its tools reach the model as slug__tool)"
                <input class="lmck-field" name="slug" autocomplete="off" spellcheck="false"
                    prop:value=move || slug.get()
                    on:input=move |ev| { slug_edited.set(true); slug.set(event_target_value(&ev)); } />
            </label>
            <label class="lmck-label">"URL (Streamable HTTP)"
                <input class="lmck-field" name="url" type="url" placeholder="https://example.com/mcp"
                    autocomplete="off" spellcheck="false"
                    prop:value=move || url.get() on:input=move |ev| url.set(event_target_value(&ev)) />
            </label>
            <HeaderFields rows />
            {move || error.get().map(|e| view! { <p class="lmck-error lmck-form-error" role="alert">{e}</p> })}
            <div class="lmck-row">
                <button type="submit" class="lmck-btn lmck-primary lmck-save-server" disabled=move || saving.get()>
                    {move || if saving.get() { "Adding…" } else { "Add server" }}
                </button>
                <button type="button" class="lmck-btn" on:click=move |_| screen.pane.set(Pane::List)>"Cancel"</button>
            </div>
        </form>
    }
}
