//! The flag on a tool card whose call was refused because the user's tool changed on its
//! server since they accepted it (the service's result starts with
//! [`lmchatkit_protocol::STALE_TOOL_MARKER`]): it says so and opens the "Tools & servers"
//! screen on that server.

use leptos::prelude::*;

use crate::components::store;
use crate::servers::ServersScreen;

/// The server a tool result says is stale: only for an error result.
pub fn stale_server(text: &str, is_error: bool) -> Option<String> {
    is_error
        .then(|| lmchatkit_protocol::stale_tool_server(text))
        .flatten()
        .map(str::to_owned)
}

/// "stale: review" under a refused call of the user's server `slug`.
#[component]
pub fn StaleNote(slug: String) -> impl IntoView {
    let store = store();
    let label = format!("Review {slug}");
    view! {
        <div class="lmck-row lmck-stale-note" role="note">
            <span class="lmck-badge lmck-badge-error lmck-stale">"stale"</span>
            <span>"This tool changed on its server since you accepted it, so it was not run."</span>
            <button class="lmck-btn lmck-review-server"
                on:click=move |_| store.servers_screen.set(Some(ServersScreen::at(slug.clone())))>{label}</button>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_error_result_with_the_marker_is_stale() {
        let text = lmchatkit_protocol::stale_tool_text("docs__search", "docs");
        assert_eq!(stale_server(&text, true).as_deref(), Some("docs"));
        assert_eq!(stale_server(&text, false), None, "a tool's own output");
        assert_eq!(stale_server("[error] HTTP 403", true), None);
    }
}
