//! The conformance suite every [`HistoryStore`] must pass: the write model and the decisions
//! listed in [`history`](crate::store), checked through the trait alone. lmchatkit runs it
//! against [`MemoryStore`](crate::store::MemoryStore), `SqliteStore` and `PostgresStore`
//! (`tests/history_postgres.rs`, on a real server); a store of your own
//! runs it from its tests with the `test-support` feature:
//!
//! ```toml
//! [dev-dependencies]
//! lmchatkit = { version = "0.1", features = ["test-support"] }
//! ```
//!
//! ```no_run
//! # use lmchatkit::store::MemoryStore as MyStore;
//! use std::sync::Arc;
//!
//! use lmchatkit::store::conformance;
//!
//! #[tokio::test]
//! async fn behaves_like_a_history_store() {
//!     conformance::run(&MyStore::new()).await;
//! }
//!
//! #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
//! async fn concurrent_saves() {
//!     conformance::concurrency(Arc::new(MyStore::new())).await;
//! }
//!
//! #[tokio::test]
//! async fn large_conversation() {
//!     conformance::large_conversation(&MyStore::new()).await;
//! }
//! # fn main() {}
//! ```
//!
//! Decisions of the suite:
//! - It is plain async code that panics on the first deviation (`assert!`), like a test body:
//!   it runs in any tokio test (it sleeps and spawns on tokio), and the failure message and
//!   line say what was expected.
//! - Each function wants a fresh, empty store: [`run`] checks that an empty store lists
//!   nothing, and [`concurrency`] and [`large_conversation`] leave their conversations behind.
//! - Timestamps are wall-clock milliseconds, and the ordering checks sleep a few real
//!   milliseconds between saves: do not run the suite on a paused tokio clock.
//! - The number of message rows a save writes is storage detail, so [`run`] does not check it;
//!   a store that stores messages as rows and counts them can ask for the prefix-write checks
//!   with [`run_with_row_count`].
//! - [`concurrency`] spawns tasks with `tokio::spawn`; on a multi-threaded runtime the races
//!   are real ones.
//! - Totals ([`ConversationTotals`]) are checked against [`ConversationTotals::of`] the stored
//!   messages, after plain saves, a patch, an edit that drops replies and every race: the store
//!   must compute them in the save's own transaction, never trust the body's.

pub mod approvals;
mod branches;
mod search;
mod stress;
#[cfg(feature = "mcp")]
pub mod user_mcp;

pub use stress::{concurrency, large_conversation};

use std::time::Duration;

use lmchatkit_protocol::{
    Approval, Content, ContentPart, ConversationPatch, ConversationSummary, ConversationTotals,
    Message, Params, StoredConversation, ToolCall, UiToolMeta, Usage,
};
use serde_json::json;

use super::{HistoryError, HistoryStore, SaveOutcome};
use crate::host::Principal;

/// The store's count of message rows written (inserted, updated or deleted by saves), when the
/// suite was given one.
#[derive(Clone, Copy)]
pub(super) struct Rows<'a>(Option<&'a (dyn Fn() -> u64 + Sync)>);

impl Rows<'_> {
    /// The count now (0 without a counter).
    pub(super) fn now(self) -> u64 {
        self.0.map_or(0, |count| count())
    }

    /// Checks that `expected` rows were written since the count was `since`.
    #[track_caller]
    pub(super) fn written(self, since: u64, expected: u64, what: &str) {
        if let Some(count) = self.0 {
            assert_eq!(count() - since, expected, "rows written: {what}");
        }
    }
}

pub(super) fn conv(id: &str, revision: u64, messages: Vec<Message>) -> StoredConversation {
    StoredConversation {
        id: id.into(),
        title: format!("title of {id}"),
        persona_id: "default".into(),
        model: "demo".into(),
        params: params(json!({"temperature": 0.5})),
        revision,
        messages,
        ..Default::default()
    }
}

fn params(v: serde_json::Value) -> Params {
    v.as_object().cloned().expect("an object")
}

pub(super) fn msg(role: &str, id: &str, text: &str) -> Message {
    let m = match role {
        "user" => Message::user(text),
        "assistant" => Message::assistant(text),
        _ => Message::system(text),
    };
    m.with_id(id)
}

pub(super) async fn saved(store: &dyn HistoryStore, p: &Principal, c: StoredConversation) -> u64 {
    match store.save(p, c).await.expect("save") {
        SaveOutcome::Saved { revision } => revision,
        SaveOutcome::Conflict(cur) => {
            panic!("unexpected conflict, current revision {}", cur.revision)
        }
    }
}

