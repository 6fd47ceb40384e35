//! Browser glue of [`super::highlight`]: loads highlight.js on the first fenced code block and
//! installs it as the highlighter.
//!
//! The highlighter is a separate, content-hashed classic script in the bundle
//! (`lmchatkit-highlight-<hash>.js`, made by `scripts/build-ui.sh` from npm
//! `@highlightjs/cdn-assets`: the core plus the languages the UI supports). Its private
//! highlight.js instance is published as `globalThis.__lmchatkit.hljs` (never as the global
//! `hljs`, so a host page's own copy is left alone). The stable loader (`server/build.rs`) puts
//! the script's URL into `globalThis.__lmchatkit.highlighter`. When there is no such URL (e.g.
//! under `trunk serve`) or the script fails to load, code simply stays plain.

use js_sys::{Function, Object, Reflect};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

use super::highlight;

/// `globalThis.__lmchatkit`, the namespace the loader and the highlighter script share.
fn namespace() -> Option<JsValue> {
    Reflect::get(&js_sys::global(), &"__lmchatkit".into())
        .ok()
        .filter(|v| v.is_object())
}

/// Appends the highlighter's `<script>` to the document (called once, by [`highlight::want`]).
pub(crate) fn request() {
    let Some(url) = namespace()
        .and_then(|ns| Reflect::get(&ns, &"highlighter".into()).ok())
        .and_then(|u| u.as_string())
    else {
        return;
    };
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let Ok(script) = doc.create_element("script") else {
        return;
    };
    let _ = script.set_attribute("src", &url);
    let _ = script.set_attribute("async", "");
    let _ = script.set_attribute("data-lmchatkit-highlighter", "");
    let onload = Closure::once_into_js(installed);
    let _ = script.add_event_listener_with_callback("load", onload.unchecked_ref());
    let onerror = Closure::once_into_js(move || {
        leptos::logging::warn!("lmchatkit: the code highlighter failed to load; code stays plain");
    });
    let _ = script.add_event_listener_with_callback("error", onerror.unchecked_ref());
    let parent = doc
        .query_selector("head")
        .ok()
        .flatten()
        .or_else(|| doc.document_element());
    if let Some(parent) = parent {
        let _ = parent.append_child(&script);
    }
}

/// The script ran: installs its highlight.js instance (if it is there).
fn installed() {
    let Some(hljs) = namespace()
        .and_then(|ns| Reflect::get(&ns, &"hljs".into()).ok())
        .filter(|h| h.is_object())
    else {
        return;
    };
    let get_language = Reflect::get(&hljs, &"getLanguage".into())
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok());
    let highlight_fn = Reflect::get(&hljs, &"highlight".into())
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok());
    let (Some(get_language), Some(highlight_fn)) = (get_language, highlight_fn) else {
        return;
    };
    highlight::install(std::rc::Rc::new(move |lang: &str, code: &str| {
        let known = get_language.call1(&hljs, &lang.into()).ok()?;
        if known.is_undefined() || known.is_null() {
            return None;
        }
        let options = Object::new();
        Reflect::set(&options, &"language".into(), &lang.into()).ok()?;
        Reflect::set(&options, &"ignoreIllegals".into(), &true.into()).ok()?;
        let result = highlight_fn.call2(&hljs, &code.into(), &options).ok()?;
        Reflect::get(&result, &"value".into()).ok()?.as_string()
    }));
}
