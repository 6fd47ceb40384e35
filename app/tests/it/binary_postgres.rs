//! The `lmchatkit` app with `--db postgres://…` against the machine's PostgreSQL, in a fresh
//! schema per test (named through the URL's `options=-csearch_path=…`, dropped at the end): a
//! conversation and an "always allow" list survive a restart, and a malformed or unreachable
//! URL stops the app with a message that never holds the password. Without a reachable server
//! the tests that need one print why and pass, unless `CI` is set.

use crate::support;

use lmchatkit::store::postgres::test_support::TestSchema;
use serde_json::json;
use support::{command, get_json, http_client, start};

/// The test server's URL, pointed at the test's schema (created here; the app migrates it).
async fn url_for(db: &TestSchema) -> String {
    db.execute(&format!("CREATE SCHEMA {}", db.schema()))
        .await
        .unwrap();
    let sep = if db.url().contains('?') { '&' } else { '?' };
    format!("{}{sep}options=-csearch_path%3D{}", db.url(), db.schema())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_saved_through_the_app_on_postgres_survives_a_restart() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    let url = url_for(&db).await;
    let args = ["--db", url.as_str(), "--no-demo-mcp"];
    let app = start(&args, &[]);
    let client = http_client();
    let body = json!({
        "id": "c-pg", "title": "On PostgreSQL", "revision": 0,
        "messages": [
            {"id": "u", "role": "user", "content": "hello"},
            {"id": "a", "role": "assistant", "content": "hi from the database"},
        ],
    });
    let res = client
        .put(format!("{}/api/conversations/c-pg", app.url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let res = client
        .put(format!("{}/api/tools/approvals", app.url))
        .json(&json!({"always": ["demo__clock_now"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    drop(app); // killed

    let app = start(&args, &[]);
    let got = get_json(&format!("{}/api/conversations/c-pg", app.url)).await;
    assert_eq!(got["revision"], 1, "{got}");
    assert_eq!(
        got["messages"][1]["content"], "hi from the database",
        "{got}"
    );
    assert_eq!(
        get_json(&format!("{}/api/tools/approvals", app.url)).await,
        json!({"always": ["demo__clock_now"]})
    );
    // A stale save through the app is a 409 with the current copy.
    let res = client
        .put(format!("{}/api/conversations/c-pg", app.url))
        .json(&json!({"id": "c-pg", "title": "stale", "revision": 0, "messages": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 409);
    // A NUL in a title (PostgreSQL refuses it in text) is the client's mistake: 400, not 500.
    let res = client
        .put(format!("{}/api/conversations/c-nul", app.url))
        .json(&json!({"id": "c-nul", "title": "bad\u{0}title", "revision": 0, "messages": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    // The rows are in the test's schema, where the app put them.
    let stored = db.execute("SELECT count(*) FROM messages").await.unwrap();
    let count = stored.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
        _ => None,
    });
    assert_eq!(count.as_deref(), Some("2"));
}

#[test]
fn a_malformed_postgres_url_exits_2_without_showing_the_password() {
    let out = command(
        &[
            "--db",
            "postgres://app:hunter2-xyz@db.internal:notaport/chat",
        ],
        &[],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("db:"), "{stderr}");
    assert!(!stderr.contains("hunter2-xyz"), "{stderr}");
}

#[test]
fn an_unreachable_postgres_stops_the_app_without_showing_the_password() {
    // Nothing listens on port 1: the connect fails at once.
    let out = command(
        &["--db", "postgres://app:hunter2-xyz@127.0.0.1:1/chat"],
        &[],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("history store: PostgreSQL connection"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2-xyz"), "{stderr}");
}

#[test]
fn users_mcp_servers_on_postgres_need_an_explicit_key_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lmchatkit.toml");
    std::fs::write(&file, "[user_mcp]\nenabled = true\n").unwrap();
    let args = [
        "--config",
        file.to_str().unwrap(),
        "--db",
        "postgres://app@127.0.0.1:1/chat",
    ];
    let out = command(&args, &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("key_file"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_apps_on_one_postgres_share_conversations_and_their_revisions() {
    let Some(db) = TestSchema::new().await else {
        return;
    };
    let url = url_for(&db).await;
    let args = ["--db", url.as_str(), "--no-demo-mcp"];
    let (a, b) = (start(&args, &[]), start(&args, &[]));
    let client = http_client();
    let put = |app: &str, revision: u64, text: &str| {
        client
            .put(format!("{app}/api/conversations/shared"))
            .json(&json!({
                "id": "shared", "title": "Shared", "revision": revision,
                "messages": [{"id": "u", "role": "user", "content": text}],
            }))
            .send()
    };
    assert_eq!(put(&a.url, 0, "from a").await.unwrap().status(), 200);
    let got = get_json(&format!("{}/api/conversations/shared", b.url)).await;
    assert_eq!(got["messages"][0]["content"], "from a", "{got}");
    assert_eq!(put(&b.url, 1, "from b").await.unwrap().status(), 200);
    // A's base is stale now: 409 with B's copy.
    let res = put(&a.url, 1, "from a again").await.unwrap();
    assert_eq!(res.status(), 409);
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body["revision"], 2, "{body}");
    assert_eq!(
        body["conversation"]["messages"][0]["content"], "from b",
        "{body}"
    );
}
