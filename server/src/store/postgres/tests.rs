//! Unit tests of the PostgreSQL store: what needs no server (`Debug`, URL and schema checks,
//! the HTTP class of a NUL), and against the machine's PostgreSQL in a fresh schema the
//! approvals conformance suite (crate-private) and the migration of conversations the previous
//! release stored (it needs the schema at an earlier version, `schema::migrate_to`).

use lmchatkit_protocol::Message;

use super::schema::MIGRATIONS;
use super::test_support::TestSchema;
use super::*;
use crate::api::ApiError;
use crate::store::ApprovalStore;
use crate::store::conformance::approvals::run as conformance;

#[tokio::test]
async fn the_postgres_store_passes_the_approvals_suite() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    conformance(&db.connect().await.unwrap()).await;
}

#[tokio::test]
async fn approvals_survive_a_second_store_on_the_same_schema() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    let alice = Principal::new("alice");
    let a = db.connect().await.unwrap();
    a.set_always(&alice, vec!["demo__echo".into()])
        .await
        .unwrap();
    let b = db.connect().await.unwrap();
    assert_eq!(b.always(&alice).await.unwrap(), ["demo__echo"]);
}

#[tokio::test]
async fn debug_shows_the_target_but_never_the_password() {
    let options = PostgresOptions::default().with_schema("tenant_a");
    let store =
        PostgresStore::unconnected("postgres://app:hunter2@db.internal:6543/chat", &options)
            .unwrap();
    let shown = format!("{store:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    for part in ["db.internal", "6543", "chat", "app", "tenant_a"] {
        assert!(shown.contains(part), "{part} in {shown}");
    }
    let kv = PostgresStore::unconnected("host=h password='sec ret' user=u", &options).unwrap();
    assert!(!format!("{kv:?}").contains("sec ret"));
}

#[test]
fn a_schema_that_is_not_a_plain_identifier_is_refused() {
    let options = PostgresOptions::default().with_schema("x; DROP TABLE y");
    let err = PostgresStore::unconnected("postgres://h/db", &options).unwrap_err();
    assert!(matches!(err, HistoryError::InvalidInput(_)), "{err:?}");
}

#[test]
fn a_nul_in_text_is_a_400_not_a_500() {
    let err = no_nul(&[("title", "a\0b")]).unwrap_err();
    let api = ApiError::from(err);
    assert_eq!(api.status(), http::StatusCode::BAD_REQUEST);
    assert!(no_nul(&[("title", "fine")]).is_ok());
}

#[test]
fn pool_options_default_to_ten_connections_and_five_seconds() {
    let o = PostgresOptions::default();
    assert_eq!(o.max_connections(), 10);
    assert_eq!(o.acquire_timeout(), std::time::Duration::from_secs(5));
    assert_eq!(o.schema(), None);
    assert_eq!(o.with_max_connections(0).max_connections(), 1);
}

/// The search figures on PostgreSQL (see [`crate::store::search_figures`]), in a fresh schema:
/// `cargo test --release -p lmchatkit --lib search_figures -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run it with --ignored --nocapture, in release"]
async fn search_figures_on_ten_thousand_conversations_in_postgres() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    let store = db.connect().await.unwrap();
    crate::store::search_figures::run(
        &store,
        "PostgreSQL",
        async || {
            db.execute("ANALYZE").await.unwrap();
        },
        async || {},
    )
    .await;
}

