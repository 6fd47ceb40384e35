//! [`OpenAiBackend`] against a tiny HTTP server on 127.0.0.1: streamed replies, error statuses,
//! unreachable upstreams, cut and stalled streams, cancellation, and model listing. Cut
//! connections are also played on a raw socket, so the body ends exactly as a dropped
//! connection or a timed-out proxy would end it.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::{Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use lmchatkit_protocol::{Event, FinishReason, Message, Model};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::{OpenAiBackend, OpenAiConfig};
use crate::host::{CompleteRequest, Host, HostError, RequestContext};

pub(in crate::llm) type Body = BoxBody<Bytes, std::io::Error>;
pub(in crate::llm) type Chunks = mpsc::Sender<Result<Frame<Bytes>, std::io::Error>>;

/// Serves `handler` on a fresh port; returns the base URL (`http://127.0.0.1:port/v1`).
pub(in crate::llm) async fn serve<F, Fut>(handler: F) -> String
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<Body>> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let handler = handler.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req| {
                    let h = handler.clone();
                    async move { Ok::<_, Infallible>(h(req).await) }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
    format!("http://{addr}/v1")
}

pub(in crate::llm) fn full(
    status: StatusCode,
    content_type: &str,
    body: impl Into<Bytes>,
) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(body.into()).map_err(|e| match e {}).boxed())
        .unwrap()
}

/// A streamed SSE reply whose body the test feeds through the returned sender.
pub(in crate::llm) fn streamed() -> (Chunks, Response<Body>) {
    let (tx, rx) = mpsc::channel(16);
    let body = BodyExt::boxed(StreamBody::new(ReceiverStream::new(rx)));
    let resp = Response::builder()
        .header("content-type", "text/event-stream")
        .body(body)
        .unwrap();
    (tx, resp)
}

pub(in crate::llm) async fn send(tx: &Chunks, text: &str) {
    let frame = Frame::data(Bytes::copy_from_slice(text.as_bytes()));
    tx.send(Ok(frame)).await.unwrap();
}

/// An upstream that sends `first`, then nothing, holding the body open until the client goes
/// away.
pub(in crate::llm) async fn stalling(first: String) -> String {
    serve(move |_req| {
        let first = first.clone();
        async move {
            let (tx, resp) = streamed();
            tokio::spawn(async move {
                send(&tx, &first).await;
                tx.closed().await;
            });
            resp
        }
    })
    .await
}

/// An upstream that sends `chunk` every 50 ms until the client goes away.
pub(in crate::llm) async fn endless(chunk: String) -> String {
    serve(move |_req| {
        let chunk = chunk.clone();
        async move {
            let (tx, resp) = streamed();
            tokio::spawn(async move {
                while !tx.is_closed() {
                    send(&tx, &chunk).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            });
            resp
        }
    })
    .await
}

/// An upstream that sends `first`, then `keepalive` every 20 ms; the receiver hears when the
/// client has closed the connection (only then is the body dropped).
pub(in crate::llm) async fn noticing_close(
    first: String,
    keepalive: &'static [u8],
) -> (String, mpsc::UnboundedReceiver<()>) {
    let (closed_tx, closed) = mpsc::unbounded_channel();
    let base = serve(move |_req| {
        let (closed_tx, first) = (closed_tx.clone(), first.clone());
        async move {
            let (tx, resp) = streamed();
            tokio::spawn(async move {
                send(&tx, &first).await;
                while tx
                    .send(Ok(Frame::data(Bytes::from_static(keepalive))))
                    .await
                    .is_ok()
                {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                let _ = closed_tx.send(());
            });
            resp
        }
    })
    .await;
    (base, closed)
}

fn delta(text: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
    )
}

/// Serves one request on a raw socket: reads it whole, writes `head` and then `body` (each
/// write followed by a pause, so they arrive as separate reads), then closes the connection.
pub(in crate::llm) async fn serve_raw(head: &'static str, body: Vec<String>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let Ok((mut tcp, _)) = listener.accept().await else {
            return;
        };
        // Read the whole request first: closing with unread input would send a reset.
        let mut req = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let Ok(n) = tcp.read(&mut buf).await else {
                return;
            };
            req.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&req).to_ascii_lowercase();
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if req.len() >= end + 4 + length {
                    break;
                }
            }
            if n == 0 {
                return;
            }
        }
        let _ = tcp.write_all(head.as_bytes()).await;
        for part in body {
            tokio::time::sleep(Duration::from_millis(30)).await;
            let _ = tcp.write_all(part.as_bytes()).await;
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
        let _ = tcp.shutdown().await;
    });
    format!("http://{addr}/v1")
}

