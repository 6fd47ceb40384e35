//! The sanitising event filter between the parser and pulldown-cmark's HTML writer.
//!
//! Everything the model wrote reaches the writer as text, which the writer escapes, except what
//! this filter builds itself: raw HTML (block and inline) becomes text; links and images are only
//! emitted (as markup built here) when their URL passes [`link_url`] / [`image_url`], otherwise
//! their content is shown as plain text; an image is an `<img>` only for a `data:` URL, a remote
//! one is a placeholder link naming its host ([`image_host`]); code blocks get the `lmck-code`
//! markup and a copy button (a closed ```mermaid block the diagram markup, [`DIAGRAM_OPEN`]); tables get a scroll wrapper and their cells' alignment as a class.
//! `Tag::Link`, `Tag::Image` and `Tag::TableCell` never reach the writer (it would write
//! `style=""` for an aligned cell), and neither does an `Html`/`InlineHtml` event from the parser.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::iter::Peekable;
use std::rc::Rc;

use pulldown_cmark::{Alignment, CodeBlockKind, CowStr, Event, LinkType, Tag, TagEnd};
use pulldown_cmark_escape::{escape_href, escape_html};

use super::{autolink, highlight};

/// For each fenced code block of a parse, in order: whether it is closed (filled by the parser
/// loop as it meets their start events, read by [`Sanitize`] when it renders them).
pub(crate) type FenceQueue = Rc<RefCell<VecDeque<bool>>>;

/// Opening markup of a code block up to the language class (the UI finds the copy button by its
/// class and copies the text of the `<code>` next to it).
pub(crate) const CODE_OPEN: &str = "<div class=\"lmck-codeblock\"><button class=\"lmck-copy\" \
     type=\"button\" aria-label=\"Copy code\">Copy</button><pre><code class=\"lmck-code";

/// The fence language drawn as a diagram.
pub(crate) const DIAGRAM_LANGUAGE: &str = "mermaid";

/// Opening markup of a closed ```mermaid block: a code block (its copy button, its code, closed by
/// [`CODE_CLOSE`]) marked `lmck-diagram`, with the button that switches between the diagram and
/// its source. The code stays: it is what shows until the diagram is drawn, when it cannot be,
/// and when the user asks for the source.
pub(crate) const DIAGRAM_OPEN: &str = "<div class=\"lmck-codeblock lmck-diagram\"><button \
     class=\"lmck-copy\" type=\"button\" aria-label=\"Copy code\">Copy</button><button \
     class=\"lmck-diagram-toggle\" type=\"button\" aria-pressed=\"false\">Source</button><pre>\
     <code class=\"lmck-code language-mermaid\" data-lang=\"mermaid\">";

/// Closing markup of a code block.
pub(crate) const CODE_CLOSE: &str = "</code></pre></div>\n";

/// Opening markup of a table (a wrapper that scrolls horizontally).
pub(crate) const TABLE_OPEN: &str = "<div class=\"lmck-table\">";

/// Attributes every emitted link carries.
const LINK_ATTRS: &str = " rel=\"noopener noreferrer nofollow\" target=\"_blank\">";

/// Attributes of a remote image's placeholder link (the tag is closed by the caller).
const REMOTE_IMAGE_ATTRS: &str =
    " rel=\"noopener noreferrer nofollow\" target=\"_blank\" referrerpolicy=\"no-referrer\"";

/// Wraps a parser's events (one top-level block at a time) so that the HTML writer only ever sees
/// safe events.
pub(crate) struct Sanitize<'a, I: Iterator<Item = Event<'a>>> {
    inner: Peekable<I>,
    /// Events produced by the previous expansion, returned before reading `inner` again.
    queued: VecDeque<Event<'a>>,
    /// For each open `Tag::Link`: whether its opening `<a>` was emitted.
    links: Vec<bool>,
    /// Inside a code block (no autolinks there).
    in_code: bool,
    /// Whether each fenced code block still to come is closed.
    fences: FenceQueue,
    /// The column alignments of the table being rendered.
    alignments: Vec<Alignment>,
    /// Inside the table's header row (cells are `th`).
    in_table_head: bool,
    /// The column of the next cell of the current row.
    column: usize,
}

