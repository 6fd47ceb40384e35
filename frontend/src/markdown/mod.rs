//! Markdown rendering of model output (placeholder: escapes text into paragraphs until the
//! sanitising, incremental CommonMark renderer lands). The API is fixed: [`render`] for a whole
//! text, [`Incremental`] for a streaming reply.

/// Renders `markdown` to sanitised HTML.
pub fn render(markdown: &str) -> String {
    markdown
        .split("\n\n")
        .filter(|p| !p.trim().is_empty())
        .map(|p| format!("<p>{}</p>", escape(p)))
        .collect()
}

/// Escapes text for HTML.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
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
    out
}

/// Renders a reply as it streams: push deltas, read the HTML.
#[derive(Debug, Default, Clone)]
pub struct Incremental {
    source: String,
}

impl Incremental {
    /// An empty renderer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a delta.
    pub fn push(&mut self, delta: &str) {
        self.source.push_str(delta);
    }

    /// The Markdown so far.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The HTML of everything pushed so far.
    pub fn html(&self) -> String {
        render(&self.source)
    }
}
