//! A mock OpenAI-compatible upstream on loopback: `POST /v1/chat/completions` streams real
//! `chat.completion.chunk` SSE, `GET /v1/models` lists models. What it does depends on the last
//! user message, so one server covers every test:
//!
//! | last user message contains | reply |
//! |---|---|
//! | `use the tool` (and no tool result since the last user message) | a `get_weather` tool call, fragmented over chunks |
//! | `call tool NAME {json}` (and no tool result since the last user message) | a call of tool `NAME` with those arguments (`{}` when absent), always with the id `call_mcp` (as providers that number calls per response do) |
//! | `call tool slowly NAME {json}` | the same call, its arguments streamed 6 characters a chunk, one chunk every 60 ms (a view follows them) |
//! | `call tool held NAME {json}` | as `slowly`, but after the first half of the arguments it waits at the gate ([`MockUpstream::open_gate`]) |
//! | `call tool …` after a tool result | `Tool said: ` + the last tool message's content |
//! | `think` | `reasoning_content` deltas, then text |
//! | `fail500` | HTTP 500 with a JSON error body |
//! | `cut` | two deltas, then the connection is closed mid-stream |
//! | `truncated` | two deltas, then the body just ends: no finish reason, no `[DONE]` |
//! | `stall` | one delta, then silence |
//! | `slow` | a delta every 20 ms for 30 s (for disconnect tests) |
//! | `paced` | 100 deltas `p0 ` … `p99 `, one every 20 ms (2 s: a reply to leave and resume) |
//! | `unhurried` | 200 deltas `u0 ` … `u199 `, one every 40 ms (8 s: a reply to reload a page in the middle of) |
//! | `held` | deltas `h0 ` … `h9 `, one every 40 ms, then it waits at the gate ([`MockUpstream::open_gate`]), then `h10 ` … `h19 ` and `stop`: a reply that is still streaming whenever a test acts, however loaded the machine (a test that stops it never opens the gate) |
//! | `xss-payload` | Markdown/HTML with script, `onerror`, `javascript:` and `data:` payloads (UI tests) |
//! | `inline-think` | `<think>…</think>` inline in the content, tags split across chunks |
//! | `bench-48k` | a 48 KB Markdown reply (paragraphs, lists, code, tables) in 8-byte deltas (UI benchmark) |
//! | `mirror-back` | `Mirror: ` + the last user text (parts joined), to see what reached the model |
//! | otherwise | `tokens` deltas (default 5) then `stop`, with a usage chunk |
//!
//! It counts streams whose body was dropped before finishing — how a test sees that the client
//! went away.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// Shared observations of the mock.
#[derive(Default, Debug)]
pub struct Observed {
    /// Request bodies of chat completions, in order.
    pub requests: Mutex<Vec<Value>>,
    /// Authorization headers seen.
    pub auth: Mutex<Vec<Option<String>>>,
    /// Streams whose body was dropped before it finished (the client disconnected).
    pub dropped_early: AtomicUsize,
    /// When each of those was dropped (how a test measures how soon a stop reached the model).
    pub dropped_at: Mutex<Vec<Instant>>,
    /// Streams that finished.
    pub completed: AtomicUsize,
    /// Whether the gate is open: the `held` replies wait for it.
    pub gate_open: AtomicBool,
}

/// A running mock upstream.
pub struct MockUpstream {
    pub addr: SocketAddr,
    pub observed: Arc<Observed>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockUpstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockUpstream {
    /// Starts the mock on 127.0.0.1 with a random port.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind mock upstream");
        let addr = listener.local_addr().unwrap();
        let observed = Arc::new(Observed::default());
        let obs = observed.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let obs = obs.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| handle(req, obs.clone()));
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Self {
            addr,
            observed,
            task,
        }
    }

    /// Opens the gate: every `held` reply, waiting or still to come, goes on.
    pub fn open_gate(&self) {
        self.observed.gate_open.store(true, Ordering::SeqCst);
    }

    /// The base URL as OpenAI SDKs take it (`http://127.0.0.1:N/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