pub(super) async fn conflict(
    store: &dyn HistoryStore,
    p: &Principal,
    c: StoredConversation,
) -> StoredConversation {
    match store.save(p, c).await.expect("save") {
        SaveOutcome::Conflict(cur) => *cur,
        SaveOutcome::Saved { revision } => panic!("expected a conflict, saved revision {revision}"),
    }
}

pub(super) async fn get(store: &dyn HistoryStore, p: &Principal, id: &str) -> StoredConversation {
    store.get(p, id).await.expect("get").expect("present")
}

/// A message of every shape the UI stores, to check the exact round trip.
fn rich_messages() -> Vec<Message> {
    let mut user = Message::new(
        lmchatkit_protocol::Role::User,
        Content::Parts(vec![
            ContentPart::text("look at this"),
            ContentPart::image_url("data:image/png;base64,iVBORw0KGgo="),
        ]),
    )
    .with_id("r1");
    user.created_at = Some(1_700_000_000_123);

    let mut assistant = Message::assistant("").with_id("r2").with_tool_calls(vec![
        ToolCall {
            approval: Some(Approval::Approved),
            hints: vec![lmchatkit_protocol::ArgumentHint {
                name: "city".into(),
                description: Some("Where <b>the</b> weather is".into()),
                required: true,
            }],
            ..ToolCall::new(
                "call_1",
                "srv__weather",
                json!({"city": "Oslo", "days": [1, 2]}),
            )
        },
        ToolCall {
            approval: Some(Approval::Denied),
            ..ToolCall::new("call_2", "srv__delete", json!("not json {"))
        },
    ]);
    assistant.thinking = Some("let me think… ünïcødé 🎉".into());
    assistant.created_at = Some(1_700_000_000_456);
    assistant.usage = Some(Usage {
        prompt_tokens: Some(10),
        completion_tokens: Some(5),
        total_tokens: Some(15),
        ..Default::default()
    });

    let mut tool = Message::tool("call_1", "srv__weather", "sunny").with_id("r3");
    tool.is_error = true;
    tool.structured_content = Some(json!({"temp": 21.5, "nested": {"a": [null, true]}}));
    tool.ui = Some(UiToolMeta {
        resource_uri: Some("ui://weather/view.html".into()),
        visibility: Vec::new(),
    });

    let mut info = Message::assistant("line 1\nline 2 \"quoted\" \u{0007}").with_id("r4");
    info.info = Some(json!({"kind": "compacted", "n": 12}));

    // No id at all is allowed too.
    let plain = Message::user("no id");
    vec![user, assistant, tool, info, plain]
}

/// The behaviour suite: invalid ids, creating and conflicts, the prefix write's result, an exact
/// round trip of every message shape, principals, patches, deletes, list order and search. Panics on the
/// first deviation. `store` must be empty.
pub async fn run(store: &dyn HistoryStore) {
    run_rows(store, Rows(None)).await;
}

/// [`run`], plus the prefix write's cost: `rows_written` returns the store's running count of
/// message rows inserted plus deleted by saves, and the suite checks that appending a message
/// writes one row, an unchanged save none, an edit at index `i` rewrites from `i`, and so on.
pub async fn run_with_row_count(store: &dyn HistoryStore, rows_written: &(dyn Fn() -> u64 + Sync)) {
    run_rows(store, Rows(Some(rows_written))).await;
}

async fn run_rows(store: &dyn HistoryStore, rows: Rows<'_>) {
    let alice = Principal::new("alice");
    let bob = Principal::new("bob");

    // Empty store.
    assert!(store.list(&alice).await.expect("list").is_empty());
    assert!(store.get(&alice, "c-none").await.expect("get").is_none());
    assert!(!store.delete(&alice, "c-none").await.expect("delete"));
    let p = ConversationPatch {
        title: "x".into(),
        ..Default::default()
    };
    assert_eq!(store.patch(&alice, "c-none", p).await.expect("patch"), None);

    invalid_ids(store).await;
    create_and_conflicts(store, &alice, rows).await;
    prefix_writes(store, &alice, rows).await;
    kept_saves(store, &alice, rows).await;
    tails(store, &alice).await;
    round_trip(store, &alice).await;
    allowed_tools(store, &alice).await;
    totals(store, &alice).await;
    principals(store, &alice, &bob).await;
    patching(store, &alice).await;
    deleting(store, &alice).await;
    branches::branching(store, &alice, &bob, rows).await;
    ordering(store).await;
    search::searching(store).await;
    search::searching_many(store).await;
}

