//! SQLite-specific tests, plus the shared conformance suite on an in-memory and a file database.

use std::sync::Arc;

use lmchatkit_protocol::{ConversationPatch, Message, StoredConversation};

use super::schema::SCHEMA_VERSION;
use super::*;
use crate::store::conformance;

fn conv(id: &str, revision: u64, messages: Vec<Message>) -> StoredConversation {
    StoredConversation {
        id: id.into(),
        title: "t".into(),
        revision,
        messages,
        ..Default::default()
    }
}

fn user(id: &str, text: &str) -> Message {
    Message::user(text).with_id(id)
}

async fn saved(store: &SqliteStore, p: &Principal, c: StoredConversation) -> u64 {
    match store.save(p, c).await.unwrap() {
        SaveOutcome::Saved { revision } => revision,
        SaveOutcome::Conflict(c) => panic!("conflict at {}", c.revision),
    }
}

#[tokio::test]
async fn conformance_in_memory() {
    let store = SqliteStore::in_memory().unwrap();
    conformance::run_with_row_count(&store, &|| store.rows_written()).await;
}

#[tokio::test]
async fn conformance_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("h.db")).unwrap();
    conformance::run_with_row_count(&store, &|| store.rows_written()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_saves() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("h.db")).unwrap();
    conformance::concurrency(Arc::new(store)).await;
}

#[tokio::test]
async fn large_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("h.db")).unwrap();
    conformance::large_conversation(&store).await;
}

#[tokio::test]
async fn pragmas_and_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("h.db")).unwrap();
    store.with_conn(|c| {
        let q = |name: &str| -> String {
            c.pragma_query_value(None, name, |r| {
                r.get::<_, rusqlite::types::Value>(0).map(|v| format!("{v:?}"))
            })
            .unwrap()
        };
        assert_eq!(q("journal_mode"), "Text(\"wal\")");
        assert_eq!(q("synchronous"), "Integer(2)", "FULL by default");
        assert_eq!(q("foreign_keys"), "Integer(1)");
        assert_eq!(q("user_version"), format!("Integer({SCHEMA_VERSION})"));
        assert!(q("busy_timeout") != "Integer(0)");
        let automerge: i64 = c
            .query_row(
                "SELECT v FROM message_index_config WHERE k = 'automerge'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(automerge, 16, "the full-text index merges 16 segments at a time");
        let index: i64 = c
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'conversations_by_updated'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(index, 1);
    });
}

/// What SQLite reports for `PRAGMA synchronous` on the store's connection.
fn synchronous_of(store: &SqliteStore) -> i64 {
    store.with_conn(|c| {
        c.pragma_query_value(None, "synchronous", |r| r.get(0))
            .unwrap()
    })
}

#[test]
fn the_synchronous_option_is_what_sqlite_applies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    // SQLite's numbering: 1 = NORMAL, 2 = FULL.
    for (mode, pragma) in [(Synchronous::Normal, 1), (Synchronous::Full, 2)] {
        let options = SqliteOptions::default().with_synchronous(mode);
        let store = SqliteStore::open_with(&path, options).unwrap();
        assert_eq!(synchronous_of(&store), pragma, "{mode}");
        assert_eq!(store.synchronous(), mode);
    }
    assert_eq!(SqliteOptions::default().synchronous(), Synchronous::Full);
    assert_eq!(synchronous_of(&SqliteStore::open(&path).unwrap()), 2);
    // In memory nothing reaches a disk, but the setting still applies as asked.
    let normal = SqliteOptions::default().with_synchronous(Synchronous::Normal);
    assert_eq!(
        synchronous_of(&SqliteStore::in_memory_with(normal).unwrap()),
        1
    );
}

#[test]
fn synchronous_modes_read_and_print_as_their_names() {
    for (text, mode) in [("full", Synchronous::Full), ("normal", Synchronous::Normal)] {
        assert_eq!(text.parse::<Synchronous>(), Ok(mode));
        assert_eq!(mode.to_string(), text);
        assert_eq!(
            serde_json::from_value::<Synchronous>(serde_json::json!(text)).unwrap(),
            mode
        );
    }
    let err = "off".parse::<Synchronous>().unwrap_err().to_string();
    assert!(err.contains("full") && err.contains("normal"), "{err}");
}

