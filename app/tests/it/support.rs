//! Starting the built `lmchatkit` binary for a test, and small HTTP helpers.

#![allow(dead_code)] // each test file uses part of it

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// A running app (killed when dropped) and the URL it printed.
pub struct App {
    pub child: Child,
    pub url: String,
    pub stderr: Option<ChildStderr>,
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The binary with a free port (unless `args` has `--listen`), an in-memory history (unless
/// `args` has `--db`) and none of the environment's `LMCHATKIT_*` / `OPENAI_*` settings (so the
/// developer's shell cannot change a test).
pub fn command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lmchatkit"));
    if !args.contains(&"--listen") {
        cmd.args(["--listen", "127.0.0.1:0"]);
    }
    if !args.contains(&"--db") {
        cmd.args(["--db", "memory:"]);
    }
    cmd.args(args);
    for (key, _) in std::env::vars() {
        if key.starts_with("LMCHATKIT_") || key.starts_with("OPENAI_") {
            cmd.env_remove(key);
        }
    }
    cmd.envs(env.iter().copied());
    cmd
}

/// Starts the app and waits for the URL it prints.
pub fn start(args: &[&str], env: &[(&str, &str)]) -> App {
    spawn(command(args, env), false)
}

/// Like [`start`], keeping stderr (the logs) readable.
pub fn start_logged(args: &[&str], env: &[(&str, &str)]) -> App {
    spawn(command(args, env), true)
}

/// Starts `cmd` (made by [`command`]) and waits for the URL it prints.
pub fn spawn(mut cmd: Command, keep_stderr: bool) -> App {
    let stderr = if keep_stderr {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    let mut child = cmd.stdout(Stdio::piped()).stderr(stderr).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split("open ")
        .nth(1)
        .unwrap_or_else(|| panic!("the app prints the URL to open first, got {line:?}"))
        .trim()
        .to_owned();
    let stderr = child.stderr.take();
    App { child, url, stderr }
}

pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

pub async fn get(url: &str) -> (u16, String) {
    let res = http_client().get(url).send().await.unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

pub async fn get_json(url: &str) -> Value {
    let (status, body) = get(url).await;
    assert_eq!(status, 200, "{url}: {body}");
    serde_json::from_str(&body).unwrap()
}

pub async fn post(url: &str, body: Value) -> (u16, String) {
    let res = http_client().post(url).json(&body).send().await.unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

/// Reads a request's head (request line and headers) byte by byte, lower-cased.
fn read_head(conn: &mut std::net::TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).is_ok_and(|n| n == 1) {
        head.push(byte[0]);
    }
    String::from_utf8_lossy(&head).to_lowercase()
}

/// A fake upstream on loopback: answers every request with an OpenAI `/models` list and
/// keeps each request's head (request line and headers, lower-cased).
pub struct FakeUpstream {
    pub base_url: String,
    pub heads: Arc<Mutex<Vec<String>>>,
}

pub fn fake_upstream() -> FakeUpstream {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            seen.lock().unwrap().push(read_head(&mut conn));
            let body = r#"{"object":"list","data":[{"id":"upstream-model","object":"model"}]}"#;
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    FakeUpstream { base_url, heads }
}

/// One request a [`ChatUpstream`] received: its head (lower-cased) and its JSON body.
#[derive(Debug, Clone)]
pub struct Seen {
    pub head: String,
    pub body: Value,
}

/// A fake OpenAI-compatible upstream on loopback that also chats: `GET /v1/models` lists
/// `mock-small`, `POST /v1/chat/completions` streams `Hello from the mock.` with usage.
pub struct ChatUpstream {
    pub base_url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

pub fn chat_upstream() -> ChatUpstream {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let head = read_head(&mut conn);
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|n| n.trim().parse::<usize>().ok())
                .unwrap_or(0);
            let mut body = vec![0u8; length];
            if conn.read_exact(&mut body).is_err() {
                continue;
            }
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let chat = head.starts_with("post /v1/chat/completions");
            log.lock().unwrap().push(Seen { head, body });
            let (content_type, reply) = if chat {
                let chunk = |delta: Value, finish: Value| {
                    let c = serde_json::json!({"id": "c1", "object": "chat.completion.chunk",
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                    format!("data: {c}\n\n")
                };
                let usage = serde_json::json!({"id": "c1", "object": "chat.completion.chunk", "choices": [],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14}});
                let sse = [
                    chunk(serde_json::json!({"content": "Hello from "}), Value::Null),
                    chunk(serde_json::json!({"content": "the mock."}), Value::Null),
                    chunk(serde_json::json!({}), "stop".into()),
                    format!("data: {usage}\n\n"),
                    "data: [DONE]\n\n".to_owned(),
                ];
                ("text/event-stream", sse.concat())
            } else {
                (
                    "application/json",
                    r#"{"object":"list","data":[{"id":"mock-small","object":"model"}]}"#.to_owned(),
                )
            };
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    ChatUpstream { base_url, seen }
}