async fn invalid_ids(store: &dyn HistoryStore) {
    let p = Principal::new("alice");
    let long = "x".repeat(129);
    for id in [
        "",
        "a/b",
        "/",
        "..",
        "../etc",
        "a..b",
        "a\0b",
        "a\\b",
        "a\nb",
        long.as_str(),
    ] {
        let is_invalid = |r: Result<(), HistoryError>| matches!(r, Err(HistoryError::InvalidId));
        assert!(
            is_invalid(store.get(&p, id).await.map(|_| ())),
            "get {id:?}"
        );
        assert!(
            is_invalid(store.save(&p, conv(id, 0, vec![])).await.map(|_| ())),
            "save {id:?}"
        );
        let patch = ConversationPatch {
            title: "t".into(),
            ..Default::default()
        };
        assert!(
            is_invalid(store.patch(&p, id, patch).await.map(|_| ())),
            "patch {id:?}"
        );
        assert!(
            is_invalid(store.delete(&p, id).await.map(|_| ())),
            "delete {id:?}"
        );
    }
    assert!(
        store.list(&p).await.expect("list").is_empty(),
        "nothing was stored"
    );
}

async fn create_and_conflicts(store: &dyn HistoryStore, alice: &Principal, rows: Rows<'_>) {
    let before_ms = super::rows::now_ms();
    let w0 = rows.now();
    let messages = vec![
        Message::system("you are helpful"),
        msg("user", "u1", "hello"),
        Message::system("a second system message"),
        msg("assistant", "a1", "hi there"),
    ];
    assert_eq!(saved(store, alice, conv("c-1", 0, messages)).await, 1);
    rows.written(w0, 2, "system messages are not written");

    let got = get(store, alice, "c-1").await;
    assert_eq!(got.id, "c-1");
    assert_eq!(got.revision, 1);
    assert_eq!(got.title, "title of c-1");
    assert_eq!(got.persona_id, "default");
    assert_eq!(got.model, "demo");
    assert_eq!(got.params, params(json!({"temperature": 0.5})));
    assert_eq!(
        got.messages,
        vec![
            msg("user", "u1", "hello"),
            msg("assistant", "a1", "hi there")
        ]
    );
    assert!(got.created_at >= before_ms, "created_at defaults to now");
    assert!(got.updated_at >= got.created_at);

    // A body's created_at is kept on create.
    let mut c2 = conv("c-2", 0, vec![]);
    c2.created_at = 1234;
    assert_eq!(saved(store, alice, c2).await, 1);
    let got2 = get(store, alice, "c-2").await;
    assert_eq!(got2.created_at, 1234);
    assert!(got2.updated_at >= before_ms);
    assert!(got2.messages.is_empty());

    // Base 0 on an existing id, and a stale base: conflict with the current copy, nothing written.
    let w1 = rows.now();
    let cur = conflict(
        store,
        alice,
        conv("c-1", 0, vec![msg("user", "x", "other")]),
    )
    .await;
    assert_eq!(cur, got);
    let cur = conflict(store, alice, conv("c-1", 7, vec![])).await;
    assert_eq!(cur, got);
    rows.written(w1, 0, "a conflict writes nothing");
    assert_eq!(get(store, alice, "c-1").await, got);

    // created_at is kept from the first save, whatever later bodies say.
    let mut c = conv("c-1", 1, got.messages.clone());
    c.created_at = 42;
    c.title = "renamed by save".into();
    assert_eq!(saved(store, alice, c).await, 2);
    let after = get(store, alice, "c-1").await;
    assert_eq!(after.created_at, got.created_at);
    assert_eq!(after.title, "renamed by save");
    assert!(after.updated_at >= got.updated_at);
    assert_eq!(after.revision, 2);
    assert!(store.delete(alice, "c-1").await.expect("delete"));
    assert!(store.delete(alice, "c-2").await.expect("delete"));
}

