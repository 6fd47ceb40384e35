//! `GET /api/events`: the broadcaster's events as SSE, each with an `id:`; `Last-Event-ID`
//! resumes (replay or `resync`). Over Redis the route waits for the broadcaster's reader to
//! know where the stream ends before it answers, so the subscription is registered before the
//! response starts, as in-process.

use futures_util::StreamExt;

use crate::api::{ApiError, Response};
use crate::routes::Req;
use crate::sse;
use crate::state::State;

/// How long a subscription waits for the broadcaster to be ready before it answers anyway.
const READY_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

pub(crate) async fn subscribe(state: &State, req: Req) -> Result<Response, ApiError> {
    let events = state
        .events
        .as_ref()
        .ok_or_else(|| ApiError::NotFound("events are off".into()))?;
    let last = req
        .parts
        .headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    // Over Redis, the subscription then starts before the response does: what is sent after
    // the tab sees the stream open reaches it. With Redis unreachable the stream opens anyway
    // after a while, and its events flow once the reader is back.
    let _ = tokio::time::timeout(READY_WAIT, events.ready()).await;
    let frames = events
        .subscribe(req.cx.principal(), last)
        .map(|(id, ev)| sse::frame((id > 0).then_some(id), &ev));
    // An initial comment makes proxies and browsers treat the stream as open at once.
    let opening =
        futures_util::stream::once(async { bytes::Bytes::from_static(b": connected\n\n") });
    Ok(sse::response(
        opening.chain(frames),
        state.settings.heartbeat,
    ))
}
