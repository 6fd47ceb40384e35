//! The benchmark's mock OpenAI-compatible upstream: `POST /v1/chat/completions` streams
//! `chat.completion.chunk`s shaped by the [`Workload`] in the last user message (first-token
//! delay, token count, interval, chunk size), then a finish chunk, a usage chunk and `[DONE]`;
//! a message containing [`MARKDOWN_48K`] gets a 48 KB Markdown reply instead (the UI's timings).
//! Unlike the e2e mock it records nothing, so it costs as little as possible per request.
//! HTTP/1.1 keep-alive and HTTP/2 (prior knowledge, no stream limit) on one port.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;

use super::workload::Workload;

type Body = BoxBody<Bytes, Infallible>;

/// Serves the mock on `addr` until the process ends; returns the bound address.
pub async fn serve(addr: SocketAddr) -> std::io::Result<SocketAddr> {
    let listener = super::sys::listen(addr)?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let mut b = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                b.http2().max_concurrent_streams(None::<u32>);
                let svc = hyper::service::service_fn(handle);
                let _ = b.serve_connection(TokioIo::new(stream), svc).await;
            });
        }
    });
    Ok(addr)
}

async fn handle(req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let route = (req.method().clone(), req.uri().path().to_owned());
    Ok(match (route.0.as_str(), route.1.as_str()) {
        ("GET", "/v1/models") => full(
            StatusCode::OK,
            "application/json",
            r#"{"object":"list","data":[{"id":"mock-small","object":"model","owned_by":"mock"}]}"#,
        ),
        ("POST", "/v1/chat/completions") => {
            let body = req.into_body().collect().await.map(|c| c.to_bytes());
            let body: Value = body
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or(Value::Null);
            let text = last_user_text(&body);
            if text.contains(MARKDOWN_48K) {
                let parts = markdown_48k();
                let w = Workload {
                    tokens: parts.len() as u32,
                    first_us: 0,
                    interval_us: 0,
                    chunk: 8,
                };
                stream(
                    reply_frames(parts.iter().map(|p| json_string(p)), w.tokens),
                    w,
                )
            } else {
                let w = Workload::parse(&text, Workload::default());
                stream(frames(&w), w)
            }
        }
        _ => full(
            StatusCode::NOT_FOUND,
            "application/json",
            r#"{"error":{"message":"not found"}}"#,
        ),
    })
}

fn full(status: StatusCode, ct: &'static str, body: &'static str) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", ct)
        .body(Full::new(Bytes::from_static(body.as_bytes())).boxed())
        .unwrap()
}

fn last_user_text(body: &Value) -> String {
    let msgs = body["messages"].as_array();
    let last = msgs.and_then(|m| m.iter().rev().find(|m| m["role"] == "user"));
    match last.map(|m| &m["content"]) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

const HEAD: &str = r#"data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"mock-small","choices":[{"index":0,"delta":"#;

/// What a user message says to get [`markdown_48k`] instead of a [`Workload`]'s reply (the
/// UI's timings, [`super::ui_timing`]).
pub const MARKDOWN_48K: &str = "bench-48k";

/// A 48 KB Markdown reply (headings, paragraphs, lists, code, tables) in 8-character deltas,
/// the reply the UI benchmark streams (the same text as the browser tests' mock sends).
pub fn markdown_48k() -> Vec<String> {
    crate::mock_upstream::bench_reply_deltas()
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// The SSE frames of one reply: a role chunk, `tokens` content chunks, finish, usage, `[DONE]`.
pub fn frames(w: &Workload) -> Vec<Bytes> {
    // The workload's texts are plain ASCII without quotes or backslashes: quoting is escaping.
    reply_frames(
        (0..w.tokens).map(|i| format!("\"{}\"", w.token_text(i))),
        w.tokens,
    )
}

/// The frames of a reply whose deltas are `contents` (JSON string literals), `tokens` of them.
fn reply_frames(contents: impl Iterator<Item = String>, tokens: u32) -> Vec<Bytes> {
    let mut out = Vec::with_capacity(tokens as usize + 4);
    out.push(Bytes::from(format!(
        "{HEAD}{{\"role\":\"assistant\",\"content\":\"\"}},\"finish_reason\":null}}]}}\n\n"
    )));
    for content in contents {
        out.push(Bytes::from(format!(
            "{HEAD}{{\"content\":{content}}},\"finish_reason\":null}}]}}\n\n"
        )));
    }
    out.push(Bytes::from(format!(
        "{HEAD}{{}},\"finish_reason\":\"stop\"}}]}}\n\n"
    )));
    out.push(Bytes::from(format!(
        "data: {{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"mock-small\",\"choices\":[],\"usage\":{{\"prompt_tokens\":8,\"completion_tokens\":{},\"total_tokens\":{}}}}}\n\n",
        tokens,
        tokens + 8
    )));
    out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    out
}

fn stream(frames: Vec<Bytes>, w: Workload) -> Response<Body> {
    let s = futures_util::stream::unfold(
        (frames.into_iter().enumerate(), w),
        |(mut it, w)| async move {
            let (i, f) = it.next()?;
            // The role chunk goes out at once; the first token after the first-token delay,
            // later tokens after the interval; finish/usage/[DONE] follow the last token.
            if i == 1 && w.first_us > 0 {
                tokio::time::sleep(w.first_delay()).await;
            } else if i > 1 && i <= w.tokens as usize && w.interval_us > 0 {
                tokio::time::sleep(w.interval()).await;
            }
            Some((Ok::<_, Infallible>(Frame::data(f)), (it, w)))
        },
    );
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(BodyExt::boxed(StreamBody::new(s)))
        .unwrap()
}