/// Response headers of a body that lasts until the connection closes.
pub(in crate::llm) const UNTIL_CLOSE: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
/// Response headers of a chunked body.
const CHUNKED: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

/// `text` as one chunk of a chunked body.
fn http_chunk(text: &str) -> String {
    format!("{:x}\r\n{text}\r\n", text.len())
}

fn finish(reason: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    )
}

fn chat() -> CompleteRequest {
    CompleteRequest {
        model: "test-model".into(),
        messages: vec![Message::user("hi")],
        ..Default::default()
    }
}

pub(in crate::llm) fn cx() -> RequestContext {
    RequestContext::default()
}

async fn collect(backend: &OpenAiBackend) -> Vec<Event> {
    collect_turn(backend, chat()).await
}

/// What `turn`, run on a runtime of its own, logged at INFO and above.
pub(in crate::llm) fn logs_of(turn: impl Future<Output = ()>) -> String {
    crate::presets::capture_logs(tracing::Level::INFO, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(turn);
    })
}

/// The events of one turn of `host` (within 10 s).
pub(in crate::llm) async fn collect_turn(host: &dyn Host, req: CompleteRequest) -> Vec<Event> {
    let events = host.complete(&cx(), req).collect::<Vec<_>>();
    tokio::time::timeout(Duration::from_secs(10), events)
        .await
        .expect("the stream ends")
}

/// A server that answers every request with the SSE body `sse`; the receiver gets each
/// request's head and JSON body.
pub(in crate::llm) async fn recording_json(
    sse: String,
) -> (
    String,
    mpsc::UnboundedReceiver<(http::request::Parts, Value)>,
) {
    let (seen_tx, seen) = mpsc::unbounded_channel();
    let base = serve(move |req: Request<Incoming>| {
        let (seen_tx, sse) = (seen_tx.clone(), sse.clone());
        async move {
            let (parts, body) = req.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            let _ = seen_tx.send((parts, serde_json::from_slice::<Value>(&body).unwrap()));
            full(StatusCode::OK, "text/event-stream", sse)
        }
    })
    .await;
    (base, seen)
}

#[tokio::test]
async fn streams_a_reply_and_sends_the_right_request() {
    let sse = [delta("Hel"), delta("lo"), "data: [DONE]\n\n".into()].concat();
    let (base, mut seen) = recording_json(sse).await;
    let backend = OpenAiBackend::new(
        OpenAiConfig::new(format!("{base}/"))
            .with_api_key("sk-test")
            .with_header("x-extra", "yes"),
    );
    assert_eq!(
        collect(&backend).await,
        [
            Event::delta("Hel"),
            Event::delta("lo"),
            Event::done(FinishReason::Stop, None)
        ]
    );
    let (parts, body) = seen.recv().await.unwrap();
    assert_eq!(parts.method, http::Method::POST);
    assert_eq!(parts.uri.path(), "/v1/chat/completions");
    assert_eq!(parts.headers["authorization"], "Bearer sk-test");
    assert_eq!(parts.headers["x-extra"], "yes");
    assert_eq!(parts.headers["accept"], "text/event-stream");
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
}

#[tokio::test]
async fn a_non_streamed_json_reply_is_read_too() {
    let base = serve(|_req| async {
        let reply = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "all\nat once"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}});
        full(StatusCode::OK, "application/json", format!("\n{reply:#}"))
    })
    .await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(base));
    let got = collect(&backend).await;
    assert_eq!(got[0], Event::delta("all\nat once"));
    assert!(
        matches!(got[1], Event::Done { usage: Some(_), .. }),
        "{got:?}"
    );
}

#[tokio::test]
async fn sse_mislabelled_as_json_is_still_streamed() {
    let base = serve(|_req| async {
        let sse = [delta("still"), delta(" sse"), "data: [DONE]\n\n".into()].concat();
        full(StatusCode::OK, "application/json", sse)
    })
    .await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(base));
    assert_eq!(
        collect(&backend).await,
        [
            Event::delta("still"),
            Event::delta(" sse"),
            Event::done(FinishReason::Stop, None)
        ]
    );
}

#[tokio::test]
async fn an_error_status_becomes_one_error_event_with_the_body() {
    let base = serve(|_req| async {
        full(
            StatusCode::INTERNAL_SERVER_ERROR,
            "application/json",
            "  {\"error\":\"boom\"}\n",
        )
    })
    .await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(base));
    assert_eq!(
        collect(&backend).await,
        [Event::error(
            "upstream returned 500 Internal Server Error: {\"error\":\"boom\"}"
        )]
    );
}

