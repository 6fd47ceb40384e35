//! The transcript: the open chat's messages (keyed by id), following the stream while the user
//! stays at the bottom, a "Jump to latest" pill when they scrolled up, and a polite live region
//! announcing each finished reply (the streaming text itself is not announced delta by delta).

use std::time::Duration;

use leptos::html;
use leptos::prelude::*;
use lmchatkit_protocol::Role;

use crate::components::message::MessageView;
use crate::components::store;
use crate::state::Chat;

/// The messages of `chat`.
#[component]
pub fn Transcript(chat: Chat) -> impl IntoView {
    let store = store();
    let scroller = NodeRef::<html::Div>::new();
    let following = RwSignal::new(true);
    let to_bottom = move || {
        if let Some(el) = scroller.get_untracked() {
            el.set_scroll_top(el.scroll_height());
        }
    };
    if let Ok(handle) = set_interval_with_handle(
        move || {
            if following.get_untracked()
                && let Some(el) = scroller.get_untracked()
                && el.scroll_height() - el.scroll_top() - el.client_height() > 2
            {
                el.set_scroll_top(el.scroll_height());
            }
        },
        Duration::from_millis(80),
    ) {
        on_cleanup(move || handle.clear());
    }
    let on_scroll = move |_| {
        if let Some(el) = scroller.get_untracked() {
            let gap = el.scroll_height() - el.scroll_top() - el.client_height();
            following.set(gap < 40);
        }
    };
    let msgs = chat.messages.clone();
    let msgs2 = chat.messages.clone();
    let announce = move || {
        if store.busy.get() {
            return String::new();
        }
        msgs2.with(|ms| {
            ms.iter()
                .rev()
                .find(|m| {
                    m.data
                        .with(|d| d.role == Role::Assistant && d.info.is_none())
                })
                .map(|m| {
                    m.data
                        .with(|d| d.content.as_text().unwrap_or_default().to_owned())
                })
                .unwrap_or_default()
        })
    };
    let chat2 = chat.clone();
    view! {
        <div class="lmck-transcript" node_ref=scroller on:scroll=on_scroll aria-label="Conversation" role="region">
            <For each=move || msgs.get() key=|m| m.key.clone() let:m>
                <MessageView ui=m chat=chat2.clone() />
            </For>
        </div>
        <div class="lmck-sr" aria-live="polite">{announce}</div>
        <Show when=move || !following.get()>
            <button class="lmck-jump" on:click=move |_| { following.set(true); to_bottom(); }>"↓ Jump to latest"</button>
        </Show>
    }
}
