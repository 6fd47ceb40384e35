//! Opening a conversation and keeping the open one current: fetch it (with the run writing it,
//! if any), show it, and follow that run; re-read it when another tab saved it. Above
//! `history` (storage and saves), `turn` and `follow` (the runs), which it joins.

use leptos::prelude::*;
use lmchatkit_protocol::HistoryMode;

use crate::api::ApiError;
use crate::history::{Fetched, browser_find, remember_current, reread_open};
use crate::state::{Chat, Store};

/// Opens a stored conversation.
pub async fn open(store: Store, id: String) {
    let fetch = async {
        match store.history_mode() {
            Some(HistoryMode::Server) => Some(store.api().conversation_with_run(&id).await),
            _ => None,
        }
    };
    // Its replies show rendered, so the Markdown parser loads alongside.
    let (fetched, _, ()) = crate::futures_join(
        fetch,
        crate::markdown::engine::ready(),
        std::future::ready(()),
    )
    .await;
    show(store, id, fetched).await;
}

/// Shows conversation `id` as [`open`] fetched it (`None`: from this tab's storage, read once
/// the decoder of [`crate::stored`] is here), or says why it could not.
pub async fn show(store: Store, id: String, fetched: Option<Fetched>) {
    let fetched = match fetched {
        Some(fetched) => fetched.map(|(c, r)| (Some(c), r)),
        None => browser_find(&id).await.map(|c| (c, None)),
    };
    let (conv, run) = match fetched {
        Ok(fetched) => fetched,
        Err(e) => {
            if e != ApiError::Aborted {
                store
                    .notice
                    .set(Some(format!("Could not open the conversation ({e}).")));
            }
            // Forget the chat for reload only when the service says it is gone: after a
            // network error, or a load cut short by a reload, it is still there to restore.
            if e.is_not_found() {
                remember_current(None);
            }
            return;
        }
    };
    let Some(conv) = conv else {
        remember_current(None);
        return;
    };
    store.unread.update(|u| {
        u.remove(&id);
    });
    remember_current(Some(&id));
    crate::follow::leave(store);
    let chat = Chat::from_stored(conv);
    store.chat.set(Some(chat.clone()));
    store.sidebar_open.set(false);
    store.focus();
    if let Some(run) = run {
        crate::turn::attach(store, chat, run);
    }
    if crate::bench::enabled() {
        // After the render this set off: the time to interactive of an opened conversation.
        leptos::prelude::request_animation_frame(|| {
            crate::bench::record("open", crate::bench::now())
        });
    }
}

/// Re-reads the open chat after another tab saved it ([`reread_open`]) and follows the reply
/// running in it when the service names one.
pub async fn reload_current(store: Store) {
    // Another tab's turn runs in it now: follow that reply too.
    if let Some((chat, Some(run))) = reread_open(store).await {
        crate::turn::attach(store, chat, run);
    }
}
