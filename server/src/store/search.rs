//! Full-text search over a principal's stored messages: the query, what matches, and the
//! snippet a hit shows. Every store answers [`HistoryStore::search`](super::HistoryStore::search)
//! with these rules, so the memory, SQLite and PostgreSQL stores find the same messages.
//!
//! Decisions:
//! - **What is searched**: the text of user and assistant messages (their text parts joined),
//!   what the transcript shows as the conversation. Tool results, reasoning and attachments'
//!   bytes are not: a chat UI's search finds what was said, and a tool's JSON would drown it.
//! - **What matches**: the query is split into terms at every character that is not a letter
//!   or a digit and lowercased; a message matches when each term starts one of its words (split
//!   and lowercased the same way). So `sear` finds "Search", and `rust async` finds a message
//!   holding both words in any order. A term is never syntax: quotes, `*`, `-`, `OR` or `:` are
//!   separators or plain words, and the stores quote each term for their engine (SQLite FTS5
//!   prefix queries, PostgreSQL `to_tsquery('simple', …)` with `:*`), so no user text can make
//!   a query error.
//! - **Order**: the newest conversation first (`updated_at`), then by position in the
//!   conversation; at most [`MAX_LIMIT`] hits ([`DEFAULT_LIMIT`] unless asked).
//! - **Snippets** are plain text (never HTML) around the first match, at most about
//!   [`SNIPPET_CHARS`] characters, with `…` where they cut the text; `matches` gives the ranges
//!   of the matched words' prefixes in the snippet, in characters (Unicode scalar values).
//! - **How a store finds them**: the newest conversations first, read whole and checked here,
//!   then the engine's index for what they did not settle (`NewestFirst`, measured by the
//!   ignored `search_figures` tests: p95 13 ms on SQLite, 37 ms on PostgreSQL, over 10,000
//!   conversations of 50 messages). A store's hits equal a scan of every conversation; the
//!   conformance suite checks it.
//! - **What the index costs a save**: on PostgreSQL, the `tsvector` written with the row (a
//!   turn 1.00-1.09x the cost of a save without searchable text, a 50-message save 1.6-2.4x).
//!   On SQLite a save only queues its messages; the store's writer fills FTS5 in batches while
//!   no save waits (`sqlite::group`): a turn 0.99-1.06x, a 50-message save 1.05-1.10x, and the
//!   writer's idle work about 12 µs per message (the same ignored tests).
//! - **Bad queries**: one with no term (empty, or only punctuation) or longer than
//!   [`MAX_QUERY_CHARS`] characters is [`HistoryError::InvalidInput`] (a 400 at the route).

use lmchatkit_protocol::{Message, Role, SearchHit};

use super::HistoryError;

/// The longest query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 200;
/// Hits returned when the request names no limit.
pub const DEFAULT_LIMIT: usize = 20;
/// The most hits one search returns.
pub const MAX_LIMIT: usize = 100;
/// About how many characters of the message a snippet shows.
pub const SNIPPET_CHARS: usize = 160;
/// At most this many terms are used (the rest of a long query is dropped).
const MAX_TERMS: usize = 16;

/// A checked search: its terms and how many hits to return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    terms: Vec<String>,
    limit: usize,
}

impl SearchQuery {
    /// Parses `query` (see the [module docs](self)); `limit` is clamped to `1..=MAX_LIMIT`.
    ///
    /// ```
    /// use lmchatkit::store::SearchQuery;
    /// let q = SearchQuery::parse("Rust's \"async\" OR-traits", None).unwrap();
    /// assert_eq!(q.terms(), ["rust", "s", "async", "or", "traits"]);
    /// assert!(SearchQuery::parse("  ?! ", None).is_err());
    /// ```
    pub fn parse(query: &str, limit: Option<usize>) -> Result<Self, HistoryError> {
        if query.chars().count() > MAX_QUERY_CHARS {
            return Err(HistoryError::InvalidInput(format!(
                "a search query holds at most {MAX_QUERY_CHARS} characters"
            )));
        }
        let mut terms: Vec<String> = Vec::new();
        for word in words(query) {
            if !terms.contains(&word) {
                terms.push(word);
            }
        }
        terms.truncate(MAX_TERMS);
        if terms.is_empty() {
            return Err(HistoryError::InvalidInput(
                "a search query needs a word to look for".into(),
            ));
        }
        let limit = limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        Ok(Self { terms, limit })
    }

    /// The terms, lowercased, each once, in the query's order.
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// How many hits to return.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether `text` matches: every term starts one of its words.
    pub fn matches(&self, text: &str) -> bool {
        self.found_in(text) == self.all_terms()
    }

