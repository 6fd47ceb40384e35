//! MCP App views (SEP-1865) in the transcript: [`bridge`] is the host side of the protocol as a
//! pure state machine, [`frame`] mounts a view's iframe and carries out the bridge's effects,
//! [`context`] builds the host context (theme, CSS variables, locale), [`partial`] reads a call's
//! arguments while the model writes them, [`from_app`] gates what a view adds to the chat
//! (messages with consent, model context) and this module keeps the registry of mounted views,
//! so a conversation switch can tear them all down (awaiting each view's answer, with a timeout)
//! and at most [`MAX_MOUNTED`] stay mounted at once.

pub mod bridge;
pub mod context;
pub mod frame;
pub mod from_app;
pub mod partial;
#[cfg(test)]
mod tests;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::Closure;

/// Views kept mounted at once; beyond it the one least recently on screen is torn down and
/// remounts when scrolled back into view.
pub const MAX_MOUNTED: usize = 6;

/// How long a teardown waits for the view's answer.
pub const TEARDOWN_TIMEOUT_MS: u32 = 1_000;

/// A mounted view, as the registry sees it.
pub struct ViewHandle {
    /// The tool call id of the view.
    pub key: String,
    /// On screen now (kept current by the view's intersection observer).
    pub visible: Rc<Cell<bool>>,
    /// When it was last on screen (ms).
    pub last_seen: Rc<Cell<f64>>,
    /// Sends `ui/resource-teardown` and resolves when the view answered (or at once).
    pub teardown: Box<dyn Fn(&str) -> js_sys::Promise>,
    /// Removes the iframe (after a teardown).
    pub unmount: Box<dyn Fn()>,
}

thread_local! {
    static VIEWS: RefCell<Vec<Rc<ViewHandle>>> = const { RefCell::new(Vec::new()) };
}

/// Registers a mounted view, tearing down the least recently seen off-screen ones over the cap.
pub fn register(view: Rc<ViewHandle>) {
    VIEWS.with(|v| v.borrow_mut().push(view));
    let over: Vec<Rc<ViewHandle>> = VIEWS.with(|v| {
        let mut all = v.borrow().clone();
        if all.len() <= MAX_MOUNTED {
            return Vec::new();
        }
        let excess = all.len() - MAX_MOUNTED;
        all.retain(|h| !h.visible.get());
        all.sort_by(|a, b| a.last_seen.get().total_cmp(&b.last_seen.get()));
        all.truncate(excess);
        all
    });
    for h in over {
        unregister(&h.key);
        let done = (h.teardown)("scrolled out of view");
        wasm_bindgen_futures::spawn_local(async move {
            let _ = wasm_bindgen_futures::JsFuture::from(with_timeout(done)).await;
            (h.unmount)();
        });
    }
}

/// Forgets a view (it was removed).
pub fn unregister(key: &str) {
    VIEWS.with(|v| v.borrow_mut().retain(|h| h.key != key));
}

/// Tears every mounted view down and waits for their answers (at most
/// [`TEARDOWN_TIMEOUT_MS`]); call before the transcript is replaced.
pub async fn teardown_all(reason: &str) {
    let all: Vec<Rc<ViewHandle>> = VIEWS.with(|v| v.borrow_mut().drain(..).collect());
    if all.is_empty() {
        return;
    }
    let promises = js_sys::Array::new();
    for h in &all {
        promises.push(&(h.teardown)(reason));
    }
    let all_done = js_sys::Promise::all(&promises);
    let _ = wasm_bindgen_futures::JsFuture::from(with_timeout(all_done)).await;
}

/// `p`, or a resolved promise after [`TEARDOWN_TIMEOUT_MS`], whichever comes first.
fn with_timeout(p: js_sys::Promise) -> js_sys::Promise {
    let timer = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(
                &resolve,
                TEARDOWN_TIMEOUT_MS as i32,
            );
        }
    });
    js_sys::Promise::race(&js_sys::Array::of2(&p, &timer))
}

/// Best effort on page unload: every view gets its teardown request (nobody waits).
pub fn install_unload_teardown() {
    let Some(w) = web_sys::window() else { return };
    let cb = Closure::<dyn Fn()>::new(|| {
        let all: Vec<Rc<ViewHandle>> = VIEWS.with(|v| v.borrow_mut().drain(..).collect());
        for h in all {
            let _ = (h.teardown)("page unload");
        }
    });
    let _ = w.add_event_listener_with_callback("pagehide", cb.as_ref().unchecked_ref());
    cb.forget();
}
