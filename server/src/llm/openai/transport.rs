//! The HTTP side of a completion: reading the reply body with the idle timeout, error-body
//! snippets, readable transport errors, and the tracing span around the event stream.

use std::error::Error as StdError;
use std::time::Duration;

use tokio::time::Instant;

use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};
use lmchatkit_protocol::Event;

use super::listing::Fault;
use super::translate::{Accumulator, read_logged};
use crate::host::EventStream;

/// How much of an error reply's body goes into the error event.
pub(in crate::llm) const ERROR_BODY_LIMIT: usize = 512;
/// The largest non-streamed JSON reply read.
const JSON_BODY_LIMIT: usize = 16 << 20;
/// The largest SSE event (its lines up to the blank line) read from the upstream: above the
/// arguments cap, which one chunk may carry whole.
pub(in crate::llm) const MAX_SSE_EVENT: usize = 2 * super::translate::MAX_ARGUMENTS_BYTES;

/// The span a translator's warnings are logged in: the upstream call's (URL and model),
/// entered only for a warning. Entering it on every poll of the reply's stream cost 2.9% of a
/// turn's instructions (callgrind, the bench's relay with history: 1.008 M a turn against
/// 0.979 M); the turn's own span is entered by the run's task anyway. Without one (the public
/// `translate` functions), a warning goes to whatever span is current.
#[derive(Debug, Clone)]
pub(in crate::llm) struct LogSpan(tracing::Span);

impl LogSpan {
    /// Warnings inside `span`.
    pub(in crate::llm) fn new(span: tracing::Span) -> Self {
        Self(span)
    }

    /// Runs `log` (a `tracing` macro) inside the span.
    pub(in crate::llm) fn log(&self, log: impl FnOnce()) {
        self.0.in_scope(log)
    }
}

/// No span of its own: warnings go to the current one.
impl Default for LogSpan {
    fn default() -> Self {
        Self(tracing::Span::none())
    }
}

/// The events of a 2xx reply. Normally SSE; a server that ignores `stream: true` (whatever
/// its content type says) answers with one JSON completion, which is read as a single chunk
/// followed by `[DONE]` when it parses whole.
pub(in crate::llm) async fn reply_events(
    resp: reqwest::Response,
    idle: Duration,
    deadline: Instant,
    log: LogSpan,
) -> EventStream {
    let mut body = Box::pin(guard(resp.bytes_stream(), idle, deadline));
    let mut head: Vec<Result<Bytes, BodyError>> = Vec::new();
    let first = loop {
        match body.next().await {
            Some(Ok(chunk)) => {
                let first = chunk.iter().copied().find(|c| !c.is_ascii_whitespace());
                head.push(Ok(chunk));
                if first.is_some() {
                    break first;
                }
            }
            Some(Err(e)) => {
                head.push(Err(e));
                break None;
            }
            None => break None,
        }
    };
    if first != Some(b'{') {
        return Box::pin(read_logged::<Accumulator, _, _>(
            stream::iter(head).chain(body),
            log,
        ));
    }
    let mut json = Vec::new();
    let mut items = stream::iter(head).chain(body);
    while let Some(item) = items.next().await {
        match item {
            Ok(chunk) if json.len() + chunk.len() <= JSON_BODY_LIMIT => {
                json.extend_from_slice(&chunk)
            }
            Ok(_) => return error_stream("upstream reply too large".into()),
            Err(e) => {
                return Box::pin(read_logged::<Accumulator, _, _>(
                    stream::iter([Err(e)]),
                    log,
                ));
            }
        }
    }
    // JSON has no raw newlines inside strings, so flattening it keeps it one `data:` line.
    let line = String::from_utf8_lossy(&json).replace(['\r', '\n'], " ");
    // A whole JSON document is a whole reply, finish reason or not: it ends as `[DONE]` would.
    // One cut short does not parse, is skipped, and the body ends as a reply cut off.
    let whole = serde_json::from_slice::<serde::de::IgnoredAny>(&json).is_ok();
    let done = if whole { "data: [DONE]\n\n" } else { "" };
    let sse = Bytes::from(format!("data: {line}\n\n{done}"));
    Box::pin(read_logged::<Accumulator, _, _>(
        stream::iter([Ok::<_, BodyError>(sse)]),
        log,
    ))
}

/// Why the reply body ended early.
#[derive(Debug, thiserror::Error)]
pub(in crate::llm) enum BodyError {
    #[error("{0}")]
    Stalled(String),
    #[error("upstream connection failed mid-stream: {0}")]
    Transport(String),
}