#[tokio::test]
async fn reopen_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let alice = Principal::new("alice");
    let (before, list) = {
        let store = SqliteStore::open(&path).unwrap();
        let rev = saved(&store, &alice, conv("c-1", 0, vec![user("1", "hello")])).await;
        let rev = saved(
            &store,
            &alice,
            conv("c-1", rev, vec![user("1", "hello"), user("2", "again")]),
        )
        .await;
        let patch = ConversationPatch {
            title: "Kept".into(),
            ..Default::default()
        };
        assert_eq!(
            store.patch(&alice, "c-1", patch).await.unwrap(),
            Some(rev + 1)
        );
        saved(&store, &alice, conv("c-2", 0, vec![])).await;
        (
            store.get(&alice, "c-1").await.unwrap().unwrap(),
            store.list(&alice).await.unwrap(),
        )
    };
    let store = SqliteStore::open(&path).unwrap();
    let after = store.get(&alice, "c-1").await.unwrap().unwrap();
    assert_eq!(after, before);
    assert_eq!(after.title, "Kept");
    assert_eq!(after.revision, 3);
    assert_eq!(after.messages.len(), 2);
    assert_eq!(store.list(&alice).await.unwrap(), list);
    // The revision carries on after reopening.
    assert_eq!(
        saved(&store, &alice, conv("c-1", 3, after.messages.clone())).await,
        4
    );
}

#[tokio::test]
async fn two_stores_on_one_file_see_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let a = SqliteStore::open(&path).unwrap();
    let b = SqliteStore::open(&path).unwrap();
    let p = Principal::anonymous();
    saved(&a, &p, conv("c-1", 0, vec![user("1", "x")])).await;
    assert_eq!(b.get(&p, "c-1").await.unwrap().unwrap().revision, 1);
    // A stale base through the other connection still conflicts.
    saved(&b, &p, conv("c-1", 1, vec![])).await;
    assert!(matches!(
        a.save(&p, conv("c-1", 1, vec![])).await.unwrap(),
        SaveOutcome::Conflict(c) if c.revision == 2
    ));
}

#[tokio::test]
async fn append_changes_one_message_row() {
    let store = SqliteStore::in_memory().unwrap();
    let p = Principal::new("alice");
    let changes = || store.with_conn(|c| c.total_changes());
    // Tool results: messages search skips, so the counts are the message rows alone (FTS5
    // writes several rows of its own tables per indexed message; the index's rows are
    // checked below).
    let tool = |id: &str, text: &str| Message::tool(id, "srv__t", text).with_id(id);
    let mut msgs = vec![tool("1", "a"), tool("2", "b")];
    let before = changes();
    let rev = saved(&store, &p, conv("c", 0, msgs.clone())).await;
    assert_eq!(changes() - before, 3, "conversation row + 2 messages");

    msgs.push(tool("3", "c"));
    let before = changes();
    let rev = saved(&store, &p, conv("c", rev, msgs.clone())).await;
    assert_eq!(changes() - before, 2, "conversation update + 1 insert");

    let before = changes();
    let rev = saved(&store, &p, conv("c", rev, msgs.clone())).await;
    assert_eq!(changes() - before, 1, "conversation update only");

    // Changed under its id with the rest unchanged: updated in place.
    msgs[1] = tool("2", "edited");
    let before = changes();
    let rev = saved(&store, &p, conv("c", rev, msgs.clone())).await;
    assert_eq!(
        changes() - before,
        2,
        "conversation update + 1 message update"
    );

    // The search index holds one row per user or assistant message, kept by every save.
    let indexed = || {
        store.with_conn(|c| {
            c.query_row(
                "SELECT (SELECT count(*) FROM message_index)
                      + (SELECT count(*) FROM message_index_pending)",
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap()
        })
    };
    assert_eq!(indexed(), 0);
    msgs.extend([user("4", "d"), user("5", "e")]);
    let rev = saved(&store, &p, conv("c", rev, msgs.clone())).await;
    assert_eq!(indexed(), 2);
    // A message off the path stays searchable; deleting its branch takes its row.
    msgs.truncate(4);
    saved(&store, &p, conv("c", rev, msgs.clone())).await;
    assert_eq!(indexed(), 2, "a message off the path keeps its row");
    let node: i64 = store.with_conn(|c| {
        c.query_row("SELECT seq FROM messages WHERE message_id = '5'", [], |r| {
            r.get(0)
        })
        .unwrap()
    });
    let deleted = store.delete_branch(&p, "c", node as u64).await.unwrap();
    assert!(matches!(
        deleted,
        Some(crate::store::BranchOutcome::Done { .. })
    ));
    assert_eq!(indexed(), 1, "a deleted message takes its row");
    assert!(store.delete(&p, "c").await.unwrap());
    assert_eq!(indexed(), 0, "a deleted conversation takes its rows");
}

#[tokio::test]
async fn saving_one_more_turn_reads_no_stored_row_and_serialises_only_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let store = SqliteStore::open(&path).unwrap();
    let p = Principal::anonymous();
    let mut msgs: Vec<Message> = (0..1000).map(|i| user(&i.to_string(), "words")).collect();
    let rev = saved(&store, &p, conv("c", 0, msgs.clone())).await;

    msgs.push(user("1000", "one more"));
    let (read, written) = (store.rows_read(), store.rows_written());
    let rev = saved(&store, &p, conv("c", rev, msgs.clone())).await;
    assert_eq!(store.rows_read() - read, 0, "no stored row read");
    assert_eq!(store.rows_written() - written, 1, "one row written");

    // An update in the middle writes that row, still without reading.
    msgs[998] = user("998", "edited");
    let read = store.rows_read();
    let rev = saved(&store, &p, conv("c", rev, msgs.clone())).await;
    assert_eq!(store.rows_read() - read, 0);
    assert_eq!(store.get(&p, "c").await.unwrap().unwrap().messages, msgs);

    // A store that did not write it (another process on the file) reads the rows instead.
    let other = SqliteStore::open(&path).unwrap();
    msgs.push(user("1001", "from the other"));
    saved(&other, &p, conv("c", rev, msgs.clone())).await;
    assert_eq!(other.rows_read(), 1001);
    assert_eq!(other.get(&p, "c").await.unwrap().unwrap().messages, msgs);
}

