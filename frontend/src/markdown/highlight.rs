//! Syntax highlighting of fenced code blocks, by a highlighter that is loaded lazily (highlight.js
//! in the UI, see `markdown/hljs.rs`; any [`Highlighter`] in tests).
//!
//! - **When.** Only a *closed* fenced block with a language is highlighted ([`fence_closed`]): the
//!   code of an open fence (a reply still streaming it) keeps growing, so it stays plain code
//!   until its closing fence arrives. An unclosed fence at the end of a finished reply stays
//!   plain as well (the renderer cannot tell it from one still streaming).
//! - **Lazy.** The first fenced block with a language that the renderer meets calls
//!   [`want`], which asks for the highlighter once (`hljs::request` in the browser;
//!   nothing natively). Until it is [`install`]ed, code renders plain. Installing bumps
//!   [`generation`]: [`super::Incremental`] re-renders from the start on its next push, and the
//!   [`subscribe`]d callbacks re-render messages that are already on screen.
//! - **Cached.** Each `(language, code)` is highlighted once; the result is kept (up to
//!   [`CACHE_BYTES`]) so re-parsing a tail that holds a closed block, or re-rendering a message,
//!   does not run the highlighter again.
//! - **Safe.** The highlighter's output is used only when [`is_safe_highlight`] accepts it: text
//!   escaped with the five entities a highlighter emits, `<span class="hljs-…">` (or
//!   `language-…`) and `</span>`, balanced, and exactly the input code once tags are removed and
//!   entities decoded. Anything else falls back to the escaped plain code.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// A highlighter: `(language, code)` → HTML of the highlighted code, `None` when the language is
/// unknown (or the highlighter failed).
pub type Highlighter = Rc<dyn Fn(&str, &str) -> Option<String>>;

/// Upper bound of the cache (bytes of code and HTML); past it the cache starts over.
pub const CACHE_BYTES: usize = 4 << 20;

#[derive(Default)]
struct State {
    highlighter: Option<Highlighter>,
    /// Bumped by every [`install`].
    generation: u64,
    /// [`want`] asked for the highlighter already.
    requested: bool,
    /// What [`want`] calls the first time (the browser's script loader; none natively).
    requester: Option<Rc<dyn Fn()>>,
    subscribers: Vec<Rc<dyn Fn()>>,
    /// `(language, code)` → the checked HTML, or `None` (unknown language / refused output).
    cache: HashMap<(String, String), Option<Rc<str>>>,
    cache_bytes: usize,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// Counts [`install`]s: renders made under an older generation may hold plain code that can now
/// be highlighted.
pub fn generation() -> u64 {
    STATE.with(|s| s.borrow().generation)
}

/// Whether a highlighter is installed.
pub fn is_ready() -> bool {
    STATE.with(|s| s.borrow().highlighter.is_some())
}

/// Whether [`want`] has asked for the highlighter.
pub fn is_requested() -> bool {
    STATE.with(|s| s.borrow().requested)
}

/// Installs the highlighter (clearing the cache and bumping [`generation`]), then runs the
/// [`subscribe`]d callbacks.
pub fn install(highlighter: Highlighter) {
    let subscribers = STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.highlighter = Some(highlighter);
        s.generation += 1;
        s.cache.clear();
        s.cache_bytes = 0;
        s.subscribers.clone()
    });
    for f in subscribers {
        f();
    }
}

/// Calls `f` after every [`install`] (the UI re-renders its finished messages then).
pub fn subscribe(f: impl Fn() + 'static) {
    STATE.with(|s| s.borrow_mut().subscribers.push(Rc::new(f)));
}

/// Sets what [`want`] calls to load the highlighter (the browser glue sets the script loader).
pub fn set_requester(f: impl Fn() + 'static) {
    STATE.with(|s| s.borrow_mut().requester = Some(Rc::new(f)));
}

/// A fenced code block with a language was rendered: asks for the highlighter, once.
pub fn want() {
    let requester = STATE.with(|s| {
        let mut s = s.borrow_mut();
        if s.requested || s.highlighter.is_some() {
            return None;
        }
        s.requested = true;
        #[cfg(target_arch = "wasm32")]
        if s.requester.is_none() {
            s.requester = Some(Rc::new(super::hljs::request));
        }
        s.requester.clone()
    });
    if let Some(f) = requester {
        f();
    }
}

