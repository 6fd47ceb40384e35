//! Opt-in timing probes for the UI benchmark (`tests/tests/browser/ui_bench.rs`). Enabled only when
//! sessionStorage `lmchatkit:bench` is `1`; then timings (ms) are appended to
//! `window.__lmckBench[name]` arrays: `delta` (main-thread time handling one stream frame),
//! `frame` (one batched HTML update), `open` (time from navigation start until a conversation
//! opened from the sidebar or on reload has rendered). Otherwise every call is a cheap no-op.

use std::cell::Cell;

use wasm_bindgen::{JsCast, JsValue};

thread_local! {
    static ENABLED: Cell<Option<bool>> = const { Cell::new(None) };
}

/// Whether the probes are on.
pub fn enabled() -> bool {
    ENABLED.with(|e| {
        *e.get().get_or_insert_with(|| {
            crate::storage::session_get("lmchatkit:bench").as_deref() == Some("1")
        })
    })
}

/// `performance.now()` (0 when unavailable).
pub use crate::timer::now;

/// Appends `value` to `window.__lmckBench[name]` when enabled.
pub fn record(name: &str, value: f64) {
    if !enabled() {
        return;
    }
    let Some(w) = web_sys::window() else { return };
    let key = JsValue::from_str("__lmckBench");
    let mut root = js_sys::Reflect::get(&w, &key).unwrap_or(JsValue::UNDEFINED);
    if root.is_undefined() {
        root = js_sys::Object::new().into();
        let _ = js_sys::Reflect::set(&w, &key, &root);
    }
    let name = JsValue::from_str(name);
    let mut arr = js_sys::Reflect::get(&root, &name).unwrap_or(JsValue::UNDEFINED);
    if arr.is_undefined() {
        arr = js_sys::Array::new().into();
        let _ = js_sys::Reflect::set(&root, &name, &arr);
    }
    arr.unchecked_into::<js_sys::Array>()
        .push(&JsValue::from_f64(value));
}
