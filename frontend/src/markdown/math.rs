//! Math in replies: `$…$`, `$$…$$`, `\(…\)` and `\[…\]` rendered as MathML, which browsers lay
//! out themselves: no script runs and no style attribute is written, so the page's CSP
//! (`script-src 'self'`, `style-src 'self'`) holds as it is.
//!
//! - **Delimiters.** pulldown-cmark's math option finds `$…$` (inline) and `$$…$$` (display) with
//!   its rules: an opening `$` is not followed by a space and a closing one is not preceded by
//!   one nor followed by a digit, so prices ("$5 and $10") stay text. `\(…\)` and `\[…\]` are
//!   what models write most; CommonMark reads them as escaped brackets, so [`delimiters`] first
//!   rewrites them, outside code and raw HTML, to `${…}$` and `$$…$$`: the same length (the
//!   renderer's block offsets stay true) and the same formula (`{…}` is an invisible group in
//!   LaTeX, and it lets `\( x \)` with its spaces be math). A delimiter whose closer is not
//!   in the same paragraph stays text.
//! - **Conversion** is math-core's (LaTeX to MathML Core, in the wasm chunk `math`, fetched the
//!   first time a formula is rendered, like the code highlighter; 0.7, the newest that builds
//!   with this toolchain). Until it has arrived a formula shows as its source in
//!   `<code class="lmck-math-pending">`; when it arrives [`generation`] changes and the
//!   [`subscribe`]d callbacks re-render what is on screen. LaTeX that does not parse is shown as
//!   its source in `<code class="lmck-math-error">`, with the parser's message as its `title`,
//!   never as an error of the reply.
//! - **Checked output.** The converter's MathML is rebuilt by [`clean_mathml`] before it is
//!   used: MathML Core elements and the few HTML ones math-core puts in `<mtext>` only (anything
//!   else, such as `\href`'s link, makes the formula show as code), presentation attributes only
//!   (re-escaped), entities checked. math-core writes some layout as `style` attributes (table
//!   column alignment, rules, widths); each known declaration becomes a class the stylesheet
//!   defines (`lmck-m-…`), and every other one is dropped (colours, font sizes, negative
//!   spaces: the formula stays readable, a little plainer).
//! - **Cached**: each `(display, source)` is converted once (up to [`CACHE_BYTES`]), so the
//!   streaming tail's re-parse at every frame does not convert its formulas again.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;
use std::rc::Rc;

use pulldown_cmark::{Event, Parser, Tag};

/// A converter: `(LaTeX, display)` → MathML, or the parser's message.
pub(crate) type MathFn = fn(&str, bool) -> Result<String, String>;

/// Upper bound of the cache (bytes of source and HTML); past it the cache starts over.
pub const CACHE_BYTES: usize = 1 << 20;

/// Class of a formula shown as its source until the converter arrives.
pub const PENDING_CLASS: &str = "lmck-math-pending";

#[derive(Default)]
struct State {
    generation: u64,
    subscribers: Vec<Rc<dyn Fn()>>,
    cache: HashMap<(bool, String), Rc<str>>,
    cache_bytes: usize,
    /// Formulas converted (cache misses with the converter here).
    conversions: u64,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// Counts arrivals of the converter (0 or 1): renders made before may hold formulas shown as
/// their source.
pub fn generation() -> u64 {
    STATE.with(|s| s.borrow().generation)
}

/// Calls `f` when the converter arrives (the UI re-renders its finished messages then).
pub fn subscribe(f: impl Fn() + 'static) {
    STATE.with(|s| s.borrow_mut().subscribers.push(Rc::new(f)));
}

/// The converter arrived: bumps [`generation`] and runs the subscribers.
#[cfg_attr(not(lmchatkit_split), allow(dead_code))]
fn arrived() {
    let subscribers = STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.generation += 1;
        s.cache.clear();
        s.cache_bytes = 0;
        s.subscribers.clone()
    });
    for f in subscribers {
        f();
    }
}

