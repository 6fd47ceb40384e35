//! The small icon of an MCP tool, prompt or server, shown where its name shows (the tool card,
//! the approval prompt, the `/` menu). The service serves it from its own origin
//! (`{prefix}/api/icons/{kind}/{name}`, image types only, size-capped): the browser never
//! loads an icon from an MCP server's host, and the page's CSP stays as it is. An item without
//! an icon answers 404 and the image hides itself. Kept to one plain `<img>` (no signal, no
//! reactive child, the size in the stylesheet): it is on the first load, whose budget is tight.

use leptos::prelude::*;
use wasm_bindgen::JsCast;

use crate::state::Store;

/// A 16 px icon of the `kind` (`tool`, `prompt`, `server`) named `name`, with its alt text;
/// hidden once it fails to load. Nothing without the page's store (and so its prefix).
pub fn mcp_icon(kind: &'static str, name: &str) -> Option<impl IntoView + use<>> {
    let prefix = use_context::<Store>()?
        .api
        .with_value(|a| a.prefix().to_owned());
    let src = format!(
        "{prefix}/api/icons/{kind}/{}",
        String::from(js_sys::encode_uri_component(name))
    );
    Some(view! {
        <img class="lmck-icon" src=src alt=format!("{kind} icon: {name}") on:error=hide />
    })
}

/// Hides the image that failed to load (the item has no icon).
fn hide(ev: leptos::ev::ErrorEvent) {
    if let Some(el) = ev
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
    {
        let _ = el.set_attribute("hidden", "");
    }
}
