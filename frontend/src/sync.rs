//! Cross-tab sync from `GET /api/events` (server mode): a `fetch` stream (not `EventSource`, so
//! the first connection after a reload can already send `Last-Event-ID`) that reconnects with a
//! growing delay. `conversation_saved` of the open chat reloads it unless this tab saved that
//! revision, is busy or waits for an approval; other chats get an unread dot. Catalog events
//! refetch their list; `resync` refetches everything.

use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::{ServerEvent, ServerEventType};

use crate::conversation::reload_current;
use crate::history::refresh_list;
use crate::state::Store;
use crate::timer::sleep;

/// Starts the events loop (runs for the page's lifetime).
pub fn start(store: Store) {
    spawn_local(async move {
        let mut last_id: Option<String> = None;
        let mut delay = 500u32;
        loop {
            let api = store.api();
            let from = last_id.clone();
            let res = api
                .events_stream(from.as_deref(), None, |frame| {
                    if frame.id.is_some() {
                        last_id = frame.id.clone();
                    }
                    if let Ok(ev) = serde_json::from_str::<ServerEvent>(&frame.data) {
                        delay = 500;
                        handle(store, ev);
                    }
                })
                .await;
            if let Err(crate::api::ApiError::Status {
                status: 404 | 401 | 403,
                ..
            }) = res
            {
                break;
            }
            sleep(delay).await;
            delay = (delay * 2).min(15_000);
        }
    });
}

/// Refetches every catalog list.
pub fn load_catalog(store: Store) {
    spawn_local(async move {
        if let Ok(p) = store.api().personas().await {
            store.personas.set(p);
        }
    });
    load_menu_lists(store);
}

/// Fetches the slash and `@` menus' lists (commands, prompts, resources): at start, where the
/// personas come with the config, and within [`load_catalog`].
pub fn load_menu_lists(store: Store) {
    spawn_local(async move {
        if let Ok(c) = store.api().commands().await {
            store.commands.set(c);
        }
    });
    spawn_local(async move {
        if let Ok(p) = store.api().prompts().await {
            store.prompts.set(p);
        }
    });
    spawn_local(async move {
        if let Ok(r) = store.api().resources().await {
            store.resources.set(r);
        }
    });
}

fn handle(store: Store, ev: ServerEvent) {
    let current = store
        .chat
        .with_untracked(|c| c.as_ref().map(|c| (c.id.get_untracked(), c.clone())));
    match ev.kind {
        ServerEventType::ConversationSaved => {
            let id = ev.id.unwrap_or_default();
            match current {
                Some((cid, chat)) if cid == id => {
                    let ours = chat
                        .sync
                        .lock()
                        .map(|s| s.saving || Some(s.revision) >= ev.revision)
                        .unwrap_or(true);
                    if !ours && !store.busy.get_untracked() && !chat.has_pending() {
                        spawn_local(reload_current(store));
                    }
                }
                _ => store.unread.update(|u| {
                    u.insert(id);
                }),
            }
            spawn_local(refresh_list(store));
        }
        ServerEventType::ConversationDeleted => {
            if current.is_some_and(|(cid, _)| Some(cid) == ev.id) && !store.busy.get_untracked() {
                store.chat.set(None);
                crate::history::remember_current(None);
            }
            spawn_local(refresh_list(store));
        }
        ServerEventType::ConversationRenamed => spawn_local(refresh_list(store)),
        ServerEventType::PersonasChanged
        | ServerEventType::CommandsChanged
        | ServerEventType::PromptsChanged
        | ServerEventType::ResourcesChanged => load_catalog(store),
        ServerEventType::ToolsChanged => {}
        ServerEventType::Resync => {
            load_catalog(store);
            spawn_local(refresh_list(store));
        }
    }
}
