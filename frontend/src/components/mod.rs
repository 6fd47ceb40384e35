//! The UI's components, one per file.

pub mod approval;
pub mod attachments;
pub mod code_hooks;
pub mod combo;
pub mod composer;
pub mod diagrams;
pub mod icon;
pub mod input_request;
pub mod menus;
pub mod message;
pub mod model_fields;
pub mod oauth_sign_in;
pub mod picker;
pub mod servers;
pub mod settings;
pub mod sidebar;
pub mod spend_bar;
pub mod tool_card;
pub mod transcript;

pub use crate::state::store;

/// Copies text to the clipboard (best effort).
pub fn copy_text(text: String) {
    if let Some(w) = web_sys::window() {
        let _ = w.navigator().clipboard().write_text(&text);
    }
}

/// Formats a timestamp (ms) as local `HH:MM`.
pub fn time_of(ms: i64) -> String {
    let d = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(ms as f64));
    format!("{:02}:{:02}", d.get_hours(), d.get_minutes())
}
