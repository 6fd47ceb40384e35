//! A first run that goes wrong says how to fix it. Before, a `[[providers]]` entry of kind
//! `anthropic` whose `base_url` lacked `/v1` got a 404 from `…/models` and silently left the
//! menu (one warning in the log); a refused key and an MCP command that is not installed were
//! as quiet. Now each is named at start (a `set-up problem` log line with the fix) and in
//! `/api/config` (`problems`), and goes away once fixed.

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use serde_json::Value;
use support::{get_json, start, start_logged};

/// An Anthropic-shaped upstream on loopback: `GET /v1/models` lists one model for the key
/// `sk-good` (401 `authentication_error` for any other), every other path is a 404
/// `not_found_error`, as api.anthropic.com answers. Returns its origin (no `/v1`).
fn anthropic_upstream() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).to_lowercase();
            let error = |kind: &str| {
                format!(r#"{{"type":"error","error":{{"type":"{kind}","message":"{kind}"}}}}"#)
            };
            let (status, body) = if !head.starts_with("get /v1/models") {
                ("404 Not Found", error("not_found_error"))
            } else if !head.contains("x-api-key: sk-good") {
                ("401 Unauthorized", error("authentication_error"))
            } else {
                (
                    "200 OK",
                    r#"{"data":[{"id":"claude-test","display_name":"Claude Test","type":"model"}],"has_more":false}"#
                        .to_owned(),
                )
            };
            let _ = write!(
                conn,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    origin
}

fn config(dir: &std::path::Path, base_url: &str, extra: &str) -> String {
    let path = dir.join("lmchatkit.toml");
    std::fs::write(
        &path,
        format!(
            "[[providers]]\nname = \"claude\"\nkind = \"anthropic\"\nbase_url = \"{base_url}\"\n\
             api_key_env = \"LMCK_BIN_CLAUDE_KEY\"\n{extra}"
        ),
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

/// The app's log lines until one contains `needle` (panics after 30 s, showing what came).
fn log_until(app: &mut support::App, needle: &str) -> String {
    let stderr = app.stderr.take().expect("started with start_logged");
    let needle = needle.to_owned();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = String::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            seen.push_str(&line);
            seen.push('\n');
            if line.contains(&needle) {
                let _ = tx.send(Ok(line));
                return;
            }
        }
        let _ = tx.send(Err(seen));
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(Ok(line)) => line,
        Ok(Err(seen)) => panic!("the log ended without the line; it said:\n{seen}"),
        Err(_) => panic!("no such log line within 30 s"),
    }
}

fn problems(cfg: &Value) -> Vec<Value> {
    cfg["problems"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn an_anthropic_base_url_without_v1_is_named_at_start_and_in_config_with_the_fix() {
    let origin = anthropic_upstream();
    let dir = tempfile::tempdir().unwrap();
    let file = config(dir.path(), &origin, "");
    let mut app = start_logged(
        &["--config", &file, "--no-demo-mcp"],
        &[("LMCK_BIN_CLAUDE_KEY", "sk-good")],
    );
    let line = log_until(&mut app, "set-up problem");
    assert!(
        line.contains("provider claude") && line.contains(&format!("{origin}/v1")),
        "{line}"
    );
    let cfg = get_json(&format!("{}/api/config", app.url)).await;
    let found = problems(&cfg);
    assert_eq!(found.len(), 1, "{cfg}");
    assert_eq!(found[0]["subject"], "provider claude", "{cfg}");
    assert!(
        found[0]["problem"].as_str().unwrap().contains("404"),
        "{cfg}"
    );
    let fix = found[0]["fix"].as_str().unwrap();
    assert!(
        fix.starts_with(&format!("set `base_url` to {origin}/v1")),
        "{fix}"
    );
    assert!(!cfg.to_string().contains("sk-good"), "no key in {cfg}");
    drop(app);

    // Fixed as the problem says: no problem, and the model is on the menu.
    let file = config(dir.path(), &format!("{origin}/v1"), "");
    let app = start(
        &["--config", &file, "--no-demo-mcp"],
        &[("LMCK_BIN_CLAUDE_KEY", "sk-good")],
    );
    let models = get_json(&format!("{}/api/models", app.url)).await;
    assert!(
        models
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["id"] == "claude/claude-test"),
        "{models}"
    );
    let cfg = get_json(&format!("{}/api/config", app.url)).await;
    assert_eq!(problems(&cfg), Vec::<Value>::new(), "{cfg}");
}

#[tokio::test]
async fn a_refused_key_and_an_mcp_command_that_is_not_installed_are_named_with_their_fixes() {
    let origin = anthropic_upstream();
    let dir = tempfile::tempdir().unwrap();
    let file = config(
        dir.path(),
        &format!("{origin}/v1"),
        "[[mcp.servers]]\nname = \"files\"\ncommand = \"lmck-no-such-mcp-server\"\nargs = []\n",
    );
    let mut app = start_logged(
        &["--config", &file, "--no-demo-mcp"],
        &[("LMCK_BIN_CLAUDE_KEY", "sk-revoked-key")],
    );
    log_until(&mut app, "set-up problem");
    let cfg = get_json(&format!("{}/api/config", app.url)).await;
    let found = problems(&cfg);
    let by = |subject: &str| {
        found
            .iter()
            .find(|p| p["subject"] == subject)
            .unwrap_or_else(|| panic!("no {subject} in {cfg}"))
            .clone()
    };
    let key = by("provider claude");
    assert!(key["problem"].as_str().unwrap().contains("401"), "{key}");
    assert!(
        key["fix"].as_str().unwrap().contains("refused the key"),
        "{key}"
    );
    let mcp = by("MCP server files");
    let fix = mcp["fix"].as_str().unwrap();
    assert!(
        fix.starts_with("`lmck-no-such-mcp-server` was not found") && fix.contains("`command`"),
        "{mcp}"
    );
    assert!(
        !cfg.to_string().contains("sk-revoked-key"),
        "no key in {cfg}"
    );
}
