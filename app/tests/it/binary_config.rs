//! The `lmchatkit` binary's settings: the TOML file, flags and environment variables with
//! flag > environment > file > default, extra upstream headers, log format, `--help`, and a
//! clear exit on a broken file.

use crate::support;

use std::io::{BufRead, BufReader};

use serde_json::json;
use support::{command, fake_upstream, get_json, start, start_logged};

/// A config file setting the prefix, the upstream (with headers), uploads and the demos.
fn config_file(dir: &std::path::Path, base_url: &str) -> String {
    let path = dir.join("lmchatkit.toml");
    std::fs::write(
        &path,
        format!(
            r#"
prefix = "/from-file"
upload = false
personas_dir = "my-personas"

[upstream]
base_url = "{base_url}"
api_key = "file-key"
headers = {{ "X-From-File" = "yes", "X-Both" = "file" }}

[demo]
mcp = false

[[models]]
id = "local/upstream-model"
context_window = 8192
reasoning = true
"#
        ),
    )
    .unwrap();
    std::fs::create_dir(dir.join("my-personas")).unwrap();
    std::fs::write(dir.join("my-personas/pirate.toml"), "name = \"Pirate\"\n").unwrap();
    path.to_string_lossy().into_owned()
}

#[tokio::test]
async fn the_config_file_sets_everything_and_flags_win() {
    let upstream = fake_upstream();
    let dir = tempfile::tempdir().unwrap();
    let file = config_file(dir.path(), &upstream.base_url);
    let app = start(&["--config", &file, "--header", "X-Both: flag"], &[]);
    assert!(app.url.ends_with("/from-file"), "{}", app.url);
    let cfg = get_json(&format!("{}/api/config", app.url)).await;
    assert_eq!(
        (&cfg["file_upload"], &cfg["demo"], &cfg["mcp"]),
        (&json!(false), &json!(false), &json!([])),
        "{cfg}"
    );
    // The upstream's models, asked with the file's key and headers (the flag's X-Both wins),
    // described by the file's [[models]].
    let models = get_json(&format!("{}/api/models", app.url)).await;
    assert_eq!(
        models,
        json!([{"id": "upstream-model", "provider": "local", "reasoning": true,
                "context_window": 8192, "configured": true}])
    );
    let heads = upstream.heads.lock().unwrap().clone();
    let head = heads
        .iter()
        .find(|h| h.starts_with("get /v1/models"))
        .unwrap_or_else(|| panic!("{heads:?}"));
    for line in [
        "authorization: bearer file-key",
        "x-from-file: yes",
        "x-both: flag",
    ] {
        assert!(head.contains(line), "{line} missing in {head}");
    }
    assert!(!head.contains("x-both: file"), "{head}");
    // Personas from the file's directory, relative to the file.
    let personas = get_json(&format!("{}/api/personas", app.url))
        .await
        .to_string();
    assert!(
        personas.contains("Pirate") && !personas.contains("Coder"),
        "{personas}"
    );
}

#[tokio::test]
async fn environment_beats_the_file_and_flags_beat_the_environment() {
    let upstream = fake_upstream();
    let dir = tempfile::tempdir().unwrap();
    let file = config_file(dir.path(), &upstream.base_url);
    let env = [
        ("LMCHATKIT_PREFIX", "/from-env"),
        ("LMCHATKIT_UPLOAD", "true"),
    ];
    let app = start(&["--config", &file], &env);
    assert!(app.url.ends_with("/from-env"), "{}", app.url);
    let cfg = get_json(&format!("{}/api/config", app.url)).await;
    assert_eq!(cfg["file_upload"], json!(true), "{cfg}");
    let app = start(&["--config", &file, "--prefix", "/from-flag"], &env);
    assert!(app.url.ends_with("/from-flag"), "{}", app.url);
    // LMCHATKIT_CONFIG names the file as well as --config does.
    let app = start(&[], &[("LMCHATKIT_CONFIG", &file)]);
    assert!(app.url.ends_with("/from-file"), "{}", app.url);
}