/// The converter itself: math-core, in the chunk `math` of a split build.
pub(crate) fn convert(latex: &str, display: bool) -> Result<String, String> {
    use math_core::{LatexToMathML, MathCoreConfig, MathDisplay};
    thread_local! {
        static CONVERTER: Option<LatexToMathML> =
            LatexToMathML::new(MathCoreConfig::default()).ok();
    }
    let display = if display {
        MathDisplay::Block
    } else {
        MathDisplay::Inline
    };
    CONVERTER.with(|c| match c {
        Some(c) => c
            .convert_with_local_state(latex, display)
            .map(|r| r.mathml)
            .map_err(|e| e.to_string()),
        None => Err("the math converter could not start".to_owned()),
    })
}

#[cfg(not(lmchatkit_split))]
mod linked {
    use super::MathFn;

    /// The converter: always here.
    pub(crate) fn converter() -> Option<MathFn> {
        Some(super::convert)
    }

    /// Nothing to load.
    pub fn want() {}
}

#[cfg(lmchatkit_split)]
mod split {
    use super::MathFn;
    use crate::lazy::{Arrival, LoadFailed, Loader};

    /// The chunk's one entry: the converter, as a function pointer into the chunk.
    #[leptos::wasm_split::wasm_split(math, wasm_split_path = ::leptos::wasm_split, fallible)]
    fn load_converter() -> Result<MathFn, LoadFailed> {
        Ok(super::convert)
    }

    thread_local! {
        static CONVERTER: Loader<MathFn> = const { Loader::new() };
    }

    /// The converter, if it has arrived.
    pub(crate) fn converter() -> Option<MathFn> {
        CONVERTER.with(|l| l.here())
    }

    /// A formula was rendered without the converter: loads it if nothing asked yet. A failed
    /// load is not tried again before a reload (a reply streaming while the service is out of
    /// reach would ask at every frame); its formulas stay readable as their source.
    pub fn want() {
        if CONVERTER.with(|l| l.not_asked()) {
            leptos::task::spawn_local(async {
                if let Arrival::Arrived(_) = Loader::ready(&CONVERTER, load_converter).await {
                    super::arrived();
                }
            });
        }
    }
}

#[cfg(not(lmchatkit_split))]
use linked::converter;
#[cfg(not(lmchatkit_split))]
pub use linked::want;
#[cfg(lmchatkit_split)]
use split::converter;
#[cfg(lmchatkit_split)]
pub use split::want;

/// The HTML of a formula: its checked MathML in `<span class="lmck-math">` (display formulas
/// also `lmck-math-display`), or its source as code (see the module documentation).
pub(crate) fn html(latex: &str, display: bool) -> String {
    let key = (display, latex.to_owned());
    if let Some(hit) = STATE.with(|s| s.borrow().cache.get(&key).cloned()) {
        return hit.to_string();
    }
    let Some(convert) = converter() else {
        want();
        return source(latex, display, PENDING_CLASS, None);
    };
    STATE.with(|s| s.borrow_mut().conversions += 1);
    let html = match convert(latex, display) {
        Ok(mathml) => match clean_mathml(&mathml) {
            Some(clean) => {
                let class = if display {
                    "lmck-math lmck-math-display"
                } else {
                    "lmck-math"
                };
                format!("<span class=\"{class}\">{clean}</span>")
            }
            None => source(
                latex,
                display,
                "lmck-math-error",
                Some("this formula uses markup the chat does not show"),
            ),
        },
        Err(message) => source(latex, display, "lmck-math-error", Some(&message)),
    };
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let size = key.1.len() + html.len();
        if s.cache_bytes + size > CACHE_BYTES {
            s.cache.clear();
            s.cache_bytes = 0;
        }
        s.cache_bytes += size;
        s.cache.insert(key, Rc::from(html.as_str()));
    });
    html
}

