//! `POST /api/chat`: validates the request (the model must be a configured one of the caller's
//! menu, the reasoning effort `low|medium|high`; a 400 otherwise), prepares the turn (see
//! [`crate::turn`]) and
//! streams the host's events as SSE `data:` frames with a `: ping` heartbeat. The client
//! closing the connection drops the body, which drops the host's stream and so cancels the
//! upstream request. A stream that ends without `done` or `error` gets a `done`, so clients
//! always see the end of a turn. Each `tool_call` event carries the approval policy's decision
//! for the caller (computed here, per call, in the model's scope), so the UI skips the prompt for
//! `allow` and never runs a `deny`. `done` carries `cost_usd`, the model's list price applied
//! to the reported usage, when both are known; the UI stores it on the reply.

use std::sync::Arc;

use futures_util::StreamExt;
use lmchatkit_protocol::{ChatRequest, Event};
use tracing::Instrument;

use crate::access::Scope;
use crate::access::approval::{self, Approvals};
use crate::http_util::{ApiError, Response};
use crate::models::{Price, TokenUsage};
use crate::service::Req;
use crate::state::State;
use crate::{sse, turn};

pub(crate) async fn chat(state: &State, mut req: Req) -> Result<Response, ApiError> {
    // Counted before the body is read: a client at its cap costs no parse.
    let permit = state.streams.open(req.cx.principal().id())?;
    let body: ChatRequest = req.json().await?;
    if body.model.trim().is_empty() {
        return Err(ApiError::BadRequest("model is required".into()));
    }
    if body.messages.is_empty() {
        return Err(ApiError::BadRequest("messages is required".into()));
    }
    turn::check_effort(body.params.as_ref())?;
    let model = state.resolve_model(&req.cx, Some(&body.model)).await?;
    let price = state.catalog.price(&model.id);
    let span = tracing::info_span!("chat", model = %model.id, messages = body.messages.len());
    let prepared = turn::prepare(state, &req.cx, body, &model)
        .instrument(span.clone())
        .await;
    let events = with_decisions(
        state.host.complete(&req.cx, prepared),
        state.approvals.clone(),
        Scope::model(req.cx.clone()),
    );
    // The permit lives as long as the stream: it ends, or the client leaves and drops it.
    let frames = with_terminal(events).map(move |ev| {
        let _held = &permit;
        sse::frame(None, &with_cost(ev, price))
    });
    Ok(sse::response(
        tracing_futures_stream(frames, span),
        state.settings.heartbeat,
    ))
}

/// Annotates each tool call with the approval policy's decision in `scope`.
fn with_decisions(
    events: impl futures_util::Stream<Item = Event> + Send + 'static,
    approvals: Arc<Approvals>,
    scope: Scope,
) -> impl futures_util::Stream<Item = Event> + Send + 'static {
    use futures_util::future::{Either, ready};
    // Only tool calls wait on the decision (the store); deltas pass without a clone.
    events.then(move |ev| match ev {
        Event::ToolCall { tool_call, .. } => {
            let (approvals, scope) = (approvals.clone(), scope.clone());
            Either::Left(async move {
                let (name, input) = (&tool_call.name, &tool_call.arguments);
                let decision = approval::decide(&approvals, &scope, name, input).await;
                Event::ToolCall {
                    tool_call,
                    decision: Some(decision),
                }
            })
        }
        other => Either::Right(ready(other)),
    })
}

/// `done` with what its usage cost at `price` (absent when either is unknown).
fn with_cost(ev: Event, price: Option<Price>) -> Event {
    match ev {
        Event::Done {
            finish_reason,
            usage: Some(usage),
            cost_usd: None,
        } => Event::Done {
            finish_reason,
            usage: Some(usage),
            cost_usd: price.map(|p| p.cost(&TokenUsage::from(&usage))),
        },
        other => other,
    }
}

/// Passes events through and appends `done` when the host ended without `done` or `error`.
fn with_terminal(
    events: impl futures_util::Stream<Item = Event> + Send + 'static,
) -> impl futures_util::Stream<Item = Event> + Send + 'static {
    let mut ended = false;
    events
        .map(Some)
        .chain(futures_util::stream::once(async { None }))
        .filter_map(move |ev| {
            let out = match ev {
                Some(ev) => {
                    ended |= matches!(ev, Event::Done { .. } | Event::Error { .. });
                    Some(ev)
                }
                None if !ended => Some(Event::Done {
                    finish_reason: None,
                    usage: None,
                    cost_usd: None,
                }),
                None => None,
            };
            std::future::ready(out)
        })
}

/// Keeps the turn's span entered while the stream is polled.
fn tracing_futures_stream<S>(
    s: S,
    span: tracing::Span,
) -> impl futures_util::Stream<Item = S::Item> + Send
where
    S: futures_util::Stream + Send + 'static,
{
    let mut s = Box::pin(s);
    futures_util::stream::poll_fn(move |cx| {
        let _g = span.enter();
        s.as_mut().poll_next(cx)
    })
}