/// The rows of the previous release (schema version 3): `messages` held one list per
/// conversation, numbered from 0, with no parent, depth, message id or leaf.
async fn store_as_the_previous_release(
    client: &tokio_postgres::Client,
    principal: &str,
    id: &str,
    messages: &[(i32, Message)],
) {
    let plain: Vec<Message> = messages.iter().map(|(_, m)| m.clone()).collect();
    let totals = serde_json::to_string(&ConversationTotals::of(&plain)).unwrap();
    client
        .execute(
            "INSERT INTO conversations
                (principal, id, title, persona_id, model, params, created_at, updated_at,
                 revision, allowed_tools, totals)
             VALUES ($1, $2, 'old', 'default', 'demo', '{}', 1000, 2000, 7, '[]', $3)",
            &[&principal, &id, &totals],
        )
        .await
        .unwrap();
    for (seq, m) in messages {
        let body = serde_json::to_string(m).unwrap();
        let hash = Sha256::digest(body.as_bytes()).to_vec();
        let text = crate::store::search::searchable_text(m).map(|t| search_text(&t));
        client
            .execute(
                "INSERT INTO messages (principal, conversation_id, seq, hash, body, search_text)
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[&principal, &id, seq, &hash, &body, &text],
            )
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn conversations_stored_by_the_previous_release_open_as_one_branch() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    // The previous release's schema: every migration before the tree one.
    let Prepared { config, .. } = prepare(&db.store_url(), &db.options()).unwrap();
    let (mut client, conn) = config.connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    let applied = schema::migrate_to(&mut client, Some(db.schema()), 3)
        .await
        .unwrap();
    assert_eq!(applied, 3);
    let me = Principal::new("old-user");
    let mut reply = Message::assistant("a tree is a graph").with_id("a1");
    reply.usage = Some(lmchatkit_protocol::Usage {
        prompt_tokens: Some(10),
        completion_tokens: Some(4),
        ..Default::default()
    });
    reply.cost_usd = Some(0.5);
    let old = vec![
        Message::user("what is a tree?").with_id("u1"),
        reply,
        // A NUL in the body: PostgreSQL's JSON functions refuse it, the migration reads the id
        // in Rust.
        Message::user("and a \0 forest?").with_id("u\0 2"),
        Message::assistant("many trees").with_id("a2"),
    ];
    let numbered: Vec<(i32, Message)> = (0..).zip(old.iter().cloned()).collect();
    store_as_the_previous_release(&client, me.id(), "old", &numbered).await;
    store_as_the_previous_release(&client, me.id(), "empty", &[]).await;
    // A gap the previous release never left (it numbered from 0 without one) still reads in
    // order.
    let gap = [
        (0, Message::user("first").with_id("g1")),
        (5, Message::assistant("second").with_id("g2")),
    ];
    store_as_the_previous_release(&client, me.id(), "gap", &gap).await;
    drop(client);

    // This release migrates at connect; the conversation reads as it was stored, one branch.
    let store = db.connect().await.unwrap();
    let versions = db
        .execute("SELECT version FROM lmchatkit_migrations ORDER BY version")
        .await
        .unwrap()
        .into_iter()
        .filter(|m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(_)))
        .count();
    assert_eq!(versions, MIGRATIONS.len());
    let got = store.get(&me, "old").await.unwrap().unwrap();
    assert_eq!(got.messages, old);
    assert!(got.branches.is_empty(), "{:?}", got.branches);
    assert_eq!((got.revision, got.title.as_str()), (7, "old"));
    assert_eq!(got.totals, ConversationTotals::of(&old));
    let (tail, before) = store.get_tail(&me, "old", 1).await.unwrap().unwrap();
    assert_eq!((tail.messages.as_slice(), before), (&old[3..], 3));
    let query = crate::store::SearchQuery::parse("forest", None).unwrap();
    let hits = store.search(&me, &query).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!((hits[0].index, hits[0].node), (2, Some(2)));
    assert_eq!(hits[0].message_id.as_deref(), Some("u\0 2"));
    let gap_got = store.get(&me, "gap").await.unwrap().unwrap();
    let gap_messages: Vec<Message> = gap.iter().map(|(_, m)| m.clone()).collect();
    assert_eq!(gap_got.messages, gap_messages);

    // A regenerated reply: the stored messages are recognised as they are (their ids read
    // out of the stored bodies match), so the save writes one row, a second version of the
    // last reply, numbered after the stored ones.
    let mut regenerated = old.clone();
    regenerated[3] = Message::assistant("a wood").with_id("a2b");
    let written = store.counters().rows_written;
    let saved = store
        .save(
            &me,
            StoredConversation {
                id: "old".into(),
                revision: 7,
                messages: regenerated.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(saved, SaveOutcome::Saved { revision: 8 });
    assert_eq!(store.counters().rows_written - written, 1);
    let got = store.get(&me, "old").await.unwrap().unwrap();
    assert_eq!(got.messages, regenerated);
    assert_eq!(got.branches.len(), 1);
    let b = &got.branches[0];
    assert_eq!(
        (b.index, b.versions.as_slice(), b.current),
        (3, &[3, 4][..], 1)
    );
    // The message with a NUL in its id updated in place (an edit that keeps what follows).
    let mut edited = regenerated.clone();
    edited[2].content = "and a \0 grove?".into();
    store
        .save(
            &me,
            StoredConversation {
                id: "old".into(),
                revision: 8,
                messages: edited.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let got = store.get(&me, "old").await.unwrap().unwrap();
    assert_eq!((got.messages, got.branches.len()), (edited, 1));
    // The first version is still there.
    store.switch_branch(&me, "old", 3).await.unwrap();
    let got = store.get(&me, "old").await.unwrap().unwrap();
    assert_eq!(got.messages[3], old[3]);

    // An empty conversation has no leaf; its first message is its first node.
    let empty = store.get(&me, "empty").await.unwrap().unwrap();
    assert!(empty.messages.is_empty());
    let first = vec![Message::user("hello").with_id("e1")];
    store
        .save(
            &me,
            StoredConversation {
                id: "empty".into(),
                revision: 7,
                messages: first.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let got = store.get(&me, "empty").await.unwrap().unwrap();
    assert_eq!((got.messages, got.branches.len()), (first, 0));
}