#[tokio::test]
async fn json_logs() {
    let mut app = start_logged(&["--log-format", "json", "--no-demo-mcp"], &[]);
    let mut line = String::new();
    BufReader::new(app.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let log: serde_json::Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    assert!(
        log["level"].is_string() && log["fields"].is_object(),
        "{log}"
    );
}

#[tokio::test]
async fn listening_everywhere_prints_a_url_a_browser_can_open() {
    let app = start(&["--listen", "0.0.0.0:0"], &[]);
    assert!(app.url.starts_with("http://127.0.0.1:"), "{}", app.url);
    // Beyond loopback the printed URL carries the token (binary_auth.rs).
    let (page, token) = app.url.split_once("?token=").unwrap();
    let res = support::http_client()
        .get(format!("{page}/api/config"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.json::<serde_json::Value>().await.unwrap()["demo"], true);
}

#[test]
fn help_documents_every_setting() {
    let out = command(&["--help"], &[]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success());
    for flag in [
        "--config",
        "--listen",
        "--prefix",
        "--openai-base-url",
        "--completions-url",
        "--openai-api-key",
        "--header",
        "--model",
        "--db",
        "--db-synchronous",
        "LMCHATKIT_DB_SYNCHRONOUS",
        "--personas-dir",
        "--commands-dir",
        "--upload",
        "--no-demo",
        "--no-demo-mcp",
        "--log",
        "--log-format",
        "LMCHATKIT_NO_DEMO_MCP",
        "OPENAI_BASE_URL",
        "--auth-token",
        "--trusted-user-header",
        "--trusted-proxy",
        "--operator",
        "--allowed-origin",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}:\n{help}");
    }
}

/// The history file's `synchronous` mode, as the app logs it at startup (JSON logs).
fn logged_synchronous(app: &mut support::App) -> String {
    let stderr = BufReader::new(app.stderr.take().unwrap());
    for line in stderr.lines() {
        let line = line.unwrap();
        let log: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        if log["fields"]["message"] == "history" {
            return log["fields"]["synchronous"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
        }
    }
    panic!("the app never logged its history file");
}

#[tokio::test]
async fn the_history_file_is_synced_in_full_unless_the_environment_or_a_flag_says_normal() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let db = db.to_str().unwrap();
    let normal = [("LMCHATKIT_DB_SYNCHRONOUS", "normal")];
    for (flags, env, want) in [
        (&[][..], &[][..], "full"),
        (&[][..], &normal[..], "normal"),
        (&["--db-synchronous", "full"][..], &normal[..], "full"),
        (&["--db-synchronous", "normal"][..], &[][..], "normal"),
    ] {
        let args = [
            &["--db", db, "--no-demo-mcp", "--log-format", "json"][..],
            flags,
        ]
        .concat();
        let mut app = start_logged(&args, env);
        assert_eq!(logged_synchronous(&mut app), want, "{flags:?} {env:?}");
    }
}

#[test]
fn a_broken_config_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, "prefx = \"/typo\"\n").unwrap();
    let out = command(&["--config", path.to_str().unwrap()], &[])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.toml") && err.contains("prefx"), "{err}");
}

