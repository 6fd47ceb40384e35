//! Mermaid diagrams in replies. A closed ```mermaid block renders as a code block marked
//! `lmck-diagram` (`markdown::sanitize::DIAGRAM_OPEN`); once its reply has finished, [`mount`]
//! gives the block a frame that draws its code, and the frame tells the page its height or why it
//! could not draw it.
//!
//! Decisions:
//! - **In a sandboxed frame, never in the chat's page.** Mermaid's SVG carries inline styles,
//!   which the page's policy refuses (`style-src 'self'`), and Mermaid (5.8 MB of JavaScript)
//!   parses text the model wrote. The frame (`{prefix}/diagram`, served by the service with its
//!   own policy: `server/src/bundle.rs`'s `DIAGRAM_CSP`) is `sandbox="allow-scripts"`, so an
//!   opaque origin: no cookies, storage or script access to the chat, no popups, no navigation of
//!   the chat. Its policy allows no network (`default-src 'none'`), so a diagram cannot fetch or
//!   leak anything. The source travels in the frame URL's fragment, which is never sent. The page
//!   keeps its own policy unchanged (it already frames its own origin, for MCP App views).
//! - **Loaded when a diagram appears**: nothing of Mermaid is in the UI's bundle; the first frame
//!   fetches it (1.3 MB as brotli, then cached as `immutable`), and this code is in the
//!   transcript's chunk.
//! - **Drawn when the reply has finished.** A streaming reply's HTML is replaced on every delta,
//!   which would reload its frames each time; until the reply ends, and while a fence is still
//!   open, the block is code.
//! - **The code stays in the block**: it shows until the diagram is drawn, stays with the
//!   parser's message when the diagram cannot be drawn, and comes back with the "Source" toggle
//!   (a pressed/unpressed button). Copy copies the code either way.
//! - **Theme**: the frame is told light, dark or the system's; a change of theme draws again.
//! - **The frame's messages are trusted for nothing but its height (clamped) and an error text
//!   (shown as text)**, and only from the window of a diagram frame in this page, whose origin is
//!   opaque (`"null"`).

use std::cell::Cell;

use js_sys::Reflect;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Element, HtmlIFrameElement};

use crate::state::Theme;

/// The frame's class.
const FRAME_CLASS: &str = "lmck-diagram-frame";
/// On the block once its frame has drawn the diagram.
const READY: &str = "lmck-diagram-ready";
/// On the block when the diagram could not be drawn.
const FAILED: &str = "lmck-diagram-failed";
/// On the block while the user shows the source.
const SOURCE: &str = "lmck-diagram-source";
/// The frame's height is kept between these (CSS pixels).
const HEIGHTS: (f64, f64) = (16.0, 4000.0);
/// Longest parser message shown (characters).
const MESSAGE_CHARS: usize = 500;

thread_local! {
    static WIRED: Cell<bool> = const { Cell::new(false) };
}

/// The theme's name in the frame's URL.
fn theme_name(theme: Theme) -> &'static str {
    match theme {
        Theme::System => "system",
        Theme::Light => "light",
        Theme::Dark => "dark",
    }
}

/// The frame's URL for `code` in `theme`.
pub fn frame_url(prefix: &str, theme: Theme, code: &str) -> String {
    let code: String = js_sys::encode_uri_component(code).into();
    format!("{prefix}/diagram#{},{code}", theme_name(theme))
}

/// Gives every diagram block under `root` a frame, unless it has one for `theme` already (a
/// block drawn in another theme gets a new one). Wires the page's listeners the first time.
pub fn mount(root: &Element, prefix: &str, theme: Theme) {
    let Ok(blocks) = root.query_selector_all(".lmck-diagram") else {
        return;
    };
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    if blocks.length() > 0 {
        wire();
    }
    let name = theme_name(theme);
    for i in 0..blocks.length() {
        let Some(block) = blocks.item(i).and_then(|n| n.dyn_into::<Element>().ok()) else {
            continue;
        };
        if block.get_attribute("data-theme").as_deref() == Some(name) {
            continue;
        }
        let Some(code) = block
            .query_selector("pre > code")
            .ok()
            .flatten()
            .and_then(|c| c.text_content())
        else {
            continue;
        };
        reset(&block);
        let Ok(frame) = doc.create_element("iframe") else {
            continue;
        };
        for (k, v) in [
            ("class", FRAME_CLASS),
            ("sandbox", "allow-scripts"),
            ("referrerpolicy", "no-referrer"),
            ("title", "Diagram"),
            ("height", "0"),
        ] {
            let _ = frame.set_attribute(k, v);
        }
        let _ = frame.set_attribute("src", &frame_url(prefix, theme, &code));
        let _ = block.append_child(&frame);
        let _ = block.set_attribute("data-theme", name);
    }
}