#[tokio::test]
async fn a_long_error_body_is_cut_at_512_bytes() {
    let base = serve(|_req| async {
        full(
            StatusCode::TOO_MANY_REQUESTS,
            "text/plain",
            "é".repeat(1000),
        )
    })
    .await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(base));
    let got = collect(&backend).await;
    let [Event::Error { error }] = got.as_slice() else {
        panic!("{got:?}")
    };
    let body = error
        .strip_prefix("upstream returned 429 Too Many Requests: ")
        .unwrap();
    assert_eq!(body, "é".repeat(256));
}

#[tokio::test]
async fn connection_refused_is_an_error_event() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let backend = OpenAiBackend::new(OpenAiConfig::new(format!("http://{addr}/v1")));
    let got = collect(&backend).await;
    let [Event::Error { error }] = got.as_slice() else {
        panic!("{got:?}")
    };
    assert!(
        error.starts_with(&format!("cannot connect to upstream http://{addr}")),
        "{error}"
    );
    assert!(error.to_lowercase().contains("refused"), "{error}");
}

/// The chat URL is parsed once, when the backend is made: one that does not parse still
/// fails each turn with an error event, as when it was parsed per request.
#[tokio::test]
async fn a_chat_url_that_does_not_parse_is_an_error_event_each_turn() {
    let backend = OpenAiBackend::new(OpenAiConfig::completions_url("not a url"));
    for _ in 0..2 {
        let got = collect(&backend).await;
        let [Event::Error { error }] = got.as_slice() else {
            panic!("{got:?}")
        };
        assert!(!error.is_empty());
    }
}

#[tokio::test]
async fn a_stream_cut_midway_keeps_prior_deltas_and_ends_with_an_error() {
    let base = serve(|_req| async {
        let (tx, resp) = streamed();
        tokio::spawn(async move {
            // Pauses let hyper flush each frame: it drops unflushed output on a body error.
            send(&tx, &delta("first")).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            send(&tx, "data: {\"choices\":[{\"index\":0,\"del").await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            let reset = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
            let _ = tx.send(Err(reset)).await;
        });
        resp
    })
    .await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(base));
    let got = collect(&backend).await;
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0], Event::delta("first"));
    let Event::Error { error } = &got[1] else {
        panic!("{got:?}")
    };
    assert!(
        error.starts_with(
            "the reply was cut off: upstream connection failed mid-stream: error reading a body"
        ),
        "{error}"
    );
}

#[tokio::test]
async fn an_upstream_that_closes_the_connection_mid_reply_ends_in_a_cut_off_error() {
    let base = serve_raw(UNTIL_CLOSE, vec![delta("Hel"), delta("lo")]).await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(base));
    assert_eq!(
        collect(&backend).await,
        [
            Event::delta("Hel"),
            Event::delta("lo"),
            Event::error(
                "the reply was cut off: the upstream ended the stream before the reply was finished"
            )
        ]
    );
}

#[tokio::test]
async fn a_chunked_body_whose_connection_closes_early_is_a_cut_off_error_naming_the_cause() {
    let body = vec![http_chunk(&delta("Hel")), http_chunk(&delta("lo"))];
    let base = serve_raw(CHUNKED, body).await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(base));
    let got = collect(&backend).await;
    assert_eq!(
        got[..2],
        [Event::delta("Hel"), Event::delta("lo")],
        "{got:?}"
    );
    let [Event::Error { error }] = &got[2..] else {
        panic!("{got:?}")
    };
    assert!(
        error.starts_with("the reply was cut off: upstream connection failed mid-stream: "),
        "{error}"
    );
}

#[tokio::test]
async fn a_closed_connection_inside_tool_call_arguments_emits_no_tool_call() {
    let call = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Os"}}]}, "finish_reason": null}]});
    let base = serve_raw(UNTIL_CLOSE, vec![format!("data: {call}\n\n")]).await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(base));
    assert_eq!(
        collect(&backend).await,
        [
            // What streamed went out; the call never does.
            Event::tool_call_delta("c1", "get_weather", "{\"city\": \"Os"),
            Event::error(
                "the reply was cut off: the upstream ended the stream before the reply was \
                 finished; its unfinished tool call get_weather was dropped"
            )
        ]
    );
}