#[tokio::test]
async fn a_kept_save_reads_no_row_and_leaves_what_it_wrote_known_for_the_next_whole_save() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let store = SqliteStore::open(&path).unwrap();
    let p = Principal::anonymous();
    let mut msgs: Vec<Message> = (0..500).map(|i| user(&i.to_string(), "words")).collect();
    let rev = saved(&store, &p, conv("c", 0, msgs.clone())).await;

    // One more turn, keeping the 500 stored: nothing read, two rows written.
    let turn = vec![user("500", "q"), user("501", "a")];
    let (read, written) = (store.rows_read(), store.rows_written());
    let kept = StoredConversation {
        kept: Some(500),
        ..conv("c", rev, turn.clone())
    };
    let rev = saved(&store, &p, kept).await;
    assert_eq!(store.rows_read() - read, 0, "no stored row read");
    assert_eq!(store.rows_written() - written, 2);
    msgs.extend(turn);
    assert_eq!(store.get(&p, "c").await.unwrap().unwrap().messages, msgs);

    // A whole save next still finds the prefix in what this store wrote, the kept save's
    // messages included: an edit of the turn's answer is found without reading a row.
    msgs[501] = user("501", "a, edited");
    let (read, written) = (store.rows_read(), store.rows_written());
    let rev = saved(&store, &p, conv("c", rev, msgs.clone())).await;
    assert_eq!(
        store.rows_read() - read,
        0,
        "the cache knew the kept save's rows"
    );
    assert_eq!(
        store.rows_written() - written,
        1,
        "one row updated in place"
    );

    // Keeping fewer than stored with another message after them: a new version; the path is
    // read once (the kept rows for their totals, the rest to compare).
    let read = store.rows_read();
    let regen = StoredConversation {
        kept: Some(501),
        ..conv("c", rev, vec![user("501b", "another answer")])
    };
    let rev = saved(&store, &p, regen).await;
    assert_eq!(store.rows_read() - read, 502, "the path");
    msgs[501] = user("501b", "another answer");
    assert_eq!(store.get(&p, "c").await.unwrap().unwrap().messages, msgs);

    // A store on the same file that did not write it keeps rows just as well.
    let other = SqliteStore::open(&path).unwrap();
    let kept = StoredConversation {
        kept: Some(502),
        ..conv("c", rev, vec![user("502", "from the other")])
    };
    saved(&other, &p, kept).await;
    assert_eq!(other.rows_read(), 0);
    msgs.push(user("502", "from the other"));
    assert_eq!(store.get(&p, "c").await.unwrap().unwrap().messages, msgs);
}