async fn prefix_writes(store: &dyn HistoryStore, alice: &Principal, rows: Rows<'_>) {
    let id = "c-prefix";
    let mut msgs = vec![msg("user", "u1", "one"), msg("assistant", "a1", "two")];
    let w = rows.now();
    let mut rev = saved(store, alice, conv(id, 0, msgs.clone())).await;
    rows.written(w, 2, "create with two messages");

    // Appending one message writes one row; a turn (two messages) writes two.
    msgs.push(msg("user", "u2", "three"));
    let w = rows.now();
    rev = saved(store, alice, conv(id, rev, msgs.clone())).await;
    rows.written(w, 1, "append one message");
    msgs.push(msg("assistant", "a2", "four"));
    msgs.push(msg("user", "u3", "five"));
    let w = rows.now();
    rev = saved(store, alice, conv(id, rev, msgs.clone())).await;
    rows.written(w, 2, "append a turn");
    assert_eq!(rev, 3);

    // Saving the same messages writes nothing (system messages do not count).
    let mut with_system = msgs.clone();
    with_system.insert(0, Message::system("sys"));
    let w = rows.now();
    rev = saved(store, alice, conv(id, rev, with_system)).await;
    rows.written(w, 0, "unchanged");
    assert_eq!(get(store, alice, id).await.messages, msgs);

    // A message changed under its id with the rest unchanged is updated in place: one row.
    msgs[1] = msg("assistant", "a1", "two, edited");
    let w = rows.now();
    rev = saved(store, alice, conv(id, rev, msgs.clone())).await;
    rows.written(w, 1, "update at index 1");
    let got = get(store, alice, id).await;
    assert_eq!(got.messages, msgs);
    assert!(got.branches.is_empty(), "an update is no new version");

    // Same body, different id: another message, a second version of the last one.
    msgs[4] = msg("user", "u3-new", "five");
    let w = rows.now();
    rev = saved(store, alice, conv(id, rev, msgs.clone())).await;
    rows.written(w, 1, "id change at the end");
    let got = get(store, alice, id).await;
    assert_eq!(got.messages, msgs);
    assert_eq!(got.branches.len(), 1);
    assert_eq!((got.branches[0].index, got.branches[0].current), (4, 1));
    assert_eq!(got.branches[0].versions.len(), 2);

    // A change inside a structured field (tool-call approval) also counts, each an update.
    msgs[3].tool_calls = vec![ToolCall::new("call_9", "t", json!({}))];
    let w = rows.now();
    rev = saved(store, alice, conv(id, rev, msgs.clone())).await;
    msgs[3].tool_calls[0].approval = Some(Approval::Approved);
    rev = saved(store, alice, conv(id, rev, msgs.clone())).await;
    rows.written(w, 2, "two updates of one row");
    assert_eq!(get(store, alice, id).await.messages, msgs);

    // A shorter save moves the leaf back and writes nothing: the rest stays, off the path.
    msgs.truncate(2);
    let w = rows.now();
    rev = saved(store, alice, conv(id, rev, msgs.clone())).await;
    rows.written(w, 0, "truncate 5 → 2");
    let got = get(store, alice, id).await;
    assert_eq!(got.messages, msgs);
    assert!(got.branches.is_empty());

    // Clearing everything, then starting over: the new first message is a second version of
    // the first.
    let w = rows.now();
    rev = saved(store, alice, conv(id, rev, vec![])).await;
    rows.written(w, 0, "clear two messages");
    assert!(get(store, alice, id).await.messages.is_empty());
    msgs = vec![msg("user", "n1", "new start")];
    rev = saved(store, alice, conv(id, rev, msgs.clone())).await;
    let got = get(store, alice, id).await;
    assert_eq!(got.messages, msgs);
    assert_eq!(got.revision, rev);
    assert_eq!(rev, 11);
    assert_eq!(got.branches.len(), 1);
    assert_eq!(got.branches[0].index, 0);
    assert!(store.delete(alice, id).await.expect("delete"));
}

/// A save that says how many stored messages it keeps ([`StoredConversation::kept`]) and
/// carries only what follows them.
fn tail(id: &str, revision: u64, kept: u64, messages: Vec<Message>) -> StoredConversation {
    StoredConversation {
        kept: Some(kept),
        ..conv(id, revision, messages)
    }
}

