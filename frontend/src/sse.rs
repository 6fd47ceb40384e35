//! A byte-level Server-Sent Events parser, fed by the chunks of a `fetch` body. Used for both the
//! chat stream (`POST /api/chat`) and the events stream (`GET /api/events`). Comments (`: ping`)
//! are skipped; `data:` lines of one event are joined with `\n`; `id:` is reported so the events
//! stream can reconnect with `Last-Event-ID`.

/// One dispatched SSE event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseFrame {
    /// The `id:` field, when the event had one.
    pub id: Option<String>,
    /// The `event:` field, when the event had one.
    pub event: Option<String>,
    /// The joined `data:` lines.
    pub data: String,
}

/// Incremental parser: [`SseParser::push`] bytes as they arrive, get complete events back.
/// Bytes are buffered until a line ends, so a UTF-8 character split across chunks is safe.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    cur: SseFrame,
    has_data: bool,
}

impl SseParser {
    /// An empty parser.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a chunk; returns the events it completed.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseFrame> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(rel) = self.buf[start..].iter().position(|&b| b == b'\n') {
            let end = start + rel;
            let mut line = &self.buf[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = String::from_utf8_lossy(line).into_owned();
            start = end + 1;
            self.line(&line, &mut out);
        }
        self.buf.drain(..start);
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseFrame>) {
        if line.is_empty() {
            if self.has_data {
                out.push(std::mem::take(&mut self.cur));
            } else {
                self.cur = SseFrame::default();
            }
            self.has_data = false;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.cur.data.push('\n');
                }
                self.cur.data.push_str(value);
                self.has_data = true;
            }
            "id" => self.cur.id = Some(value.to_owned()),
            "event" => self.cur.event = Some(value.to_owned()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_anywhere_are_reassembled() {
        let input = "id: 7\ndata: {\"type\":\"delta\",\"delta\":\"h\u{e9}\"}\n\n: ping\n\ndata: a\ndata: b\n\n";
        let bytes = input.as_bytes();
        for cut in 0..bytes.len() {
            let mut p = SseParser::new();
            let mut frames = p.push(&bytes[..cut]);
            frames.extend(p.push(&bytes[cut..]));
            assert_eq!(frames.len(), 2, "cut at {cut}");
            assert_eq!(frames[0].id.as_deref(), Some("7"));
            assert_eq!(frames[0].data, "{\"type\":\"delta\",\"delta\":\"h\u{e9}\"}");
            assert_eq!(frames[1].data, "a\nb");
        }
    }

    #[test]
    fn crlf_and_comments() {
        let mut p = SseParser::new();
        let f = p.push(b": hello\r\n\r\ndata:x\r\n\r\n");
        assert_eq!(
            f,
            vec![SseFrame {
                id: None,
                event: None,
                data: "x".into()
            }]
        );
    }
}