    /// The terms that start a word of `text`, as bits (term `i` is bit `i`).
    fn found_in(&self, text: &str) -> u32 {
        let mut found = 0;
        for word in words(text) {
            for (i, t) in self.terms.iter().enumerate() {
                if word.starts_with(t.as_str()) {
                    found |= 1 << i;
                }
            }
            if found == self.all_terms() {
                break;
            }
        }
        found
    }

    /// Every term's bit set.
    fn all_terms(&self) -> u32 {
        (1u32 << self.terms.len()) - 1
    }

    /// The query for SQLite FTS5 of `terms` (some of [`terms`](Self::terms)): each a quoted
    /// prefix query, all required.
    #[cfg(feature = "sqlite")]
    pub(crate) fn fts5(terms: &[&str]) -> String {
        terms
            .iter()
            .map(|t| format!("\"{}\"*", t.replace('"', "\"\"")))
            .collect::<Vec<_>>()
            .join(" AND ")
    }

    /// The query for PostgreSQL's `to_tsquery('simple', …)` of `terms` (some of
    /// [`terms`](Self::terms)): each a quoted prefix, all required.
    #[cfg(feature = "postgres")]
    pub(crate) fn tsquery(terms: &[&str]) -> String {
        terms
            .iter()
            .map(|t| format!("'{}':*", t.replace('\'', "''").replace('\\', "\\\\")))
            .collect::<Vec<_>>()
            .join(" & ")
    }

    /// The hit for the message at `index` of a conversation, or `None` when it does not match
    /// (an engine's index may match more loosely than [`matches`](Self::matches)).
    pub fn hit(
        &self,
        conversation: (&str, &str, i64),
        index: u64,
        message: &Message,
    ) -> Option<SearchHit> {
        let text = searchable_text(message)?;
        self.hit_in_text(conversation, index, message.id.clone(), &text)
    }

    /// [`hit`](Self::hit) for a message whose [`searchable_text`] is `text`.
    pub fn hit_in_text(
        &self,
        (conversation_id, title, updated_at): (&str, &str, i64),
        index: u64,
        message_id: Option<String>,
        text: &str,
    ) -> Option<SearchHit> {
        self.matches(text).then(|| {
            self.hit_unchecked(
                (conversation_id, title, updated_at),
                index,
                message_id,
                text,
            )
        })
    }

    /// [`hit_in_text`](Self::hit_in_text) for a `text` known to match.
    fn hit_unchecked(
        &self,
        (conversation_id, title, updated_at): (&str, &str, i64),
        index: u64,
        message_id: Option<String>,
        text: &str,
    ) -> SearchHit {
        let (snippet, matches) = self.snippet(text);
        SearchHit {
            conversation_id: conversation_id.to_owned(),
            message_id,
            index,
            node: None,
            title: title.to_owned(),
            snippet,
            matches,
            updated_at,
        }
    }

