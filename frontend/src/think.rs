//! Splits `<think>…</think>` out of streamed text deltas (models that reason inline), even when a
//! tag is split across deltas. Text inside the tags goes to the "Thinking" block.

/// A piece of a delta after splitting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Visible answer text.
    Text(String),
    /// Reasoning text (inside `<think>`).
    Think(String),
}

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// The splitter's state across deltas.
#[derive(Debug, Default, Clone)]
pub struct ThinkSplitter {
    inside: bool,
    pending: String,
}

impl ThinkSplitter {
    /// A splitter outside any `<think>` block.
    pub fn new() -> Self {
        Self::default()
    }

    /// Splits one delta. A possible tag prefix at the end is held back until the next delta.
    pub fn push(&mut self, delta: &str) -> Vec<Piece> {
        let mut s = std::mem::take(&mut self.pending);
        s.push_str(delta);
        let mut out = Vec::new();
        loop {
            let tag = if self.inside { CLOSE } else { OPEN };
            if let Some(i) = s.find(tag) {
                self.emit(&s[..i], &mut out);
                s = s[i + tag.len()..].to_owned();
                self.inside = !self.inside;
                continue;
            }
            // Hold back the longest suffix that is a prefix of the tag.
            let keep = (1..tag.len())
                .rev()
                .find(|&n| {
                    s.len() >= n
                        && s.is_char_boundary(s.len() - n)
                        && tag.starts_with(&s[s.len() - n..])
                })
                .unwrap_or(0);
            let cut = s.len() - keep;
            self.emit(&s[..cut], &mut out);
            self.pending = s[cut..].to_owned();
            break;
        }
        out
    }

    /// Flushes what is held back at the end of the stream.
    pub fn finish(&mut self) -> Vec<Piece> {
        let mut out = Vec::new();
        let rest = std::mem::take(&mut self.pending);
        self.emit(&rest, &mut out);
        out
    }

    fn emit(&self, s: &str, out: &mut Vec<Piece>) {
        if s.is_empty() {
            return;
        }
        let piece = if self.inside {
            Piece::Think(s.to_owned())
        } else {
            Piece::Text(s.to_owned())
        };
        match (out.last_mut(), piece) {
            (Some(Piece::Text(a)), Piece::Text(b)) | (Some(Piece::Think(a)), Piece::Think(b)) => {
                a.push_str(&b)
            }
            (_, p) => out.push(p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(deltas: &[&str]) -> (String, String) {
        let mut s = ThinkSplitter::new();
        let (mut text, mut think) = (String::new(), String::new());
        let mut pieces: Vec<Piece> = deltas.iter().flat_map(|d| s.push(d)).collect();
        pieces.extend(s.finish());
        for p in pieces {
            match p {
                Piece::Text(t) => text.push_str(&t),
                Piece::Think(t) => think.push_str(&t),
            }
        }
        (text, think)
    }

    #[test]
    fn tags_split_at_every_position() {
        let whole = "<think>plan é</think>Answer <b>x</b> done";
        for i in 0..=whole.len() {
            if !whole.is_char_boundary(i) {
                continue;
            }
            for j in i..=whole.len() {
                if !whole.is_char_boundary(j) {
                    continue;
                }
                let (t, k) = run(&[&whole[..i], &whole[i..j], &whole[j..]]);
                assert_eq!(k, "plan é", "cuts {i},{j}");
                assert_eq!(t, "Answer <b>x</b> done", "cuts {i},{j}");
            }
        }
    }

    #[test]
    fn a_lone_angle_bracket_is_flushed() {
        assert_eq!(run(&["a <", "thin"]), ("a <thin".into(), String::new()));
        assert_eq!(run(&["x<think>unclosed"]), ("x".into(), "unclosed".into()));
    }
}
