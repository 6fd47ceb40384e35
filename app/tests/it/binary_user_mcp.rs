//! `[user_mcp]` in the app: off by default (404), on behind a trusted user header with the
//! registry in the history file and the sealing key created 0600 next to it; credentials are
//! sealed on disk and survive a restart.

use crate::support;

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};
use support::{http_client, start};

const CANARY: &str = "canary-binary-user-mcp-81c2";

async fn as_user(
    method: reqwest::Method,
    url: &str,
    user: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = http_client()
        .request(method, url)
        .header("x-forwarded-user", user);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    assert!(!text.contains(CANARY), "a credential in an answer: {text}");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn app_args<'a>(config: &'a str, db: &'a str) -> [&'a str; 9] {
    [
        "--no-demo",
        "--config",
        config,
        "--db",
        db,
        "--trusted-user-header",
        "X-Forwarded-User",
        "--trusted-proxy",
        "127.0.0.1",
    ]
}

#[tokio::test]
async fn users_keep_their_own_servers_in_the_history_file_with_credentials_sealed() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("lmchatkit.toml");
    std::fs::write(
        &config,
        "[user_mcp]\nenabled = true\nallow_hosts = [\"mcp.internal\"]\n",
    )
    .unwrap();
    let db = dir.path().join("history.db");
    let (config, db) = (config.to_str().unwrap(), db.to_str().unwrap());
    let app = start(&app_args(config, db), &[]);
    let servers = format!("{}/api/mcp/servers", app.url);
    let body = json!({"slug": "docs", "url": "http://mcp.internal:8080/mcp",
                      "headers": {"Authorization": format!("Bearer {CANARY}")}});
    let (status, created) = as_user(reqwest::Method::POST, &servers, "alice", Some(body)).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["credentials"], "set");
    // http is allowed only for the operator's host.
    let other = json!({"slug": "x", "url": "http://other.example/mcp"});
    let (status, _) = as_user(reqwest::Method::POST, &servers, "alice", Some(other)).await;
    assert_eq!(status, 400);
    let (_, bobs) = as_user(reqwest::Method::GET, &servers, "bob", None).await;
    assert_eq!(bobs, json!([]));

    let key = dir.path().join("user-mcp.key");
    let mode = std::fs::metadata(&key).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the key file is private");
    drop(app);
    for file in ["history.db", "history.db-wal"] {
        let bytes = std::fs::read(dir.path().join(file)).unwrap_or_default();
        let needle = CANARY.as_bytes();
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle),
            "{file} holds the credential"
        );
    }

    // After a restart the server is there and the same key opens its credentials: a refresh
    // gets as far as resolving the host (a new key would fail before, with a 500).
    let app = start(&app_args(config, db), &[]);
    let servers = format!("{}/api/mcp/servers", app.url);
    let (status, list) = as_user(reqwest::Method::GET, &servers, "alice", None).await;
    assert_eq!(status, 200);
    assert_eq!(list[0]["slug"], "docs");
    assert_eq!(list[0]["credentials"], "set");
    let refresh = format!("{servers}/docs/refresh");
    let (status, err) = as_user(reqwest::Method::POST, &refresh, "alice", None).await;
    assert_eq!(status, 502, "{err}");
    assert!(
        err["error"].as_str().unwrap().contains("mcp.internal"),
        "{err}"
    );
}

#[tokio::test]
async fn without_user_mcp_the_routes_are_absent() {
    let app = start(
        &[
            "--no-demo",
            "--trusted-user-header",
            "X-Forwarded-User",
            "--trusted-proxy",
            "127.0.0.1",
        ],
        &[],
    );
    let (status, body) = as_user(
        reqwest::Method::GET,
        &format!("{}/api/mcp/servers", app.url),
        "alice",
        None,
    )
    .await;
    assert_eq!(status, 404, "{body}");
}

#[tokio::test]
async fn presets_reach_every_user_disabled_and_a_refused_one_stops_the_app() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("lmchatkit.toml");
    let preset = "[[user_mcp.presets]]\nslug = \"docs\"\nname = \"Docs search\"\n";
    std::fs::write(
        &config,
        format!("[user_mcp]\nenabled = true\n\n{preset}url = \"https://mcp.example.com/mcp\"\n"),
    )
    .unwrap();
    let db = dir.path().join("history.db");
    let (config_path, db) = (config.to_str().unwrap(), db.to_str().unwrap());
    let app = start(&app_args(config_path, db), &[]);
    let servers = format!("{}/api/mcp/servers", app.url);
    for user in ["alice", "bob"] {
        let (status, list) = as_user(reqwest::Method::GET, &servers, user, None).await;
        assert_eq!(status, 200);
        assert_eq!(
            list,
            json!([{"name": "Docs search", "slug": "docs", "url": "https://mcp.example.com/mcp",
                    "transport": "streamable_http", "credentials": "not set", "oauth": "not_used",
                    "enabled": false,
                    "created_at": list[0]["created_at"], "updated_at": list[0]["updated_at"],
                    "tools": [], "preset": true}])
        );
    }
    drop(app);

    std::fs::write(
        &config,
        format!("[user_mcp]\nenabled = true\n\n{preset}url = \"https://169.254.169.254/latest\"\n"),
    )
    .unwrap();
    let out = support::command(&app_args(config_path, db), &[])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("preset \"docs\"") && err.contains("link-local"),
        "{err}"
    );
}
