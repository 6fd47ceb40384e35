//! This tab's sessionStorage: the one place the UI reads and writes it (the open chat, saved
//! conversations in browser mode, composer history, "allow for this tab", the bench switch).
//! Absent storage (a sandboxed frame, a locked-down browser) reads as empty and drops writes.

fn session() -> Option<web_sys::Storage> {
    web_sys::window()?.session_storage().ok().flatten()
}

/// Reads a sessionStorage item.
pub fn session_get(key: &str) -> Option<String> {
    session()?.get_item(key).ok().flatten()
}

/// Writes (or, with `None`, removes) a sessionStorage item.
pub fn session_set(key: &str, value: Option<&str>) {
    if let Some(s) = session() {
        let _ = match value {
            Some(v) => s.set_item(key, v),
            None => s.remove_item(key),
        };
    }
}
