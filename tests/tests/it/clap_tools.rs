//! A clap CLI as chat tools, against the library's built example `clap_tools` (the `notes` CLI
//! of `lmchatkit_tests::notes`; `cargo test --workspace` builds it before the tests): the
//! subprocess mode (with
//! its timeout, cancellation and output cap), the MCP-server mode listed and called by the
//! project's own `McpHub` over stdio, and chat turns where the mock model calls a CLI tool
//! served beside the demo MCP server.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::StreamExt;
use lmchatkit::Scope;
use lmchatkit::mcp::{McpHub, McpServerConfig};
use lmchatkit_tests::mock_upstream::MockUpstream;
use lmchatkit_tests::notes;
use serde_json::{Value, json};

fn example_path() -> PathBuf {
    // target/<profile>/deps/<this test> → target/<profile>/examples/clap_tools
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join("clap_tools");
    assert!(path.exists(), "{} is not built", path.display());
    path
}

fn notes_file(dir: &tempfile::TempDir, lines: &[&str]) -> PathBuf {
    let f = dir.path().join("notes.txt");
    if !lines.is_empty() {
        std::fs::write(&f, lines.join("\n") + "\n").unwrap();
    }
    f
}

#[tokio::test]
async fn the_example_binary_runs_as_subprocess_tools() {
    let dir = tempfile::tempdir().unwrap();
    let file = notes_file(&dir, &[]);
    let tools = notes::subprocess(example_path()).with_env("NOTES_FILE", file.to_str().unwrap());
    let names: Vec<String> = tools.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["cli__add", "cli__list", "cli__remove", "cli__wait"]);

    let r = tools
        .call(
            "cli__add",
            json!({"text": "buy milk", "tag": ["home", "-x"]}),
        )
        .await;
    assert!(!r.is_error, "{}", r.content);
    assert_eq!(r.content, "added note 1\n");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "buy milk #home #-x\n"
    );

    let r = tools.call("cli__list", json!({"format": "json"})).await;
    assert!(!r.is_error, "{}", r.content);
    let listed: Value = serde_json::from_str(&r.content).unwrap();
    assert_eq!(listed, json!({"notes": ["buy milk #home #-x"], "total": 1}));

    // The command's own failure: its exit status and stderr.
    let r = tools.call("cli__remove", json!({"number": 9})).await;
    assert!(r.is_error);
    assert_eq!(
        r.content,
        "`notes remove` failed with exit status 1\n[stderr]\nthere is no note 9 (there are 1)\n"
    );

    // A bad input never starts the binary: clap's message.
    let r = tools.call("cli__list", json!({"limit": -1})).await;
    assert!(r.is_error);
    assert!(
        r.content.starts_with(
            "invalid input for `notes list`: error: invalid value '-1' for '--limit <LIMIT>'"
        ),
        "{}",
        r.content
    );
}

/// True while `pid` is a live (not zombie) process.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

async fn wait_for_pid(file: &Path) -> u32 {
    for _ in 0..500 {
        if let Ok(s) = std::fs::read_to_string(file)
            && let Ok(pid) = s.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the command never started");
}

async fn assert_dies(pid: u32) {
    for _ in 0..500 {
        if !alive(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("process {pid} still runs");
}

#[tokio::test]
async fn a_slow_subprocess_is_killed_when_it_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let tools = notes::subprocess(example_path()).with_timeout(Duration::from_millis(1500));
    let r = tools
        .call(
            "cli__wait",
            json!({"ms": 60000, "pid_file": pid_file.to_str().unwrap()}),
        )
        .await;
    assert!(r.is_error);
    assert_eq!(r.content, "`notes wait` timed out after 1500 ms");
    assert_dies(wait_for_pid(&pid_file).await).await;
}

#[tokio::test]
async fn dropping_a_subprocess_call_kills_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let tools = notes::subprocess(example_path());
    let args = json!({"ms": 60000, "pid_file": pid_file.to_str().unwrap()});
    let call = tokio::spawn(async move { tools.call("cli__wait", args).await });
    let pid = wait_for_pid(&pid_file).await;
    assert!(alive(pid));
    call.abort();
    let _ = call.await;
    assert_dies(pid).await;
}

#[tokio::test]
async fn subprocess_output_is_cut_to_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let long = "n".repeat(300);
    let file = notes_file(&dir, &[&long, &long]);
    let tools = notes::subprocess(example_path())
        .with_env("NOTES_FILE", file.to_str().unwrap())
        .with_output_cap(100);
    let r = tools.call("cli__list", json!({})).await;
    assert!(!r.is_error, "{}", r.content);
    // "1. " + 300 + "\n2. " + 300 + "\n" = 608 bytes, 100 kept.
    assert_eq!(
        r.content,
        format!("1. {}\n[output cut: 508 more bytes]", "n".repeat(97))
    );
}