async fn kept_saves(store: &dyn HistoryStore, alice: &Principal, rows: Rows<'_>) {
    let id = "c-kept";
    let mut msgs = vec![msg("user", "u1", "one"), reply("a1", 100, 10, Some(0.5))];
    let mut rev = saved(store, alice, conv(id, 0, msgs.clone())).await;

    // Appending a turn: only the turn is sent and written; a system message in it is dropped;
    // the totals cover the whole conversation; the body's settings are saved.
    let turn = vec![msg("user", "u2", "two"), reply("a2", 130, 20, Some(0.25))];
    let mut body = tail(id, rev, 2, turn.clone());
    body.messages.insert(1, Message::system("never stored"));
    body.title = "renamed by a tail save".into();
    let w = rows.now();
    rev = saved(store, alice, body).await;
    rows.written(w, 2, "a kept save appending a turn");
    msgs.extend(turn);
    let got = get(store, alice, id).await;
    assert_eq!(got.messages, msgs);
    assert_eq!(got.title, "renamed by a tail save");
    assert_eq!(got.revision, rev);
    assert_eq!(got.kept, None, "a read copy never says what it kept");
    assert_eq!(got.totals, ConversationTotals::of(&msgs));
    assert_eq!(got.totals.last_context_tokens, Some(150));

    // Keeping fewer than are stored with another message after them (a regenerated reply):
    // a new version, one row; the totals count the path's replies, not the earlier version.
    let w = rows.now();
    rev = saved(
        store,
        alice,
        tail(id, rev, 3, vec![reply("a2b", 140, 5, Some(0.125))]),
    )
    .await;
    rows.written(w, 1, "one new version");
    msgs[3] = reply("a2b", 140, 5, Some(0.125));
    let got = get(store, alice, id).await;
    assert_eq!(got.messages, msgs);
    assert_eq!(got.totals, ConversationTotals::of(&msgs));
    assert_eq!(got.totals.total_cost_usd, Some(0.625));
    assert_eq!((got.branches.len(), got.branches[0].index), (1, 3));

    // Keeping everything with nothing new writes no row but still saves the settings.
    let mut same = tail(id, rev, 4, vec![]);
    same.model = "other-model".into();
    let w = rows.now();
    rev = saved(store, alice, same).await;
    rows.written(w, 0, "kept everything");
    let got = get(store, alice, id).await;
    assert_eq!((got.messages.len(), got.model.as_str()), (4, "other-model"));

    // Keeping none starts a new version of the first message.
    rev = saved(
        store,
        alice,
        tail(id, rev, 0, vec![msg("user", "n1", "fresh")]),
    )
    .await;
    msgs = vec![msg("user", "n1", "fresh")];
    let got = get(store, alice, id).await;
    assert_eq!(got.messages, msgs);
    assert_eq!(got.totals, ConversationTotals::default());

    // Claiming more than is stored, or a stale base: a conflict with the current copy, nothing
    // written.
    let w = rows.now();
    let cur = conflict(store, alice, tail(id, rev, 2, vec![msg("user", "x", "x")])).await;
    assert_eq!(cur, got);
    let cur = conflict(
        store,
        alice,
        tail(id, rev - 1, 1, vec![msg("user", "x", "x")]),
    )
    .await;
    assert_eq!(cur, got);
    let cur = conflict(store, alice, tail(id, 0, 0, vec![msg("user", "x", "x")])).await;
    assert_eq!(cur, got);
    rows.written(w, 0, "refused kept saves write nothing");
    assert_eq!(get(store, alice, id).await, got);

    // A conversation that is gone cannot keep anything: the conflict copy is empty at revision
    // 0, and nothing is created. Keeping none creates it, as a whole save does.
    assert!(store.delete(alice, id).await.expect("delete"));
    let gone = conflict(store, alice, tail(id, rev, 1, vec![msg("user", "x", "x")])).await;
    assert_eq!((gone.id.as_str(), gone.revision), (id, 0));
    assert!(gone.messages.is_empty());
    assert!(store.get(alice, id).await.expect("get").is_none());
    assert_eq!(saved(store, alice, tail(id, rev, 0, msgs.clone())).await, 1);
    assert_eq!(get(store, alice, id).await.messages, msgs);
    assert!(store.delete(alice, id).await.expect("delete"));
}

/// [`HistoryStore::get_tail`]: the last messages, how many come before them, and the rest of
/// the copy as a whole read has it.
async fn tails(store: &dyn HistoryStore, alice: &Principal) {
    let id = "c-tail";
    assert!(store.get_tail(alice, id, 2).await.expect("tail").is_none());
    let msgs: Vec<Message> = (0..5)
        .map(|i| msg("user", &format!("t{i}"), &format!("message {i}")))
        .collect();
    let mut body = conv(id, 0, msgs.clone());
    body.messages
        .insert(2, Message::system("never stored, never counted"));
    saved(store, alice, body).await;
    let whole = get(store, alice, id).await;
    let (tail, before) = store
        .get_tail(alice, id, 2)
        .await
        .expect("tail")
        .expect("present");
    assert_eq!(before, 3);
    assert_eq!(tail.messages, msgs[3..]);
    assert_eq!(
        StoredConversation {
            messages: whole.messages[3..].to_vec(),
            ..whole.clone()
        },
        tail,
        "everything but the messages as a whole read has it"
    );
    let (all, before) = store
        .get_tail(alice, id, 50)
        .await
        .expect("tail")
        .expect("present");
    assert_eq!((all, before), (whole, 0));
    let (none, before) = store
        .get_tail(alice, id, 0)
        .await
        .expect("tail")
        .expect("present");
    assert_eq!((none.messages.len(), before), (0, 5));
    assert!(matches!(
        store.get_tail(alice, "../x", 1).await,
        Err(HistoryError::InvalidId)
    ));
    assert!(
        store
            .get_tail(&Principal::new("bob"), id, 2)
            .await
            .expect("tail")
            .is_none()
    );
    assert!(store.delete(alice, id).await.expect("delete"));
}

