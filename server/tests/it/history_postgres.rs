//! The PostgreSQL store against the machine's PostgreSQL (`LMCHATKIT_TEST_POSTGRES_URL`, by
//! default `postgres://postgres@127.0.0.1:5432/test`), each test in a fresh random schema that
//! is dropped at its end: the history and user MCP conformance suites unchanged, two stores
//! (two pools, as two app instances) racing, migrations racing and refusing a newer schema,
//! the cost of an append counted in rows, and the password kept out of `Debug` and errors.
//! Without a reachable server each test prints why and passes, unless `CI` is set.

use std::sync::Arc;

use lmchatkit::Principal;
use lmchatkit::protocol::{Message, StoredConversation};
use lmchatkit::store::postgres::test_support::TestSchema;
use lmchatkit::store::{
    HistoryError, HistoryStore, PostgresOptions, PostgresStore, SaveOutcome, conformance,
};
use tokio_postgres::SimpleQueryMessage;

/// The rows of a simple query's answer, as strings.
fn rows(answer: Vec<SimpleQueryMessage>) -> Vec<Vec<String>> {
    answer
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or("NULL").to_owned())
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

fn conversation(id: &str, revision: u64, messages: Vec<Message>) -> StoredConversation {
    StoredConversation {
        id: id.into(),
        title: format!("title of {id}"),
        revision,
        messages,
        ..Default::default()
    }
}

fn numbered(n: usize) -> Vec<Message> {
    (0..n)
        .map(|i| {
            Message::user(format!("message {i} {}", "lorem ipsum ".repeat(8)))
                .with_id(format!("m{i}"))
        })
        .collect()
}

#[tokio::test]
async fn the_postgres_store_passes_the_history_suite_with_row_counts() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    let store = db.connect().await.unwrap();
    conformance::run_with_row_count(&store, &|| store.counters().rows_written).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_store_passes_the_concurrency_checks() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    conformance::concurrency(Arc::new(db.connect().await.unwrap())).await;
}

#[tokio::test]
async fn the_postgres_store_passes_the_large_conversation_check() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    conformance::large_conversation(&db.connect().await.unwrap()).await;
}

