//! The lmchatkit chat UI (placeholder until the UI issue lands).
use leptos::prelude::*;

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(|| view! { <p class="lmck-placeholder">"lmchatkit"</p> });
}