#[tokio::test]
async fn a_finish_reason_then_a_closed_connection_is_done() {
    let base = serve_raw(UNTIL_CLOSE, vec![delta("Hi"), finish("stop")]).await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(base));
    assert_eq!(
        collect(&backend).await,
        [Event::delta("Hi"), Event::done(FinishReason::Stop, None)]
    );
}

#[tokio::test]
async fn done_without_a_finish_reason_then_a_closed_connection_is_done() {
    let base = serve_raw(UNTIL_CLOSE, vec![delta("Hi"), "data: [DONE]\n\n".into()]).await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(base));
    assert_eq!(
        collect(&backend).await,
        [Event::delta("Hi"), Event::done(FinishReason::Stop, None)]
    );
}

#[tokio::test]
async fn a_whole_json_reply_without_a_finish_reason_is_done_and_a_cut_one_is_an_error() {
    let reply =
        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "whole"}}]});
    let base = serve_raw(UNTIL_CLOSE, vec![reply.to_string()]).await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(base));
    assert_eq!(
        collect(&backend).await,
        [Event::delta("whole"), Event::done(FinishReason::Stop, None)]
    );
    let text = reply.to_string();
    let base = serve_raw(UNTIL_CLOSE, vec![text[..text.len() - 5].to_owned()]).await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(base));
    assert_eq!(
        collect(&backend).await,
        [Event::error(
            "the reply was cut off: the upstream ended the stream before the reply was finished"
        )]
    );
}

#[tokio::test]
async fn a_stalled_stream_ends_with_an_error() {
    let base = stalling(delta("before the stall")).await;
    let backend =
        OpenAiBackend::new(OpenAiConfig::new(base).with_idle_timeout(Duration::from_millis(300)));
    assert_eq!(
        collect(&backend).await,
        [
            Event::delta("before the stall"),
            Event::error("the reply was cut off: upstream stalled: no data for 0.3 s")
        ]
    );
}

/// Chunks 80 ms apart for longer than the idle timeout (200 ms): each chunk restarts the idle
/// time, so the reply ends whole.
#[tokio::test]
async fn a_slow_steady_reply_longer_than_the_idle_timeout_is_not_cut() {
    let base = serve(|_req| async {
        let (tx, resp) = streamed();
        tokio::spawn(async move {
            for _ in 0..8 {
                send(&tx, &delta("x")).await;
                tokio::time::sleep(Duration::from_millis(80)).await;
            }
            send(&tx, "data: [DONE]\n\n").await;
        });
        resp
    })
    .await;
    let backend =
        OpenAiBackend::new(OpenAiConfig::new(base).with_idle_timeout(Duration::from_millis(200)));
    let events = collect(&backend).await;
    assert_eq!(events.len(), 9, "{events:?}");
    assert!(
        events[..8].iter().all(|e| *e == Event::delta("x")),
        "{events:?}"
    );
    assert!(matches!(events[8], Event::Done { .. }), "{events:?}");
}

/// A reply that streams steadily but never ends: the idle timeout never fires, the total one
/// does, and the text so far is kept.
#[tokio::test]
async fn a_reply_that_never_ends_is_cut_off_at_the_total_timeout() {
    let base = endless(delta("more ")).await;
    let backend = OpenAiBackend::new(
        OpenAiConfig::new(base)
            .with_idle_timeout(Duration::from_secs(5))
            .with_total_timeout(Duration::from_millis(400)),
    );
    let events = collect(&backend).await;
    assert!(events.len() >= 3, "{events:?}");
    assert_eq!(events[0], Event::delta("more "));
    assert_eq!(
        events.last(),
        Some(&Event::error(
            "the reply was cut off: upstream reply exceeded the turn's total timeout"
        ))
    );
}

/// An upstream that sends one endless line: read up to the event cap, then the turn ends.
#[tokio::test]
async fn an_endless_upstream_line_ends_the_turn_at_the_event_cap() {
    let base = serve(|_req| async {
        let (tx, resp) = streamed();
        tokio::spawn(async move {
            send(&tx, &delta("before ")).await;
            let junk = "x".repeat(256 << 10);
            send(&tx, "data: ").await;
            while !tx.is_closed() {
                let frame = Frame::data(Bytes::from(junk.clone()));
                if tx.send(Ok(frame)).await.is_err() {
                    break;
                }
            }
        });
        resp
    })
    .await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(base));
    let events = collect(&backend).await;
    assert_eq!(events[0], Event::delta("before "));
    match events.last() {
        Some(Event::Error { error }) => assert!(error.contains("larger than"), "{error}"),
        other => panic!("ends in an error, not {other:?}"),
    }
}