/// Adds the idle timeout and the turn's deadline to a body stream and turns its errors into
/// readable ones (the event-size cap is the SSE parser's). After an error the body is dropped.
pub(in crate::llm) fn guard<S>(
    body: S,
    idle: Duration,
    deadline: Instant,
) -> impl Stream<Item = Result<Bytes, BodyError>> + Send
where
    S: Stream<Item = reqwest::Result<Bytes>> + Send + 'static,
{
    Guarded {
        body: Some(Box::pin(body)),
        idle,
        deadline,
        last_data: Instant::now(),
        timer: Box::pin(tokio::time::sleep_until(
            (Instant::now() + idle).min(deadline),
        )),
    }
}

/// The body stream [`guard`] returns. One timer per reply, armed lazily: a chunk only notes
/// when it came, and the timer, when it fires, checks that time and re-arms itself for the
/// rest of the idle time. A timer per chunk (as a `timeout` around each read would make)
/// costs a timer-wheel insertion and removal per upstream chunk.
struct Guarded<S> {
    body: Option<std::pin::Pin<Box<S>>>,
    idle: Duration,
    deadline: Instant,
    last_data: Instant,
    timer: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl<S> Stream for Guarded<S>
where
    S: Stream<Item = reqwest::Result<Bytes>>,
{
    type Item = Result<Bytes, BodyError>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let this = &mut *self;
        let Some(body) = this.body.as_mut() else {
            return Poll::Ready(None);
        };
        let ended = match body.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(bytes))) => {
                this.last_data = Instant::now();
                return Poll::Ready(Some(Ok(bytes)));
            }
            Poll::Ready(Some(Err(e))) => Some(BodyError::Transport(causes(&e))),
            Poll::Ready(None) => None,
            Poll::Pending => loop {
                if this.timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                let now = Instant::now();
                if now >= this.deadline {
                    let why = "upstream reply exceeded the turn's total timeout".to_owned();
                    break Some(BodyError::Stalled(why));
                }
                let due = (this.last_data + this.idle).min(this.deadline);
                if now >= due {
                    break Some(BodyError::Stalled(stalled(this.idle)));
                }
                // Data came since the timer was armed: wait for the rest of the idle time.
                this.timer.as_mut().reset(due);
            },
        };
        this.body = None;
        Poll::Ready(ended.map(Err))
    }
}

/// The client a backend uses unless given one: a 30 s connect timeout, no total timeout, and
/// redirects followed only within the origin.
pub(in crate::llm) fn default_client() -> reqwest::Client {
    crate::tls::client_builder()
        .connect_timeout(Duration::from_secs(30))
        .redirect(crate::secrets::same_origin_redirects())
        .build()
        // Only a broken TLS setup fails here, and then `Client::new` panics with why.
        .unwrap_or_default()
}

/// Adds configured headers to a request, skipping invalid names or values with a warning.
pub(in crate::llm) fn add_headers(
    mut rb: reqwest::RequestBuilder,
    headers: &[(String, String)],
) -> reqwest::RequestBuilder {
    for (name, value) in headers {
        match (
            http::HeaderName::try_from(name.as_str()),
            http::HeaderValue::try_from(value.as_str()),
        ) {
            (Ok(n), Ok(v)) => rb = rb.header(n, v),
            _ => tracing::warn!(header = %name, "skipping an invalid upstream header"),
        }
    }
    rb
}

/// Sends a request and reads its whole reply, each step within `idle`: the status and the
/// body, or a readable reason.
pub(in crate::llm) async fn fetch(
    rb: reqwest::RequestBuilder,
    idle: Duration,
) -> Result<(http::StatusCode, Bytes), (Fault, String)> {
    let timed_out = |_| (Fault::Timeout, "timed out".to_owned());
    let failed = |e: reqwest::Error| {
        let fault = if e.is_timeout() {
            Fault::Timeout
        } else if e.is_connect() {
            Fault::Connect
        } else {
            Fault::Transport
        };
        (fault, describe(&e))
    };
    let resp = tokio::time::timeout(idle, rb.send())
        .await
        .map_err(timed_out)?
        .map_err(failed)?;
    let status = resp.status();
    let body = tokio::time::timeout(idle, resp.bytes())
        .await
        .map_err(timed_out)?
        .map_err(failed)?;
    Ok((status, body))
}

pub(in crate::llm) fn stalled(idle: Duration) -> String {
    format!("upstream stalled: no data for {} s", idle.as_secs_f64())
}

