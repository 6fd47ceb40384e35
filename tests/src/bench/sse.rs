//! Reading an SSE body as it arrives and judging the stream: split into events on blank
//! lines, classify each `data:` payload ([`Flavor::classify`]), and at the end decide whether
//! the stream completed with the right sequence.

use serde_json::Value;

use super::workload::{Flavor, Kind, Workload};

/// The judgement of one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Completed; this many `data:` events.
    Ok {
        /// `data:` events received.
        events: u64,
    },
    /// Did not complete correctly, and why.
    Bad(String),
}

/// Incremental SSE reader and checker for one stream.
#[derive(Debug)]
pub struct StreamCheck {
    flavor: Flavor,
    workload: Workload,
    verify: bool,
    buf: Vec<u8>,
    events: u64,
    tokens: u32,
    ended: bool,
    after_end: u64,
    errors: Vec<String>,
    others: u64,
    text: String,
}

impl StreamCheck {
    /// A checker expecting `workload`'s reply in `flavor`; `verify` also checks the sequence
    /// strictly and the reassembled text (parses every event's JSON).
    pub fn new(flavor: Flavor, workload: Workload, verify: bool) -> Self {
        Self {
            flavor,
            workload,
            verify,
            buf: Vec::new(),
            events: 0,
            tokens: 0,
            ended: false,
            after_end: 0,
            errors: Vec::new(),
            others: 0,
            text: String::new(),
        }
    }

    /// Feeds body bytes; `true` when they completed at least one text event.
    pub fn feed(&mut self, bytes: &[u8]) -> bool {
        self.buf.extend_from_slice(bytes);
        let mut token = false;
        let mut start = 0;
        while let Some(pos) = find(&self.buf[start..], b"\n\n") {
            let end = start + pos;
            let event = self.buf[start..end].to_vec();
            token |= self.event(&event);
            start = end + 2;
        }
        self.buf.drain(..start);
        token
    }

    fn event(&mut self, event: &[u8]) -> bool {
        let mut token = false;
        for line in event.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let Some(data) = line.strip_prefix(b"data:") else {
                continue;
            };
            let data = data.strip_prefix(b" ").unwrap_or(data);
            self.events += 1;
            // lmchatkit's `saved` (the revision of a reply the service saved) follows `done`; it
            // is neither text nor an extra event.
            let saved =
                self.flavor == Flavor::Lmchatkit && data.starts_with(b"{\"type\":\"saved\"");
            if saved {
                continue;
            }
            if self.ended {
                self.after_end += 1;
            }
            match self.flavor.classify(data) {
                Kind::Token => {
                    self.tokens += 1;
                    token = true;
                    if self.verify {
                        self.text.push_str(&self.token_text(data));
                    }
                }
                Kind::End => self.ended = true,
                Kind::Error => self.errors.push(String::from_utf8_lossy(data).into_owned()),
                Kind::Other => self.others += 1,
            }
        }
        token
    }

    fn token_text(&self, data: &[u8]) -> String {
        let v: Value = serde_json::from_slice(data).unwrap_or(Value::Null);
        let t = match self.flavor {
            Flavor::OpenAi => &v["choices"][0]["delta"]["content"],
            Flavor::Lmchatkit | Flavor::AiSdk => &v["delta"],
        };
        t.as_str().unwrap_or_default().to_owned()
    }

    /// Judges the stream after its body ended.
    pub fn finish(self) -> Verdict {
        if let Some(e) = self.errors.first() {
            return Verdict::Bad(format!("error event: {}", truncate(e, 80)));
        }
        if !self.ended {
            return Verdict::Bad("incomplete".into());
        }
        if self.tokens != self.workload.tokens {
            return Verdict::Bad(format!(
                "{} text events, expected {}",
                self.tokens, self.workload.tokens
            ));
        }
        if self.verify {
            if self.after_end > 0 {
                return Verdict::Bad("events after the end".into());
            }
            // Ours is exactly `delta`×N then `done`; OpenAI adds role, finish and usage chunks.
            let others = match self.flavor {
                Flavor::Lmchatkit => 0,
                Flavor::OpenAi => 3,
                Flavor::AiSdk => self.others,
            };
            if self.others != others {
                return Verdict::Bad(format!("{} other events, expected {others}", self.others));
            }
            if self.text != self.workload.reply() {
                return Verdict::Bad("reassembled text differs".into());
            }
        }
        Verdict::Ok {
            events: self.events,
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_sequence_of_ours_split_anywhere() {
        let w = Workload {
            tokens: 2,
            chunk: 2,
            ..Workload::default()
        };
        let body = format!(
            "data: {{\"type\":\"delta\",\"delta\":\"{}\"}}\n\n: ping\n\ndata: {{\"type\":\"delta\",\"delta\":\"{}\"}}\n\ndata: {{\"type\":\"done\",\"finish_reason\":\"stop\"}}\n\n",
            w.token_text(0),
            w.token_text(1)
        );
        let mut c = StreamCheck::new(Flavor::Lmchatkit, w, true);
        let (a, b) = body.as_bytes().split_at(7);
        assert!(!c.feed(a));
        assert!(c.feed(b));
        assert_eq!(c.finish(), Verdict::Ok { events: 3 });

        let mut c = StreamCheck::new(Flavor::Lmchatkit, w, true);
        c.feed(b"data: {\"type\":\"delta\",\"delta\":\"x\"}\n\n");
        assert_eq!(c.finish(), Verdict::Bad("incomplete".into()));
    }

    #[test]
    fn a_saved_revision_may_follow_done_but_no_other_event_may() {
        let w = Workload {
            tokens: 1,
            chunk: 2,
            ..Workload::default()
        };
        let head = format!(
            "data: {{\"type\":\"delta\",\"delta\":\"{}\"}}\n\ndata: {{\"type\":\"done\",\"finish_reason\":\"stop\"}}\n\n",
            w.token_text(0)
        );
        let mut c = StreamCheck::new(Flavor::Lmchatkit, w, true);
        c.feed(format!("{head}data: {{\"type\":\"saved\",\"revision\":2}}\n\n").as_bytes());
        assert_eq!(c.finish(), Verdict::Ok { events: 3 });

        let mut c = StreamCheck::new(Flavor::Lmchatkit, w, true);
        c.feed(format!("{head}data: {{\"type\":\"reasoning\",\"delta\":\"x\"}}\n\n").as_bytes());
        assert_eq!(c.finish(), Verdict::Bad("events after the end".into()));
    }
}
