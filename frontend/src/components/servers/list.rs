//! The list pane: a row per server ([`ServerRow`]) and the button that adds one.

use leptos::prelude::*;

use crate::components::servers::server_row::ServerRow;
use crate::components::servers::{Pane, screen};

/// The servers, and the button that adds one.
#[component]
pub fn ServerList() -> impl IntoView {
    let screen = screen();
    // Rows are made again only when the set of servers changes: a change of one server
    // re-renders its fields, and keyboard focus stays where it was.
    let slugs = Memo::new(move |_| {
        screen.servers.with(|l| {
            l.iter()
                .flatten()
                .map(|s| s.slug.clone())
                .collect::<Vec<_>>()
        })
    });
    view! {
        <p class="lmck-muted">"MCP servers you add offer their tools to the model once you have reviewed \
            and accepted them. A tool that changes on its server is not run until you review it again."</p>
        {move || match screen.servers.with(|l| l.as_ref().map(Vec::len)) {
            None => Some(view! { <p class="lmck-muted" role="status">"Loading…"</p> }.into_any()),
            Some(0) => Some(view! { <p class="lmck-muted lmck-no-servers">"You have no servers yet."</p> }.into_any()),
            Some(_) => None,
        }}
        <ul class="lmck-server-list" aria-label="Your MCP servers">
            {move || slugs.get().into_iter().map(|slug| view! { <ServerRow slug /> }).collect_view()}
        </ul>
        <div class="lmck-row">
            <button class="lmck-btn lmck-primary lmck-add-server" on:click=move |_| {
                screen.error.set(None);
                screen.pane.set(Pane::Add);
            }>"+ Add a server"</button>
        </div>
    }
}
