//! Reading stored conversations: the JSON of a [`StoredConversation`] (every [`Message`] in it,
//! with its content parts, tool calls and results) becomes Rust values here, and only here.
//!
//! **The decoder is part of the transcript's wasm chunk** ([`crate::lazy`]), not of the first
//! load. Decoding a whole conversation was the biggest single piece of the main module that a
//! new chat's first paint never runs: `StoredConversation`'s and `Message`'s `Deserialize`
//! with what only they reach held 47 KB of the 1,035 KB of code before `wasm-opt`; moving it
//! took the main module from 249,277 to 235,860 B as brotli (801 to 749 KB raw). Every path
//! that reads a whole conversation shows it, so it needs the transcript anyway, and the
//! transcript's chunk is fetched at the composer's first keystroke and with a reload that
//! restores a chat; opening a conversation waits for the one download either way:
//! - the service's copy (opening, a reload's restore, a re-read after another tab saved, a
//!   version switch, the copy a `409` sends back) is fetched as text by [`crate::api`] and
//!   decoded by [`conversation`] or [`conflict`];
//! - this tab's sessionStorage (browser mode) is read whole by [`all`]; the sidebar's list
//!   reads only the summaries ([`crate::history::refresh_list`]), and a save or delete edits
//!   the stored list as JSON values, so neither needs the decoder.
//!
//! **When the chunk cannot be loaded** the read fails as a network error would ("Could not
//! open the conversation (…)", the chat to restore is kept), and the next read fetches the
//! chunk again.
//!
//! [`Message`]: lmchatkit_protocol::Message

use lmchatkit_protocol::{ConflictResponse, StoredConversation};
use serde::de::DeserializeOwned;

use crate::lazy::Loader;

/// Why a read failed when the decoder could not be loaded.
pub const NOT_LOADED: &str =
    "the code that reads conversations could not be loaded (see the browser console)";

/// Why a stored conversation could not be read. (This module sits below [`crate::api`],
/// which turns it into an `ApiError`: the API reads through it.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// The decoder's chunk could not be loaded ([`NOT_LOADED`]).
    NotLoaded,
    /// The JSON is not a stored conversation: the parser's message.
    Decode(String),
}

/// The decoders (in the transcript's chunk when split).
#[derive(Clone, Copy)]
pub(crate) struct Decoders {
    conversation: fn(&str) -> Result<StoredConversation, String>,
    conflict: fn(&str) -> Result<ConflictResponse, String>,
    all: fn(&str) -> Result<Vec<StoredConversation>, String>,
}

/// `text` as a `T`, or the parser's message.
fn decode<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

crate::lazy::code_point! {
    /// The decoders' entry in the transcript's chunk.
    transcript: fn load_decoders() -> Decoders {
        Decoders {
            conversation: decode,
            conflict: decode,
            all: decode,
        }
    }
}

thread_local! {
    static CODE: Loader<Decoders> = const { Loader::new() };
}

/// The decoders, loaded unless they are here.
async fn decoders() -> Result<Decoders, Unreadable> {
    Loader::ready(&CODE, load_decoders)
        .await
        .value()
        .ok_or(Unreadable::NotLoaded)
}

/// A stored conversation, from the service's JSON.
pub async fn conversation(text: &str) -> Result<StoredConversation, Unreadable> {
    (decoders().await?.conversation)(text).map_err(Unreadable::Decode)
}

/// The body of a `409` answer to a save (the stored copy), from the service's JSON.
pub async fn conflict(text: &str) -> Result<ConflictResponse, Unreadable> {
    (decoders().await?.conflict)(text).map_err(Unreadable::Decode)
}

/// Every conversation of this tab's sessionStorage (browser mode), from its JSON.
pub async fn all(text: &str) -> Result<Vec<StoredConversation>, Unreadable> {
    (decoders().await?.all)(text).map_err(Unreadable::Decode)
}