async fn round_trip(store: &dyn HistoryStore, alice: &Principal) {
    let messages = rich_messages();
    let rev = saved(store, alice, conv("c-rich", 0, messages.clone())).await;
    let got = get(store, alice, "c-rich").await;
    assert_eq!(got.messages, messages);
    // Byte-exact JSON too (key order of arguments and structured content preserved).
    assert_eq!(
        serde_json::to_string(&got.messages).expect("serializes"),
        serde_json::to_string(&messages).expect("serializes")
    );
    // Re-saving what was read writes a new revision and changes nothing.
    let rev2 = saved(store, alice, conv("c-rich", rev, got.messages.clone())).await;
    assert_eq!(rev2, rev + 1);
    assert_eq!(get(store, alice, "c-rich").await.messages, messages);
    assert!(store.delete(alice, "c-rich").await.expect("delete"));
}

/// An assistant reply that used `prompt` + `output` tokens and cost `cost` (unknown: `None`).
pub(super) fn reply(id: &str, prompt: u64, output: u64, cost: Option<f64>) -> Message {
    let mut m = msg("assistant", id, "answer");
    m.usage = Some(Usage {
        prompt_tokens: Some(prompt),
        completion_tokens: Some(output),
        ..Default::default()
    });
    m.cost_usd = cost;
    m
}

/// The totals a get and the list report are those of the saved messages, whatever the body
/// claimed; a patch keeps them; an edit that drops a reply lowers them.
async fn totals(store: &dyn HistoryStore, alice: &Principal) {
    let mut messages = vec![
        msg("user", "t1", "q"),
        reply("t2", 100, 10, Some(0.25)),
        msg("user", "t3", "q"),
        reply("t4", 130, 20, None),
    ];
    let mut c = conv("c-totals", 0, messages.clone());
    // A forged total in the body is ignored.
    c.totals.total_cost_usd = Some(99.0);
    c.totals.total_input_tokens = 1;
    saved(store, alice, c).await;
    let expected = ConversationTotals {
        total_input_tokens: 230,
        total_output_tokens: 30,
        total_cost_usd: Some(0.25),
        last_context_tokens: Some(150),
    };
    assert_eq!(get(store, alice, "c-totals").await.totals, expected);
    let listed = |list: Vec<ConversationSummary>| {
        list.into_iter()
            .find(|s| s.id == "c-totals")
            .expect("listed")
            .totals
    };
    assert_eq!(listed(store.list(alice).await.expect("list")), expected);
    let p = ConversationPatch {
        title: "renamed".into(),
        ..Default::default()
    };
    store.patch(alice, "c-totals", p).await.expect("patch");
    let patched = get(store, alice, "c-totals").await;
    assert_eq!(patched.totals, expected);

    let rev = patched.revision;
    messages.truncate(2);
    saved(store, alice, conv("c-totals", rev, messages)).await;
    let after = ConversationTotals {
        total_input_tokens: 100,
        total_output_tokens: 10,
        total_cost_usd: Some(0.25),
        last_context_tokens: Some(110),
    };
    assert_eq!(get(store, alice, "c-totals").await.totals, after);
    assert_eq!(listed(store.list(alice).await.expect("list")), after);
    assert!(store.delete(alice, "c-totals").await.expect("delete"));
}

/// The conversation with `allowed_tools` set to `tools` (written as JSON, the way a PUT body is).
fn with_allowed(c: StoredConversation, tools: serde_json::Value) -> StoredConversation {
    let mut v = serde_json::to_value(c).expect("serializes");
    v["allowed_tools"] = tools;
    serde_json::from_value(v).expect("a conversation")
}

fn allowed_of(c: &StoredConversation) -> serde_json::Value {
    serde_json::to_value(c).expect("serializes")["allowed_tools"].clone()
}

