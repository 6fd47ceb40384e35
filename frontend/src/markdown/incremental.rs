//! Incremental rendering of a streaming reply: finished top-level blocks are rendered once and
//! kept; each [`Incremental::push`] re-parses only the unfinished tail.
//!
//! A top-level block is *finished* when the next block has started and appended text can no
//! longer pull that next block's first line into it: the line is complete, or it follows a blank
//! line and cannot turn into a list item (which would continue a list across the blank line and
//! make it loose). Later text cannot change a finished block, except through a link reference
//! definition (`[label]: url`), which applies to the whole document: while one is in the
//! unfinished tail (or was, on the previous push) everything is re-rendered, and otherwise the
//! tail resolves labels from the definitions in the finished part.
//!
//! When the tail is one block that keeps growing line by line, an open fenced code block
//! ([`super::fence`]) or a table ([`super::table`]), only its new lines are rendered.
//!
//! A closed code block is highlighted when its block is rendered (so a finished one once); when
//! the highlighter or the parser arrives after some blocks were rendered
//! ([`super::generation`] changed), the next push re-renders everything once.

use super::fence::OpenFence;
use super::table::OpenTable;
use super::{Defs, Parsed, parse, sanitize::TABLE_OPEN as TABLE};

/// A rendered top-level block of a reply.
///
/// The UI keeps the nodes a block's HTML made and replaces them, and those of every block
/// after it, when the block's key or `rev` changes (`components::message`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Stable while the block starts at the same place in the source: a growing paragraph keeps
    /// its key, so its DOM node can be updated in place.
    pub key: u64,
    /// Changes whenever `html` changes (a counter of the [`Incremental`]).
    pub rev: u64,
    /// The block's sanitised HTML.
    pub html: String,
}

/// Renders a reply as it streams: [`push`](Self::push) deltas, read [`blocks`](Self::blocks)
/// (or the whole [`html`](Self::html)).
///
/// `push` does the parsing, so a UI receiving many deltas per animation frame should join them
/// and push once per frame. For every text, pushing it in any pieces gives the same
/// [`html`](Self::html) as [`render`](super::render) of the whole text.
#[derive(Debug, Default, Clone)]
pub struct Incremental {
    source: String,
    blocks: Vec<Block>,
    /// Offset in `source` of the start of each block's first line.
    starts: Vec<usize>,
    /// Number of leading blocks that are finished.
    finished: usize,
    /// Where the unfinished tail starts in `source` (the start of block `finished`).
    tail_start: usize,
    /// Link reference definitions in the finished part.
    defs: Defs,
    /// A link reference definition is in the unfinished tail.
    tail_has_defs: bool,
    /// [`finish`](Self::finish) was called after the last push.
    done: bool,
    /// The tail is one open fenced code block, or one growing table: what is known of it.
    open_tail: Option<OpenTail>,
    next_key: u64,
    next_rev: u64,
    renders: u64,
    /// The [`super::generation`] the blocks were rendered under.
    generation: u64,
}

impl Incremental {
    /// An empty renderer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a delta and re-renders the unfinished tail.
    pub fn push(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        self.source.push_str(delta);
        self.done = false;
        self.update();
    }

    /// The Markdown so far.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The HTML of everything pushed so far: the blocks' HTML joined, equal to
    /// [`render`](super::render)`(self.source())`.
    pub fn html(&self) -> String {
        let mut html = String::with_capacity(self.blocks.iter().map(|b| b.html.len()).sum());
        for block in &self.blocks {
            html.push_str(&block.html);
        }
        html
    }

    /// The rendered top-level blocks, in order.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// How many leading [`blocks`](Self::blocks) are finished: later deltas re-render only the
    /// blocks after them (a link reference definition arriving later can still change a
    /// finished block's `html`; its key stays). All of them after [`finish`](Self::finish).
    pub fn finished_blocks(&self) -> usize {
        if self.done {
            self.blocks.len()
        } else {
            self.finished
        }
    }

    /// Marks the end of the reply: every block is final (an unclosed code fence stays a code
    /// block). Pushing again is allowed and continues the same text.
    pub fn finish(&mut self) {
        self.done = true;
    }

    /// Whether [`finish`](Self::finish) was called after the last push.
    pub fn is_finished(&self) -> bool {
        self.done
    }

    /// How many block renders all pushes did so far (a measure of the re-rendering work).
    pub fn render_count(&self) -> u64 {
        self.renders
    }

    /// Whether the tail is an open fenced code block extended line by line.
    #[cfg(test)]
    pub(crate) fn streams_open_fence(&self) -> bool {
        matches!(self.open_tail, Some(OpenTail::Fence(_)))
    }

    /// Whether the tail is a table extended row by row.
    #[cfg(test)]
    pub(crate) fn streams_open_table(&self) -> bool {
        matches!(self.open_tail, Some(OpenTail::Table(_)))
    }