impl<'a, I: Iterator<Item = Event<'a>>> Sanitize<'a, I> {
    pub(crate) fn new(inner: I, fences: FenceQueue) -> Self {
        Self {
            inner: inner.peekable(),
            queued: VecDeque::new(),
            links: Vec::new(),
            in_code: false,
            fences,
            alignments: Vec::new(),
            in_table_head: false,
            column: 0,
        }
    }

    /// A code block: its opening markup. A closed fenced block with a language is highlighted
    /// when a highlighter is installed (its content and end are consumed and queued here).
    fn code_block(&mut self, kind: CodeBlockKind<'a>) -> Event<'a> {
        let open = code_open(&kind);
        let CodeBlockKind::Fenced(info) = kind else {
            self.in_code = true;
            return Event::Html(open.into());
        };
        let closed = self.fences.borrow_mut().pop_front().unwrap_or(false);
        let lang = language(&info);
        if lang.is_empty() {
            self.in_code = true;
            return Event::Html(open.into());
        }
        if lang == DIAGRAM_LANGUAGE {
            // A diagram: code until its fence closes, then the diagram block, whose code the UI
            // draws in a sandboxed frame (`components/diagrams.rs`). Never highlighted.
            self.in_code = true;
            return Event::Html(if closed {
                DIAGRAM_OPEN.into()
            } else {
                open.into()
            });
        }
        highlight::want();
        if !closed || !highlight::is_ready() {
            self.in_code = true;
            return Event::Html(open.into());
        }
        let mut code = String::new();
        for event in self.inner.by_ref() {
            match event {
                Event::Text(t) => code.push_str(&t),
                Event::End(TagEnd::CodeBlock) => break,
                _ => {}
            }
        }
        self.queued
            .push_back(match highlight::highlight(&lang, &code) {
                Some(html) => Event::Html(html.to_string().into()),
                None => Event::Text(code.into()),
            });
        self.queued.push_back(Event::Html(CODE_CLOSE.into()));
        Event::Html(open.into())
    }

    /// The event to emit for a start tag (`None`: nothing).
    fn start(&mut self, tag: Tag<'a>) -> Option<Event<'a>> {
        Some(match tag {
            Tag::HtmlBlock => Event::Html("<pre class=\"lmck-raw-html\">".into()),
            Tag::CodeBlock(kind) => self.code_block(kind),
            Tag::Table(alignments) => {
                self.alignments.clone_from(&alignments);
                self.queued.push_back(Event::Start(Tag::Table(alignments)));
                Event::Html(TABLE_OPEN.into())
            }
            Tag::TableHead => {
                (self.in_table_head, self.column) = (true, 0);
                Event::Start(Tag::TableHead)
            }
            Tag::TableRow => {
                self.column = 0;
                Event::Start(Tag::TableRow)
            }
            Tag::TableCell => Event::Html(self.cell_open().into()),
            Tag::Link {
                link_type,
                dest_url,
                title,
                ..
            } => {
                let url = if link_type == LinkType::Email {
                    format!("mailto:{dest_url}")
                } else {
                    dest_url.into_string()
                };
                match link_url(&url) {
                    Some(url) => {
                        self.links.push(true);
                        let mut html = String::from("<a href=\"");
                        let _ = escape_href(&mut html, &url);
                        push_title(&mut html, &title);
                        html.push_str(LINK_ATTRS);
                        Event::Html(html.into())
                    }
                    None => {
                        // Refused: the link text stays, as plain text.
                        self.links.push(false);
                        return None;
                    }
                }
            }
            Tag::Image {
                dest_url, title, ..
            } => {
                let url = image_url(&dest_url)?; // Refused: the alt text stays, as plain text.
                let html = if is_data(&url) {
                    self.image(&url, &title)
                } else {
                    // A remote image: never fetched by rendering it (see the module docs).
                    let host = image_host(&url)?; // No host: refused like a bad scheme.
                    self.remote_image(&url, &host, &title)
                };
                Event::Html(html.into())
            }
            tag => Event::Start(tag),
        })
    }

    /// The event to emit for an end tag (`None`: nothing).
    fn end(&mut self, tag: TagEnd) -> Option<Event<'a>> {
        Some(match tag {
            TagEnd::HtmlBlock => Event::Html("</pre>\n".into()),
            TagEnd::CodeBlock => {
                self.in_code = false;
                Event::Html(CODE_CLOSE.into())
            }
            TagEnd::Table => {
                self.queued.push_back(Event::Html("</div>\n".into()));
                Event::End(TagEnd::Table)
            }
            TagEnd::TableHead => {
                self.in_table_head = false;
                Event::End(TagEnd::TableHead)
            }
            TagEnd::TableCell => {
                Event::Html(if self.in_table_head { "</th>" } else { "</td>" }.into())
            }
            TagEnd::Link => {
                if self.links.pop().unwrap_or(false) {
                    Event::Html("</a>".into())
                } else {
                    return None;
                }
            }
            // Only refused images get here (an accepted one consumes its end).
            TagEnd::Image => return None,
            tag => Event::End(tag),
        })
    }

    /// The opening tag of a table cell: its column's alignment is a class (`lmck-align-left`,
    /// `-center`, `-right`), never a `style` attribute, which the page's CSP (`style-src 'self'`)
    /// would refuse.
    fn cell_open(&mut self) -> &'static str {
        let alignment = self.alignments.get(self.column).copied();
        self.column += 1;
        match (self.in_table_head, alignment) {
            (true, Some(Alignment::Left)) => "<th class=\"lmck-align-left\">",
            (true, Some(Alignment::Center)) => "<th class=\"lmck-align-center\">",
            (true, Some(Alignment::Right)) => "<th class=\"lmck-align-right\">",
            (true, _) => "<th>",
            (false, Some(Alignment::Left)) => "<td class=\"lmck-align-left\">",
            (false, Some(Alignment::Center)) => "<td class=\"lmck-align-center\">",
            (false, Some(Alignment::Right)) => "<td class=\"lmck-align-right\">",
            (false, _) => "<td>",
        }
    }

    /// Builds an inline `data:` image, consuming its content (the alt text) up to its end.
    fn image(&mut self, url: &str, title: &str) -> String {
        let alt = self.alt_text();
        let mut html = String::from("<img src=\"");
        let _ = escape_href(&mut html, url);
        html.push_str("\" alt=\"");
        let _ = escape_html(&mut html, &alt);
        push_title(&mut html, title);
        html.push_str(" loading=\"lazy\" referrerpolicy=\"no-referrer\" />");
        html
    }

    /// Builds the placeholder of a remote image, consuming its alt text: a link that opens the
    /// image in a new tab, showing its host and alt text; a `<span>` inside a link (links do not
    /// nest, and the outer link is what a click follows).
    fn remote_image(&mut self, url: &str, host: &str, title: &str) -> String {
        let alt = self.alt_text();
        let in_link = self.links.iter().any(|&emitted| emitted);
        let mut html = String::from(if in_link {
            "<span class=\"lmck-remote-image\""
        } else {
            "<a class=\"lmck-remote-image\" href=\""
        });
        if !in_link {
            let _ = escape_href(&mut html, url);
            html.push('"');
        }
        if !title.is_empty() {
            html.push_str(" title=\"");
            let _ = escape_html(&mut html, title);
            html.push('"');
        }
        if !in_link {
            html.push_str(REMOTE_IMAGE_ATTRS);
        }
        html.push_str("><span class=\"lmck-remote-image-host\">");
        let _ = escape_html(&mut html, host);
        html.push_str("</span><span class=\"lmck-remote-image-alt\">");
        let _ = escape_html(&mut html, &alt);
        html.push_str(if in_link {
            "</span></span>"
        } else {
            "</span></a>"
        });
        html
    }

    /// The plain text of an image's content (its alt text), consumed up to the image's end.
    fn alt_text(&mut self) -> String {
        let mut alt = String::new();
        let mut depth = 0usize;
        for event in self.inner.by_ref() {
            match event {
                Event::Start(_) => depth += 1,
                Event::End(_) if depth == 0 => break,
                Event::End(_) => depth -= 1,
                Event::Text(t) | Event::Code(t) | Event::InlineHtml(t) | Event::Html(t) => {
                    alt.push_str(&t)
                }
                Event::InlineMath(t) | Event::DisplayMath(t) => alt.push_str(&t),
                Event::SoftBreak | Event::HardBreak => alt.push(' '),
                _ => {}
            }
        }
        alt
    }
}

