//! The composer: an autosizing textarea (Enter sends, Shift+Enter is a newline, Enter during IME
//! composition is ignored), ↑/↓ input history on the first/last line, the `/` and `@` menus
//! (↑/↓ move, Enter or Tab picks, Esc closes), attachments (paperclip, drop, paste) when the
//! server allows uploads, Send turning into Stop while a turn streams, and messages sent
//! meanwhile waiting under it ([`crate::queue`]).

use leptos::html;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use crate::actions::submit;
use crate::commands::SlashKind;
use crate::components::attachments::{Attachments, upload, uploads_enabled};
use crate::components::menus::{MENU_ID, Menu, MenuItem, PromptForm, items_for, option_id};
use crate::components::store;
use crate::components::transcript;
use crate::input_history::InputHistory;
use crate::lazy::{Shell, lazily};
use crate::queue;
use crate::storage::{session_get, session_set};
use crate::turn;
use lmchatkit_protocol::Prompt;

const HISTORY_KEY: &str = "lmchatkit:inputHistory";

/// The message box.
#[component]
pub fn Composer() -> impl IntoView {
    let store = store();
    let area = NodeRef::<html::Textarea>::new();
    let file_input = NodeRef::<html::Input>::new();
    let history = StoredValue::new(InputHistory::from_entries(
        session_get(HISTORY_KEY)
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default(),
    ));
    let selected = RwSignal::new(0usize);
    let prompt_form = RwSignal::new(None::<Prompt>);
    let dismissed = RwSignal::new(false);
    let items = Signal::derive(move || {
        if dismissed.get() {
            Vec::new()
        } else {
            store.draft.with(|d| items_for(store, d))
        }
    });
    let pending = move || {
        store
            .chat
            .with(|c| c.as_ref().is_some_and(|c| c.has_pending()))
    };

    // Autosize (up to 160 px) whenever the draft changes; take focus when asked. Measured in the
    // next animation frame: this effect may run before the textarea's `value` is updated (so a
    // draft cleared after sending several lines would keep the tall box).
    let autosize = move || {
        if let Some(el) = area.get_untracked() {
            let el: &web_sys::HtmlElement = &el;
            let style = el.style();
            let _ = style.set_property("height", "auto");
            // border-box: the height includes the 2 px of borders scrollHeight leaves out.
            let h = el.scroll_height() + 2;
            let _ = style.set_property("height", &format!("{}px", h.min(160)));
            let _ = style.set_property("overflow-y", if h > 160 { "auto" } else { "hidden" });
        }
    };
    Effect::new(move |_| {
        store.draft.track();
        if area.get().is_some() {
            autosize();
            request_animation_frame(autosize);
        }
    });
    Effect::new(move |_| {
        store.focus_composer.track();
        if let Some(el) = area.get() {
            let _ = el.focus();
        }
    });

    let send = move || {
        let text = store.draft.get_untracked();
        // While a reply streams the message waits in the queue; an empty draft sends the next
        // queued message (after Stop paused the queue).
        let sent = if queue::should_queue(store) {
            queue::enqueue(store)
        } else if text.trim().is_empty() && store.attachments.with_untracked(Vec::is_empty) {
            queue::send_next(store);
            false
        } else {
            submit(store)
        };
        if sent {
            history.update_value(|h| h.record(&text));
            history.with_value(|h| {
                session_set(
                    HISTORY_KEY,
                    serde_json::to_string(h.entries()).ok().as_deref(),
                )
            });
        }
    };
    let pick = Callback::new(move |item: MenuItem| {
        match item {
            MenuItem::Slash(s) => {
                if let SlashKind::Prompt(p) = &s.kind
                    && p.arguments.len() > 1
                {
                    store.draft.set(String::new());
                    prompt_form.set(Some(p.clone()));
                } else if s.takes_arguments() {
                    store.draft.set(format!("/{} ", s.name));
                } else {
                    store.draft.set(format!("/{}", s.name));
                    send();
                }
            }
            MenuItem::Resource(insert, _, _) => store.draft.update(|d| {
                if let Some(at) = d.rfind('@') {
                    d.truncate(at + 1);
                    d.push_str(&insert);
                    if !insert.ends_with('/') && !insert.ends_with('=') {
                        d.push(' ');
                    }
                }
            }),
        }
        selected.set(0);
        store.focus();
    });

    let on_keydown = move |ev: leptos::ev::KeyboardEvent| {
        let key = ev.key();
        let n = items.with_untracked(Vec::len);
        if n > 0 {
            match key.as_str() {
                "ArrowDown" => {
                    ev.prevent_default();
                    selected.update(|s| *s = (*s + 1) % n);
                    return;
                }
                "ArrowUp" => {
                    ev.prevent_default();
                    selected.update(|s| *s = (*s + n - 1) % n);
                    return;
                }
                "Enter" | "Tab" if !ev.shift_key() && !ev.is_composing() => {
                    ev.prevent_default();
                    let i = selected.get_untracked().min(n - 1);
                    if let Some(item) = items.with_untracked(|it| it.get(i).cloned()) {
                        pick.run(item);
                    }
                    return;
                }
                "Escape" => {
                    ev.prevent_default();
                    dismissed.set(true);
                    return;
                }
                _ => {}
            }
        }
        if key == "Enter" && !ev.shift_key() && !ev.is_composing() && ev.key_code() != 229 {
            ev.prevent_default();
            send();
            return;
        }
        let Some(el) = area.get_untracked() else {
            return;
        };
        let value = el.value();
        let (start, end) = (
            el.selection_start().ok().flatten().unwrap_or(0),
            el.selection_end().ok().flatten().unwrap_or(0),
        );
        if start != end {
            return;
        }
        // selectionStart counts UTF-16 units.
        let before: String = String::from_utf16_lossy(
            &value
                .encode_utf16()
                .take(start as usize)
                .collect::<Vec<_>>(),
        );
        if key == "ArrowUp" && !before.contains('\n') {
            if let Some(prev) = history.try_update_value(|h| h.up(&value)).flatten() {
                ev.prevent_default();
                store.draft.set(prev);
            }
        } else if key == "ArrowDown"
            && !value[before.len().min(value.len())..].contains('\n')
            && let Some(next) = history.try_update_value(|h| h.down()).flatten()
        {
            ev.prevent_default();
            store.draft.set(next);
        }
    };
    let on_paste = move |ev: leptos::ev::ClipboardEvent| {
        if !uploads_enabled(store) {
            return;
        }
        if let Some(files) = ev.clipboard_data().and_then(|d| d.files())
            && files.length() > 0
        {
            ev.prevent_default();
            upload(store, files);
        }
    };
    let on_drop = move |ev: leptos::ev::DragEvent| {
        if !uploads_enabled(store) {
            return;
        }
        if let Some(files) = ev.data_transfer().and_then(|d| d.files())
            && files.length() > 0
        {
            ev.prevent_default();
            upload(store, files);
        }
    };
    // The open menu's selected option, for assistive technology (focus stays in the textarea).
    let active_option = move || {
        let n = items.with(Vec::len);
        (n > 0).then(|| option_id(selected.get().min(n - 1)))
    };
    let menu_open = move || items.with(|i| !i.is_empty()).then_some(MENU_ID);
    let can_send = move || {
        !pending()
            && (store.draft.with(|d| !d.trim().is_empty())
                || store.attachments.with(|a| !a.is_empty())
                || store.queue.with(|q| !q.is_empty()))
    };
    view! {
        <div class="lmck-composer">
            <Menu items selected on_pick=pick />
            {move || prompt_form.get().map(|p| view! {
                <PromptForm prompt=p on_done=Callback::new(move |line: Option<String>| {
                    prompt_form.set(None);
                    if let Some(line) = line {
                        store.draft.set(line);
                        send();
                    }
                    store.focus();
                }) />
            })}
            <Attachments />
            <div class="lmck-composer-row">
                <Show when=move || uploads_enabled(store)>
                    <input type="file" multiple=true class="lmck-hidden" node_ref=file_input
                        accept="image/*,.pdf,.txt,.md,.csv,.json,.xml,.html"
                        on:change=move |ev| {
                            let input: web_sys::HtmlInputElement = ev.target().unwrap().unchecked_into();
                            if let Some(files) = input.files() { upload(store, files); }
                            input.set_value("");
                        } />
                    <button class="lmck-icon-btn lmck-attach" aria-label="Attach files" title="Attach files"
                        on:click=move |_| { if let Some(i) = file_input.get_untracked() { i.click(); } }>"+"</button>
                </Show>
                <textarea class="lmck-input" node_ref=area rows="1" aria-label="Message"
                    aria-autocomplete="list" aria-controls=menu_open aria-activedescendant=active_option
                    placeholder="Type a message… (/ commands, @ resources, ↑↓ history)"
                    prop:value=move || store.draft.get()
                    on:input=move |ev| { turn::prefetch(); transcript::prefetch(); dismissed.set(false); selected.set(0); store.draft.set(event_target_value(&ev)); }
                    on:keydown=on_keydown
                    on:paste=on_paste
                    on:dragover=move |ev: leptos::ev::DragEvent| ev.prevent_default()
                    on:drop=on_drop
                    on:blur=move |_| dismissed.set(true)
                    on:focus=move |_| dismissed.set(false)></textarea>
                <Show when=move || store.busy.get()
                    fallback=move || view! {
                        <button class="lmck-btn lmck-primary lmck-send" aria-label="Send" disabled=move || !can_send()
                            on:click=move |_| send()>"Send"</button>
                    }>
                    <button class="lmck-btn lmck-danger lmck-stop" aria-label="Stop" on:click=move |_| { queue::pause(store); turn::stop() }>"Stop"</button>
                </Show>
            </div>
            <Show when=move || store.queue.with(|q| !q.is_empty())>
                {lazily(Shell::Inline, queued_view)}
            </Show>
        </div>
    }
}