#[tokio::test]
async fn the_postgres_store_passes_the_user_mcp_suite() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    lmchatkit::user_mcp::conformance::run(&db.connect().await.unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_racing_a_save_on_one_conversation_get_exactly_one_conflict() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    let a = Arc::new(db.connect().await.unwrap());
    let b = Arc::new(db.connect().await.unwrap());
    let me = Principal::new("racer");
    let mut messages = vec![Message::user("start").with_id("0")];
    let SaveOutcome::Saved { revision: mut base } = a
        .save(&me, conversation("c", 0, messages.clone()))
        .await
        .unwrap()
    else {
        panic!("the create conflicted")
    };
    for round in 0..20 {
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        let race = |store: Arc<PostgresStore>, who: &str| {
            let (me, barrier) = (me.clone(), barrier.clone());
            let mut mine = messages.clone();
            mine.push(
                Message::assistant(format!("{who} in round {round}"))
                    .with_id(format!("{who}{round}")),
            );
            tokio::spawn(async move {
                barrier.wait().await;
                let outcome = store
                    .save(&me, conversation("c", base, mine.clone()))
                    .await
                    .unwrap();
                (outcome, mine)
            })
        };
        let (ra, rb) = (race(a.clone(), "a"), race(b.clone(), "b"));
        let results = [ra.await.unwrap(), rb.await.unwrap()];
        let conflicts: Vec<_> = results
            .iter()
            .filter_map(|(o, _)| match o {
                SaveOutcome::Conflict(current) => Some(current),
                SaveOutcome::Saved { .. } => None,
            })
            .collect();
        assert_eq!(conflicts.len(), 1, "round {round}: exactly one conflict");
        let (_, winner) = results
            .iter()
            .find(|(o, _)| matches!(o, SaveOutcome::Saved { .. }))
            .unwrap();
        // The loser is handed the winner's copy, which both instances now read.
        assert_eq!(conflicts[0].revision, base + 1);
        assert_eq!(&conflicts[0].messages, winner);
        base += 1;
        let through_b = b.get(&me, "c").await.unwrap().unwrap();
        assert_eq!((through_b.revision, &through_b.messages), (base, winner));
        messages = winner.clone();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_racing_from_two_instances_apply_once() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    let (a, b) = tokio::join!(db.connect(), db.connect());
    let (a, b) = (a.unwrap(), b.unwrap());
    let versions = rows(
        db.execute("SELECT version FROM lmchatkit_migrations ORDER BY version")
            .await
            .unwrap(),
    );
    assert_eq!(
        versions,
        [["1"], ["2"], ["3"], ["4"]],
        "every migration recorded once"
    );
    // Both work on the one schema.
    let me = Principal::new("m");
    a.save(&me, conversation("c", 0, vec![])).await.unwrap();
    assert_eq!(b.list(&me).await.unwrap().len(), 1);
    // A third start finds nothing to do and keeps the data.
    let c = db.connect().await.unwrap();
    assert_eq!(c.list(&me).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_database_with_a_newer_schema_is_refused_untouched() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    let store = db.connect().await.unwrap();
    let me = Principal::new("m");
    store
        .save(&me, conversation("kept", 0, vec![]))
        .await
        .unwrap();
    drop(store);
    db.execute("INSERT INTO lmchatkit_migrations (version) VALUES (99)")
        .await
        .unwrap();
    let err = db.connect().await.unwrap_err();
    assert!(matches!(err, HistoryError::Storage(_)), "{err:?}");
    assert!(
        err.to_string().contains("schema version 99 is newer"),
        "{err}"
    );
    let kept = rows(db.execute("SELECT id FROM conversations").await.unwrap());
    assert_eq!(kept, [["kept"]]);
}

/// Stores conversation `long` of `me` with 1,000 messages: its revision and the messages.
async fn thousand_stored(store: &PostgresStore, me: &Principal) -> (u64, Vec<Message>) {
    let messages = numbered(1000);
    let SaveOutcome::Saved { revision } = store
        .save(me, conversation("long", 0, messages.clone()))
        .await
        .unwrap()
    else {
        panic!("conflict")
    };
    (revision, messages)
}

#[tokio::test]
async fn appending_one_message_to_a_thousand_reads_hashes_only_and_writes_one_row() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    let store = db.connect().await.unwrap();
    let me = Principal::new("big");
    let (revision, mut messages) = thousand_stored(&store, &me).await;
    let versions = |answer| {
        rows(answer)
            .into_iter()
            .map(|r| (r[0].clone(), r[1].clone()))
            .collect::<Vec<_>>()
    };
    // xmin: the transaction that wrote each row version; a rewritten row gets a new one.
    let query = "SELECT seq, xmin::text FROM messages ORDER BY seq";
    let before = versions(db.execute(query).await.unwrap());
    assert_eq!(before.len(), 1000);
    let counted = store.counters();
    messages.push(Message::assistant("one more").with_id("m1000"));
    let outcome = store
        .save(&me, conversation("long", revision, messages.clone()))
        .await
        .unwrap();
    assert_eq!(
        outcome,
        SaveOutcome::Saved {
            revision: revision + 1
        }
    );
    let now = store.counters();
    assert_eq!(
        now.rows_written - counted.rows_written,
        1,
        "one row inserted, none deleted"
    );
    assert_eq!(
        now.bodies_read - counted.bodies_read,
        0,
        "no stored body was read"
    );
    assert_eq!(
        now.hashes_read - counted.hashes_read,
        1000,
        "the stored hashes were read"
    );
    let after = versions(db.execute(query).await.unwrap());
    assert_eq!(after.len(), 1001);
    assert_eq!(
        after[..1000],
        before[..],
        "the 1,000 stored rows were not rewritten"
    );
    let got = store.get(&me, "long").await.unwrap().unwrap();
    assert_eq!(got.messages, messages);
}

#[tokio::test]
async fn a_save_keeping_a_thousand_stored_messages_reads_no_hash_and_rewrites_no_row() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    let store = db.connect().await.unwrap();
    let me = Principal::new("kept");
    let (revision, mut messages) = thousand_stored(&store, &me).await;
    let query = "SELECT seq, xmin::text FROM messages ORDER BY seq";
    let before = rows(db.execute(query).await.unwrap());
    let counted = store.counters();
    let turn = vec![
        Message::user("one more").with_id("m1000"),
        Message::assistant("and its answer").with_id("m1001"),
    ];
    let kept = StoredConversation {
        kept: Some(1000),
        ..conversation("long", revision, turn.clone())
    };
    assert_eq!(
        store.save(&me, kept).await.unwrap(),
        SaveOutcome::Saved {
            revision: revision + 1
        }
    );
    let now = store.counters();
    assert_eq!(now.rows_written - counted.rows_written, 2, "the turn only");
    assert_eq!(now.hashes_read - counted.hashes_read, 0, "no hash read");
    assert_eq!(now.bodies_read - counted.bodies_read, 0, "no body read");
    let after = rows(db.execute(query).await.unwrap());
    assert_eq!(after.len(), 1002);
    assert_eq!(
        after[..1000],
        before[..],
        "the kept rows were not rewritten"
    );
    messages.extend(turn);
    let got = store.get(&me, "long").await.unwrap().unwrap();
    assert_eq!(got.messages, messages);
    assert_eq!(got.revision, revision + 1);
}

