//! Shell-style input history of the composer (↑/↓), shared by all chats, 50 entries; re-sending
//! an entry moves it to the end; ↓ past the newest entry restores the draft in progress.

/// How many entries are kept.
pub const MAX_ENTRIES: usize = 50;

/// The history and the browsing position.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct InputHistory {
    entries: Vec<String>,
    pos: Option<usize>,
    draft: String,
}

impl InputHistory {
    /// A history with these entries (oldest first), e.g. read from sessionStorage.
    pub fn from_entries(mut entries: Vec<String>) -> Self {
        let excess = entries.len().saturating_sub(MAX_ENTRIES);
        entries.drain(..excess);
        Self {
            entries,
            pos: None,
            draft: String::new(),
        }
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Records a sent message and stops browsing.
    pub fn record(&mut self, text: &str) {
        let text = text.trim();
        self.pos = None;
        if text.is_empty() {
            return;
        }
        self.entries.retain(|e| e != text);
        self.entries.push(text.to_owned());
        let excess = self.entries.len().saturating_sub(MAX_ENTRIES);
        self.entries.drain(..excess);
    }

    /// ↑: the previous entry, remembering `current` as the draft when browsing starts.
    pub fn up(&mut self, current: &str) -> Option<String> {
        let next = match self.pos {
            None if self.entries.is_empty() => return None,
            None => {
                self.draft = current.to_owned();
                self.entries.len() - 1
            }
            Some(0) => return None,
            Some(p) => p - 1,
        };
        self.pos = Some(next);
        Some(self.entries[next].clone())
    }

    /// ↓: the next entry, or the saved draft past the newest one; `None` when not browsing.
    pub fn down(&mut self) -> Option<String> {
        let p = self.pos?;
        if p + 1 < self.entries.len() {
            self.pos = Some(p + 1);
            Some(self.entries[p + 1].clone())
        } else {
            self.pos = None;
            Some(std::mem::take(&mut self.draft))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browse_and_restore_the_draft() {
        let mut h = InputHistory::default();
        assert_eq!(h.up("x"), None);
        h.record("one");
        h.record("two");
        assert_eq!(h.up("draft").as_deref(), Some("two"));
        assert_eq!(h.up("").as_deref(), Some("one"));
        assert_eq!(h.up(""), None);
        assert_eq!(h.down().as_deref(), Some("two"));
        assert_eq!(h.down().as_deref(), Some("draft"));
        assert_eq!(h.down(), None);
    }

    #[test]
    fn resent_entries_move_to_the_end_and_the_cap_holds() {
        let mut h = InputHistory::default();
        h.record("a");
        h.record("b");
        h.record("a");
        assert_eq!(h.entries(), ["b", "a"]);
        for i in 0..60 {
            h.record(&format!("m{i}"));
        }
        assert_eq!(h.entries().len(), MAX_ENTRIES);
        assert_eq!(h.entries().last().unwrap(), "m59");
        h.record("   ");
        assert_eq!(h.entries().len(), MAX_ENTRIES);
    }
}
