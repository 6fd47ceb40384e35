//! The transcript: the open chat's messages (keyed by id), following the stream while the user
//! stays at the bottom, a "Jump to latest" pill when they scrolled up, and a polite live region
//! announcing each finished reply (the streaming text itself is not announced delta by delta).
//!
//! **Long chats open fast**: only the last [`WINDOW`] messages are rendered at first (with every
//! message in the DOM a 1,000-message chat took about 500 ms to open, 300 of them building nodes
//! nobody sees yet; now about 240 ms). Scrolling near the top, or the "Show earlier messages" button, renders
//! [`WINDOW`] more above, keeping the messages on screen where they are. Messages added later
//! (the next turns, another tab's) are always rendered.
//!
//! **The transcript is a wasm chunk of its own** (`transcript`: the transcript, the message
//! bubbles, tool cards and approval cards; see [`crate::lazy`]), which a new chat's first paint
//! does not load:
//! - a chat with no message yet shows an empty transcript region ([`ChatArea`]), so the picker
//!   and a new chat need nothing from the chunk;
//! - it is fetched at the composer's first keystroke ([`prefetch`], beside the turn's code) and,
//!   on a reload that restores a conversation, together with `/api/config`; a conversation opened
//!   from the sidebar before then fetches it when it shows;
//! - **when it cannot be loaded** the messages are still sent, streamed and saved (that code is
//!   not in the chunk); the transcript's place says it could not be loaded, with "Try again".

use std::cell::Cell;
use std::time::Duration;

use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::Role;

use crate::components::message::MessageView;
use crate::components::store;
use crate::lazy::{Shell, lazily};
use crate::state::Chat;

/// How many messages are rendered when a chat opens, and how many more each "show earlier" adds.
pub const WINDOW: usize = 60;

/// Within this many pixels of the top, scrolling up renders earlier messages.
const NEAR_TOP_PX: i32 = 400;

/// The index of the first message to render: `first`, but never leaving fewer than [`WINDOW`]
/// (or all) messages rendered when the chat got shorter (an edit-and-resend, another tab's save).
pub fn window_start(first: usize, len: usize) -> usize {
    first.min(len.saturating_sub(WINDOW))
}

/// The open chat's messages: an empty region while it has none, else the transcript from its
/// chunk.
#[component]
pub fn ChatArea(chat: Chat) -> impl IntoView {
    let messages = chat.messages.clone();
    let empty = Memo::new(move |_| messages.with(Vec::is_empty));
    move || {
        if empty.get() {
            view! { <div class="lmck-transcript" aria-label="Conversation" role="region"></div> }
                .into_any()
        } else {
            let chat = chat.clone();
            lazily(Shell::Inline, move || transcript(chat.clone())).into_any()
        }
    }
}

crate::lazy::split_point! {
    /// The transcript, from the `transcript` chunk.
    transcript: fn transcript(chat: Chat) {
        view! { <Transcript chat /> }.into_any()
    }
}

crate::lazy::split_point! {
    /// Nothing; calling it loads the `transcript` chunk ([`prefetch`]).
    transcript: fn transcript_chunk() {
        ().into_any()
    }
}

/// Starts loading the transcript's chunk unless it was asked for (a failed load is tried again
/// when the transcript shows).
pub fn prefetch() {
    thread_local! { static ASKED: Cell<bool> = const { Cell::new(false) }; }
    if !ASKED.replace(true) {
        spawn_local(async {
            // A failure is logged by the loader and shown where the transcript would be.
            let _ = transcript_chunk().await;
        });
    }
}

/// The messages of `chat`.
#[component]
pub fn Transcript(chat: Chat) -> impl IntoView {
    let store = store();
    crate::queue::install(store);
    let scroller = NodeRef::<html::Div>::new();
    let following = RwSignal::new(true);
    let first = RwSignal::new(
        chat.messages
            .with_untracked(|ms| ms.len().saturating_sub(WINDOW)),
    );
    let msgs_len = chat.messages.clone();
    let start = Memo::new(move |_| msgs_len.with(|ms| window_start(first.get(), ms.len())));
    // Renders more above, keeping the distance to the bottom (so what is on screen stays put;
    // `overflow-anchor` is off for the transcript, which follows the stream by hand). One step
    // at a time: scroll events that arrive before the step is on screen must not take another.
    let stepping = StoredValue::new(false);
    let show_earlier = move || {
        let Some(el) = scroller.get_untracked() else {
            return;
        };
        if start.get_untracked() == 0 || stepping.get_value() {
            return;
        }
        stepping.set_value(true);
        let from_bottom = el.scroll_height() - el.scroll_top();
        first.set(start.get_untracked().saturating_sub(WINDOW));
        request_animation_frame(move || {
            if let Some(el) = scroller.get_untracked() {
                el.set_scroll_top(el.scroll_height() - from_bottom);
            }
            stepping.set_value(false);
        });
    };
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
            if el.scroll_top() < NEAR_TOP_PX && !following.get_untracked() {
                show_earlier();
            }
        }
    };
    let msgs = chat.messages.clone();
    let msgs2 = chat.messages.clone();
    let rendered = move || msgs.with(|ms| ms[start.get().min(ms.len())..].to_vec());
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
            <Show when=move || { start.get() > 0 }>
                <button class="lmck-earlier" on:click=move |_| show_earlier()>
                    {move || format!("Show earlier messages ({})", start.get())}
                </button>
            </Show>
            <For each=rendered key=|m| m.key.clone() let:m>
                <MessageView ui=m chat=chat2.clone() />
            </For>
        </div>
        <div class="lmck-sr" aria-live="polite">{announce}</div>
        <Show when=move || !following.get()>
            <button class="lmck-jump" on:click=move |_| { following.set(true); to_bottom(); }>"↓ Jump to latest"</button>
        </Show>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_keeps_at_least_its_size_when_the_chat_shrinks() {
        assert_eq!(window_start(0, 10), 0, "short chats render whole");
        assert_eq!(window_start(940, 1000), 940);
        assert_eq!(window_start(940, 1005), 940, "appended messages render too");
        assert_eq!(window_start(880, 1000), 880, "after showing earlier ones");
        assert_eq!(window_start(940, 950), 890, "shrunk: still WINDOW messages");
        assert_eq!(window_start(940, 30), 0);
    }
}