pub(in crate::llm) fn error_stream(msg: String) -> EventStream {
    tracing::warn!(error = %msg, "upstream completion failed");
    Box::pin(stream::iter([Event::error(msg)]))
}

/// Reads up to `limit` bytes of a body (less on error or timeout).
pub(in crate::llm) async fn read_prefix(
    resp: reqwest::Response,
    limit: usize,
    idle: Duration,
) -> Vec<u8> {
    let mut body = Box::pin(resp.bytes_stream());
    let mut buf = Vec::new();
    while buf.len() < limit {
        match tokio::time::timeout(idle, body.next()).await {
            Ok(Some(Ok(chunk))) => buf.extend_from_slice(&chunk),
            _ => break,
        }
    }
    buf.truncate(limit);
    buf
}

/// The body as trimmed text, cut to [`ERROR_BODY_LIMIT`] bytes on a character boundary.
pub(in crate::llm) fn snippet(body: &[u8]) -> String {
    let cut = &body[..body.len().min(ERROR_BODY_LIMIT)];
    let text = match std::str::from_utf8(cut) {
        Ok(t) => t.to_owned(),
        Err(e) if e.error_len().is_none() => {
            String::from_utf8_lossy(&cut[..e.valid_up_to()]).into()
        }
        Err(_) => String::from_utf8_lossy(cut).into_owned(),
    };
    text.trim().to_owned()
}

/// A readable description of a request error: what failed and its causes, without the URL's
/// path or query (which may carry secrets).
pub(in crate::llm) fn describe(e: &reqwest::Error) -> String {
    let origin = e
        .url()
        .map(|u| format!(" {}", u.origin().ascii_serialization()))
        .unwrap_or_default();
    let what = if e.is_timeout() {
        format!("upstream{origin} timed out")
    } else if e.is_connect() {
        format!("cannot connect to upstream{origin}")
    } else {
        format!("upstream{origin} request failed")
    };
    format!("{what}: {}", causes(e))
}

/// The error's causes joined with `: ` (its own text when it has none).
fn causes(e: &reqwest::Error) -> String {
    let mut parts = Vec::new();
    let mut source = e.source();
    while let Some(s) = source {
        parts.push(s.to_string());
        source = s.source();
    }
    if parts.is_empty() {
        e.to_string()
    } else {
        parts.join(": ")
    }
}

/// The builder methods both HTTP backends' configs share, for a config struct with the fields
/// `api_key`, `headers`, `models`, `client`, `idle_timeout`, `total_timeout` and `models_ttl`
/// (written once here, not once per backend); the key's and the header's docs differ per
/// backend.
macro_rules! upstream_builders {
    (key: $key_doc:literal, header: $header_doc:literal) => {
        #[doc = $key_doc]
        pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
            self.api_key = Some(key.into()).filter(|k: &String| !k.is_empty());
            self
        }

        #[doc = $header_doc]
        pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
            self.headers.push((name.into(), value.into()));
            self
        }

        /// The models offered, instead of asking `{base}/models`.
        pub fn with_models(mut self, models: Vec<Model>) -> Self {
            self.models = Some(models);
            self
        }

        /// The HTTP client to use (default: one with a 30 s connect timeout, no total timeout,
        /// and redirects followed only within the origin,
        /// [`same_origin_redirects`](crate::secrets::same_origin_redirects)). A client of your
        /// own keeps its own redirect policy: reqwest's default sends custom headers to another
        /// host, so build it with `.redirect(lmchatkit::secrets::same_origin_redirects())`.
        pub fn with_http_client(mut self, client: reqwest::Client) -> Self {
            self.client = Some(client);
            self
        }

        /// How long the upstream may send nothing (before the reply headers, or between body
        /// bytes) before the turn fails with `upstream stalled`. Default 120 s.
        pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
            self.idle_timeout = timeout;
            self
        }

        /// How long one upstream turn may take in all, from the request to the last byte,
        /// however steadily it streams. Default 15 min; past it the turn ends as a reply cut
        /// off (the partial text is kept).
        pub fn with_total_timeout(mut self, timeout: Duration) -> Self {
            self.total_timeout = timeout;
            self
        }

        /// How long a model list read from `{base}/models` is used before it is read again
        /// (default 60 s). While the upstream fails to answer, the last list keeps being
        /// served.
        pub fn with_models_ttl(mut self, ttl: Duration) -> Self {
            self.models_ttl = ttl;
            self
        }
    };
}
pub(in crate::llm) use upstream_builders;