impl<'a, I: Iterator<Item = Event<'a>>> Sanitize<'a, I> {
    /// Text outside links and code, with its bare URLs made links. The parser may split a text
    /// run into several events, so the following text events are joined first.
    fn text(&mut self, first: CowStr<'a>) -> Event<'a> {
        let mut text = first;
        if matches!(self.inner.peek(), Some(Event::Text(_))) {
            let mut joined = text.into_string();
            while let Some(Event::Text(more)) = self.inner.next_if(|e| matches!(e, Event::Text(_)))
            {
                joined.push_str(&more);
            }
            text = joined.into();
        }
        let urls = autolink::find(&text);
        if urls.is_empty() {
            return Event::Text(text);
        }
        let mut at = 0;
        for url in urls {
            if url.start > at {
                self.queued
                    .push_back(Event::Text(text[at..url.start].to_owned().into()));
            }
            let mut html = String::from("<a href=\"");
            let _ = escape_href(&mut html, &text[url.clone()]);
            html.push('"');
            html.push_str(LINK_ATTRS);
            self.queued.push_back(Event::Html(html.into()));
            self.queued
                .push_back(Event::Text(text[url.clone()].to_owned().into()));
            self.queued.push_back(Event::Html("</a>".into()));
            at = url.end;
        }
        if at < text.len() {
            self.queued
                .push_back(Event::Text(text[at..].to_owned().into()));
        }
        self.queued.pop_front().unwrap_or(Event::Text(text))
    }
}