/// A stdio MCP server started by the app gets a cleared environment: the platform basics
/// (`PATH`, `HOME`, …) and what its `[[mcp.servers]]` entry lists (`env`, `inherit_env`), never
/// the app's own secrets.
#[tokio::test]
async fn stdio_mcp_servers_do_not_inherit_the_apps_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("child-env.txt");
    // Not an MCP server: it writes its environment (atomically) and exits; the app logs a
    // failed connect and keeps running.
    let script = format!(
        "env > '{0}.tmp' && mv '{0}.tmp' '{0}'; exit 1",
        seen.display()
    );
    let config = dir.path().join("lmchatkit.toml");
    std::fs::write(
        &config,
        format!(
            "[[mcp.servers]]\nname = \"probe\"\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\n\
             env = {{ FROM_CONFIG = \"configured\" }}\n\
             inherit_env = [\"LMCHATKIT_TEST_NAMED\", \"LMCHATKIT_TEST_NOT_SET\"]\n"
        ),
    )
    .unwrap();
    let _app = start(
        &["--config", config.to_str().unwrap()],
        &[
            ("OPENAI_API_KEY", "sk-test-secret"),
            ("LMCHATKIT_TEST_UNLISTED", "unlisted-value"),
            ("LMCHATKIT_TEST_NAMED", "named-value"),
        ],
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let env = loop {
        if let Ok(text) = std::fs::read_to_string(&seen) {
            break text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the stdio server never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let names: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(n, _)| n)
        .collect();
    assert!(
        !env.contains("sk-test-secret") && !names.contains(&"OPENAI_API_KEY"),
        "the child inherited the API key:\n{env}"
    );
    assert!(
        !env.contains("unlisted-value"),
        "the child inherited an unlisted variable:\n{env}"
    );
    for line in ["FROM_CONFIG=configured", "LMCHATKIT_TEST_NAMED=named-value"] {
        assert!(env.lines().any(|l| l == line), "{line} is missing:\n{env}");
    }
    assert!(!names.contains(&"LMCHATKIT_TEST_NOT_SET"), "{env}");
    for basic in ["PATH", "HOME"] {
        if std::env::var_os(basic).is_some() {
            assert!(names.contains(&basic), "{basic} is missing:\n{env}");
        }
    }
}

#[tokio::test]
async fn the_approval_table_blocks_denied_tools_and_the_history_file_keeps_always_lists() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lmchatkit.toml");
    std::fs::write(
        &file,
        "[tools.approval]\ndefault = \"ask\"\ndeny = [\"demo__roll_*\"]\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let db = dir.path().join("h.db");
    let args = ["--config", file, "--db", db.to_str().unwrap()];
    let app = start(&args, &[]);
    let (status, body) = support::post(
        &format!("{}/api/tools/call", app.url),
        json!({"name": "demo__roll_dice", "arguments": {"sides": 6}}),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("blocked by the operator's policy"), "{body}");
    let approvals = format!("{}/api/tools/approvals", app.url);
    let res = support::http_client()
        .put(&approvals)
        .json(&json!({"always": ["demo__clock_now"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    drop(app);
    // The list is in the history file, so a restart keeps it.
    let app = start(&args, &[]);
    assert_eq!(
        get_json(&format!("{}/api/tools/approvals", app.url)).await,
        json!({"always": ["demo__clock_now"]})
    );
}

#[test]
fn a_secret_in_an_mcp_servers_url_query_never_reaches_the_log() {
    const CANARY: &str = "canary-query-token-5e1d";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lmchatkit.toml");
    // Nothing listens there: connecting fails, and both rmcp and the hub log why.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(
        &path,
        format!(
            "log = \"debug\"\n[[mcp.servers]]\nname = \"leaky\"\n\
             url = \"http://127.0.0.1:{port}/mcp?token={CANARY}\"\n"
        ),
    )
    .unwrap();
    let mut app = support::start_logged(&["--config", path.to_str().unwrap()], &[]);
    std::thread::sleep(std::time::Duration::from_secs(2));
    let _ = app.child.kill();
    let mut logs = String::new();
    std::io::Read::read_to_string(&mut app.stderr.take().unwrap(), &mut logs).unwrap();
    assert!(
        logs.contains("leaky"),
        "the failed connect was not logged: {logs}"
    );
    assert!(
        logs.contains(&format!("127.0.0.1:{port}/mcp")),
        "the URL itself stays in the log: {logs}"
    );
    let leaked: Vec<&str> = logs.lines().filter(|l| l.contains(CANARY)).collect();
    assert!(leaked.is_empty(), "log lines with the token: {leaked:#?}");
}

#[test]
fn an_unreachable_redis_exits_2_without_showing_its_password() {
    // Port 1 on loopback: nothing listens there.
    let out = command(
        &[
            "--redis",
            "redis://:s3cret-pass@127.0.0.1:1/0",
            "--db",
            "memory:",
        ],
        &[],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot connect to Redis at redis://127.0.0.1:1/0"),
        "{err}"
    );
    assert!(!err.contains("s3cret-pass"), "{err}");
}

#[test]
fn an_unreachable_postgres_engine_exits_2_without_showing_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("k.key");
    let config = dir.path().join("lmchatkit.toml");
    std::fs::write(
        &config,
        format!("[user_mcp]\nkey_file = {:?}\n", key.display().to_string()),
    )
    .unwrap();
    // Port 1 on loopback: nothing listens there.
    let out = command(
        &[
            "--engine",
            "postgres",
            "--db",
            "postgres://app:s3cret-pass@127.0.0.1:1/chat",
            "--config",
            config.to_str().unwrap(),
        ],
        &[],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("PostgreSQL"), "{err}");
    assert!(!err.contains("s3cret-pass"), "{err}");
}

#[test]
fn the_postgres_engine_without_a_postgres_db_is_refused_with_exit_2() {
    let out = command(&["--engine", "postgres", "--db", "memory:"], &[])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("engine = postgres needs a PostgreSQL db"),
        "{err}"
    );
}