/// The tools a conversation always allows are saved with it, replaced by each save (an empty list
/// clears them) and kept by a patch.
async fn allowed_tools(store: &dyn HistoryStore, alice: &Principal) {
    let id = "c-allowed";
    let c = with_allowed(
        conv(id, 0, vec![msg("user", "1", "hi")]),
        json!(["get_weather", "fs__read"]),
    );
    saved(store, alice, c).await;
    let got = get(store, alice, id).await;
    assert_eq!(allowed_of(&got), json!(["get_weather", "fs__read"]));
    let p = ConversationPatch {
        title: "renamed".into(),
        ..Default::default()
    };
    let rev = store
        .patch(alice, id, p)
        .await
        .expect("patch")
        .expect("the conversation exists");
    assert_eq!(
        allowed_of(&get(store, alice, id).await),
        json!(["get_weather", "fs__read"]),
        "a patch keeps them"
    );
    let c = with_allowed(conv(id, rev, got.messages.clone()), json!(["fs__read"]));
    let rev = saved(store, alice, c).await;
    assert_eq!(
        allowed_of(&get(store, alice, id).await),
        json!(["fs__read"])
    );
    saved(store, alice, conv(id, rev, got.messages)).await;
    assert_eq!(
        allowed_of(&get(store, alice, id).await),
        serde_json::Value::Null,
        "an empty list clears them (and is not serialized)"
    );
    assert!(store.delete(alice, id).await.expect("delete"));
}

async fn principals(store: &dyn HistoryStore, alice: &Principal, bob: &Principal) {
    let anon = Principal::anonymous();
    let id = "c-shared-id";
    saved(store, alice, conv(id, 0, vec![msg("user", "1", "alice's")])).await;
    assert!(store.get(bob, id).await.expect("get").is_none());
    assert!(store.get(&anon, id).await.expect("get").is_none());
    assert!(store.list(bob).await.expect("list").is_empty());
    assert!(!store.delete(bob, id).await.expect("delete"));
    let p = ConversationPatch {
        title: "bob was here".into(),
        ..Default::default()
    };
    assert_eq!(store.patch(bob, id, p).await.expect("patch"), None);

    // The same id for bob is his own conversation (base 0 creates, no conflict).
    saved(store, bob, conv(id, 0, vec![msg("user", "1", "bob's")])).await;
    saved(store, &anon, conv(id, 0, vec![msg("user", "1", "anon's")])).await;
    let a = get(store, alice, id).await;
    let b = get(store, bob, id).await;
    assert_eq!(a.messages[0].content.as_text(), Some("alice's"));
    assert_eq!(b.messages[0].content.as_text(), Some("bob's"));
    assert_eq!(a.title, "title of c-shared-id");
    assert_eq!(a.revision, 1);
    assert_eq!(store.list(bob).await.expect("list").len(), 1);
    assert_eq!(store.list(&anon).await.expect("list").len(), 1);

    // Bob deleting his copy leaves alice's alone.
    assert!(store.delete(bob, id).await.expect("delete"));
    assert!(store.get(bob, id).await.expect("get").is_none());
    assert_eq!(get(store, alice, id).await, a);
    assert!(store.delete(&anon, id).await.expect("delete"));
    assert!(store.delete(alice, id).await.expect("delete"));
}

async fn patching(store: &dyn HistoryStore, alice: &Principal) {
    let id = "c-patch";
    let rev = saved(store, alice, conv(id, 0, vec![msg("user", "1", "hi")])).await;
    let before = get(store, alice, id).await;

    let p = ConversationPatch {
        title: "  New title \n".into(),
        model: Some(String::new()),
        persona_id: Some("coder".into()),
        params: None,
    };
    let rev2 = store
        .patch(alice, id, p)
        .await
        .expect("patch")
        .expect("the conversation exists");
    assert_eq!(rev2, rev + 1);
    let got = get(store, alice, id).await;
    assert_eq!(got.title, "New title");
    assert_eq!(got.model, "demo", "an empty model is ignored");
    assert_eq!(got.persona_id, "coder");
    assert_eq!(got.params, before.params, "absent params are kept");
    assert_eq!(got.revision, rev2);
    assert!(got.updated_at >= before.updated_at);
    assert_eq!(got.created_at, before.created_at);
    assert_eq!(got.messages, before.messages);

    // Params replace wholesale, even with {}.
    let p = ConversationPatch {
        title: "New title".into(),
        model: Some("gpt-x".into()),
        persona_id: Some(String::new()),
        params: Some(Params::new()),
    };
    let rev3 = store
        .patch(alice, id, p)
        .await
        .expect("patch")
        .expect("the conversation exists");
    assert_eq!(rev3, rev2 + 1);
    let got = get(store, alice, id).await;
    assert_eq!(got.model, "gpt-x");
    assert_eq!(got.persona_id, "coder");
    assert!(got.params.is_empty());
    let p = ConversationPatch {
        title: "New title".into(),
        params: Some(params(json!({"top_p": 0.9, "max_tokens": 100}))),
        ..Default::default()
    };
    store
        .patch(alice, id, p)
        .await
        .expect("patch")
        .expect("the conversation exists");
    let got = get(store, alice, id).await;
    assert_eq!(got.params, params(json!({"top_p": 0.9, "max_tokens": 100})));

    // The list sees the patch, and a save from the pre-patch revision conflicts.
    let summary = store.list(alice).await.expect("list");
    assert_eq!(summary, vec![got.summary()]);
    let cur = conflict(store, alice, conv(id, rev, vec![])).await;
    assert_eq!(cur, got);
    assert!(store.delete(alice, id).await.expect("delete"));
}