#[tokio::test]
async fn a_nul_in_a_title_is_bad_input_and_a_nul_in_a_message_round_trips() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    let store = db.connect().await.unwrap();
    let me = Principal::new("n");
    let mut c = conversation("c", 0, vec![]);
    c.title = "bad\0title".into();
    let err = store.save(&me, c).await.unwrap_err();
    assert!(matches!(err, HistoryError::InvalidInput(_)), "{err:?}");
    let messages = vec![Message::user("text with \0 inside").with_id("a\0b")];
    store
        .save(&me, conversation("c", 0, messages.clone()))
        .await
        .unwrap();
    assert_eq!(
        store.get(&me, "c").await.unwrap().unwrap().messages,
        messages
    );
    let patch = lmchatkit::protocol::ConversationPatch {
        title: "x".into(),
        model: Some("m\0".into()),
        ..Default::default()
    };
    let err = store.patch(&me, "c", patch).await.unwrap_err();
    assert!(matches!(err, HistoryError::InvalidInput(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_never_opens_more_connections_than_its_bound() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    let app = format!("lmck_pool_{}", db.schema());
    let sep = if db.url().contains('?') { '&' } else { '?' };
    let url = format!("{}{sep}application_name={app}", db.url());
    let store = Arc::new(
        PostgresStore::connect(&url, db.options().with_max_connections(2))
            .await
            .unwrap(),
    );
    let me = Principal::new("p");
    let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let watcher = {
        let (peak, app) = (peak.clone(), app.clone());
        let db_url = db.url().to_owned();
        tokio::spawn(async move {
            let (client, conn) = tokio_postgres::connect(&db_url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(conn);
            loop {
                let n: i64 = client
                    .query_one(
                        "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                        &[&app],
                    )
                    .await
                    .unwrap()
                    .get(0);
                peak.fetch_max(n as usize, std::sync::atomic::Ordering::SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
        })
    };
    let tasks: Vec<_> = (0..12)
        .map(|t| {
            let (store, me) = (store.clone(), me.clone());
            tokio::spawn(async move {
                let mut rev = 0;
                for i in 0..10 {
                    let c = conversation(&format!("p{t}"), rev, numbered(i + 1));
                    match store.save(&me, c).await.unwrap() {
                        SaveOutcome::Saved { revision } => rev = revision,
                        SaveOutcome::Conflict(_) => panic!("conflict"),
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    watcher.abort();
    let peak = peak.load(std::sync::atomic::Ordering::SeqCst);
    assert!((1..=2).contains(&peak), "peak connections {peak}");
    assert_eq!(store.list(&me).await.unwrap().len(), 12);
}

#[tokio::test]
async fn the_password_never_shows_in_debug_or_errors() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    let secret = "hunter2-s3cret";
    // Trust auth on the test server: the password is accepted and ignored.
    let with_password = db.url().replacen(
        "postgres://postgres@",
        &format!("postgres://postgres:{secret}@"),
        1,
    );
    assert!(
        with_password.contains(secret),
        "the test URL has the expected shape"
    );
    let store = PostgresStore::connect(&with_password, db.options())
        .await
        .unwrap();
    let shown = format!("{store:?} {:?}", db.options());
    assert!(!shown.contains(secret), "{shown}");
    assert!(shown.contains(db.schema()), "{shown}");
    let failures = [
        // Nothing listens on port 1.
        format!("postgres://postgres:{secret}@127.0.0.1:1/test"),
        // A database that does not exist (the server's own error).
        with_password.replace("/test", "/lmck_no_such_database"),
        // Not a URL the client parses.
        format!("postgres://postgres:{secret}@127.0.0.1:notaport/test"),
        format!("host=127.0.0.1 port=1 password={secret} user=postgres"),
    ];
    for url in failures {
        let options =
            PostgresOptions::default().with_acquire_timeout(std::time::Duration::from_secs(2));
        let err = PostgresStore::connect(&url, options).await.unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(!text.contains(secret), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_pool_fails_after_the_acquire_timeout_instead_of_hanging() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    let timeout = std::time::Duration::from_millis(300);
    let store = Arc::new(db.connect_one(timeout).await.unwrap());
    // Another session locks the table, so the first save holds the pool's only connection.
    let lock = db.lock("conversations").await.unwrap();
    let me = Principal::new("p");
    let first = {
        let (store, me) = (store.clone(), me.clone());
        tokio::spawn(async move { store.save(&me, conversation("a", 0, vec![])).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let started = std::time::Instant::now();
    let err = store.list(&me).await.unwrap_err();
    let waited = started.elapsed();
    assert!(matches!(err, HistoryError::Busy(_)), "{err:?}");
    assert!(err.to_string().contains("PostgreSQL connection"), "{err}");
    assert!(
        waited >= timeout && waited < timeout * 10,
        "failed after {waited:?}"
    );
    // Once the lock goes, the held save completes.
    lock.release().await.unwrap();
    let outcome = first.await.unwrap().unwrap();
    assert_eq!(outcome, SaveOutcome::Saved { revision: 1 });
}

/// A schema and data the previous release (0.1.0, schema version 3) wrote through its app's
/// API, dumped with `pg_dump --inserts` (`tests/fixtures/history-0.1.0-postgres.sql`: one
/// conversation of five messages) and restored into a fresh schema, migrates at connect, opens
/// as one branch, keeps its search index, and branches from then on.
#[tokio::test]
async fn a_schema_written_by_the_previous_release_opens_as_one_branch() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    let dump = include_str!("../fixtures/history-0.1.0-postgres.sql");
    // psql's meta-commands (`\restrict`) are no SQL; the dump's schema is `public`.
    let restored: Vec<String> = dump
        .lines()
        .filter(|line| !line.starts_with('\\'))
        .map(|line| line.replace("public.", &format!("{}.", db.schema())))
        .collect();
    db.execute(&format!(
        "CREATE SCHEMA {}; {}",
        db.schema(),
        restored.join("\n")
    ))
    .await
    .unwrap();
    let versions = |answer| rows(answer).into_iter().flatten().collect::<Vec<_>>();
    let query = "SELECT version FROM lmchatkit_migrations ORDER BY version";
    assert_eq!(versions(db.execute(query).await.unwrap()), ["1", "2", "3"]);

    let store = db.connect().await.unwrap();
    assert_eq!(
        versions(db.execute(query).await.unwrap()),
        ["1", "2", "3", "4"]
    );
    let me = Principal::anonymous();
    let ids = |c: &StoredConversation| -> Vec<String> {
        c.messages.iter().filter_map(|m| m.id.clone()).collect()
    };
    let got = store.get(&me, "c-prev").await.unwrap().unwrap();
    assert_eq!(ids(&got), ["u1", "a1", "u2", "a2", "u3"]);
    assert!(got.branches.is_empty(), "{:?}", got.branches);
    assert_eq!((got.revision, got.title.as_str()), (2, "Made by 0.1.0"));
    assert_eq!(got.totals.total_input_tokens, 32);
    let (tail, before) = store.get_tail(&me, "c-prev", 2).await.unwrap().unwrap();
    assert_eq!((before, ids(&tail)), (3, vec!["a2".into(), "u3".into()]));
    let search = lmchatkit::store::SearchQuery::parse("herons", None).unwrap();
    let hits = store.search(&me, &search).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!((hits[0].index, hits[0].node), (2, Some(2)));

    // A regenerated second reply is one new row, a new version numbered after the stored
    // ones; the stored reply keeps what followed it.
    let mut c = got.clone();
    c.messages.truncate(3);
    c.messages
        .push(Message::assistant("Frogs, mostly.").with_id("a2b"));
    let written = store.counters().rows_written;
    let SaveOutcome::Saved { revision } = store.save(&me, c).await.unwrap() else {
        panic!("conflict")
    };
    assert_eq!(store.counters().rows_written - written, 1);
    let got = store.get(&me, "c-prev").await.unwrap().unwrap();
    assert_eq!(ids(&got), ["u1", "a1", "u2", "a2b"]);
    assert_eq!(got.branches.len(), 1);
    assert_eq!(
        (got.branches[0].index, got.branches[0].versions.as_slice()),
        (3, &[3, 5][..])
    );
    let switched = store.switch_branch(&me, "c-prev", 3).await.unwrap();
    assert_eq!(
        switched,
        Some(lmchatkit::store::BranchOutcome::Done {
            revision: revision + 1
        })
    );
    let got = store.get(&me, "c-prev").await.unwrap().unwrap();
    assert_eq!(ids(&got), ["u1", "a1", "u2", "a2", "u3"]);
    assert_eq!(got.totals.total_input_tokens, 32);
}
