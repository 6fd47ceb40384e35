//! Server-sent events (`text/event-stream`) split into events: a pure state machine (bytes in,
//! events out, no I/O), shared by the upstream translators (OpenAI, Anthropic) and the MCP
//! HTTP+SSE transport (`mcp::sse_transport`).
//!
//! Decisions:
//! - **The WHATWG rules** (`text/event-stream` parsing): lines end in CRLF, LF or CR (a CR at
//!   the end of one chunk and the LF opening the next are one line end); a leading BOM is
//!   dropped; `:` starts a comment; a line without `:` is a field with an empty value; one
//!   space after the colon is dropped; `data` lines are joined with LF; a blank line dispatches
//!   the event, unless it has no data; an event without `event:` is a `message`; `id`, `retry`
//!   and unknown fields are read and ignored (nothing here reconnects).
//! - **Bounded**: an event (every byte from one blank line to the next, comments included)
//!   larger than the cap given to [`SseParser::new`] is an error, found as soon as the bytes
//!   waiting pass it, so a peer that never sends a line end cannot grow the buffer.
//! - **No allocation per event**: lines are found with `memchr`, and an event's name and data
//!   are copied into two buffers the parser reuses; [`SseParser::next_event`] lends them out.
//!   The crate this replaced (`eventsource-stream`, a `nom` parser building `String`s per line
//!   and per event) was a third of the relay's user-space instructions at 500 events per reply.
//! - **UTF-8** is checked where it is read, the event's name and data; invalid bytes there are
//!   an error (the relay passes text on, it does not guess at it). Ignored lines are not read.

use std::fmt;

/// An event read off the stream: its type (`message` when it named none) and its data.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SseEvent<'a> {
    pub(crate) event: &'a str,
    pub(crate) data: &'a str,
}

/// Why the stream cannot be read on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SseError {
    /// An event passed the cap (the cap).
    TooLarge(usize),
    /// An event's name or data was not UTF-8.
    Utf8,
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge(cap) => write!(f, "the stream sent an event larger than {cap} bytes"),
            Self::Utf8 => f.write_str("the stream sent invalid UTF-8"),
        }
    }
}

/// Splits a byte stream into SSE events: [`SseParser::push`] the bytes as they come, then take
/// [`SseParser::next_event`] until it returns `None`.
#[derive(Debug)]
pub(crate) struct SseParser {
    /// Bytes received and not yet read as lines, from `pos` on.
    buf: Vec<u8>,
    pos: usize,
    /// The bytes of the event being read so far (its whole lines).
    event_bytes: usize,
    max_event: usize,
    /// The event's `event:` value and its data lines (each followed by LF).
    name: Vec<u8>,
    data: Vec<u8>,
    /// `name` and `data` were lent out: cleared before the next line is read.
    lent: bool,
    /// The last line ended in CR at the end of the bytes: an LF first in the next is its end.
    skip_lf: bool,
    /// Still at the start of the stream (where a BOM is dropped).
    at_start: bool,
    failed: Option<SseError>,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    /// A parser refusing events larger than `max_event` bytes.
    pub(crate) fn new(max_event: usize) -> Self {
        Self {
            buf: Vec::new(),
            pos: 0,
            event_bytes: 0,
            max_event,
            name: Vec::new(),
            data: Vec::new(),
            lent: false,
            skip_lf: false,
            at_start: true,
            failed: None,
        }
    }

    /// Adds bytes received.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole event, `None` until more bytes come; after an error, the error again.
    pub(crate) fn next_event(&mut self) -> Option<Result<SseEvent<'_>, SseError>> {
        if let Some(e) = self.failed {
            return Some(Err(e));
        }
        if self.lent {
            self.lent = false;
            self.name.clear();
            self.data.clear();
        }
        loop {
            if self.at_start {
                let rest = &self.buf[self.pos..];
                if rest.len() < BOM.len() && BOM.starts_with(rest) {
                    return None; // maybe a BOM: wait for the rest of it
                }
                self.at_start = false;
                if rest.starts_with(BOM) {
                    self.pos += BOM.len();
                }
            }
            if self.skip_lf {
                match self.buf.get(self.pos) {
                    None => return None,
                    Some(b'\n') => {
                        self.pos += 1;
                        self.event_bytes += 1;
                    }
                    Some(_) => {}
                }
                self.skip_lf = false;
            }
            let start = self.pos;
            let rest = &self.buf[start..];
            let Some(end) = memchr::memchr2(b'\n', b'\r', rest) else {
                if self.event_bytes + rest.len() > self.max_event {
                    return Some(Err(self.fail(SseError::TooLarge(self.max_event))));
                }
                return None;
            };
            let mut next = start + end + 1;
            if rest[end] == b'\r' {
                match rest.get(end + 1) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            self.pos = next;
            self.event_bytes += next - start;
            if self.event_bytes > self.max_event {
                return Some(Err(self.fail(SseError::TooLarge(self.max_event))));
            }
            if end == 0 {
                self.event_bytes = 0;
                if self.data.is_empty() {
                    self.name.clear();
                    continue;
                }
                return Some(self.dispatch());
            }
            let line = &self.buf[start..start + end];
            let (field, value) = match memchr::memchr(b':', line) {
                Some(0) => continue, // a comment
                Some(colon) => {
                    let value = &line[colon + 1..];
                    (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
                }
                None => (line, &b""[..]),
            };
            match field {
                b"data" => {
                    self.data.extend_from_slice(value);
                    self.data.push(b'\n');
                }
                b"event" => {
                    self.name.clear();
                    self.name.extend_from_slice(value);
                }
                _ => {} // id, retry and unknown fields
            }
        }
    }

    /// Lends out the event read (its data without the last LF).
    fn dispatch(&mut self) -> Result<SseEvent<'_>, SseError> {
        self.lent = true;
        let data = &self.data[..self.data.len() - 1];
        let (Ok(data), Ok(name)) = (std::str::from_utf8(data), std::str::from_utf8(&self.name))
        else {
            self.failed = Some(SseError::Utf8);
            return Err(SseError::Utf8);
        };
        let event = if name.is_empty() { "message" } else { name };
        Ok(SseEvent { event, data })
    }

