//! More shared pieces of the browser tests (`tests/tests/browser/ui_sidebar.rs`, `ui_code.rs`,
//! `ui_bench.rs`): a plain turn, a long stored conversation, and a fixture with two personas.

use lmchatkit::presets::StaticPersonas;
use lmchatkit::protocol::Persona;
use lmchatkit::store::MemoryStore;
use serde_json::json;

use crate::browser::Browser;
use crate::browser::app::{Env, idle, setup_configured};
use crate::serve::Served;

/// Sends `text` and waits for the mock's plain reply and the end of the turn.
pub async fn talk(b: &Browser, text: &str) {
    b.send_message(text).await;
    b.wait_text(".lmck-assistant .lmck-md", "Hello from the mock model.")
        .await;
    idle(b).await;
}

/// Conversation `id` with `n` messages, user and assistant in turn, message `i` reading
/// `"Message number {i}. With some **markdown** and `code`."`, as the service's `PUT` takes it
/// (also the bench's 1,000-message conversation, [`crate::bench::ui_timing`]).
pub fn long_conversation(id: &str, n: usize) -> serde_json::Value {
    let messages: Vec<_> = (0..n)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            json!({"id": format!("m{i}"), "role": role,
                   "content": format!("Message number {i}. With some **markdown** and `code`.")})
        })
        .collect();
    json!({"id": id, "title": id, "model": "mock-small", "revision": 0, "messages": messages})
}

/// Stores [`long_conversation`] `id` with `n` messages through the service's API.
pub async fn put_long_conversation(server: &Served, id: &str, n: usize) {
    let res = reqwest::Client::new()
        .put(server.url(&format!("/chat/api/conversations/{id}")))
        .json(&long_conversation(id, n))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

/// Two personas: the built-in Default, and Coder ("Writes code", default model `mock-large`,
/// temperature 0.2).
pub fn personas() -> StaticPersonas {
    let coder: Persona = serde_json::from_value(json!({
        "id": "coder", "name": "Coder", "description": "Writes code",
        "default_model": "mock-large", "params": {"temperature": 0.2}
    }))
    .unwrap();
    StaticPersonas(vec![Persona::default_persona(), coder])
}

/// Like [`crate::browser::app::setup`] (server-mode history) with [`personas`].
pub async fn setup_with_personas() -> Option<Env> {
    setup_configured(|c| c.history(MemoryStore::new()).personas(personas())).await
}