crate::lazy::split_point! {
    /// The queued messages, from the `transcript` chunk: a message queues only while a reply
    /// streams (or after a reload, beside its conversation), when that chunk is here anyway;
    /// the first paint carries none of it.
    transcript: fn queued_view() {
        view! { <Queued /> }.into_any()
    }
}

/// The queued messages under the composer (see [`crate::queue`]), each removable or taken back
/// into the composer to edit.
#[component]
fn Queued() -> impl IntoView {
    let store = store();
    view! {
        <ol class="lmck-queue" aria-label="Queued messages">
            {move || store.queue.get().into_iter().enumerate().map(|(i, text)| view! {
                <li class="lmck-queued">
                    <span class="lmck-queued-text" title=text.clone()>{text.clone()}</span>
                    <button class="lmck-icon-btn lmck-queued-edit" type="button" title="Edit"
                        aria-label="Edit queued message" on:click=move |_| queue::edit(store, i)>"✎"</button>
                    <button class="lmck-icon-btn lmck-queued-remove" type="button" title="Remove"
                        aria-label="Remove queued message" on:click=move |_| queue::remove(store, i)>"×"</button>
                </li>
            }).collect_view()}
        </ol>
        <p class="lmck-queue-note">{move || if store.queue_paused.get() {
            "Stopped: Send sends the next queued message."
        } else {
            "Sent when the reply ends."
        }}</p>
    }
}