#[tokio::test]
async fn a_write_through_another_store_on_the_file_is_never_taken_for_what_this_one_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let (a, b) = (
        SqliteStore::open(&path).unwrap(),
        SqliteStore::open(&path).unwrap(),
    );
    let p = Principal::anonymous();
    let rev = saved(&a, &p, conv("c", 0, vec![user("1", "x"), user("2", "y")])).await;
    // B rewrites the second message; A's memory of the rows is now stale.
    let rev = saved(
        &b,
        &p,
        conv("c", rev, vec![user("1", "x"), user("2", "B's")]),
    )
    .await;
    // A saves its own version on top of B's revision: what A sends is what is stored.
    let mine = vec![user("1", "x"), user("2", "y"), user("3", "z")];
    saved(&a, &p, conv("c", rev, mine.clone())).await;
    assert_eq!(b.get(&p, "c").await.unwrap().unwrap().messages, mine);

    // Deleted and created again through B: still noticed.
    assert!(b.delete(&p, "c").await.unwrap());
    let new = vec![user("1", "new"), user("2", "new"), user("3", "new")];
    let r1 = saved(&b, &p, conv("c", 0, new)).await;
    let last = vec![
        user("1", "x"),
        user("2", "y"),
        user("3", "z"),
        user("4", "w"),
    ];
    saved(&a, &p, conv("c", r1, last.clone())).await;
    assert_eq!(b.get(&p, "c").await.unwrap().unwrap().messages, last);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_saves_share_one_commit_and_a_failing_one_rolls_back_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("h.db")).unwrap());
    let p = Principal::anonymous();
    saved(&store, &p, conv("broken", 0, vec![user("1", "a")])).await;
    // A row the next save of "broken" cannot read (a blob where text belongs), and a generation
    // this store did not write, so that save reads the rows.
    store.with_conn(|c| {
        c.execute_batch(
            "UPDATE messages SET body = x'ff' WHERE conversation_id = 'broken';
             UPDATE conversations SET generation = 1 WHERE id = 'broken';",
        )
        .unwrap();
    });
    let groups = store.counters.groups.load(Ordering::SeqCst);
    // While the connection is busy, 32 saves and the broken one queue up.
    let held = store.conn.lock().unwrap();
    let mut tasks = Vec::new();
    for i in 0..32 {
        let (store, p) = (store.clone(), p.clone());
        let c = conv(&format!("c{i}"), 0, vec![user("1", &format!("hello {i}"))]);
        tasks.push(tokio::spawn(async move { store.save(&p, c).await }));
    }
    let broken = {
        let (store, p) = (store.clone(), p.clone());
        let c = conv("broken", 1, vec![user("1", "a"), user("2", "b")]);
        tokio::spawn(async move { store.save(&p, c).await })
    };
    // Blocking this thread is fine: the saves run on the runtime's workers.
    std::thread::sleep(std::time::Duration::from_millis(200));
    drop(held);
    for task in tasks {
        assert_eq!(
            task.await.unwrap().unwrap(),
            SaveOutcome::Saved { revision: 1 }
        );
    }
    assert!(matches!(
        broken.await.unwrap(),
        Err(HistoryError::Storage(_))
    ));
    let commits = store.counters.groups.load(Ordering::SeqCst) - groups;
    assert!(commits <= 3, "33 saves took {commits} commits");
    assert_eq!(store.list(&p).await.unwrap().len(), 33);
    for i in 0..32 {
        let c = store.get(&p, &format!("c{i}")).await.unwrap().unwrap();
        assert_eq!(c.messages, vec![user("1", &format!("hello {i}"))]);
    }
    // The broken save wrote nothing: its conversation is as it was.
    store.with_conn(|c| {
        let (n, rev): (i64, i64) = c
            .query_row(
                "SELECT (SELECT count(*) FROM messages WHERE conversation_id = 'broken'),
                        revision FROM conversations WHERE id = 'broken'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((n, rev), (1, 1));
    });
}

