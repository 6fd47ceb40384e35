//! The tail of a streaming reply that is one table still growing: its rows are rendered once
//! each instead of re-parsing the whole table per delta.
//!
//! A table's body rows are independent of each other (each only depends on the header's column
//! count and the delimiter row's alignments), so the table's HTML is the HTML of its complete
//! rows, rendered as they arrive, plus that of the partial last row. Each piece is rendered by the
//! parser itself from a small text: the header and delimiter rows, the new rows and a sentinel
//! row `x`. When that is not clearly a single table with the sentinel still in it (a blank line
//! or another block ended the table), the caller falls back to re-parsing the tail.

use super::Defs;
use super::parse_fragment;
use super::sanitize::TABLE_OPEN;

/// The end of a table with body rows.
const TABLE_CLOSE: &str = "</tbody></table>\n</div>\n";

/// What is known of a growing table at the start of the tail.
#[derive(Debug, Clone)]
pub(crate) struct OpenTable {
    /// Offset of the table (the start of its header row) in the source.
    pub start: usize,
    /// End of the delimiter row (including its line ending).
    head_end: usize,
    /// End of the complete rows rendered into `rows_html`.
    rows_end: usize,
    /// The table's HTML up to its first body row (`…<tbody>\n`).
    open_html: String,
    /// HTML of the sentinel row and the end of the table.
    sentinel_html: String,
    /// HTML of the body rows from `head_end` to `rows_end`.
    rows_html: String,
}

impl OpenTable {
    /// The state for the block at `start` whose HTML is `html`, if it is a table whose header
    /// and delimiter rows are complete.
    pub fn new(source: &str, start: usize, html: &str, defs: &Defs) -> Option<Self> {
        if !html.starts_with(TABLE_OPEN) {
            return None;
        }
        let header = source[start..].find('\n')? + 1;
        let head_end = start + header + source[start + header..].find('\n')? + 1;
        let with_sentinel = single_block(&format!("{}x\n", &source[start..head_end]), defs)?;
        let body = with_sentinel.find("<tbody>\n")? + "<tbody>\n".len();
        let (open_html, sentinel_html) = with_sentinel.split_at(body);
        sentinel_html.ends_with(TABLE_CLOSE).then(|| Self {
            start,
            head_end,
            rows_end: head_end,
            open_html: open_html.to_owned(),
            sentinel_html: sentinel_html.to_owned(),
            rows_html: String::new(),
        })
    }

    /// This state with the rows already rendered by `previous`, a state of the same table.
    pub fn resume(self, previous: Self) -> Self {
        let same = previous.start == self.start
            && previous.head_end == self.head_end
            && previous.open_html == self.open_html
            && previous.sentinel_html == self.sentinel_html;
        if same { previous } else { self }
    }

    /// The table's HTML for `source` (which extends the source this state was built from), or
    /// `None` when the block may no longer be a single growing table.
    pub fn extend(&mut self, source: &str, defs: &Defs) -> Option<String> {
        let rest = &source[self.rows_end..];
        let complete = rest.rfind('\n').map_or(0, |i| i + 1);
        if complete > 0 {
            let rows = self.rows(source, &rest[..complete], defs)?;
            self.rows_html.push_str(&rows);
            self.rows_end += complete;
        }
        let partial = match &rest[complete..] {
            "" => String::new(),
            line => self.rows(source, &format!("{line}\n"), defs)?,
        };
        if self.rows_html.is_empty() && partial.is_empty() {
            // No body yet: the table's HTML has no `<tbody>`.
            return None;
        }
        Some(
            [
                self.open_html.as_str(),
                &self.rows_html,
                &partial,
                TABLE_CLOSE,
            ]
            .concat(),
        )
    }

    /// The HTML of `lines` (complete lines) as body rows of this table.
    fn rows(&self, source: &str, lines: &str, defs: &Defs) -> Option<String> {
        let head = &source[self.start..self.head_end];
        let html = single_block(&format!("{head}{lines}x\n"), defs)?;
        let rows = html
            .strip_prefix(&self.open_html)?
            .strip_suffix(&self.sentinel_html)?;
        Some(rows.to_owned())
    }
}

/// The HTML of `text` when it is a single top-level block.
fn single_block(text: &str, defs: &Defs) -> Option<String> {
    let mut blocks = parse_fragment(text, defs).blocks;
    (blocks.len() == 1)
        .then(|| blocks.pop().map(|(_, html)| html))
        .flatten()
}
