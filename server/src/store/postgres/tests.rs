//! Unit tests of the PostgreSQL store: what needs no server (`Debug`, URL and schema checks,
//! the HTTP class of a NUL), and the approvals conformance suite (crate-private) against the
//! machine's PostgreSQL in a fresh schema.

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
    crate::store::search_figures::run(&store, "PostgreSQL", async || {
        db.execute("ANALYZE").await.unwrap();
    })
    .await;
}