#[tokio::test]
async fn delete_cascades_to_messages() {
    let store = SqliteStore::in_memory().unwrap();
    let p = Principal::new("alice");
    let q = Principal::new("bob");
    saved(
        &store,
        &p,
        conv("c", 0, vec![user("1", "a"), user("2", "b")]),
    )
    .await;
    saved(&store, &q, conv("c", 0, vec![user("1", "bob")])).await;
    let count = |principal: &str| {
        store.with_conn(|c| {
            c.query_row(
                "SELECT count(*) FROM messages WHERE principal = ?1",
                [principal],
                |r| r.get::<_, i64>(0),
            )
            .unwrap()
        })
    };
    assert_eq!(count("alice"), 2);
    assert!(store.delete(&p, "c").await.unwrap());
    assert_eq!(count("alice"), 0);
    assert_eq!(count("bob"), 1);
}

#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    drop(SqliteStore::open(&path).unwrap());
    let conn = Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(conn);
    let err = SqliteStore::open(&path).unwrap_err();
    assert!(
        matches!(err, HistoryError::Storage(ref m) if m.contains("newer")),
        "{err}"
    );
}

/// A file written before totals were kept (schema 3, built here by the old migrations) gets
/// each conversation's totals from its messages when it is opened.
/// A history file at schema `version` holding alice's conversation `old` ("Old chat") with
/// `messages`, written as that version wrote them.
fn older_file(path: &std::path::Path, version: usize, messages: &[Message]) {
    let conn = Connection::open(path).unwrap();
    for sql in &super::schema::MIGRATIONS[..version] {
        conn.execute_batch(sql).unwrap();
    }
    conn.pragma_update(None, "user_version", version as i64)
        .unwrap();
    conn.execute(
        "INSERT INTO conversations (principal, id, title, created_at, updated_at, revision)
         VALUES ('alice', 'old', 'Old chat', 1, 1, 1)",
        [],
    )
    .unwrap();
    for (seq, m) in messages.iter().enumerate() {
        conn.execute(
            "INSERT INTO messages (principal, conversation_id, seq, message_id, body)
             VALUES ('alice', 'old', ?1, ?2, ?3)",
            params![seq as i64, m.id, serde_json::to_string(m).unwrap()],
        )
        .unwrap();
    }
}

#[tokio::test]
async fn a_file_from_before_totals_is_backfilled_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let mut reply = Message::assistant("a").with_id("m2");
    reply.usage = Some(lmchatkit_protocol::Usage {
        prompt_tokens: Some(40),
        completion_tokens: Some(2),
        ..Default::default()
    });
    reply.cost_usd = Some(0.5);
    older_file(&path, 3, &[user("m1", "q"), reply]);
    let store = SqliteStore::open(&path).unwrap();
    let alice = Principal::new("alice");
    let got = store.get(&alice, "old").await.unwrap().unwrap();
    assert_eq!(
        got.totals,
        lmchatkit_protocol::ConversationTotals {
            total_input_tokens: 40,
            total_output_tokens: 2,
            total_cost_usd: Some(0.5),
            last_context_tokens: Some(42),
        }
    );
    assert_eq!(store.list(&alice).await.unwrap()[0].totals, got.totals);
}

