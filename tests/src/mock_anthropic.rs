//! A mock of Anthropic's Messages API on loopback: `POST /v1/messages` records the request
//! (body and `x-api-key`) and streams a short text reply in Anthropic's SSE events
//! (`message_start`, a text block, `message_delta` with `end_turn` and usage, `message_stop`);
//! `GET /v1/models` lists `claude-think` and `claude-plain`. When the last message is the
//! user's and contains `use the tool`, the reply is a `get_weather` tool-use block instead,
//! its input split over three `input_json_delta` events (as Anthropic streams it), ending in
//! `tool_use`. The server's own tests
//! (`server/src/llm/anthropic/tests_http.rs`) cover the wire in depth; this one lets the
//! end-to-end tests see what a turn sends.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// The reply's text.
pub const REPLY: &str = "Hello from Claude.";

/// What the mock saw.
#[derive(Default, Debug)]
pub struct Observed {
    /// Bodies of `POST /v1/messages`, in order.
    pub requests: Mutex<Vec<Value>>,
    /// The `x-api-key` of each request (messages and models), in order.
    pub keys: Mutex<Vec<Option<String>>>,
}

/// A running mock; stopped when dropped.
pub struct MockAnthropic {
    pub addr: SocketAddr,
    pub observed: Arc<Observed>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockAnthropic {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockAnthropic {
    /// Starts the mock on 127.0.0.1 with a random port.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind mock anthropic");
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

    /// The base URL as `AnthropicConfig::new` takes it (`http://127.0.0.1:N/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

type Body = BoxBody<Bytes, Infallible>;

fn reply(status: StatusCode, content_type: &str, body: String) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)).boxed())
        .unwrap()
}

fn event(v: Value) -> String {
    format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap_or(""))
}

/// The id of the mock's tool-use block.
pub const TOOL_USE_ID: &str = "toolu_mock_1";

/// A `get_weather` tool-use reply whose input `{"city": "Oslo"}` streams in three pieces.
fn tool_use(model: &Value) -> String {
    let mut sse = vec![
        event(
            json!({"type": "message_start", "message": {"id": "msg_2", "type": "message",
            "role": "assistant", "model": model, "content": [],
            "usage": {"input_tokens": 20, "output_tokens": 1}}}),
        ),
        event(json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": TOOL_USE_ID, "name": "get_weather",
                "input": {}}})),
    ];
    for piece in ["", "{\"ci", "ty\": \"Os", "lo\"}"] {
        sse.push(event(json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": piece}})));
    }
    sse.extend([
        event(json!({"type": "content_block_stop", "index": 0})),
        event(
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 9}}),
        ),
        event(json!({"type": "message_stop"})),
    ]);
    sse.concat()
}

async fn handle(req: Request<Incoming>, obs: Arc<Observed>) -> Result<Response<Body>, Infallible> {
    let key = req
        .headers()
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    obs.keys.lock().unwrap().push(key);
    let path = req.uri().path().to_owned();
    Ok(match (req.method().as_str(), path.as_str()) {
        ("GET", "/v1/models") => reply(
            StatusCode::OK,
            "application/json",
            json!({"data": [
                {"type": "model", "id": "claude-think", "display_name": "Claude Think"},
                {"type": "model", "id": "claude-plain", "display_name": "Claude Plain"}
            ], "has_more": false})
            .to_string(),
        ),
        ("POST", "/v1/messages") => {
            let body = req
                .into_body()
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let model = body["model"].clone();
            let asks_tool = body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .filter(|m| m["role"] == "user")
                .is_some_and(|m| m.to_string().contains("use the tool"));
            obs.requests.lock().unwrap().push(body);
            if asks_tool {
                return Ok(reply(StatusCode::OK, "text/event-stream", tool_use(&model)));
            }
            let sse = [
                event(
                    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                    "role": "assistant", "model": model, "content": [],
                    "usage": {"input_tokens": 12, "output_tokens": 1}}}),
                ),
                event(json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}})),
                event(json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": REPLY}})),
                event(json!({"type": "content_block_stop", "index": 0})),
                event(
                    json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 5}}),
                ),
                event(json!({"type": "message_stop"})),
            ];
            reply(StatusCode::OK, "text/event-stream", sse.concat())
        }
        _ => reply(
            StatusCode::NOT_FOUND,
            "application/json",
            json!({"type": "error", "error": {"type": "not_found_error", "message": "not found"}})
                .to_string(),
        ),
    })
}