/// The highlighted HTML of `code` in `language`, if a highlighter is installed, knows the
/// language and gives safe output.
pub(crate) fn highlight(language: &str, code: &str) -> Option<Rc<str>> {
    let key = (language.to_owned(), code.to_owned());
    let highlighter = STATE.with(|s| {
        let s = s.borrow();
        match s.cache.get(&key) {
            Some(hit) => Err(hit.clone()),
            None => Ok(s.highlighter.clone()),
        }
    });
    let highlighter = match highlighter {
        Err(hit) => return hit,
        Ok(None) => return None,
        Ok(Some(h)) => h,
    };
    let html = highlighter(language, code)
        .filter(|html| is_safe_highlight(code, html))
        .map(Rc::<str>::from);
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let size = key.0.len() + key.1.len() + html.as_ref().map_or(0, |h| h.len());
        if s.cache_bytes + size > CACHE_BYTES {
            s.cache.clear();
            s.cache_bytes = 0;
        }
        s.cache_bytes += size;
        s.cache.insert(key, html.clone());
    });
    html
}

/// How many `(language, code)` pairs are cached.
#[cfg(test)]
pub(crate) fn cached() -> usize {
    STATE.with(|s| s.borrow().cache.len())
}

/// Forgets the highlighter and the request (tests start from the page's first load).
#[cfg(test)]
pub(crate) fn reset() {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let generation = s.generation;
        *s = State::default();
        // Keep counting: an Incremental made before must still see a change.
        s.generation = generation + 1;
    });
}

/// Whether the fenced code block whose source is `block` (the range the parser gives its start
/// event: from the opening fence to the end of the block) ends with its closing fence.
///
/// The last line must be a run of the opening fence character at least as long as the opening
/// run (after container prefixes: indentation and `>`), and must not be the opening line itself.
/// A content line of a longer fence (```` ``` ```` inside ````` ```` `````) is therefore not a
/// closer, and neither is a line with an info string.
pub fn fence_closed(block: &str) -> bool {
    let opening = block.trim_start_matches([' ', '\t']);
    let Some(fence_char) = opening.chars().next().filter(|c| matches!(c, '`' | '~')) else {
        return false;
    };
    let open_len = opening.chars().take_while(|&c| c == fence_char).count();
    let body = block.trim_end_matches([' ', '\t', '\r', '\n']);
    let Some(nl) = body.rfind('\n') else {
        return false; // only the opening line
    };
    let last = body[nl + 1..]
        .trim_start_matches([' ', '\t', '>'])
        .trim_end_matches([' ', '\t', '\r']);
    last.chars().count() >= open_len && last.chars().all(|c| c == fence_char)
}

/// Whether `html` is a safe highlighting of `code` (see the module documentation).
pub fn is_safe_highlight(code: &str, html: &str) -> bool {
    const OPEN: &str = "<span class=\"";
    let mut text = String::with_capacity(code.len());
    let mut rest = html;
    let mut depth = 0usize;
    while let Some(i) = rest.find(['<', '&', '>', '"']) {
        text.push_str(&rest[..i]);
        rest = &rest[i..];
        if let Some(after) = rest.strip_prefix("</span>") {
            let Some(d) = depth.checked_sub(1) else {
                return false;
            };
            depth = d;
            rest = after;
        } else if let Some(after) = rest.strip_prefix(OPEN) {
            let Some(end) = after.find('"') else {
                return false;
            };
            if !after[end..].starts_with("\">") || !safe_classes(&after[..end]) {
                return false;
            }
            depth += 1;
            rest = &after[end + 2..];
        } else if rest.starts_with('&') {
            let entities = [
                ("&amp;", '&'),
                ("&lt;", '<'),
                ("&gt;", '>'),
                ("&quot;", '"'),
                ("&#x27;", '\''),
                ("&#39;", '\''),
            ];
            let Some((entity, c)) = entities.iter().find(|(e, _)| rest.starts_with(e)) else {
                return false;
            };
            text.push(*c);
            rest = &rest[entity.len()..];
        } else {
            // A bare `<`, `>` or `"`: not what an escaping highlighter writes.
            return false;
        }
    }
    text.push_str(rest);
    depth == 0 && text == code
}

/// `hljs-keyword`, `hljs-title function_`, `language-xml`: space-separated `[A-Za-z0-9_-]`
/// words, the first one `hljs-…` or `language-…`.
fn safe_classes(classes: &str) -> bool {
    let mut words = classes.split(' ');
    let first_ok = words
        .next()
        .is_some_and(|w| w.starts_with("hljs-") || w.starts_with("language-"));
    first_ok
        && classes.split(' ').all(|w| {
            !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        })
}
