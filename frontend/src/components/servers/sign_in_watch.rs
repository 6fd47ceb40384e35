//! How the screen learns that an OAuth sign-in begun with its Sign in button
//! ([`crate::components::oauth_sign_in`]) ended in the other tab, without a reload.
//!
//! Decisions:
//! - **The callback page posts on a `BroadcastChannel`** named [`SIGN_IN_CHANNEL`] (from the
//!   wire types, never spelled twice): a [`SignInSignal`] (slug and new status, as a JSON
//!   string; no token). The screen then reads that server again
//!   (`GET {prefix}/api/mcp/servers/{slug}`) and its row shows what the service answers: the
//!   message is only a hint, since any page of the origin could post one. A signal for a server
//!   not in the list is ignored.
//! - **Window focus re-reads the list** while some server still needs a sign-in: coming back
//!   to this tab after signing in covers what the channel cannot reach (a UI on another origin
//!   than the service, whose callback page is the service's; a browser without
//!   `BroadcastChannel`; a sign-in finished in another browser window or profile).
//! - **Not `window.opener`**: the Sign in button opens the tab without an opener, so the
//!   authorization server's pages get no handle on the chat.
//! - Both listeners live as long as the dialog: they are removed when it closes. A failed
//!   re-read is logged to the console and leaves the list as it was.

use leptos::prelude::*;
use lmchatkit_protocol::{OAuthStatus, SIGN_IN_CHANNEL, SignInSignal};
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;

use crate::components::servers::screen::{Screen, warn};

/// Listens, for the lifetime of the current owner (the dialog), for the end of sign-ins.
pub fn watch_sign_ins(screen: Screen) {
    let focus = window_event_listener(leptos::ev::focus, move |_| {
        let waiting = screen.servers.with_untracked(|l| {
            l.iter()
                .flatten()
                .any(|s| s.oauth == OAuthStatus::SignInRequired)
        });
        if waiting {
            screen.reread_list();
        }
    });
    let on_message =
        Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
            let Some(text) = ev.data().as_string() else {
                return warn("a sign-in signal that is not text was ignored");
            };
            match serde_json::from_str::<SignInSignal>(&text) {
                Ok(signal) => {
                    let known = screen
                        .servers
                        .with_untracked(|l| l.iter().flatten().any(|s| s.slug == signal.slug));
                    if known {
                        screen.reread(signal.slug);
                    }
                }
                Err(e) => warn(&format!("a sign-in signal was not understood: {e}")),
            }
        });
    let channel = match web_sys::BroadcastChannel::new(SIGN_IN_CHANNEL) {
        Ok(c) => {
            c.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
            Some(c)
        }
        Err(e) => {
            warn(&format!(
                "no sign-in channel ({e:?}); window focus re-reads the servers"
            ));
            None
        }
    };
    let held = StoredValue::new_local(Some((channel, on_message)));
    on_cleanup(move || {
        focus.remove();
        if let Some(Some((Some(c), _))) = held.try_update_value(Option::take) {
            c.set_onmessage(None);
            c.close();
        }
    });
}