    /// Re-parses from the start of the unfinished tail, or from the start of the text when a
    /// link reference definition is involved, and finishes what can no longer change.
    fn update(&mut self) {
        let generation = super::generation();
        if generation != self.generation {
            self.open_tail = None;
        }
        if let Some(html) = self.extend_open_tail() {
            self.renders += 1;
            if let Some(last) = self.blocks.last_mut() {
                last.html = html;
                self.next_rev += 1;
                last.rev = self.next_rev;
            }
            return;
        }
        if generation != self.generation {
            // The highlighter or the parser arrived: finished blocks may now render otherwise.
            self.generation = generation;
            self.finished = 0;
            self.tail_start = 0;
            self.defs.clear();
            self.open_tail = None;
        }
        let mut base = self.tail_start;
        let mut parsed = parse(&self.source[base..], &self.defs);
        if base > 0 && (self.tail_has_defs || !parsed.defs.is_empty()) {
            base = 0;
            self.finished = 0;
            self.tail_start = 0;
            self.defs.clear();
            parsed = parse(&self.source, &self.defs);
        }
        self.renders += parsed.blocks.len() as u64;
        self.merge(base, parsed);
        let previous = self.open_tail.take();
        if self.tail_has_defs {
            return;
        }
        if self.finished + 1 != self.blocks.len() {
            // Kept for when the tail is one block again (checked and verified before any use).
            self.open_tail = previous;
        } else {
            let (start, html) = (self.tail_start, &self.blocks[self.finished].html);
            self.open_tail = OpenFence::new(&self.source, start, html)
                .map(OpenTail::Fence)
                .or_else(|| {
                    let table = OpenTable::new(&self.source, start, html, &self.defs)?;
                    // A row that was briefly not a row (`|` alone) keeps the rows before it.
                    Some(OpenTail::Table(match previous {
                        Some(OpenTail::Table(previous)) => table.resume(previous),
                        _ => table,
                    }))
                });
        }
    }

    /// The new HTML of the tail when it is an open fenced code block that stays open or a table
    /// that keeps growing, rendered from the new lines only.
    fn extend_open_tail(&mut self) -> Option<String> {
        let single = self.finished + 1 == self.blocks.len();
        match self.open_tail.as_mut()? {
            OpenTail::Fence(f) if single && f.start == self.tail_start => f.extend(&self.source),
            OpenTail::Table(t) if single && t.start == self.tail_start => {
                t.extend(&self.source, &self.defs)
            }
            _ => None,
        }
    }

    /// Replaces the blocks from `self.finished` on with `parsed` (a parse of `source[base..]`),
    /// keeping the key of a block that starts where an old one started, and moves the finished
    /// boundary.
    fn merge(&mut self, base: usize, parsed: Parsed) {
        let Parsed { blocks, defs } = parsed;
        let old_blocks = self.blocks.split_off(self.finished);
        let old_starts = self.starts.split_off(self.finished);
        let mut old = old_starts.into_iter().zip(old_blocks).peekable();
        for (offset, html) in blocks {
            let start = base + offset;
            while old.next_if(|(s, _)| *s < start).is_some() {}
            let block = match old.next_if(|(s, _)| *s == start) {
                Some((_, block)) if block.html == html => block,
                Some((_, block)) => Block {
                    key: block.key,
                    rev: self.bump_rev(),
                    html,
                },
                None => {
                    self.next_key += 1;
                    Block {
                        key: self.next_key,
                        rev: self.bump_rev(),
                        html,
                    }
                }
            };
            self.blocks.push(block);
            self.starts.push(start);
        }

        let finished_before = self.finished;
        while self.finished + 1 < self.starts.len() {
            let (start, next) = (self.starts[self.finished], self.starts[self.finished + 1]);
            // After a definition the parser is still in a paragraph, where e.g. `2.` is text, so
            // the next block only parses on its own after a blank line.
            let after_def = defs.iter().any(|d| (start..next).contains(&(base + d.1)));
            // A table starting under a paragraph depends on its second line (the delimiter row).
            let lines = if self.blocks[self.finished + 1].html.starts_with(TABLE) {
                2
            } else {
                1
            };
            if !next_block_is_settled(&self.source, next, lines)
                || (after_def && !previous_line_is_blank(&self.source, next))
            {
                break;
            }
            self.finished += 1;
        }
        if self.finished > finished_before {
            self.tail_start = self.starts[self.finished];
        }
        self.tail_has_defs = false;
        for (label, offset, url, title) in defs {
            if base + offset < self.tail_start {
                self.defs.entry(label).or_insert((url, title));
            } else {
                self.tail_has_defs = true;
            }
        }
    }

    fn bump_rev(&mut self) -> u64 {
        self.next_rev += 1;
        self.next_rev
    }
}

/// A tail block extended from its new lines only.
#[derive(Debug, Clone)]
enum OpenTail {
    Fence(OpenFence),
    Table(OpenTable),
}

/// Whether the top-level block starting at `start` (a line start) can no longer become part of
/// the block before it, whatever is appended to `source`, given that this depends on its first
/// `lines` lines.
fn next_block_is_settled(source: &str, start: usize, lines: usize) -> bool {
    let line = &source[start..];
    if line.bytes().filter(|&b| b == b'\n').take(lines).count() == lines {
        // The deciding lines are complete: they were not a continuation of the block before,
        // and will not become one.
        return true;
    }
    // The line is still growing. After a blank line only a list can continue (with another
    // item), so the line is settled if it cannot become a list marker.
    let first = line.trim_start_matches([' ', '\t']).chars().next();
    let list_like = matches!(first, Some('-' | '+' | '*' | '0'..='9'));
    !list_like && previous_line_is_blank(source, start)
}

/// Whether the line before the line starting at `start` holds only spaces and tabs.
fn previous_line_is_blank(source: &str, start: usize) -> bool {
    let before = &source[..start];
    let before = before.strip_suffix('\n').unwrap_or(before);
    let before = before.strip_suffix('\r').unwrap_or(before);
    if before.len() == start {
        return false;
    }
    let line = &before[before.rfind(['\n', '\r']).map_or(0, |i| i + 1)..];
    line.bytes().all(|b| b == b' ' || b == b'\t')
}