/// A save queues its messages' text for the full-text index. Search finds a message while it
/// waits and once it is moved in (past the first stage's reach in both cases); an edit and a
/// deleted conversation take the text out of whichever table holds it; an idle writer moves
/// waiting rows in once enough wait, and a save group does before its commit past the forced
/// limit.
#[tokio::test]
async fn search_finds_messages_waiting_for_the_index_and_moved_into_it() {
    let store = SqliteStore::in_memory().unwrap();
    // Nothing moves in by itself until the end of the test.
    store.set_flush_limits(usize::MAX, usize::MAX);
    let p = Principal::new("alice");
    let find = |q: &str| {
        let query = crate::store::SearchQuery::parse(q, None).unwrap();
        let (store, p) = (&store, &p);
        async move {
            let hits = store.search(p, &query).await.unwrap();
            hits.into_iter()
                .map(|h| (h.conversation_id, h.message_id.unwrap_or_default()))
                .collect::<Vec<_>>()
        }
    };
    let counts = || {
        store.with_conn(|c| {
            let n = |table: &str| {
                c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| {
                    r.get::<_, i64>(0)
                })
                .unwrap()
            };
            (n("message_index"), n("message_index_pending"))
        })
    };
    // Newer conversations of 420 messages in all, so the first stage (400 messages) never
    // reaches "c" and only the index or the queue can find it.
    let mut fillers = 0;
    let mut bury = async || {
        for _ in 0..42 {
            let msgs = (0..10)
                .map(|i| user(&format!("f{i}"), "filler words"))
                .collect();
            saved(&store, &p, conv(&format!("f{fillers}"), 0, msgs)).await;
            fillers += 1;
        }
    };
    let tool = Message::tool("t1", "srv__t", "walrus in a tool result").with_id("m3");
    let mut msgs = vec![user("m1", "walrus tusk"), user("m2", "plain words"), tool];
    let rev = saved(&store, &p, conv("c", 0, msgs.clone())).await;
    bury().await;
    assert_eq!(counts(), (0, 422), "every searchable message waits");
    let want = |m: &str| vec![("c".to_owned(), m.to_owned())];
    assert_eq!(find("walrus").await, want("m1"), "found while it waits");

    store.with_conn(|c| super::queries::flush_index(c, usize::MAX).unwrap());
    assert_eq!(counts(), (422, 0), "all moved in");
    assert_eq!(find("walrus").await, want("m1"), "found in the index");

    // Edited in place while in the index: the old text leaves it.
    msgs[0] = user("m1", "narwhal tusk");
    let rev = saved(&store, &p, conv("c", rev, msgs.clone())).await;
    bury().await;
    assert_eq!(counts(), (421, 421));
    assert!(find("walrus").await.is_empty(), "the old text is gone");
    assert_eq!(find("narwhal").await, want("m1"));

    // Edited again while it waits: the waiting text goes.
    msgs[0] = user("m1", "beluga tusk");
    saved(&store, &p, conv("c", rev, msgs.clone())).await;
    bury().await;
    assert_eq!(counts(), (421, 841));
    assert!(find("narwhal").await.is_empty());
    assert_eq!(find("beluga").await, want("m1"));
    assert_eq!(find("tusk").await, want("m1"));

    // A deleted conversation takes its rows from both tables.
    assert!(store.delete(&p, "c").await.unwrap());
    assert!(store.delete(&p, "f0").await.unwrap());
    assert_eq!(
        counts(),
        (410, 840),
        "c's two rows and f0's ten in the index"
    );
    assert!(find("tusk").await.is_empty());

    // Past the forced limit, the save's own group moves what waits before its commit.
    store.set_flush_limits(usize::MAX, 850);
    saved(&store, &p, conv("g", 0, vec![user("g1", "gannet")])).await;
    assert_eq!(counts(), (410, 841), "below the limit it waits");
    let msgs = (0..9).map(|i| user(&format!("h{i}"), "heron")).collect();
    saved(&store, &p, conv("h", 0, msgs)).await;
    assert_eq!(counts(), (1260, 0), "moved in by the save's group");
    assert_eq!(
        find("gannet").await,
        vec![("g".to_owned(), "g1".to_owned())]
    );

    // An idle writer moves what waits once enough does, a batch at a time.
    store.set_flush_limits(100, usize::MAX);
    bury().await;
    for _ in 0..500 {
        if counts().1 < 100 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let (moved_in, waiting) = counts();
    assert!(waiting < 100, "{waiting} rows still wait");
    assert_eq!(moved_in + waiting, 1260 + 420);
    let writer_moved = i64::try_from(store.index_flushed().0).unwrap();
    assert_eq!(
        writer_moved,
        850 + moved_in - 1260,
        "the group's and the idle writer's"
    );
}

#[tokio::test]
async fn a_file_from_before_search_is_indexed_on_open_and_edits_keep_the_index() {
    // Version 7 had no search; version 8, the previous release, had the first index.
    for version in [7, 8] {
        file_from_before_search_is_indexed(version).await;
    }
}

