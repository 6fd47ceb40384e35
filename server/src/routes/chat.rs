//! `POST /api/chat`: validates the request (the model must be a configured one of the caller's
//! menu, the reasoning effort `low|medium|high`, the conversation id a valid one; a 400
//! otherwise), prepares the turn (see [`crate::turn`]), starts it as a run
//! ([`crate::turn::run`]) and streams the run's events as SSE frames (`id:` and `data:`) with a
//! `: ping` heartbeat; the `lmchatkit-run-id` header names the run. The client leaving does not
//! stop the run (`POST /api/runs/{id}/stop` does). A stream that ends without `done` or
//! `error` gets a `done`, so clients always see the end of a turn. Each `tool_call` event carries the approval policy's decision
//! for the caller (computed here, per call, in the model's scope), so the UI skips the prompt for
//! `allow` and never runs a `deny`. `done` carries `cost_usd`, the model's list price applied
//! to the reported usage, when both are known; the UI stores it on the reply.

use std::sync::Arc;

use futures_util::StreamExt;
use lmchatkit_protocol::{ChatRequest, Event, RUN_ID_HEADER};
use tracing::Instrument;

use crate::access::Scope;
use crate::access::approval::{self, Approvals};
use crate::history::validate_id;
use crate::http_util::{ApiError, Response};
use crate::models::{Price, TokenUsage};
use crate::routes::Req;
use crate::runs::saver::Target;
use crate::state::State;
use crate::turn::run::ReplySave;
use crate::{sse, turn};

pub(crate) async fn chat(state: &State, mut req: Req) -> Result<Response, ApiError> {
    // Counted before the body is read: a client at its cap costs no parse. The place is held
    // by the run and by the response's body, and freed when both are gone: a run may end
    // before its client has read it (see `runs::launch`), or its client leave first.
    let permit = Arc::new(state.streams.open(req.cx.principal().id())?);
    let body: ChatRequest = req.json().await?;
    if body.model.trim().is_empty() {
        return Err(ApiError::BadRequest("model is required".into()));
    }
    if body.messages.is_empty() {
        return Err(ApiError::BadRequest("messages is required".into()));
    }
    turn::check_effort(body.params.as_ref())?;
    let conversation = body.conversation_id.clone().filter(|c| !c.is_empty());
    if let Some(c) = &conversation {
        validate_id(c)
            .map_err(|_| ApiError::BadRequest(format!("invalid conversation id {c:?}")))?;
    }
    let model = state.resolve_model(&req.cx, Some(&body.model)).await?;
    let price = state.catalog.price(&model.id);
    let reply_id = body
        .reply_id
        .clone()
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| format!("m-{:016x}", rand::random::<u64>()));
    let principal = req.cx.principal();
    let keep = match (&state.history, &conversation) {
        (Some(store), Some(thread)) => Some(ReplySave {
            target: Target {
                store: store.clone(),
                events: state.events.clone(),
                principal: principal.clone(),
                thread: thread.clone(),
                model: model.id.clone(),
                persona_id: body.persona_id.clone(),
                params: body.params.clone().unwrap_or_default(),
            },
            request: Arc::new(body.messages.clone()),
        }),
        _ => None,
    };
    let span = tracing::info_span!("chat", model = %model.id, messages = body.messages.len());
    let prepared = turn::prepare(&state.turn_inputs(), &req.cx, body, &model)
        .instrument(span.clone())
        .await;
    let events = with_decisions(
        state.host.complete(&req.cx, prepared),
        state.approvals.clone(),
        Scope::model(req.cx.clone()),
    );
    let events = with_terminal(events).map(move |ev| with_cost(ev, price));
    let run = turn::run::start(
        &state.runs,
        &principal,
        conversation.as_deref(),
        &reply_id,
        events,
        keep,
        permit.clone(),
    )
    .instrument(span)
    .await?;
    let mut res = sse::response(run.follow_holding(0, permit), state.settings.heartbeat);
    if let Ok(v) = http::HeaderValue::from_str(run.id()) {
        res.headers_mut().insert(RUN_ID_HEADER, v);
    }
    Ok(res)
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
