//! Export of the open conversation (JSON or Markdown, downloaded as a file) and import of
//! exported conversations (a JSON array or one object, each saved under a fresh id). With
//! server-side history the JSON keeps every branch (`tree`) and an import restores them; the
//! Markdown is the branch shown.
//!
//! **The code is a wasm chunk of its own** (`transfer`: the JSON and Markdown writers, the
//! download, reading and parsing the imported file), fetched at the first click on Export or
//! the first file chosen for Import: few sessions use either, and the pretty JSON writer alone
//! is a few KB of the first load. When the chunk cannot be loaded the click does nothing but
//! say so in the notice bar (the file chosen for import is not read; choosing it again tries
//! again), and a later click fetches the chunk again (see [`crate::lazy`]).

use std::future::Future;
use std::pin::Pin;

use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::{HistoryMode, Role, StoredConversation};
use wasm_bindgen::JsCast;

use crate::history;
use crate::lazy::Loader;
use crate::state::Store;

/// What an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The stored conversation, pretty-printed (what Import reads back).
    Json,
    /// The user and assistant messages as Markdown, with the tool calls quoted.
    Markdown,
}

/// What the notice bar says when the chunk could not be loaded.
pub const NOT_LOADED: &str =
    "Export and import could not be loaded (see the browser console). Try again.";

/// Downloads the open conversation as `format` (nothing when no conversation is open).
pub fn export(store: Store, format: Format) {
    spawn_local(async move {
        match code().await {
            Some(code) => (code.export)(store, format),
            None => store.notice.set(Some(NOT_LOADED.to_owned())),
        }
    });
}

/// Imports the conversations in `file` and says how many in the notice bar (or why none).
pub fn import(store: Store, file: web_sys::File) {
    spawn_local(async move {
        match code().await {
            Some(code) => (code.import)(store, file).await,
            None => store.notice.set(Some(NOT_LOADED.to_owned())),
        }
    });
}

/// A conversation as Markdown.
pub fn to_markdown(c: &StoredConversation) -> String {
    let mut out = format!("# {}\n\n", c.title);
    for m in &c.messages {
        let who = match m.role {
            Role::User => "User",
            Role::Assistant if m.info.is_none() => "Assistant",
            _ => continue,
        };
        let text = m.content.joined_text("\n\n");
        out.push_str(&format!("**{who}:**\n\n{text}\n\n"));
        for c in &m.tool_calls {
            out.push_str(&format!("> tool call `{}` {}\n\n", c.name, c.arguments));
        }
    }
    out
}

/// The future of an import (in the chunk).
type Importing = Pin<Box<dyn Future<Output = ()>>>;

/// The entries of the chunk.
#[derive(Clone, Copy)]
struct TransferCode {
    export: fn(Store, Format),
    import: fn(Store, web_sys::File) -> Importing,
}

/// Pointers to the code (in the chunk when split).
fn linked() -> TransferCode {
    TransferCode {
        export: export_now,
        import: |store, file| Box::pin(import_now(store, file)),
    }
}

crate::lazy::code_point! {
    /// The chunk's one entry.
    transfer: fn load_transfer() -> TransferCode {
        linked()
    }
}

thread_local! {
    static CODE: Loader<TransferCode> = const { Loader::new() };
}

/// The chunk's code, loaded unless it is here; `None` when it could not be loaded.
async fn code() -> Option<TransferCode> {
    Loader::ready(&CODE, load_transfer).await.value()
}

fn export_now(store: Store, format: Format) {
    let Some(chat) = store.chat.get_untracked() else {
        return;
    };
    let mut c = chat.to_stored();
    match format {
        Format::Markdown => download(&format!("{}.md", c.id), "text/markdown", &to_markdown(&c)),
        // With server-side history, every branch goes too (`tree`, which Import restores);
        // a conversation not stored yet is exported as this tab has it.
        Format::Json if store.history_mode() == Some(HistoryMode::Server) => {
            spawn_local(async move {
                if let Ok(stored) = store.api().conversation_tree(&c.id).await {
                    c.tree = stored.tree;
                }
                write_json(store, &c);
            });
        }
        Format::Json => write_json(store, &c),
    }
}

/// Downloads `c` as pretty JSON.
fn write_json(store: Store, c: &StoredConversation) {
    match serde_json::to_string_pretty(c) {
        Ok(json) => download(&format!("{}.json", c.id), "application/json", &json),
        Err(e) => store.notice.set(Some(format!("Export failed: {e}"))),
    }
}

async fn import_now(store: Store, file: web_sys::File) {
    let text = match wasm_bindgen_futures::JsFuture::from(file.text()).await {
        Ok(text) => text.as_string().unwrap_or_default(),
        Err(e) => {
            store.notice.set(Some(format!(
                "Import failed: the file could not be read ({e:?})."
            )));
            return;
        }
    };
    match history::import(store, &text).await {
        Ok(n) => store
            .notice
            .set(Some(format!("Imported {n} conversation(s)."))),
        Err(e) => store.notice.set(Some(format!("Import failed: {e}"))),
    }
}

/// Hands `text` to the browser as a download named `name`.
fn download(name: &str, mime: &str, text: &str) {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &opts) else {
        web_sys::console::error_1(&"lmchatkit: the export could not be made into a file".into());
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        web_sys::console::error_1(&"lmchatkit: the export file got no URL".into());
        return;
    };
    if let Some(doc) = web_sys::window().and_then(|w| w.document())
        && let Ok(a) = doc.create_element("a")
    {
        let a: web_sys::HtmlAnchorElement = a.unchecked_into();
        a.set_href(&url);
        a.set_download(name);
        a.click();
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}