impl<'a, I: Iterator<Item = Event<'a>>> Iterator for Sanitize<'a, I> {
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        // A refused link or image yields nothing for its start and end: read on (a loop, not
        // recursion, however deeply they nest).
        loop {
            if let Some(event) = self.queued.pop_front() {
                return Some(event);
            }
            let event = match self.inner.next()? {
                Event::Text(text) if !self.in_code && self.links.is_empty() => {
                    Some(self.text(text))
                }
                Event::Start(tag) => self.start(tag),
                Event::End(tag) => self.end(tag),
                // Raw HTML from the model is shown, never interpreted.
                Event::Html(html) | Event::InlineHtml(html) => Some(Event::Text(html)),
                // A task list's box, named for assistive technology (the writer's has no name).
                Event::TaskListMarker(done) => Some(Event::Html(
                    if done {
                        "<input disabled=\"\" type=\"checkbox\" checked=\"\" aria-label=\"Done\"/>\n"
                    } else {
                        "<input disabled=\"\" type=\"checkbox\" aria-label=\"To do\"/>\n"
                    }
                    .into(),
                )),
                // Checked MathML, or the source as code (see `math`).
                Event::InlineMath(latex) => {
                    Some(Event::Html(super::math::html(&latex, false).into()))
                }
                Event::DisplayMath(latex) => {
                    Some(Event::Html(super::math::html(&latex, true).into()))
                }
                event => Some(event),
            };
            if event.is_some() {
                return event;
            }
        }
    }
}

/// Ends the `href`/`src` attribute and adds `title` when there is one.
fn push_title(html: &mut String, title: &str) {
    html.push('"');
    if !title.is_empty() {
        html.push_str(" title=\"");
        let _ = escape_html(&mut *html, title);
        html.push('"');
    }
}