#[tokio::test]
async fn dropping_the_stream_closes_the_upstream_connection() {
    let (base, mut closed) = noticing_close(delta("tick"), b": ping\n\n").await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(base));
    let mut events = backend.complete(&cx(), chat());
    assert_eq!(events.next().await, Some(Event::delta("tick")));
    drop(events);
    tokio::time::timeout(Duration::from_secs(10), closed.recv())
        .await
        .expect("the server sees the connection close")
        .unwrap();
}

#[tokio::test]
async fn models_are_listed_from_the_models_endpoint() {
    let base = serve(|req: Request<Incoming>| async move {
        let authorized = req.headers().get("authorization").map(|v| v.as_bytes())
            == Some(b"Bearer sk-m".as_slice());
        match (req.uri().path(), authorized) {
            ("/v1/models", true) => full(
                StatusCode::OK,
                "application/json",
                json!({"object": "list", "data": [
                    {"id": "gpt-4o", "object": "model", "owned_by": "openai"},
                    {"id": "a-local", "object": "model", "owned_by": ""}
                ]})
                .to_string(),
            ),
            _ => full(StatusCode::UNAUTHORIZED, "text/plain", "no key"),
        }
    })
    .await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(&base).with_api_key("sk-m"));
    let models = backend.models(&cx()).await.unwrap();
    let mut gpt = Model::new("gpt-4o");
    gpt.provider = Some("openai".into());
    assert_eq!(models, [Model::new("a-local"), gpt]);

    let unauthorized = OpenAiBackend::new(OpenAiConfig::new(&base));
    let Err(HostError::Upstream(msg)) = unauthorized.models(&cx()).await else {
        panic!("expected an upstream error")
    };
    assert_eq!(
        msg,
        "cannot list models: upstream returned 401 Unauthorized: no key"
    );
}

#[tokio::test]
async fn the_model_list_is_read_once_per_ttl_and_the_last_one_serves_while_the_upstream_fails() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = hits.clone();
    let base = serve(move |_req: Request<Incoming>| {
        let n = seen.fetch_add(1, Ordering::SeqCst);
        async move {
            match n {
                0 | 1 => full(
                    StatusCode::OK,
                    "application/json",
                    json!({"data": [{"id": format!("m{n}")}]}).to_string(),
                ),
                _ => full(StatusCode::BAD_GATEWAY, "text/plain", "down"),
            }
        }
    })
    .await;
    let cached = OpenAiBackend::new(OpenAiConfig::new(&base));
    assert_eq!(cached.models(&cx()).await.unwrap(), [Model::new("m0")]);
    assert_eq!(cached.models(&cx()).await.unwrap(), [Model::new("m0")]);
    assert_eq!(
        hits.load(Ordering::SeqCst),
        1,
        "the second list came from the cache"
    );

    let expiring = OpenAiBackend::new(OpenAiConfig::new(&base).with_models_ttl(Duration::ZERO));
    assert_eq!(expiring.models(&cx()).await.unwrap(), [Model::new("m1")]);
    // The upstream fails now: the last list is served, not an error.
    assert_eq!(expiring.models(&cx()).await.unwrap(), [Model::new("m1")]);
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    let fresh = OpenAiBackend::new(OpenAiConfig::new(&base));
    assert!(
        fresh.models(&cx()).await.is_err(),
        "no list yet: the error shows"
    );
}

#[tokio::test]
async fn configured_models_and_full_completions_urls() {
    let cfg = OpenAiConfig::completions_url("http://127.0.0.1:9/v1beta/openai/chat/completions");
    assert_eq!(cfg.models_url(), None);
    let backend = OpenAiBackend::new(cfg.clone());
    assert!(matches!(
        backend.models(&cx()).await,
        Err(HostError::Upstream(_))
    ));
    let listed = vec![Model::new("gemini-2.5-flash")];
    let backend = OpenAiBackend::new(cfg.with_models(listed.clone()));
    assert_eq!(backend.models(&cx()).await.unwrap(), listed);
    let unreachable = OpenAiBackend::new(OpenAiConfig::new("http://127.0.0.1:9/v1"));
    let Err(HostError::Upstream(msg)) = unreachable.models(&cx()).await else {
        panic!("expected an upstream error")
    };
    assert!(
        msg.starts_with("cannot list models: cannot connect to upstream http://127.0.0.1:9: "),
        "{msg}"
    );
}

