//! The tail of a streaming reply that is one open fenced code block (a model writing a long
//! file): its lines are rendered once each instead of re-parsing the whole block per delta.
//!
//! The lines of a fenced code block are independent of each other (each is only stripped of the
//! fence's indentation and escaped), so the block's HTML is the HTML of its complete lines,
//! rendered as they arrive, plus that of the partial last line. Each piece is rendered by the
//! parser itself from a small text: the opening fence line followed by the new lines. Whenever
//! that is not clearly a single code block still open (a closing fence arrived), the caller falls
//! back to re-parsing the tail.

use super::highlight;
use super::sanitize::{CODE_CLOSE, CODE_OPEN};
use super::{Defs, parse_fragment};

/// What is known of an open fenced code block at the start of the tail.
#[derive(Debug, Clone)]
pub(crate) struct OpenFence {
    /// Offset of the block (the start of the opening fence line) in the source.
    pub start: usize,
    /// End of the opening fence line (including its line ending).
    fence_end: usize,
    /// End of the complete lines rendered into `lines_html`.
    lines_end: usize,
    /// The block's HTML before its content.
    open_html: String,
    /// HTML of the content lines from `fence_end` to `lines_end`.
    lines_html: String,
}

impl OpenFence {
    /// The fence state for the block at `start` whose HTML is `html`, if it is a fenced code
    /// block whose opening line is complete.
    pub fn new(source: &str, start: usize, html: &str) -> Option<Self> {
        if !html.starts_with(CODE_OPEN) {
            return None;
        }
        let line_len = source[start..].find('\n')? + 1;
        let fence_line = &source[start..start + line_len];
        let marker = fence_line.trim_start_matches(' ');
        if fence_line.len() - marker.len() > 3
            || !(marker.starts_with("```") || marker.starts_with("~~~"))
        {
            return None;
        }
        let open_html = single_block(fence_line)?
            .strip_suffix(CODE_CLOSE)?
            .to_owned();
        Some(Self {
            start,
            fence_end: start + line_len,
            lines_end: start + line_len,
            open_html,
            lines_html: String::new(),
        })
    }

    /// The block's HTML for `source` (which extends the source this state was built from), or
    /// `None` when the block may no longer be a single open code block.
    pub fn extend(&mut self, source: &str) -> Option<String> {
        let fence_line = &source[self.start..self.fence_end];
        let rest = &source[self.lines_end..];
        let complete = rest.rfind('\n').map_or(0, |i| i + 1);
        if complete > 0 {
            // A sentinel line after the new lines: still code only if the fence stays open.
            let text = format!("{fence_line}{}x\n", &rest[..complete]);
            let content = self.content(&text)?;
            self.lines_html.push_str(content.strip_suffix("x\n")?);
            self.lines_end += complete;
        }
        let partial_text = format!("{fence_line}{}", &rest[complete..]);
        if highlight::fence_closed(&partial_text) {
            // The partial line closes the block: it may be highlighted now, as a whole.
            return None;
        }
        let partial = self.content(&partial_text)?;
        Some(
            [
                self.open_html.as_str(),
                &self.lines_html,
                &partial,
                CODE_CLOSE,
            ]
            .concat(),
        )
    }

    /// The content HTML of `text` when it is a single code block opened like this one.
    fn content(&self, text: &str) -> Option<String> {
        let html = single_block(text)?;
        Some(
            html.strip_prefix(&self.open_html)?
                .strip_suffix(CODE_CLOSE)?
                .to_owned(),
        )
    }
}

/// The HTML of `text` when it is a single top-level block.
fn single_block(text: &str) -> Option<String> {
    let mut blocks = parse_fragment(text, &Defs::new()).blocks;
    (blocks.len() == 1)
        .then(|| blocks.pop().map(|(_, html)| html))
        .flatten()
}