async fn file_from_before_search_is_indexed(version: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let tool = Message::tool("c1", "srv__t", "tool words").with_id("m3");
    let reply = Message::assistant("Pelicans fly.").with_id("m2");
    older_file(&path, version, &[user("m1", "pelican facts"), reply, tool]);
    let store = SqliteStore::open(&path).unwrap();
    let alice = Principal::new("alice");
    let find = |q: &str| {
        let query = crate::store::SearchQuery::parse(q, None).unwrap();
        let store = &store;
        let alice = &alice;
        async move {
            store
                .search(alice, &query)
                .await
                .unwrap()
                .into_iter()
                .map(|h| (h.message_id.unwrap_or_default(), h.index, h.title))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        find("pelican").await,
        [
            ("m1".to_owned(), 0, "Old chat".to_owned()),
            ("m2".to_owned(), 1, "Old chat".to_owned())
        ]
    );
    assert!(
        find("tool").await.is_empty(),
        "tool results are not searched"
    );
    // An edit of a backfilled message replaces its indexed text.
    let mut c = store.get(&alice, "old").await.unwrap().unwrap();
    c.messages[0] = user("m1", "heron facts");
    saved(&store, &alice, c).await;
    assert_eq!(find("facts").await.len(), 1);
    assert_eq!(find("heron").await[0].0, "m1");
    assert_eq!(
        find("pelican").await.len(),
        1,
        "only the reply still says it"
    );
}

#[tokio::test]
async fn a_word_in_hundreds_of_conversations_is_found_newest_first_by_walking_them() {
    let store = SqliteStore::in_memory().unwrap();
    let alice = Principal::new("alice");
    let bob = Principal::new("bob");
    // More conversations match than are looked up one by one: the search walks them instead.
    for i in 0..300 {
        let messages = vec![
            user("m1", "a shared word"),
            user("m2", &format!("unique{i:03} shared")),
        ];
        saved(&store, &alice, conv(&format!("c{i:03}"), 0, messages)).await;
    }
    saved(&store, &bob, conv("b", 0, vec![user("m1", "shared too")])).await;
    let find = |p: &Principal, q: &str, limit: Option<usize>| {
        let query = crate::store::SearchQuery::parse(q, limit).unwrap();
        let store = &store;
        let p = p.clone();
        async move {
            store
                .search(&p, &query)
                .await
                .unwrap()
                .into_iter()
                .map(|h| (h.conversation_id, h.index))
                .collect::<Vec<_>>()
        }
    };
    // Newest conversation first (the list's order), then by position.
    let newest: Vec<String> = store
        .list(&alice)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    let expected: Vec<(String, u64)> = newest
        .iter()
        .flat_map(|id| [(id.clone(), 0), (id.clone(), 1)])
        .take(100)
        .collect();
    assert_eq!(find(&alice, "shared", Some(100)).await, expected);
    assert_eq!(find(&alice, "shared", None).await, expected[..20]);
    assert_eq!(find(&bob, "shared", None).await, [("b".to_owned(), 0)]);
    // A rare word: its conversations are looked up one by one.
    assert_eq!(
        find(&alice, "unique007", None).await,
        [("c007".to_owned(), 1)]
    );
    // `unique02` starts `unique020`…`unique029`: ten, newest first.
    let ten: Vec<(String, u64)> = newest
        .iter()
        .filter(|id| id.starts_with("c02"))
        .map(|id| (id.clone(), 1))
        .collect();
    assert_eq!(ten.len(), 10);
    assert_eq!(find(&alice, "unique02 shared", None).await, ten);
}

#[test]
fn an_index_rowid_holds_the_conversation_and_the_position_or_is_not_made() {
    use super::queries::search_rowid;
    assert_eq!(search_rowid(1, 0), Some(1 << 24));
    assert_eq!(search_rowid(3, 5), Some(3 << 24 | 5));
    assert_eq!(search_rowid(3, (1 << 24) - 1), Some(3 << 24 | 0xff_ffff));
    assert_eq!(search_rowid(3, 1 << 24), None, "a position past 24 bits");
    assert_eq!(search_rowid(0, 1), None, "no key");
    assert_eq!(search_rowid(1 << 39, 1), None, "a key past 39 bits");
    assert_eq!(
        search_rowid(i64::MAX, 1),
        None,
        "never shifted out of range"
    );
    assert!(search_rowid((1 << 39) - 1, (1 << 24) - 1).is_some_and(|r| r > 0));
}

#[test]
fn unopenable_path_is_a_storage_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = SqliteStore::open(dir.path().join("missing-dir").join("h.db")).unwrap_err();
    assert!(matches!(err, HistoryError::Storage(_)));
}