#[tokio::test]
async fn the_mcp_server_mode_is_listed_and_called_by_the_hub_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let file = notes_file(&dir, &["first"]);
    let server = McpServerConfig::stdio("notes", example_path().to_str().unwrap(), ["mcp"])
        .with_env("NOTES_FILE", file.to_str().unwrap());
    let hub = McpHub::new(vec![server]);
    let scope = Scope::default();
    let tools = hub.list_tools(&scope).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["notes__add", "notes__list", "notes__remove", "notes__wait"]
    );
    let list = &tools[1];
    assert_eq!(list.annotations, Some(json!({"readOnlyHint": true})));
    assert_eq!(
        list.description.as_deref(),
        Some("List notes, oldest first")
    );
    assert_eq!(
        list.input_schema,
        Some(json!({
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "default": 10, "description": "Show at most this many"},
                "format": {"type": "string", "enum": ["text", "json"], "default": "text", "description": "Output format"},
            },
            "additionalProperties": false,
        }))
    );
    assert_eq!(
        tools[0].annotations,
        Some(json!({"readOnlyHint": false, "destructiveHint": true}))
    );

    let r = hub
        .call_tool(&scope, "notes__add", json!({"text": "second"}))
        .await
        .unwrap();
    assert!(!r.is_error, "{}", r.content);
    let r = hub
        .call_tool(&scope, "notes__list", json!({"format": "json"}))
        .await
        .unwrap();
    assert_eq!(
        r.structured_content,
        Some(json!({"notes": ["first", "second"], "total": 2}))
    );
    let r = hub
        .call_tool(&scope, "notes__remove", json!({"number": "two"}))
        .await
        .unwrap();
    assert!(r.is_error);
    assert!(
        r.content.contains("invalid value 'two' for '<NUMBER>'"),
        "{}",
        r.content
    );
    hub.shutdown().await;
}

struct Example(Child, String);

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The example's chat (`serve-chat`) over the mock upstream, notes in `file`.
fn serve_chat(mock: &MockUpstream, file: &Path) -> Example {
    let mut child = Command::new(example_path())
        .arg("serve-chat")
        .env("ADDR", "127.0.0.1:0")
        .env("RUST_LOG", "off")
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("NOTES_FILE", file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("printed {line:?}"))
        .to_owned();
    Example(child, url)
}

/// Sends one AI SDK turn with `text` and reads its whole stream.
async fn turn(chat: &Example, text: &str) -> String {
    let body = json!({"id": "t1", "trigger": "submit-message", "model": "mock-small", "messages": [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]},
    ]});
    let res = reqwest::Client::new()
        .post(format!("{}/api/aisdk/chat", chat.1))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let mut stream = res.bytes_stream();
    let mut seen = String::new();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("the turn ends within 20 s")
    {
        seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    seen
}

#[tokio::test]
async fn a_chat_turn_calls_a_read_only_cli_tool_and_its_output_reaches_the_next_model_call() {
    let mock = MockUpstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = notes_file(&dir, &["buy milk", "call mum"]);
    let chat = serve_chat(&mock, &file);

    let stream = turn(&chat, "call tool cli__list {\"limit\": 1}").await;
    assert!(stream.contains("Tool said: 1. buy milk"), "{stream}");

    let requests = mock.observed.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "a call, then the answer");
    // The CLI's tools are offered beside the demo MCP server's.
    let offered: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for name in [
        "cli__add",
        "cli__list",
        "cli__remove",
        "cli__wait",
        "demo__roll_dice",
    ] {
        assert!(offered.contains(&name), "{name} not in {offered:?}");
    }
    let list = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "cli__list")
        .unwrap();
    assert_eq!(list["function"]["description"], "List notes, oldest first");
    assert_eq!(
        list["function"]["parameters"]["properties"]["limit"]["type"],
        "integer"
    );
    // The tool's output is what the model reads next.
    let messages = requests[1]["messages"].as_array().unwrap();
    let tool_msg = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool_msg["content"], "1. buy milk");
}

#[tokio::test]
async fn a_mutating_cli_tool_waits_for_the_users_approval() {
    let mock = MockUpstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = notes_file(&dir, &["keep"]);
    let chat = serve_chat(&mock, &file);

    let stream = turn(&chat, "call tool cli__remove {\"number\": 1}").await;
    assert!(stream.contains("tool-approval-request"), "{stream}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep\n");
    assert_eq!(mock.observed.requests.lock().unwrap().len(), 1);
}