type Body = BoxBody<Bytes, std::io::Error>;

async fn handle(req: Request<Incoming>, obs: Arc<Observed>) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_owned();
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    Ok(match (req.method().as_str(), path.as_str()) {
        ("GET", "/v1/models") => json_response(
            StatusCode::OK,
            json!({"object": "list", "data": [{"id": "mock-small", "object": "model", "owned_by": "mock"}, {"id": "mock-large", "object": "model", "owned_by": "mock"}]}),
        ),
        ("POST", "/v1/chat/completions") => {
            let body = req
                .into_body()
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            obs.auth.lock().unwrap().push(auth);
            obs.requests.lock().unwrap().push(body.clone());
            completion(&body, obs)
        }
        _ => json_response(
            StatusCode::NOT_FOUND,
            json!({"error": {"message": "not found"}}),
        ),
    })
}

fn json_response(status: StatusCode, v: Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(
            Full::new(Bytes::from(v.to_string()))
                .map_err(|never| match never {})
                .boxed(),
        )
        .unwrap()
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let c = json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1, "model": "mock-small",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {c}\n\n")
}

fn last_user_text(body: &Value) -> String {
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    let last_user = msgs.iter().rev().find(|m| m["role"] == "user");
    match last_user.map(|m| &m["content"]) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// Payloads a model reply may carry that must never execute in the UI.
pub const XSS_REPLY: &str = "Payloads: <script>window.__xss = 1</script> <img src=x onerror=\"window.__xss = 2\"> \
<svg onload=\"window.__xss = 3\"></svg> [click](javascript:window.__xss=4) \
[data](data:text/html,<script>window.__xss=5</script>) <a href=\"javascript:window.__xss=6\">raw</a> \
<iframe src=\"javascript:window.__xss=7\"></iframe> ![img](x\" onerror=\"window.__xss=8) end-of-payloads";

/// A Markdown reply of about `size` bytes mixing paragraphs, lists, code blocks and tables.
pub fn bench_reply(size: usize) -> String {
    let mut out = String::new();
    let mut i = 0;
    while out.len() < size {
        i += 1;
        out.push_str(&format!("## Section {i}\n\nThis is paragraph {i} with **bold**, *italic*, `code` and a [link](https://example.com/{i}). It goes on for a while so that the paragraph wraps over a few lines in the transcript.\n\n"));
        out.push_str(&format!(
            "- item one of {i}\n- item two with `x = {i}`\n  - nested item\n\n"
        ));
        out.push_str(&format!(
            "```rust\nfn f{i}(x: u32) -> u32 {{\n    x * {i}\n}}\n```\n\n"
        ));
        out.push_str(&format!("| a | b |\n|---|---|\n| {i} | {} |\n\n", i * 2));
    }
    out
}

/// [`bench_reply`] of 48 KB in 8-character deltas: the UI benchmark's reply (here and in the
/// bench's own mock, `crate::bench::mock`).
pub fn bench_reply_deltas() -> Vec<String> {
    let chars: Vec<char> = bench_reply(48 * 1024).chars().collect();
    chars.chunks(8).map(|c| c.iter().collect()).collect()
}

/// The replies of the UI-test triggers, as content deltas.
fn ui_trigger(text: &str) -> Option<Vec<String>> {
    if text.contains("xss-payload") {
        let chars: Vec<char> = XSS_REPLY.chars().collect();
        return Some(chars.chunks(7).map(|c| c.iter().collect()).collect());
    }
    if text.contains("inline-think") {
        return Some(
            [
                "<thi",
                "nk>Pondering",
                " deeply</th",
                "ink>The answer",
                " is 42.",
            ]
            .map(String::from)
            .to_vec(),
        );
    }
    if text.contains("bench-48k") {
        return Some(bench_reply_deltas());
    }
    if text.contains("mirror-back") {
        let echo: String = text.chars().take(400).collect();
        return Some(vec!["Mirror: ".into(), echo]);
    }
    None
}

enum Step {
    Send(String),
    Wait(Duration),
    /// Waits until the gate is open.
    Gate,
    /// Ends the body with an error: hyper resets the connection.
    Cut,
    /// Ends the body cleanly, without a finish reason or `[DONE]` (a proxy that gave up).
    Hangup,
}

fn completion(body: &Value, obs: Arc<Observed>) -> Response<Body> {
    let text = last_user_text(body);
    // A tool result answers this turn only when it came after the last user message.
    let has_tool_result = body["messages"].as_array().is_some_and(|m| {
        m.iter()
            .rev()
            .take_while(|m| m["role"] != "user")
            .any(|m| m["role"] == "tool")
    });
    let usage = "data: {\"id\":\"chatcmpl-mock\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":5,\"total_tokens\":16}}\n\n";
    let mut steps = Vec::new();
    if let Some(parts) = ui_trigger(&text) {
        for p in parts {
            steps.push(Step::Send(chunk(json!({"content": p}), None)));
        }
        steps.push(Step::Send(chunk(json!({}), Some("stop"))));
    } else if text.contains("fail500") {
        return json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": {"message": "mock exploded", "type": "server_error"}}),
        );
    } else if let Some(rest) = text.split("call tool ").nth(1) {
        let rest = rest.trim();
        let (slowly, held, rest) = if let Some(rest) = rest.strip_prefix("slowly ") {
            (true, false, rest.trim())
        } else if let Some(rest) = rest.strip_prefix("held ") {
            (true, true, rest.trim())
        } else {
            (false, false, rest)
        };
        let (name, args) = rest.split_once(' ').unwrap_or((rest, "{}"));
        if has_tool_result {
            let last_tool = body["messages"]
                .as_array()
                .and_then(|m| m.iter().rev().find(|m| m["role"] == "tool"))
                .map(|m| m["content"].as_str().unwrap_or("").to_owned())
                .unwrap_or_default();
            steps.push(Step::Send(chunk(
                json!({"content": format!("Tool said: {last_tool}")}),
                None,
            )));
            steps.push(Step::Send(chunk(json!({}), Some("stop"))));
        } else if slowly {
            steps.push(Step::Send(chunk(json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_mcp", "type": "function", "function": {"name": name, "arguments": ""}}]}), None)));
            let chars: Vec<char> = args.trim().chars().collect();
            let half = chars.len().div_ceil(12);
            for (i, piece) in chars.chunks(6).enumerate() {
                if held && i == half {
                    steps.push(Step::Gate);
                }
                let piece: String = piece.iter().collect();
                steps.push(Step::Wait(Duration::from_millis(60)));
                steps.push(Step::Send(chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
                    None,
                )));
            }
            steps.push(Step::Send(chunk(json!({}), Some("tool_calls"))));
        } else {
            steps.push(Step::Send(chunk(json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_mcp", "type": "function", "function": {"name": name, "arguments": args.trim()}}]}), None)));
            steps.push(Step::Send(chunk(json!({}), Some("tool_calls"))));
        }
    } else if text.contains("use the tool") && !has_tool_result {
        steps.push(Step::Send(chunk(json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}), None)));
        for frag in ["{\"ci", "ty\": \"Os", "lo\"}"] {
            steps.push(Step::Send(chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": frag}}]}),
                None,
            )));
        }
        steps.push(Step::Send(chunk(json!({}), Some("tool_calls"))));
    } else if text.contains("think") {
        for r in ["Let me ", "think."] {
            steps.push(Step::Send(chunk(json!({"reasoning_content": r}), None)));
        }
        steps.push(Step::Send(chunk(
            json!({"content": "Thought it through."}),
            None,
        )));
        steps.push(Step::Send(chunk(json!({}), Some("stop"))));
    } else if text.contains("cut") {
        steps.push(Step::Send(chunk(json!({"content": "partial "}), None)));
        steps.push(Step::Send(chunk(json!({"content": "reply"}), None)));
        steps.push(Step::Wait(Duration::from_millis(20)));
        steps.push(Step::Cut);
    } else if text.contains("truncated") {
        steps.push(Step::Send(chunk(json!({"content": "partial "}), None)));
        steps.push(Step::Send(chunk(json!({"content": "reply"}), None)));
        steps.push(Step::Hangup);
    } else if text.contains("stall") {
        steps.push(Step::Send(chunk(json!({"content": "waiting"}), None)));
        steps.push(Step::Wait(Duration::from_secs(3600)));
    } else if text.contains("slow") {
        paced(&mut steps, "t", 1500);
    } else if text.contains("paced") {
        paced(&mut steps, "p", 100);
    } else if text.contains("unhurried") {
        paced_every(&mut steps, "u", 200, Duration::from_millis(40));
    } else if text.contains("held") {
        paced_every(&mut steps, "h", 20, Duration::from_millis(40));
        // After the first ten deltas, each a send and a wait: `h0 ` … `h9 `.
        steps.insert(2 * 10, Step::Gate);
    } else {
        let reply = if has_tool_result {
            "The weather in Oslo is sunny."
        } else {
            "Hello from the mock model."
        };
        for w in reply.split_inclusive(' ') {
            steps.push(Step::Send(chunk(json!({"content": w}), None)));
        }
        steps.push(Step::Send(chunk(json!({}), Some("stop"))));
        steps.push(Step::Send(usage.to_owned()));
    }
    if !matches!(steps.last(), Some(Step::Cut | Step::Hangup | Step::Wait(_))) {
        steps.push(Step::Send("data: [DONE]\n\n".into()));
    }
    let guard = DropGuard {
        obs,
        finished: false,
    };
    let stream = futures_util::stream::unfold(
        (steps.into_iter(), guard),
        |(mut it, mut guard)| async move {
            loop {
                match it.next() {
                    Some(Step::Send(s)) => {
                        return Some((Ok(Frame::data(Bytes::from(s))), (it, guard)));
                    }
                    Some(Step::Wait(d)) => tokio::time::sleep(d).await,
                    Some(Step::Gate) => {
                        while !guard.obs.gate_open.load(Ordering::SeqCst) {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    }
                    Some(Step::Cut) => {
                        guard.finished = true;
                        let cut = std::io::Error::new(
                            std::io::ErrorKind::ConnectionReset,
                            "mock cut the stream",
                        );
                        return Some((Err(cut), (it, guard)));
                    }
                    Some(Step::Hangup) | None => {
                        guard.finished = true;
                        guard.obs.completed.fetch_add(1, Ordering::SeqCst);
                        return None;
                    }
                }
            }
        },
    );
    // A body error makes hyper abort the connection: the client sees a cut stream.
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(BodyExt::boxed(StreamBody::new(stream)))
        .unwrap()
}

/// `n` deltas `{prefix}0 ` … one every 20 ms, then `stop`.
fn paced(steps: &mut Vec<Step>, prefix: &str, n: usize) {
    paced_every(steps, prefix, n, Duration::from_millis(20));
}

/// `n` deltas `{prefix}0 ` … one every `every`, then `stop`.
fn paced_every(steps: &mut Vec<Step>, prefix: &str, n: usize, every: Duration) {
    for i in 0..n {
        steps.push(Step::Send(chunk(
            json!({"content": format!("{prefix}{i} ")}),
            None,
        )));
        steps.push(Step::Wait(every));
    }
    steps.push(Step::Send(chunk(json!({}), Some("stop"))));
}

struct DropGuard {
    obs: Arc<Observed>,
    finished: bool,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.finished {
            self.obs.dropped_early.fetch_add(1, Ordering::SeqCst);
            if let Ok(mut at) = self.obs.dropped_at.lock() {
                at.push(Instant::now());
            }
        }
    }
}