fn redirect_to(location: &str) -> Response<Body> {
    Response::builder()
        .status(StatusCode::TEMPORARY_REDIRECT)
        .header("location", location)
        .body(Full::new(Bytes::new()).map_err(|e| match e {}).boxed())
        .unwrap()
}

/// A server that keeps every request's headers and answers with a short SSE reply.
async fn recording() -> (String, mpsc::UnboundedReceiver<http::HeaderMap>) {
    let (seen_tx, seen) = mpsc::unbounded_channel();
    let base = serve(move |req: Request<Incoming>| {
        let seen_tx = seen_tx.clone();
        async move {
            let _ = seen_tx.send(req.headers().clone());
            let sse = [delta("reached"), "data: [DONE]\n\n".into()].concat();
            full(StatusCode::OK, "text/event-stream", sse)
        }
    })
    .await;
    (base, seen)
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_refused_and_sends_it_no_headers() {
    // Another host name (localhost), and the same host on another port: both other origins.
    for host in ["localhost", "127.0.0.1"] {
        let (other, mut seen) = recording().await;
        let target = format!("{}/chat/completions", other.replace("127.0.0.1", host));
        let base = serve(move |_req| {
            let target = target.clone();
            async move { redirect_to(&target) }
        })
        .await;
        let backend = OpenAiBackend::new(
            OpenAiConfig::new(base)
                .with_api_key("sk-redirect-secret")
                .with_header("x-custom-secret", "custom-secret"),
        );
        let got = collect(&backend).await;
        let mut reached = Vec::new();
        while let Ok(headers) = seen.try_recv() {
            reached.push(headers);
        }
        assert!(
            reached
                .iter()
                .all(|h| !h.contains_key("x-custom-secret") && !h.contains_key("authorization")),
            "the custom header reached {host}: {reached:?}"
        );
        let [Event::Error { error }] = got.as_slice() else {
            panic!("a refused redirect is one error event, got {got:?}")
        };
        assert!(error.contains("redirect"), "{error}");
    }
}

#[tokio::test]
async fn a_redirect_on_the_same_origin_is_followed_with_the_headers() {
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let base = serve(move |req: Request<Incoming>| {
        let seen_tx = seen_tx.clone();
        async move {
            if req.uri().path() == "/v1/chat/completions" {
                return redirect_to("/v2/chat/completions");
            }
            let _ = seen_tx.send(req.headers().clone());
            let sse = [delta("moved"), "data: [DONE]\n\n".into()].concat();
            full(StatusCode::OK, "text/event-stream", sse)
        }
    })
    .await;
    let backend = OpenAiBackend::new(
        OpenAiConfig::new(base)
            .with_api_key("sk-test")
            .with_header("x-extra", "yes"),
    );
    assert_eq!(
        collect(&backend).await,
        [Event::delta("moved"), Event::done(FinishReason::Stop, None)]
    );
    let headers = seen.recv().await.unwrap();
    assert_eq!(headers["x-extra"], "yes");
    assert_eq!(headers["authorization"], "Bearer sk-test");
}

#[test]
fn the_upstream_span_logs_the_url_without_userinfo_or_query() {
    let logs = logs_of(async {
        let base =
            serve(|_req| async { full(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", "boom") })
                .await;
        let url = format!(
            "{}/chat/completions?key=span-key",
            base.replace("http://", "http://user:span-pass@")
        );
        let backend = OpenAiBackend::new(OpenAiConfig::completions_url(url));
        collect(&backend).await;
    });
    assert!(
        logs.contains("upstream completion failed") && logs.contains("/v1/chat/completions"),
        "{logs}"
    );
    for secret in ["span-pass", "span-key"] {
        assert!(!logs.contains(secret), "{secret} logged: {logs}");
    }
}

#[test]
fn the_translators_warnings_carry_the_upstream_span() {
    let logs = logs_of(async {
        let base = serve(|_req| async {
            let sse = ["data: not json\n\n".into(), delta("ok"), finish("stop")].concat();
            full(StatusCode::OK, "text/event-stream", sse)
        })
        .await;
        let backend = OpenAiBackend::new(OpenAiConfig::new(base));
        let got = collect(&backend).await;
        assert_eq!(got[0], Event::delta("ok"), "{got:?}");
    });
    let line = logs
        .lines()
        .find(|l| l.contains("skipping an upstream chunk that is not a JSON object"))
        .unwrap_or_else(|| panic!("no warning: {logs}"));
    assert!(
        line.contains("upstream{url=") && line.contains("model=test-model"),
        "{line}"
    );
}
