//! What the composer's Send does: built-in commands (`/compact`, `/list-prompts`,
//! `/list-resources`), file commands, attachments (images as `image_url` parts, text files decoded
//! as UTF-8, PDFs as file parts), and starting a chat from the picker's setup when none is open.
//!
//! - A file command is expanded here; its `allowed-tools` are allowed without asking for the rest
//!   of this browser session (as "Always allow" for the session), not just for the turn it starts.
//! - `/compact` sends the transcript as one message and offers the model no tools (`no_tools`):
//!   a summary must not call any.

use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::{Content, ContentPart, FileData, ReasoningEffort, UploadedFile};
use serde_json::json;

use crate::commands::{argument_hint, expand_command, parse_slash};
use crate::history::remember_current;
use crate::spend;
use crate::state::{Chat, Store, params_from_fields};
use crate::turn;

/// Starts a chat from the picker's setup (not saved until the first message).
pub fn start_chat(store: Store) -> Chat {
    let setup = store.setup.get_untracked();
    let base = store
        .persona(&setup.persona_id)
        .map(|p| p.params)
        .unwrap_or_default();
    let reasoning = spend::is_reasoning(&store.model_list_untracked(), &setup.model);
    let params = spend::with_effort(
        params_from_fields(&base, &setup.fields),
        setup.effort,
        reasoning,
    );
    let chat = Chat::new(setup.persona_id.clone(), setup.model.clone(), params);
    let effort = setup.effort.map(ReasoningEffort::as_str);
    crate::storage::session_set(
        "lmchatkit:lastSetup",
        Some(
            &json!({"personaId": setup.persona_id, "model": setup.model, "effort": effort})
                .to_string(),
        ),
    );
    remember_current(Some(&chat.id.get_untracked()));
    store.chat.set(Some(chat.clone()));
    store.focus();
    chat
}

/// Sends the composer's draft (and attachments). Returns false when nothing was sent.
pub fn submit(store: Store) -> bool {
    let text = store.draft.get_untracked();
    let files = store.attachments.get_untracked();
    if !submit_text(store, &text, files) {
        return false;
    }
    store.draft.set(String::new());
    store.attachments.set(Vec::new());
    store.queue_paused.set(false);
    true
}

/// Sends `text` and `files` as the user's next message (a queued message has no files).
/// Returns false when nothing was sent.
pub fn submit_text(store: Store, text: &str, files: Vec<UploadedFile>) -> bool {
    let text = text.trim().to_owned();
    if (text.is_empty() && files.is_empty()) || store.busy.get_untracked() {
        return false;
    }
    let chat = match store.chat.get_untracked() {
        Some(c) if c.has_pending() => return false,
        Some(c) => c,
        None => {
            if !store
                .setup
                .with_untracked(|s| spend::usable(&store.model_list_untracked(), &s.model))
            {
                return false;
            }
            start_chat(store)
        }
    };
    if files.is_empty()
        && let Some((name, args)) = parse_slash(&text)
    {
        match (name.as_str(), args.is_empty()) {
            ("list-prompts", true) => {
                let items: Vec<_> = store.prompts.get_untracked().iter().map(|p| {
                    json!({"name": format!("/{} {}", p.name, argument_hint(p)).trim_end(), "description": p.description})
                }).collect();
                turn::info_card(
                    store,
                    &chat,
                    json!({"title": "Available MCP Prompts", "items": items}),
                );
                return true;
            }
            ("list-resources", true) => {
                let items: Vec<_> = store.resources.get_untracked().iter().map(|r| {
                    json!({"name": r.uri, "description": r.name, "args": if r.template { "(template)" } else { "" }})
                }).collect();
                turn::info_card(
                    store,
                    &chat,
                    json!({"title": "Available MCP Resources", "items": items}),
                );
                return true;
            }
            ("compact", true) => {
                spawn_local(turn::compact(store, chat));
                return true;
            }
            _ => {}
        }
        let lname = crate::text::lower(&name);
        if let Some(cmd) = store.commands.with_untracked(|cs| {
            cs.iter()
                .find(|c| crate::text::lower(&c.name) == lname)
                .cloned()
        }) {
            store.allow_for_session(cmd.allowed_tools.iter().cloned());
            turn::send(store, chat, Content::Text(expand_command(&cmd, &args)));
            return true;
        }
    }
    turn::send(store, chat, content_of(&text, &files));
    true
}

/// The message content for `text` plus uploaded files.
pub fn content_of(text: &str, files: &[UploadedFile]) -> Content {
    if files.is_empty() {
        return Content::Text(text.to_owned());
    }
    let mut parts = Vec::new();
    for f in files {
        if f.mime_type.starts_with("image/") {
            parts.push(ContentPart::image_url(f.data_url.clone()));
        } else if let Some(t) = decode_text(&f.data_url) {
            parts.push(ContentPart::text(format!("File {}:\n{}", f.name, t)));
        } else {
            parts.push(ContentPart::File {
                file: FileData {
                    filename: Some(f.name.clone()),
                    file_data: Some(f.data_url.clone()),
                    file_id: None,
                },
            });
        }
    }
    if !text.is_empty() {
        parts.push(ContentPart::text(text));
    }
    Content::Parts(parts)
}

/// Decodes a base64 `data:` URL as UTF-8 text; `None` for binary data.
fn decode_text(data_url: &str) -> Option<String> {
    let (_, b64) = data_url.split_once(";base64,")?;
    let bin = web_sys::window()?.atob(b64).ok()?;
    let bytes: Vec<u8> = bin.chars().map(|c| c as u32 as u8).collect();
    let text = String::from_utf8(bytes).ok()?;
    (!text.contains('\0')).then_some(text)
}

/// Runs `/compact` on the open chat (the context gauge's button), as the command does; nothing
/// while a turn runs or a call waits for the user.
pub fn compact_open_chat(store: Store) {
    if store.busy.get_untracked() {
        return;
    }
    if let Some(chat) = store.chat.get_untracked().filter(|c| !c.has_pending()) {
        spawn_local(turn::compact(store, chat));
    }
}