    fn fail(&mut self, e: SseError) -> SseError {
        self.failed = Some(e);
        self.buf = Vec::new();
        self.pos = 0;
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event of `chunks` pushed one after another, as `(event, data)`, or the error.
    fn read(chunks: &[&[u8]], cap: usize) -> Result<Vec<(String, String)>, SseError> {
        let mut p = SseParser::new(cap);
        let mut out = Vec::new();
        for chunk in chunks {
            p.push(chunk);
            while let Some(ev) = p.next_event() {
                let ev = ev?;
                out.push((ev.event.to_owned(), ev.data.to_owned()));
            }
        }
        Ok(out)
    }

    fn events(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(e, d)| ((*e).to_owned(), (*d).to_owned()))
            .collect()
    }

    /// The same bytes split at every position, and byte by byte, read the same.
    fn same_at_every_split(body: &[u8], want: &[(&str, &str)]) {
        let want = events(want);
        assert_eq!(read(&[body], 1 << 20).unwrap(), want, "whole");
        for at in 0..=body.len() {
            let (a, b) = body.split_at(at);
            assert_eq!(read(&[a, b], 1 << 20).unwrap(), want, "split at {at}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(read(&bytes, 1 << 20).unwrap(), want, "byte by byte");
    }

    #[test]
    fn lines_may_end_in_lf_crlf_or_cr_and_a_split_anywhere_reads_the_same() {
        same_at_every_split(
            b"data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d\n\r\n",
            &[
                ("message", "a"),
                ("message", "b"),
                ("message", "c"),
                ("message", "d"),
            ],
        );
    }

    #[test]
    fn data_lines_join_with_lf_and_the_event_names_its_type() {
        same_at_every_split(
            b"event: delta\ndata: one\ndata:two\ndata\n\ndata: next\n\n",
            &[("delta", "one\ntwo\n"), ("message", "next")],
        );
    }

    #[test]
    fn comments_ids_retries_unknown_fields_and_events_without_data_dispatch_nothing() {
        same_at_every_split(
            b": keep-alive\n\nid: 7\nretry: 10\nfoo: bar\n\nevent: ping\n\n\n\ndata: x\n\n",
            &[("message", "x")],
        );
    }

    #[test]
    fn a_leading_bom_is_dropped_once_and_utf8_split_mid_character_is_whole() {
        same_at_every_split(
            "\u{feff}data: h\u{e9}llo \u{1f600}\n\n".as_bytes(),
            &[("message", "h\u{e9}llo \u{1f600}")],
        );
        let later_bom = "data: a\n\n\u{feff}data: b\n\n";
        assert_eq!(
            read(&[later_bom.as_bytes()], 1 << 20).unwrap(),
            events(&[("message", "a")]),
            "a BOM after the start is part of a line (here a field named \\u{{feff}}data)"
        );
    }

    #[test]
    fn only_one_space_after_the_colon_is_dropped() {
        same_at_every_split(b"data:  two\n\n", &[("message", " two")]);
    }

    #[test]
    fn a_last_event_without_its_blank_line_waits() {
        assert_eq!(
            read(&[b"data: a\n\ndata: b\n"], 1 << 20).unwrap(),
            events(&[("message", "a")])
        );
        assert_eq!(
            read(&[b"data: a\n\ndata: b\n", b"\n\n"], 1 << 20).unwrap(),
            events(&[("message", "a"), ("message", "b")]),
            "padding the end with a blank line dispatches it"
        );
    }

    #[test]
    fn an_event_is_measured_up_to_its_blank_line() {
        let cap = 100;
        let half = [b'x'; 45];
        let line = |n: usize| [b"data: ".as_slice(), &half[..n], b"\n"].concat();
        // Two lines of 50 bytes, then the blank line: 101 bytes, one over.
        let body = [line(43), line(43), b"\n".to_vec()].concat();
        assert_eq!(read(&[&body], cap), Err(SseError::TooLarge(cap)));
        // 50 + 49 + the blank line: 100 bytes, at the cap; the next event starts from zero.
        let body = [
            line(43),
            line(42),
            b"\n".to_vec(),
            line(43),
            line(42),
            b"\n".to_vec(),
        ]
        .concat();
        assert_eq!(read(&[&body], cap).unwrap().len(), 2);
        // A line that never ends fails once the bytes waiting pass the cap.
        let endless = [b'x'; 101];
        assert_eq!(
            read(&[&endless[..60], &endless[60..]], cap),
            Err(SseError::TooLarge(cap))
        );
        assert_eq!(read(&[&endless[..100]], cap).unwrap(), events(&[]));
    }

    #[test]
    fn invalid_utf8_in_data_is_an_error_and_stays_one() {
        let mut p = SseParser::new(1 << 20);
        p.push(b"data: \xff\n\ndata: fine\n\n");
        assert_eq!(p.next_event(), Some(Err(SseError::Utf8)));
        assert_eq!(p.next_event(), Some(Err(SseError::Utf8)));
        assert_eq!(SseError::Utf8.to_string(), "the stream sent invalid UTF-8");
    }
}
