//! What an MCP App view contributes to the chat, and on whose say-so.
//!
//! Decisions:
//! - **`ui/message` needs a user gesture.** The view's text is shown in a card ("<app> wants to
//!   send:", the literal text, Send / Discard) under the view; nothing is posted until Send. The
//!   view's request stays open until then: Send answers `{}`, Discard an error. One pending
//!   message per view; a second request while one waits is refused.
//! - **The card shows where the user is looking.** It is sticky at the bottom of the transcript's
//!   visible part while its view is on screen: under a view taller than the window (up to
//!   1,600 px inline) the user who pressed the view's button sees it over the view, not 1,600 px
//!   further down (the conformance run's prompts found it off screen 7 times in 8).
//! - **Marked and literal.** The sent message carries [`Message::from_app`] (the app's server), is
//!   labelled "from the <app> app" in the transcript, and the service expands no `@uri` or
//!   `/prompt` in it. Editing it makes it the user's own message (the marker goes).
//! - **Model context belongs to its view.** [`AppContext`] remembers which view reported it; it is
//!   sent with each turn (the service labels it as untrusted) until a newer one replaces it or
//!   that view is torn down, which clears it.
//! - The app is named by its MCP server (from the service), else by the tool that mounted it:
//!   never by the name the view reports about itself.

use leptos::prelude::*;
use lmchatkit_protocol::{Content, Message};
use serde_json::Value;

use crate::state::{Chat, Store, now_ms};
use crate::turn;

pub use crate::state::AppContext;

/// The context after `view` (named `app`) reported `value` (`Null` clears it).
pub fn context_updated(view: &str, app: &str, value: Value) -> Option<AppContext> {
    (!value.is_null()).then(|| AppContext {
        view: view.to_owned(),
        app: app.to_owned(),
        value,
    })
}

/// The context after `view` was torn down: gone if that view reported it.
pub fn context_after_teardown(current: Option<AppContext>, view: &str) -> Option<AppContext> {
    current.filter(|c| c.view != view)
}

/// The text of a `ui/message`'s blocks, or why it is refused.
pub fn message_text(blocks: &[Value]) -> Result<String, String> {
    let text: Vec<&str> = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect();
    if text.is_empty() || text.iter().all(|t| t.trim().is_empty()) {
        return Err("only text messages are accepted".into());
    }
    Ok(text.join("\n\n"))
}

/// The user message an app sends once the user agreed.
pub fn app_message(app: &str, text: String) -> Message {
    let mut m = Message::user(Content::Text(text));
    m.from_app = Some(app.to_owned());
    m
}

/// A message a view asked to send, waiting for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    /// The app's name.
    pub app: String,
    /// The view's request id (answered on Send or Discard).
    pub id: Value,
    /// The literal text.
    pub text: String,
}

/// The card under a view: "<app> wants to send:", the text, Send / Discard. `decide(true)` on
/// Send, `decide(false)` on Discard.
#[component]
pub fn MessageConsent(pending: RwSignal<Option<Pending>>, decide: Callback<bool>) -> impl IntoView {
    let store = crate::state::store();
    move || {
        pending.get().map(|p| {
            let app = p.app;
            view! {
                <div class="lmck-app-consent" role="alertdialog" aria-label=format!("{app} wants to send a message")>
                    <div class="lmck-app-consent-title">{format!("{app} wants to send:")}</div>
                    <pre class="lmck-app-consent-text">{p.text}</pre>
                    <div class="lmck-row">
                        <button class="lmck-btn lmck-primary lmck-app-consent-send"
                            disabled=move || store.busy.get()
                            on:click=move |_| decide.run(true)>"Send"</button>
                        <button class="lmck-btn lmck-app-consent-discard"
                            on:click=move |_| decide.run(false)>"Discard"</button>
                    </div>
                </div>
            }
        })
    }
}

/// Posts the pending message of `app` (the user pressed Send); `Err` when a reply is streaming.
pub fn send(store: Store, chat: Chat, app: &str, text: String) -> Result<(), String> {
    if store.busy.get_untracked() {
        return Err("a reply is streaming; send the message when it is done".into());
    }
    let mut m = app_message(app, text);
    m.created_at = Some(now_ms());
    turn::send_message(store, chat, m);
    Ok(())
}