    /// The snippet of `text` around its first match and the matched ranges in it.
    fn snippet(&self, text: &str) -> (String, Vec<[u32; 2]>) {
        // Words of the text as (char start, char end of the matched prefix), for matching ones.
        let chars: Vec<char> = text.chars().collect();
        let mut hits: Vec<(usize, usize)> = Vec::new();
        for ((start, len), word) in word_spans(&chars) {
            if let Some(t) = self
                .terms
                .iter()
                .filter(|t| word.starts_with(t.as_str()))
                .max_by_key(|t| t.chars().count())
            {
                hits.push((start, (start + t.chars().count()).min(start + len)));
            }
        }
        let first = hits.first().map_or(0, |h| h.0);
        // Some context before the first match, the rest after it.
        let from = first.saturating_sub(SNIPPET_CHARS / 4);
        let from = word_start(&chars, from);
        let to = (from + SNIPPET_CHARS).min(chars.len());
        let mut snippet = String::new();
        let offset = if from > 0 {
            snippet.push('…');
            1
        } else {
            0
        };
        snippet.extend(
            chars[from..to]
                .iter()
                .map(|c| if c.is_control() { ' ' } else { *c }),
        );
        if to < chars.len() {
            snippet.push('…');
        }
        let matches = hits
            .into_iter()
            .filter(|(s, e)| *s >= from && *e <= to)
            .map(|(s, e)| [(s - from + offset) as u32, (e - from + offset) as u32])
            .collect();
        (snippet, matches)
    }
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// Messages with searchable text the first stage of a search reads at least, and per hit
/// asked for ([`NewestFirst`]).
const FIRST_STAGE_MESSAGES: usize = 400;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
const FIRST_STAGE_PER_HIT: usize = 20;

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// A term held by fewer than one in this many messages of the first stage is rare enough for
/// an engine's index ([`NewestFirst::selective`]).
const RARE: usize = 50;

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// The first stage of a store's search: the caller's newest conversations, read whole (every
/// branch) and checked here until the page is full or about [`FIRST_STAGE_MESSAGES`] messages
/// (more for a larger page) have been read.
///
/// A query that matches densely (a common word, a short prefix of many words) fills its page
/// here, in the few newest conversations, without asking the engine's index, whose answer for
/// it is most of the stored messages (SQLite FTS5 and PostgreSQL both gather a prefix query's
/// whole list of matches before the first one). For a rarer query the messages read are a
/// sample: they say which terms are rare ([`selective`](Self::selective)), and the store asks
/// its index for those alone and checks the others here, in the conversations this stage did
/// not read ([`scanned`](Self::scanned)). Either way the hits are those of a scan of every
/// conversation, newest first. Measured by [`super::search_figures`].
pub(crate) struct NewestFirst<'q> {
    query: &'q SearchQuery,
    hits: Vec<SearchHit>,
    /// Messages with searchable text read.
    read: usize,
    /// Per term, the messages read that hold it.
    holding: Vec<usize>,
    /// The conversations read whole.
    scanned: Vec<String>,
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl<'q> NewestFirst<'q> {
    /// A first stage of `query` with nothing read.
    pub(crate) fn new(query: &'q SearchQuery) -> Self {
        Self {
            query,
            hits: Vec::new(),
            read: 0,
            holding: vec![0; query.terms.len()],
            scanned: Vec::new(),
        }
    }

    /// Whether to read the next conversation: the page is not full and the budget not spent.
    /// (A conversation is always read whole, so the hits stay in order.)
    pub(crate) fn wants_more(&self) -> bool {
        self.hits.len() < self.query.limit
            && self.read < FIRST_STAGE_MESSAGES.max(self.query.limit * FIRST_STAGE_PER_HIT)
    }

    /// [`wants_more`](Self::wants_more), and past the budget too while what was read says
    /// the page fills within about `most` messages in all (the hits so far, at the rate they
    /// came): a store whose index costs more per match than its reading does per message
    /// (PostgreSQL) reads on through a query of middling density instead.
    #[cfg(feature = "postgres")]
    pub(crate) fn worth_more(&self, most: usize) -> bool {
        if self.wants_more() {
            return true;
        }
        let found = self.hits.len();
        let missing = self.query.limit.saturating_sub(found);
        missing > 0 && found > 0 && self.read + missing * self.read / found <= most
    }

    /// Whether the page is full.
    pub(crate) fn is_full(&self) -> bool {
        self.hits.len() >= self.query.limit
    }

    /// Notes that the conversation `id` has been read whole.
    pub(crate) fn scanned_whole(&mut self, id: &str) {
        self.scanned.push(id.to_owned());
    }

    /// The conversations read whole, in the order read.
    #[cfg(feature = "postgres")]
    pub(crate) fn scanned(&self) -> &[String] {
        &self.scanned
    }

    /// Checks one message of the conversation being read: its node, its position and its
    /// searchable text. Messages of a conversation come in node order.
    pub(crate) fn message(
        &mut self,
        conversation: (&str, &str, i64),
        (node, index): (u64, u64),
        message_id: Option<String>,
        text: &str,
    ) {
        self.read += 1;
        let found = self.query.found_in(text);
        for (i, n) in self.holding.iter_mut().enumerate() {
            *n += usize::from(found & (1 << i) != 0);
        }
        if found == self.query.all_terms() && self.hits.len() < self.query.limit {
            let mut hit = self
                .query
                .hit_unchecked(conversation, index, message_id, text);
            hit.node = Some(node);
            self.hits.push(hit);
        }
    }

    /// The terms to ask an engine's index for: those held by fewer than one in [`RARE`] of the
    /// messages read, or, when every term is common, the least common one (the longest of
    /// equals: a longer prefix starts fewer words). Never empty.
    pub(crate) fn selective(&self) -> Vec<&'q str> {
        let query = self.query;
        let mut order: Vec<usize> = (0..query.terms.len()).collect();
        order.sort_by_key(|&i| (self.holding[i], std::cmp::Reverse(query.terms[i].len())));
        let rare: Vec<&str> = order
            .iter()
            .filter(|&&i| self.holding[i] * RARE < self.read.max(1))
            .map(|&i| query.terms[i].as_str())
            .collect();
        if rare.is_empty() {
            vec![query.terms[order[0]].as_str()]
        } else {
            rare
        }
    }

    /// The hits so far, in order.
    pub(crate) fn into_hits(self) -> Vec<SearchHit> {
        self.hits
    }
}

/// The text search looks in: a user or assistant message's text parts, joined by new lines;
/// `None` for other roles and for messages without text.
pub fn searchable_text(message: &Message) -> Option<String> {
    if !matches!(message.role, Role::User | Role::Assistant) {
        return None;
    }
    let text = message.content.joined_text("\n");
    (!text.trim().is_empty()).then_some(text)
}

