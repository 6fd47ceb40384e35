//! The renderer's heavy half, loaded when first needed: pulldown-cmark, the sanitiser and the
//! link-label folding are a wasm chunk of their own (`markdown`, about 77 KB of the UI gzipped),
//! so a first paint that shows no reply does not wait for them.
//!
//! - **When it loads.** [`ready`] loads it, and returns at once when it is there. The UI calls
//!   it for the conversation a reload restores (together with `/api/config` and the
//!   conversation) and for a conversation opened (together with its fetch); a turn starts it
//!   without waiting ([`fetch`]: a reply's first delta usually comes after it), and so does a
//!   render that finds it missing ([`want`]).
//! - **Until it has arrived**, or when it could not be loaded, a text renders as itself: escaped,
//!   whitespace kept, in [`PLAIN_OPEN`]…`</div>`, so a reply is readable and nothing is lost.
//!   When it arrives, [`generation`] changes and the [`subscribe`]d callbacks run; the UI renders
//!   again what it showed plain, as it does when the code highlighter arrives.
//! - **A failed load is retried by the next [`ready`] or [`fetch`]** (the next turn, the next
//!   conversation opened), never by a render: a reply streaming while the service is out of
//!   reach would ask again at every frame.
//! - Without `--cfg lmchatkit_split` (`trunk serve`, native tests) the parser is linked in and
//!   always ready.

use super::{Defs, Parsed};

/// Parses a text into rendered top-level blocks (see [`super::parse`]).
pub(crate) type ParseFn = fn(&str, &Defs, bool) -> Parsed;

/// What a text rendered before the parser arrived starts with (escaped text follows, then
/// `</div>`). Text cannot spell it: rendering escapes `<` and `"`.
pub const PLAIN_OPEN: &str = "<div class=\"lmck-md-plain\">";

/// The text as shown without the parser: escaped, in one block (none for an empty text).
pub(crate) fn plain(text: &str) -> Parsed {
    let blocks = if text.is_empty() {
        Vec::new()
    } else {
        let mut html = String::with_capacity(PLAIN_OPEN.len() + text.len() + 6);
        html.push_str(PLAIN_OPEN);
        super::sanitize::escape_into(&mut html, text);
        html.push_str("</div>");
        vec![(0, html)]
    };
    Parsed {
        blocks,
        defs: Vec::new(),
    }
}

#[cfg(not(lmchatkit_split))]
mod linked {
    use super::ParseFn;

    /// The parser: always here.
    pub(crate) fn parser() -> Option<ParseFn> {
        Some(crate::markdown::parse_now)
    }

    /// Always ready.
    pub async fn ready() -> bool {
        true
    }

    /// Nothing to load.
    pub fn want() {}

    /// Nothing to load.
    pub fn fetch() {}

    /// Never changes.
    pub fn generation() -> u64 {
        0
    }

    /// Never called back (the parser never arrives later).
    pub fn subscribe(_f: impl Fn() + 'static) {}
}

#[cfg(lmchatkit_split)]
mod split {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::ParseFn;
    use crate::lazy::{Arrival, LoadFailed, Loader};

    /// The chunk's one entry: the parser, as a function pointer into the chunk.
    #[leptos::wasm_split::wasm_split(markdown, wasm_split_path = ::leptos::wasm_split, fallible)]
    fn load_parser() -> Result<ParseFn, LoadFailed> {
        Ok(crate::markdown::parse_now)
    }

    struct State {
        generation: u64,
        subscribers: Vec<Rc<dyn Fn()>>,
    }

    thread_local! {
        static PARSER: Loader<ParseFn> = const { Loader::new() };
        static STATE: RefCell<State> = const {
            RefCell::new(State {
                generation: 0,
                subscribers: Vec::new(),
            })
        };
    }

    /// The parser, if it has arrived.
    pub(crate) fn parser() -> Option<ParseFn> {
        PARSER.with(|l| l.here())
    }

    /// Loads the parser unless it is here; whether it is (`false`: the load failed). A call
    /// while a load is under way waits for that load's outcome.
    pub async fn ready() -> bool {
        match Loader::ready(&PARSER, load_parser).await {
            Arrival::Here(_) => true,
            Arrival::Arrived(_) => {
                arrived();
                true
            }
            Arrival::Failed => false,
        }
    }

    /// A render found the parser missing: loads it if nothing asked yet.
    pub fn want() {
        if PARSER.with(|l| l.not_asked()) {
            leptos::task::spawn_local(async {
                ready().await;
            });
        }
    }

    /// Starts [`ready`] without waiting for it (a failed load is tried again).
    pub fn fetch() {
        leptos::task::spawn_local(async {
            ready().await;
        });
    }

    /// Counts arrivals of the parser (0 or 1).
    pub fn generation() -> u64 {
        STATE.with(|s| s.borrow().generation)
    }

    /// Calls `f` when the parser arrives.
    pub fn subscribe(f: impl Fn() + 'static) {
        STATE.with(|s| s.borrow_mut().subscribers.push(Rc::new(f)));
    }

    /// The parser arrived: bumps [`generation`] and runs the subscribers.
    fn arrived() {
        let subscribers = STATE.with(|s| {
            let mut s = s.borrow_mut();
            s.generation += 1;
            s.subscribers.clone()
        });
        for f in subscribers {
            f();
        }
    }
}

#[cfg(not(lmchatkit_split))]
pub(crate) use linked::parser;
#[cfg(not(lmchatkit_split))]
pub use linked::{fetch, generation, ready, subscribe, want};
#[cfg(lmchatkit_split)]
pub(crate) use split::parser;
#[cfg(lmchatkit_split)]
pub use split::{fetch, generation, ready, subscribe, want};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_without_the_parser_is_one_escaped_block_with_its_whitespace_marked_to_keep() {
        let parsed = plain("**bold** <b>x</b> & \"q\"\n\n- item");
        assert_eq!(
            parsed.blocks,
            [(
                0,
                "<div class=\"lmck-md-plain\">**bold** &lt;b&gt;x&lt;/b&gt; &amp; &quot;q&quot;\n\n- item</div>"
                    .to_owned()
            )]
        );
        assert!(parsed.defs.is_empty());
        assert!(plain("").blocks.is_empty());
    }

    #[test]
    fn text_cannot_spell_the_plain_marker() {
        let html = plain(PLAIN_OPEN).blocks.remove(0).1;
        assert_eq!(html.matches(PLAIN_OPEN).count(), 1, "{html}");
    }

    #[test]
    fn the_linked_parser_is_always_ready() {
        assert!(parser().is_some());
        assert_eq!(generation(), 0);
    }
}