/// A formula shown as its source, between `$` (inline) or `$$` (display), in `<code>`.
fn source(latex: &str, display: bool, class: &str, title: Option<&str>) -> String {
    let dollars = if display { "$$" } else { "$" };
    let mut html = format!("<code class=\"{class}\"");
    if let Some(title) = title {
        html.push_str(" title=\"");
        super::sanitize::escape_into(&mut html, title);
        html.push('"');
    }
    html.push('>');
    html.push_str(dollars);
    super::sanitize::escape_into(&mut html, latex);
    html.push_str(dollars);
    html.push_str("</code>");
    html
}

/// `text` with its `\(…\)` and `\[…\]` formulas rewritten to `${…}$` and `$$…$$` (same length),
/// outside code spans, code blocks, raw HTML and `$` math; `None` when there is nothing to
/// rewrite.
pub(crate) fn delimiters(text: &str) -> Option<String> {
    if !(text.contains("\\(") || text.contains("\\[")) {
        return None;
    }
    let protected = protected_ranges(text);
    let inside = |at: usize| protected.iter().any(|r| r.contains(&at));
    let bytes = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        if inside(i) {
            i += 1;
            continue;
        }
        let closer = match bytes[i + 1] {
            b'(' => b')',
            b'[' => b']',
            _ => {
                i += 2; // an escaped character (`\\` included) is never a delimiter
                continue;
            }
        };
        match find_closer(bytes, i + 2, closer, &inside) {
            Some(close) => {
                let out = out.get_or_insert_with(|| bytes.to_vec());
                let (open_with, close_with) = if closer == b')' {
                    (b"${", b"}$")
                } else {
                    (b"$$", b"$$")
                };
                out[i..i + 2].copy_from_slice(open_with);
                out[close..close + 2].copy_from_slice(close_with);
                i = close + 2;
            }
            None => i += 2,
        }
    }
    // Only ASCII bytes were replaced by ASCII bytes.
    out.and_then(|o| String::from_utf8(o).ok())
}

/// Where `\` + `closer` first follows `from`, within the paragraph (no blank line between) and
/// outside protected ranges.
fn find_closer(
    bytes: &[u8],
    from: usize,
    closer: u8,
    inside: &impl Fn(usize) -> bool,
) -> Option<usize> {
    let mut j = from;
    while j < bytes.len() {
        match bytes[j] {
            b'\\' if j + 1 < bytes.len() => {
                if inside(j) {
                    return None;
                }
                if bytes[j + 1] == closer {
                    return (j > from).then_some(j);
                }
                j += 2;
            }
            b'\n' => {
                let rest = &bytes[j + 1..];
                let blank = rest
                    .iter()
                    .take_while(|&&b| b == b' ' || b == b'\t' || b == b'\r')
                    .count();
                if rest.get(blank).is_none_or(|&b| b == b'\n') {
                    return None;
                }
                j += 1;
            }
            _ => j += 1,
        }
    }
    None
}

/// The byte ranges of `text` where a `\(` is not a delimiter: code spans and blocks, raw HTML,
/// and `$` math.
fn protected_ranges(text: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut skip_until = 0;
    for (event, range) in Parser::new_ext(text, super::options()).into_offset_iter() {
        if range.start < skip_until {
            continue;
        }
        match event {
            Event::Start(Tag::CodeBlock(_) | Tag::HtmlBlock) => {
                skip_until = range.end;
                ranges.push(range);
            }
            Event::Code(_)
            | Event::InlineHtml(_)
            | Event::Html(_)
            | Event::InlineMath(_)
            | Event::DisplayMath(_) => ranges.push(range),
            _ => {}
        }
    }
    ranges
}

