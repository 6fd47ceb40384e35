//! App-wide hooks of the rendered Markdown, which has no components of its own (the App installs
//! them once): [`rerender_when_loaded`] re-renders messages already on screen once a lazily
//! loaded part of the renderer arrives (the parser, the code highlighter or the math
//! converter), and [`wire_code_copy`] makes every code block's Copy button work.

use leptos::prelude::*;
use lmchatkit_protocol::Role;
use wasm_bindgen::JsCast;

use crate::components::copy_text;
use crate::markdown::{self, highlight};
use crate::state::{Store, UiMessage};

/// Re-renders the open chat's finished assistant messages that were rendered without a part of
/// the renderer once it arrives: as plain text before the parser ([`markdown::engine`]), with
/// plain code before the code highlighter ([`highlight`]). A reply streaming at that moment is
/// upgraded by its renderer on its next delta, and checked again here when the turn ends (in
/// case no delta came after the part).
pub fn rerender_when_loaded(store: Store) {
    let generation = RwSignal::new(markdown::generation());
    let arrived = move || {
        generation.try_set(markdown::generation());
    };
    highlight::subscribe(arrived);
    markdown::engine::subscribe(arrived);
    markdown::math::subscribe(arrived);
    let streaming_then = StoredValue::new(std::collections::HashSet::<String>::new());
    Effect::new(move |seen: Option<u64>| {
        let current = generation.get();
        store.busy.track();
        if current == 0 {
            return current;
        }
        let fresh = seen != Some(current);
        let messages = store
            .chat
            .with_untracked(|c| c.as_ref().map(|c| c.messages.get_untracked()))
            .unwrap_or_default();
        for m in messages {
            if m.streaming.get_untracked() {
                if fresh {
                    streaming_then.update_value(|s| {
                        s.insert(m.key.clone());
                    });
                }
                continue;
            }
            let was_streaming = streaming_then.try_update_value(|s| s.remove(&m.key));
            if fresh || was_streaming == Some(true) {
                rerender(&m);
            }
        }
        current
    });
}

/// Renders an assistant message again if it was shown as plain text, holds a fenced code block
/// with a language or a formula shown as its source until the converter came (none of them can
/// be spelled by the text: rendering escapes `<` and `"`).
fn rerender(m: &UiMessage) {
    if !m.html.with_untracked(|h| {
        h.contains(" data-lang=\"")
            || h.contains(markdown::engine::PLAIN_OPEN)
            || h.contains(markdown::math::PENDING_CLASS)
    }) {
        return;
    }
    let Some(text) = m.data.with_untracked(|d| {
        (d.role == Role::Assistant)
            .then(|| d.content.as_text().map(str::to_owned))
            .flatten()
    }) else {
        return;
    };
    let html = markdown::render(&text);
    if m.html.with_untracked(|h| *h != html) {
        m.set_html(html);
    }
}

/// Makes the Copy button of every rendered code block (Markdown HTML has no handlers of its own)
/// copy the text of its `<code>`, then read "Copied" for a moment. One delegated listener.
pub fn wire_code_copy() {
    let handle = window_event_listener(leptos::ev::click, |ev| {
        let Some(button) = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .and_then(|t| {
                t.closest(".lmck-app .lmck-codeblock > .lmck-copy")
                    .ok()
                    .flatten()
            })
        else {
            return;
        };
        let code = button
            .parent_element()
            .and_then(|block| block.query_selector("pre > code").ok().flatten())
            .and_then(|code| code.text_content());
        if let Some(code) = code {
            copy_text(code);
            button.set_text_content(Some("Copied"));
            set_timeout(
                move || button.set_text_content(Some("Copy")),
                std::time::Duration::from_millis(1500),
            );
        }
    });
    on_cleanup(move || handle.remove());
}
