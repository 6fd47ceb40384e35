//! The "Tools & servers" screen: the user's own MCP servers in a dialog (the rules are
//! [`crate::servers`]'s). It shows one pane at a time ([`screen`](mod@screen) holds the state they share):
//! the list ([`list`]: a [`server_row`] per server, each accepted tool's settings in
//! [`tool_row`]), adding a server ([`add_form`], headers in [`header_fields`]) or reviewing a
//! refresh ([`review`]). [`stale`] is the flag a tool card shows when a call was refused because
//! its tool changed upstream. While it is open, [`sign_in_watch`] re-reads a server whose
//! sign-in ended in another tab.
//!
//! Keyboard: the dialog takes focus (the close button, or the Refresh button of the server it
//! was opened on); Escape leaves a form or review for the list, and closes from the list;
//! closing gives focus back to what opened it. Every control is a native button, checkbox,
//! select or input with a label.

pub mod add_form;
pub mod header_fields;
pub mod list;
pub mod review;
pub mod screen;
pub mod server_row;
pub mod sign_in_watch;
pub mod stale;
pub mod tool_row;

use leptos::html;
use leptos::prelude::*;

use crate::components::servers::add_form::AddServerForm;
use crate::components::servers::list::ServerList;
use crate::components::servers::review::ReviewPane;
use crate::components::store;
pub use screen::{Pane, Screen, screen};

crate::lazy::split_point! {
    /// The dialog, from the `servers` chunk (see [`crate::lazy`]).
    servers: fn servers_dialog(focus: Option<String>) {
        view! { <ServersDialog focus /> }.into_any()
    }
}

/// The "Tools & servers" dialog, opened on the server `focus` when given.
#[component]
pub fn ServersDialog(focus: Option<String>) -> impl IntoView {
    let store = store();
    let opener = StoredValue::new_local(
        web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.active_element()),
    );
    let start_on_close = focus.is_none();
    let screen = Screen::new(store, focus);
    provide_context(screen);
    screen.reload();
    sign_in_watch::watch_sign_ins(screen);
    let close_ref = NodeRef::<html::Button>::new();
    Effect::new(move |_| {
        if let Some(b) = close_ref.get().filter(|_| start_on_close) {
            let _ = b.focus();
        }
    });
    let close = move || {
        store.servers_screen.set(None);
        if let Some(el) = opener.get_value() {
            use wasm_bindgen::JsCast;
            if let Some(el) = el.dyn_ref::<web_sys::HtmlElement>() {
                let _ = el.focus();
            }
        }
    };
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() != "Escape" {
            return;
        }
        ev.stop_propagation();
        match screen.pane.get_untracked() {
            Pane::List => close(),
            Pane::Add => screen.to_list(None),
            Pane::Review(slug, _) => screen.to_list(Some(slug)),
        }
    };
    view! {
        <div class="lmck-modal-back" on:click=move |_| close()>
            <div class="lmck-modal lmck-modal-wide lmck-servers" role="dialog" aria-modal="true"
                aria-labelledby="lmck-servers-title" on:click=|ev| ev.stop_propagation() on:keydown=on_key>
                <div class="lmck-row lmck-servers-top">
                    <h2 class="lmck-h2" id="lmck-servers-title">"Tools & servers"</h2>
                    <button class="lmck-icon-btn lmck-close" node_ref=close_ref aria-label="Close"
                        on:click=move |_| close()>"✕"</button>
                </div>
                {move || screen.error.get().map(|e| view! {
                    <p class="lmck-error lmck-servers-error" role="alert">{e}</p>
                })}
                {move || match screen.pane.get() {
                    Pane::List => view! { <ServerList /> }.into_any(),
                    Pane::Add => view! { <AddServerForm /> }.into_any(),
                    Pane::Review(slug, review) => view! { <ReviewPane slug review /> }.into_any(),
                }}
            </div>
        </div>
    }
}