/// MathML elements kept (MathML Core), and the HTML elements math-core writes inside `<mtext>`.
pub(crate) const TAGS: &[&str] = &[
    "math",
    "mrow",
    "mi",
    "mn",
    "mo",
    "ms",
    "mtext",
    "mspace",
    "msub",
    "msup",
    "msubsup",
    "munder",
    "mover",
    "munderover",
    "mfrac",
    "msqrt",
    "mroot",
    "mtable",
    "mtr",
    "mtd",
    "mstyle",
    "mpadded",
    "mphantom",
    "menclose",
    "merror",
    "mmultiscripts",
    "mprescripts",
    "semantics",
    "annotation",
    "b",
    "i",
    "em",
    "code",
    "span",
    "s",
    "u",
];

/// Presentation attributes kept (their values re-escaped).
pub(crate) const ATTRS: &[&str] = &[
    "display",
    "displaystyle",
    "scriptlevel",
    "mathvariant",
    "stretchy",
    "fence",
    "separator",
    "lspace",
    "rspace",
    "accent",
    "accentunder",
    "linethickness",
    "width",
    "height",
    "depth",
    "voffset",
    "notation",
    "movablelimits",
    "largeop",
    "symmetric",
    "minsize",
    "maxsize",
    "form",
    "columnspan",
    "rowspan",
    "encoding",
];

/// math-core's `style` declarations (spaces removed) that the stylesheet has a class for.
const STYLE_CLASSES: &[(&str, &str)] = &[
    ("text-align:left", "lmck-m-left"),
    ("text-align:right", "lmck-m-right"),
    ("text-align:center", "lmck-m-center"),
    ("width:100%", "lmck-m-w100"),
    ("width:50%", "lmck-m-w50"),
    ("width:7.5%", "lmck-m-w7"),
    ("border-top:0.05emsolidcurrentcolor", "lmck-m-bt"),
    ("border-top:0.05emdashedcurrentcolor", "lmck-m-btd"),
    ("border-left:0.05emsolidcurrentcolor", "lmck-m-bl"),
    ("border-left:0.05emdashedcurrentcolor", "lmck-m-bld"),
    ("border-right:0.05emsolidcurrentcolor", "lmck-m-br"),
    ("border-right:0.05emdashedcurrentcolor", "lmck-m-brd"),
    ("padding-left:0", "lmck-m-pl0"),
    ("padding-right:0", "lmck-m-pr0"),
    ("padding-top:0", "lmck-m-pt0"),
    ("padding-bottom:0", "lmck-m-pb0"),
    ("padding-left:1em", "lmck-m-pl1"),
    ("padding-left:0.1em", "lmck-m-pl01"),
    ("padding-right:0.1em", "lmck-m-pr01"),
    ("padding-top:0.1667em", "lmck-m-pt16"),
    ("font-variant-caps:small-caps", "lmck-m-sc"),
    ("math-shift:compact", "lmck-m-compact"),
];

/// The classes of a `style` attribute's known declarations (see [`STYLE_CLASSES`]).
fn style_classes(style: &str) -> impl Iterator<Item = &'static str> + '_ {
    style.split(';').filter_map(|declaration| {
        let declaration: String = declaration.chars().filter(|c| !c.is_whitespace()).collect();
        STYLE_CLASSES
            .iter()
            .find(|(d, _)| *d == declaration)
            .map(|(_, class)| *class)
    })
}

/// Whether math-core's own class `class` is kept (`menclose-…` strikes, `math-core-…` fonts).
fn kept_class(class: &str) -> bool {
    (class.starts_with("menclose-") || class.starts_with("math-core-"))
        && class.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
}