#[tokio::test]
async fn corrupt_row_is_a_storage_error_not_a_panic() {
    let store = SqliteStore::in_memory().unwrap();
    let p = Principal::anonymous();
    saved(&store, &p, conv("c", 0, vec![user("1", "a")])).await;
    store.with_conn(|c| {
        c.execute("UPDATE messages SET body = 'not json'", [])
            .unwrap();
    });
    assert!(matches!(
        store.get(&p, "c").await,
        Err(HistoryError::Storage(_))
    ));
}

/// The search figures on SQLite (see [`crate::store::search_figures`]): `cargo test --release
/// -p lmchatkit --lib search_figures -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run it with --ignored --nocapture, in release"]
async fn search_figures_on_ten_thousand_conversations() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("h.db")).unwrap();
    let saves = crate::store::search_figures::run(
        &store,
        "SQLite",
        async || {},
        async || store.settle().await,
    )
    .await;
    // What the writer did while idle, charged to the saves that queued it: each indexed
    // message's share of the time spent moving rows into the index.
    let (rows, took) = store.index_flushed();
    let per_row = took.as_secs_f64() * 1000.0 / rows.max(1) as f64;
    println!(
        "search figures (SQLite): the writer moved {rows} rows into the index while idle, {:.1} µs each",
        per_row * 1000.0
    );
    for (kind, (with, without), indexed) in [
        ("a 50-message save", saves.fifty, 50.0),
        ("a turn's save", saves.turn, 2.0),
    ] {
        let all = with + indexed * per_row;
        println!(
            "search figures (SQLite):   {kind} with that share: {all:.3} ms against {without:.3} ms ({:.2}x)",
            all / without
        );
    }
}

/// A history file the previous release (0.1.0, schema 9) wrote through its app's API
/// (`tests/fixtures/history-0.1.0.db`: one conversation of five messages, saved whole, then
/// one more with a kept save) opens as one branch, keeps its search index, and branches from
/// then on.
#[tokio::test]
async fn a_file_written_by_the_previous_release_opens_as_one_branch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/history-0.1.0.db"
    );
    std::fs::copy(fixture, &path).unwrap();
    let store = SqliteStore::open(&path).unwrap();
    let me = Principal::anonymous();
    let got = store.get(&me, "c-prev").await.unwrap().unwrap();
    let ids = |c: &StoredConversation| -> Vec<String> {
        c.messages.iter().filter_map(|m| m.id.clone()).collect()
    };
    assert_eq!(ids(&got), ["u1", "a1", "u2", "a2", "u3"]);
    assert!(got.branches.is_empty());
    assert_eq!(got.revision, 2);
    assert_eq!(got.totals.total_input_tokens, 32);
    let (tail, before) = store.get_tail(&me, "c-prev", 2).await.unwrap().unwrap();
    assert_eq!((before, ids(&tail)), (3, vec!["a2".into(), "u3".into()]));

    let query = crate::store::SearchQuery::parse("herons", None).unwrap();
    let hits = store.search(&me, &query).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!((hits[0].index, hits[0].node), (2, Some(2)));

    // A regenerated second reply is a new version; the stored one keeps what followed it.
    let mut c = got.clone();
    c.messages.truncate(3);
    c.messages
        .push(Message::assistant("Frogs, mostly.").with_id("a2b"));
    let rev = saved(&store, &me, c).await;
    let got = store.get(&me, "c-prev").await.unwrap().unwrap();
    assert_eq!(ids(&got), ["u1", "a1", "u2", "a2b"]);
    assert_eq!(got.branches.len(), 1);
    assert_eq!(got.branches[0].versions, [3, 5]);
    let switched = store.switch_branch(&me, "c-prev", 3).await.unwrap();
    assert_eq!(
        switched,
        Some(crate::store::BranchOutcome::Done { revision: rev + 1 })
    );
    let got = store.get(&me, "c-prev").await.unwrap().unwrap();
    assert_eq!(ids(&got), ["u1", "a1", "u2", "a2", "u3"]);
}
