//! Server-sent events bodies: `data:` framing, optional `id:`, a `: ping` comment whenever the
//! stream has been quiet for the heartbeat interval, and one body frame per event (so every
//! event is flushed as it happens). Dropping the body drops the source stream.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http::header::{self, HeaderValue};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use serde::Serialize;
use tokio::time::{Instant, Sleep};

use crate::api::{BoxError, Response};

/// Encodes one SSE event: optional `id:` line, one `data:` line, blank line.
pub(crate) fn frame<T: Serialize>(id: Option<u64>, data: &T) -> Bytes {
    // serde_json never emits raw newlines, so one data line is always enough.
    let json = serde_json::to_string(data).unwrap_or_else(|e| {
        serde_json::json!({"type": "error", "error": format!("encoding event: {e}")}).to_string()
    });
    let mut out = String::with_capacity(json.len() + 32);
    if let Some(id) = id {
        out.push_str("id: ");
        out.push_str(&id.to_string());
        out.push('\n');
    }
    out.push_str("data: ");
    out.push_str(&json);
    out.push_str("\n\n");
    Bytes::from(out)
}

const PING: &[u8] = b": ping\n\n";

/// Wraps a stream of encoded frames, adding a `: ping` comment after `every` of silence.
pub(crate) struct Heartbeat<S> {
    inner: S,
    every: Duration,
    sleep: Pin<Box<Sleep>>,
    comment: &'static [u8],
}

impl<S> Heartbeat<S> {
    pub(crate) fn new(inner: S, every: Duration) -> Self {
        Self {
            inner,
            every,
            sleep: Box::pin(tokio::time::sleep(every)),
            comment: PING,
        }
    }
}

impl<S: Stream<Item = Bytes> + Unpin> Stream for Heartbeat<S> {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let every = self.every;
        match self.inner.poll_next_unpin(cx) {
            Poll::Ready(item) => {
                self.sleep.as_mut().reset(Instant::now() + every);
                return Poll::Ready(item);
            }
            Poll::Pending => {}
        }
        if self.sleep.as_mut().poll(cx).is_ready() {
            self.sleep.as_mut().reset(Instant::now() + every);
            return Poll::Ready(Some(Bytes::from_static(self.comment)));
        }
        Poll::Pending
    }
}

/// An SSE response over a stream of encoded frames, with `: ping` comments.
pub(crate) fn response<S>(frames: S, heartbeat: Duration) -> Response
where
    S: Stream<Item = Bytes> + Send + 'static,
{
    response_with(frames, heartbeat, PING)
}

/// An SSE response over a stream of encoded frames, with `comment` (a whole SSE comment line
/// and its blank line) after `heartbeat` of silence.
pub(crate) fn response_with<S>(frames: S, heartbeat: Duration, comment: &'static [u8]) -> Response
where
    S: Stream<Item = Bytes> + Send + 'static,
{
    let mut hb = Heartbeat::new(Box::pin(frames), heartbeat);
    hb.comment = comment;
    let body = hb.map(|b| Ok::<_, BoxError>(Frame::data(b)));
    let mut res = http::Response::new(StreamBody::new(body).boxed_unsync());
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, no-transform"),
    );
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_has_id_and_single_data_line() {
        let b = frame(Some(7), &serde_json::json!({"a": "x\ny"}));
        assert_eq!(&b[..], b"id: 7\ndata: {\"a\":\"x\\ny\"}\n\n");
    }

    #[tokio::test(start_paused = true)]
    async fn pings_when_quiet_and_ends_with_the_source() {
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
        let mut hb = Heartbeat::new(
            tokio_stream::wrappers::ReceiverStream::new(rx),
            Duration::from_secs(15),
        );
        tokio::time::advance(Duration::from_secs(16)).await;
        assert_eq!(hb.next().await.unwrap(), Bytes::from_static(PING));
        tx.send(Bytes::from_static(b"data: 1\n\n")).await.unwrap();
        assert_eq!(hb.next().await.unwrap(), Bytes::from_static(b"data: 1\n\n"));
        drop(tx);
        assert_eq!(hb.next().await, None);
    }
}