/// Rebuilds the converter's MathML from what [`TAGS`] and [`ATTRS`] allow (see the module
/// documentation); `None` when it holds anything else or is not well formed.
pub fn clean_mathml(mathml: &str) -> Option<String> {
    let mut out = String::with_capacity(mathml.len());
    let mut open: Vec<&str> = Vec::new();
    let mut rest = mathml;
    let mut seen_root = false;
    while !rest.is_empty() {
        let Some(lt) = rest.find('<') else {
            if !rest.trim().is_empty() {
                return None; // text outside `<math>`
            }
            break;
        };
        if open.is_empty() && !rest[..lt].trim().is_empty() {
            return None; // text outside `<math>`
        }
        push_text(&mut out, &rest[..lt])?;
        rest = &rest[lt + 1..];
        let gt = rest.find('>')?;
        let tag = &rest[..gt];
        rest = &rest[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            if open.pop()? != name {
                return None;
            }
            out.push_str("</");
            out.push_str(name);
            out.push('>');
            continue;
        }
        if open.is_empty() && seen_root {
            return None; // one `<math>` only
        }
        let (tag, self_closing) = match tag.strip_suffix('/') {
            Some(t) => (t, true),
            None => (tag, false),
        };
        let name_end = tag
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(tag.len());
        let name = &tag[..name_end];
        let name = *TAGS.iter().find(|t| **t == name)?;
        if open.is_empty() && name != "math" {
            return None;
        }
        seen_root = true;
        out.push('<');
        out.push_str(name);
        let mut classes: Vec<&str> = Vec::new();
        for (attr, value) in attributes(&tag[name_end..])? {
            match attr {
                "class" => classes.extend(value.split_whitespace().filter(|c| kept_class(c))),
                "style" => {
                    for class in style_classes(value) {
                        classes.push(class);
                    }
                }
                _ if ATTRS.contains(&attr) => {
                    out.push(' ');
                    out.push_str(attr);
                    out.push_str("=\"");
                    push_text(&mut out, value)?;
                    out.push('"');
                }
                _ => {} // dropped (math-core writes no other attribute on these elements)
            }
        }
        if !classes.is_empty() {
            out.push_str(" class=\"");
            out.push_str(&classes.join(" "));
            out.push('"');
        }
        if self_closing {
            out.push_str("/>");
        } else {
            out.push('>');
            open.push(name);
        }
    }
    (open.is_empty() && seen_root).then_some(out)
}

/// The `name="value"` pairs of a start tag's attribute text; `None` unless every one is that.
fn attributes(mut text: &str) -> Option<Vec<(&str, &str)>> {
    let mut attrs = Vec::new();
    loop {
        text = text.trim_start();
        if text.is_empty() {
            return Some(attrs);
        }
        let eq = text.find('=')?;
        let name = &text[..eq];
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-') {
            return None;
        }
        let value = text[eq + 1..].strip_prefix('"')?;
        let end = value.find('"')?;
        attrs.push((name, &value[..end]));
        text = &value[end + 1..];
    }
}

/// Appends escaped text as it is, after checking it: no `<`, `>` or `"`, and every `&` starts a
/// character reference (`&name;`, `&#digits;`, `&#xhex;`).
fn push_text(out: &mut String, text: &str) -> Option<()> {
    if text.contains(['<', '>', '"']) {
        return None;
    }
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        let after = &rest[amp + 1..];
        let semi = after.find(';')?;
        let name = &after[..semi];
        let valid = if let Some(hex) = name.strip_prefix("#x").or(name.strip_prefix("#X")) {
            !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit())
        } else if let Some(dec) = name.strip_prefix('#') {
            !dec.is_empty() && dec.bytes().all(|b| b.is_ascii_digit())
        } else {
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric())
        };
        if !valid {
            return None;
        }
        rest = &after[semi + 1..];
    }
    out.push_str(text);
    Some(())
}

/// Forgets the cache (tests that count conversions start empty); the conversions so far.
#[cfg(test)]
pub(crate) fn clear_cache() -> u64 {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.cache.clear();
        s.cache_bytes = 0;
        s.conversions
    })
}

/// Formulas converted so far.
#[cfg(test)]
pub(crate) fn conversions() -> u64 {
    STATE.with(|s| s.borrow().conversions)
}