/// The words of `text` (runs of letters and digits), lowercased.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// The words of `chars` as ((char start, char length), lowercased word).
fn word_spans(chars: &[char]) -> Vec<((usize, usize), String)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_alphanumeric() {
            let start = i;
            while i < chars.len() && chars[i].is_alphanumeric() {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            out.push(((start, i - start), word.to_lowercase()));
        } else {
            i += 1;
        }
    }
    out
}

/// `at`, moved back to the start of the word it falls in.
fn word_start(chars: &[char], mut at: usize) -> usize {
    while at > 0 && chars[at - 1].is_alphanumeric() {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use lmchatkit_protocol::{Content, ContentPart, Message};

    use super::*;

    fn q(text: &str) -> SearchQuery {
        SearchQuery::parse(text, None).unwrap()
    }

    #[test]
    fn a_query_is_lowercased_words_each_once_and_never_syntax() {
        assert_eq!(
            q("Rust OR \"rust\" -async* col:umn").terms(),
            ["rust", "or", "async", "col", "umn"]
        );
        assert_eq!(q("Größe ünd 東京").terms(), ["größe", "ünd", "東京"]);
    }

    #[test]
    fn empty_punctuation_only_and_overlong_queries_are_invalid_input() {
        for bad in ["", "   ", "*:\"'-()", &"a".repeat(MAX_QUERY_CHARS + 1)] {
            assert!(
                matches!(
                    SearchQuery::parse(bad, None),
                    Err(HistoryError::InvalidInput(_))
                ),
                "{bad:?}"
            );
        }
        assert!(SearchQuery::parse(&"a".repeat(MAX_QUERY_CHARS), None).is_ok());
    }

    #[test]
    fn the_limit_is_clamped() {
        assert_eq!(
            SearchQuery::parse("x", None).unwrap().limit(),
            DEFAULT_LIMIT
        );
        assert_eq!(SearchQuery::parse("x", Some(0)).unwrap().limit(), 1);
        assert_eq!(
            SearchQuery::parse("x", Some(10_000)).unwrap().limit(),
            MAX_LIMIT
        );
    }

    #[test]
    fn every_term_must_start_a_word_in_any_order() {
        let text = "Searching the async Rust book, chapter 7.";
        assert!(q("sear").matches(text));
        assert!(q("rust ASYNC").matches(text));
        assert!(q("chapter 7").matches(text));
        assert!(!q("arch").matches(text), "not inside a word");
        assert!(!q("rust python").matches(text), "every term");
    }

    #[test]
    fn engine_queries_quote_every_term() {
        let query = q("it's \"x\" o'k\\");
        let terms: Vec<&str> = query.terms().iter().map(String::as_str).collect();
        #[cfg(feature = "sqlite")]
        assert_eq!(
            SearchQuery::fts5(&terms),
            "\"it\"* AND \"s\"* AND \"x\"* AND \"o\"* AND \"k\"*"
        );
        #[cfg(feature = "postgres")]
        assert_eq!(
            SearchQuery::tsquery(&terms),
            "'it':* & 's':* & 'x':* & 'o':* & 'k':*"
        );
        let _ = terms;
    }

    #[test]
    fn a_snippet_is_plain_text_around_the_first_match_with_its_ranges() {
        let long_before = "word ".repeat(60);
        let text = format!(
            "{long_before}the <b>Needle</b> and a needless end {}",
            "tail ".repeat(60)
        );
        let message = Message::user(text.clone());
        let hit = q("needle").hit(("c1", "Title", 5), 3, &message).unwrap();
        assert_eq!((hit.conversation_id.as_str(), hit.index), ("c1", 3));
        assert!(
            hit.snippet.starts_with('…') && hit.snippet.ends_with('…'),
            "{}",
            hit.snippet
        );
        assert!(
            hit.snippet.contains("<b>Needle</b>"),
            "text as it is, never markup"
        );
        let chars: Vec<char> = hit.snippet.chars().collect();
        let found: Vec<String> = hit
            .matches
            .iter()
            .map(|[s, e]| chars[*s as usize..*e as usize].iter().collect())
            .collect();
        assert_eq!(found, ["Needle", "needle"], "{:?}", hit.matches);
        assert!(hit.snippet.chars().count() <= SNIPPET_CHARS + 2);
    }

    #[test]
    fn only_user_and_assistant_text_is_searched() {
        let query = q("secret");
        let mut tool = Message::user("secret");
        tool.role = Role::Tool;
        assert!(query.hit(("c", "", 0), 0, &tool).is_none());
        let parts = Message {
            content: Content::Parts(vec![ContentPart::Text {
                text: "a secret".into(),
            }]),
            ..Message::assistant("")
        };
        assert!(query.hit(("c", "", 0), 1, &parts).is_some());
        assert!(
            query
                .hit(("c", "", 0), 2, &Message::user("nothing here"))
                .is_none()
        );
    }
}