/// Takes a block back to its code: no frame, no message, not drawn.
fn reset(block: &Element) {
    for selector in [":scope > iframe", ":scope > .lmck-diagram-error"] {
        if let Ok(Some(old)) = block.query_selector(selector) {
            old.remove();
        }
    }
    let _ = block.class_list().remove_2(READY, FAILED);
}

/// The page's two listeners, once: the frames' messages and the "Source" toggles.
fn wire() {
    if WIRED.with(|w| w.replace(true)) {
        return;
    }
    let Some(window) = web_sys::window() else {
        return;
    };
    let on_message = Closure::<dyn Fn(web_sys::MessageEvent)>::new(on_message);
    let _ = window.add_event_listener_with_callback("message", on_message.as_ref().unchecked_ref());
    // For the page's life, like the listeners of `code_hooks`.
    on_message.forget();
    let on_click = Closure::<dyn Fn(web_sys::Event)>::new(on_click);
    let _ = window.add_event_listener_with_callback("click", on_click.as_ref().unchecked_ref());
    on_click.forget();
}

/// A message from a diagram frame: its height, or why it could not draw.
fn on_message(ev: web_sys::MessageEvent) {
    if ev.origin() != "null" {
        return;
    }
    let data = ev.data();
    let field = |k: &str| Reflect::get(&data, &JsValue::from_str(k)).ok();
    if field("lmchatkit").and_then(|v| v.as_string()).as_deref() != Some("diagram") {
        return;
    }
    let Some(source) = ev.source() else {
        return;
    };
    let Some(frame) = frame_of(&JsValue::from(source)) else {
        return;
    };
    let Some(block) = frame.parent_element() else {
        return;
    };
    if let Some(height) = field("height").and_then(|v| v.as_f64()) {
        let height = height.clamp(HEIGHTS.0, HEIGHTS.1).round();
        let _ = frame.set_attribute("height", &format!("{height}"));
        let _ = block.class_list().add_1(READY);
    } else if let Some(error) = field("error").and_then(|v| v.as_string()) {
        frame.remove();
        let _ = block.class_list().remove_1(READY);
        let _ = block.class_list().add_1(FAILED);
        let Some(doc) = block.owner_document() else {
            return;
        };
        if let Ok(p) = doc.create_element("p") {
            let _ = p.set_attribute("class", "lmck-diagram-error");
            let error: String = error.chars().take(MESSAGE_CHARS).collect();
            p.set_text_content(Some(&format!("The diagram could not be drawn: {error}")));
            let _ = block.append_child(&p);
        }
    }
}

/// The diagram frame whose window is `source`.
fn frame_of(source: &JsValue) -> Option<HtmlIFrameElement> {
    let doc = web_sys::window()?.document()?;
    let frames = doc
        .query_selector_all(&format!(".lmck-diagram > iframe.{FRAME_CLASS}"))
        .ok()?;
    (0..frames.length())
        .filter_map(|i| frames.item(i)?.dyn_into::<HtmlIFrameElement>().ok())
        .find(|f| {
            f.content_window()
                .is_some_and(|w| js_sys::Object::is(&JsValue::from(w), source))
        })
}

/// A click on a block's "Source" toggle: shows the code, or the diagram again.
fn on_click(ev: web_sys::Event) {
    let Some(button) = ev
        .target()
        .and_then(|t| t.dyn_into::<Element>().ok())
        .and_then(|t| {
            t.closest(".lmck-diagram > .lmck-diagram-toggle")
                .ok()
                .flatten()
        })
    else {
        return;
    };
    let Some(block) = button.parent_element() else {
        return;
    };
    let shown = block.class_list().toggle(SOURCE).unwrap_or(false);
    let _ = button.set_attribute("aria-pressed", if shown { "true" } else { "false" });
}
