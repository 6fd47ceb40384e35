//! The small icon of an MCP tool, prompt or server, shown where its name shows (the tool card,
//! the `/` menu). The service serves it from its own origin
//! (`{prefix}/api/icons/{kind}/{name}`, image types only, size-capped): the browser never
//! loads an icon from an MCP server's host, and the page's CSP stays as it is. An item without
//! an icon answers 404 and the image hides itself.

use leptos::prelude::*;

use crate::state::Store;

/// The URL of the icon of the `kind` (`tool`, `prompt`, `server`) named `name`, when the page
/// has its store (and so its prefix).
pub fn icon_url(kind: &str, name: &str) -> Option<String> {
    let prefix = use_context::<Store>()?
        .api
        .with_value(|a| a.prefix().to_owned());
    Some(format!("{prefix}/api/icons/{kind}/{}", encode(name)))
}

/// Percent-encodes everything but unreserved characters (a name is one path segment).
fn encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A 16 px icon with its alt text; nothing once it fails to load (no icon: 404).
#[component]
pub fn McpIcon(kind: &'static str, name: String) -> impl IntoView {
    let failed = RwSignal::new(false);
    let src = icon_url(kind, &name);
    let alt = format!("{kind} icon: {name}");
    move || {
        let src = src.clone().filter(|_| !failed.get())?;
        Some(view! {
            <img class="lmck-icon" src=src alt=alt.clone() width="16" height="16"
                loading="lazy" decoding="async" on:error=move |_| failed.set(true) />
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_one_encoded_path_segment() {
        assert_eq!(encode("fs__read.v2"), "fs__read.v2");
        assert_eq!(encode("a/b c?é"), "a%2Fb%20c%3F%C3%A9");
    }
}