/// Opening markup of a code block, with the sanitised language of a fenced block.
fn code_open(kind: &CodeBlockKind<'_>) -> String {
    let mut html = String::from(CODE_OPEN);
    if let CodeBlockKind::Fenced(info) = kind {
        let lang = language(info);
        if !lang.is_empty() {
            html.push_str(" language-");
            html.push_str(&lang);
            html.push_str("\" data-lang=\"");
            html.push_str(&lang);
        }
    }
    html.push_str("\">");
    html
}

/// The language of a fence's info string, reduced to `[a-z0-9_-]` (at most 32 characters):
/// the first word (`rust,ignore` → `rust`, `{.python}` → `python`), with `c++`/`c#`/`f#` spelled
/// `cpp`/`csharp`/`fsharp`.
pub(crate) fn language(info: &str) -> String {
    let word = info
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '{' | '}'))
        .find(|w| !w.is_empty())
        .unwrap_or("")
        .trim_start_matches('.')
        .to_ascii_lowercase();
    let word = match word.as_str() {
        "c++" => "cpp",
        "c#" => "csharp",
        "f#" => "fsharp",
        other => other,
    };
    word.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        .take(32)
        .collect()
}

/// What a browser makes of a URL attribute before looking at its scheme: ASCII tab and newlines
/// removed anywhere, C0 controls and spaces trimmed at both ends.
fn browser_clean(url: &str) -> String {
    url.chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect::<String>()
        .trim_matches(|c: char| c <= ' ')
        .to_owned()
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// The URL to put in a link's `href`, or `None` when the link must not be a link: only absolute
/// `http:`, `https:` and `mailto:` URLs pass (no `javascript:`, `data:`, `vbscript:`, relative or
/// protocol-relative URL). The parser has already decoded entities and backslash escapes.
pub fn link_url(url: &str) -> Option<String> {
    let url = browser_clean(url);
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|p| starts_with_ignore_case(&url, p) && url.len() > p.len())
        .then_some(url)
}

/// The URL of an accepted image, or `None`: `http:`/`https:` URLs (shown as a placeholder, see
/// [`image_host`]) and `data:` URLs of PNG, JPEG, GIF and WebP images (inline; not SVG, which can
/// carry script).
pub fn image_url(url: &str) -> Option<String> {
    let url = browser_clean(url);
    let web = ["http://", "https://"]
        .iter()
        .any(|p| starts_with_ignore_case(&url, p) && url.len() > p.len());
    let data = ["png", "jpeg", "jpg", "gif", "webp"].iter().any(|kind| {
        let prefix = format!("data:image/{kind}");
        starts_with_ignore_case(&url, &prefix)
            && matches!(url.as_bytes().get(prefix.len()), Some(b';' | b','))
    });
    (web || data).then_some(url)
}

/// Whether an accepted image URL is a `data:` one (shown inline).
fn is_data(url: &str) -> bool {
    starts_with_ignore_case(url, "data:")
}

/// The host a browser would ask for an `http(s)` image URL once it is the `href` of a
/// placeholder (`None` for other URLs and when there is no host): lowercased, without userinfo
/// or port. It is read from the URL as the `href` attribute carries it, so a backslash or
/// non-ASCII character (percent-encoded there) cannot make the name shown differ from the one
/// the browser uses; a non-ASCII host is shown percent-encoded, never as a look-alike.
pub fn image_host(url: &str) -> Option<String> {
    let url = browser_clean(url);
    let rest = ["http:", "https:"]
        .iter()
        .find_map(|p| starts_with_ignore_case(&url, p).then(|| &url[p.len()..]))?;
    let mut href = String::new();
    let _ = escape_href(&mut href, rest);
    // Undo the writer's entities (neither `&` nor `'` ends a host).
    let href = href.replace("&amp;", "&").replace("&#x27;", "'");
    // Special schemes ignore any number of slashes (and backslashes) before the authority.
    let authority = href
        .trim_start_matches(['/', '\\'])
        .split(['/', '\\', '?', '#'])
        .next()
        .unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    // (`[` is percent-encoded in an `href` too, so there is no IPv6 literal to keep whole.)
    let host = host_port.split(':').next().unwrap_or("");
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// Escapes `text` for HTML body text and double- or single-quoted attribute values.
pub(crate) fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}