async fn deleting(store: &dyn HistoryStore, alice: &Principal) {
    let id = "c-del";
    let rev = saved(
        store,
        alice,
        conv(
            id,
            0,
            vec![msg("user", "1", "a"), msg("assistant", "2", "b")],
        ),
    )
    .await;
    saved(
        store,
        alice,
        conv("c-keep", 0, vec![msg("user", "1", "keep")]),
    )
    .await;
    assert!(store.delete(alice, id).await.expect("delete"));
    assert!(store.get(alice, id).await.expect("get").is_none());
    assert!(!store.delete(alice, id).await.expect("delete"));
    let ids: Vec<String> = store
        .list(alice)
        .await
        .expect("list")
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, ["c-keep"]);
    // Recreating starts from revision 1 with none of the old messages.
    assert_eq!(saved(store, alice, conv(id, 0, vec![])).await, 1);
    assert!(get(store, alice, id).await.messages.is_empty());
    // A save from an old base after a delete recreates (nothing is lost).
    assert!(store.delete(alice, id).await.expect("delete"));
    assert_eq!(
        saved(store, alice, conv(id, rev, vec![msg("user", "1", "again")])).await,
        1
    );
    assert_eq!(get(store, alice, id).await.messages.len(), 1);
    assert!(store.delete(alice, id).await.expect("delete"));
    assert!(store.delete(alice, "c-keep").await.expect("delete"));
}

fn assert_sorted(list: &[lmchatkit_protocol::ConversationSummary]) {
    for w in list.windows(2) {
        let ok = w[0].updated_at > w[1].updated_at
            || (w[0].updated_at == w[1].updated_at && w[0].id < w[1].id);
        assert!(ok, "list order: {:?} before {:?}", w[0], w[1]);
    }
}

async fn ordering(store: &dyn HistoryStore) {
    let carol = Principal::new("carol");
    let tick = || tokio::time::sleep(Duration::from_millis(3));
    let a = saved(store, &carol, conv("o-a", 0, vec![])).await;
    tick().await;
    saved(store, &carol, conv("o-b", 0, vec![])).await;
    tick().await;
    saved(store, &carol, conv("o-c", 0, vec![])).await;
    tick().await;
    let ids = |l: Vec<lmchatkit_protocol::ConversationSummary>| {
        l.into_iter().map(|s| s.id).collect::<Vec<_>>()
    };
    assert_eq!(
        ids(store.list(&carol).await.expect("list")),
        ["o-c", "o-b", "o-a"]
    );
    saved(store, &carol, conv("o-a", a, vec![])).await;
    tick().await;
    assert_eq!(
        ids(store.list(&carol).await.expect("list")),
        ["o-a", "o-c", "o-b"]
    );
    let p = ConversationPatch {
        title: "bumped".into(),
        ..Default::default()
    };
    store
        .patch(&carol, "o-b", p)
        .await
        .expect("patch")
        .expect("the conversation exists");
    let list = store.list(&carol).await.expect("list");
    assert_eq!(list[0].title, "bumped");
    assert_eq!(ids(list), ["o-b", "o-a", "o-c"]);

    // Ties by id ascending: create many in quick succession (most share a millisecond) and
    // check the whole order.
    for i in (0..40).rev() {
        saved(store, &carol, conv(&format!("t-{i:02}"), 0, vec![])).await;
    }
    let list = store.list(&carol).await.expect("list");
    assert_eq!(list.len(), 43);
    assert_sorted(&list);
    for s in list {
        assert!(store.delete(&carol, &s.id).await.expect("delete"));
    }
}
