//! What this store last wrote of recent conversations' active paths, so that saving one more
//! turn costs what the turn adds, not what the conversation holds.
//!
//! A save compares the incoming messages with the stored path ([`tree::plan`]). Without this
//! cache that means serialising every incoming message and reading the whole path back (3.2 ms
//! to append a turn to 5,000 messages, before branches). With it, the incoming messages are
//! compared with the path this store wrote last (`Message` equality, no serialising, no
//! reading; each message with its node number) and only the messages it writes are
//! serialised.
//!
//! [`tree::plan`]: crate::store::tree::plan
//!
//! Decisions:
//! - **A generation, not the revision, says whether the cache is current.** Every save that
//!   writes messages stores a fresh random 64-bit `generation` in the conversation's row, in the
//!   same transaction; the cache entry holds the generation it wrote. Another store on the same
//!   file (another process or instance), a delete and re-create, anything that rewrites the
//!   messages leaves another generation, and the save reads the rows as before. A patch (title,
//!   model) bumps the revision but leaves the messages and the generation alone; a branch
//!   switch or delete changes the path, so it writes a new generation too.
//! - **Equal `Message`s keep their stored row.** Two messages that compare equal serialise to
//!   the same JSON but for the order of object keys inside opaque values; either text stands for
//!   the same message.
//! - **Bounded**: at most [`MAX_CONVERSATIONS`] conversations and [`MAX_MESSAGES`] messages in
//!   all; the least recently written go first, and a conversation longer than the whole budget
//!   is not kept (its saves read rows, as before).

use indexmap::IndexMap;
use lmchatkit_protocol::Message;

/// A message of the active path with its node number (`seq`).
pub(super) type Node = (i64, Message);

/// The most conversations kept.
pub(super) const MAX_CONVERSATIONS: usize = 256;
/// The most messages kept over all conversations.
pub(super) const MAX_MESSAGES: usize = 50_000;

type Key = (String, String);

/// The cache; lives beside the connection and is only touched with its lock held.
#[derive(Default)]
pub(super) struct Written {
    /// From least to most recently written.
    entries: IndexMap<Key, (i64, Vec<Node>)>,
    messages: usize,
}

impl Written {
    /// The messages written last for `principal`'s conversation `id`, when `generation` is
    /// still the stored one.
    pub(super) fn get(&self, principal: &str, id: &str, generation: i64) -> Option<&[Node]> {
        let (g, messages) = self.entries.get(&(principal.to_owned(), id.to_owned()))?;
        (*g == generation).then_some(messages.as_slice())
    }

    /// Remembers that `messages` were written under `generation`.
    pub(super) fn put(&mut self, principal: &str, id: &str, generation: i64, messages: Vec<Node>) {
        // Dropped here: `put` follows `forget`, which already took the previous entry.
        drop(self.forget(principal, id));
        if messages.len() > MAX_MESSAGES {
            return;
        }
        self.messages += messages.len();
        self.entries.insert(
            (principal.to_owned(), id.to_owned()),
            (generation, messages),
        );
        while self.entries.len() > MAX_CONVERSATIONS || self.messages > MAX_MESSAGES {
            let Some((_, (_, old))) = self.entries.shift_remove_index(0) else {
                break;
            };
            self.messages -= old.len();
        }
    }

    /// Forgets `principal`'s conversation `id` (deleted, or about to be rewritten); what was
    /// kept, for the caller to drop when it suits it (a long conversation takes a while).
    pub(super) fn forget(&mut self, principal: &str, id: &str) -> Option<Vec<Node>> {
        let (_, old) = self
            .entries
            .shift_remove(&(principal.to_owned(), id.to_owned()))?;
        self.messages -= old.len();
        Some(old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(n: usize) -> Vec<Node> {
        (0..n)
            .map(|i| {
                (
                    i as i64,
                    Message::user(format!("m{i}")).with_id(format!("{i}")),
                )
            })
            .collect()
    }

    #[test]
    fn an_entry_counts_only_under_the_generation_it_was_written_with() {
        let mut w = Written::default();
        w.put("p", "c", 7, msgs(3));
        assert_eq!(w.get("p", "c", 7).map(<[_]>::len), Some(3));
        assert!(w.get("p", "c", 8).is_none());
        assert!(w.get("q", "c", 7).is_none());
        w.forget("p", "c");
        assert!(w.get("p", "c", 7).is_none());
        assert_eq!(w.messages, 0);
    }

    #[test]
    fn the_least_recently_written_go_first_and_a_conversation_over_the_budget_is_not_kept() {
        let mut w = Written::default();
        for i in 0..MAX_CONVERSATIONS + 10 {
            w.put("p", &format!("c{i}"), 1, msgs(1));
            // c0 is written again each time: it stays.
            w.put("p", "c0", 1, msgs(1));
        }
        assert_eq!(w.entries.len(), MAX_CONVERSATIONS);
        assert!(w.get("p", "c0", 1).is_some());
        assert!(w.get("p", "c1", 1).is_none());
        assert!(
            w.get("p", &format!("c{}", MAX_CONVERSATIONS + 9), 1)
                .is_some()
        );

        w.put("p", "huge", 1, msgs(MAX_MESSAGES + 1));
        assert!(w.get("p", "huge", 1).is_none());
        w.put("p", "big", 1, msgs(MAX_MESSAGES));
        assert_eq!(w.entries.len(), 1, "the budget is in messages too");
        assert_eq!(w.messages, MAX_MESSAGES);
    }
}
