//! The incremental markdown renderer compiled to wasm, for timing it in V8 (node) — the engine
//! the UI runs in — rather than natively. Built and run by `markdown_wasm_bench.sh`.

use lmchatkit_web::markdown::{Incremental, render};
use wasm_bindgen::prelude::*;

#[path = "common/replies.rs"]
#[allow(dead_code)]
mod replies;

/// A streaming reply being rendered.
#[wasm_bindgen]
#[derive(Default)]
pub struct Stream(Incremental);

#[wasm_bindgen]
impl Stream {
    /// An empty reply.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Stream {
        Stream::default()
    }

    /// `push` + `html`, the whole HTML handed to JS.
    pub fn push_html(&mut self, delta: &str) -> String {
        self.0.push(delta);
        self.0.html()
    }

    /// `push`, then the HTML of the blocks that changed handed to JS (what the UI does).
    pub fn push_changed(&mut self, delta: &str, last_rev: f64) -> String {
        self.0.push(delta);
        self.0
            .blocks()
            .iter()
            .filter(|b| b.rev as f64 > last_rev)
            .map(|b| b.html.as_str())
            .collect()
    }

    /// The highest block revision so far (a JS number).
    pub fn rev(&self) -> f64 {
        self.0.blocks().iter().map(|b| b.rev).max().unwrap_or(0) as f64
    }
}

/// A full render (for comparison).
#[wasm_bindgen]
pub fn render_html(markdown: &str) -> String {
    render(markdown)
}

/// The mixed 48 KB-style reply of the native benchmark.
#[wasm_bindgen]
pub fn mixed_reply(bytes: usize) -> String {
    replies::mixed_reply(bytes)
}

/// A reply that is one long code block.
#[wasm_bindgen]
pub fn code_reply(bytes: usize) -> String {
    replies::code_reply(bytes)
}
