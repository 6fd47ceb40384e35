//! The AI SDK routes (see [`crate::aisdk`]): `POST /api/aisdk/chat` (a turn as a UI Message
//! Stream), `GET /api/aisdk/chat/{id}/stream` (resume), `GET /api/aisdk/threads[/{id}]` and
//! `GET /api/aisdk/models`.
//!
//! Decisions:
//! - A chat request starts a run ([`crate::live::runs`]) and tails its log; the response names it in
//!   the `lmchatkit-run-id` header and the message's metadata (`runId`).
//! - Resume replays the thread's running run from its start and follows it, as
//!   `useChat({ resume: true })` expects, and answers 204 when none runs; ids `.` and `..` are
//!   refused as the AI SDK's client refuses them.
//! - Threads are the principal's conversations; without server-side history they are 404, as
//!   `/api/conversations` is. While a run writes a thread, the thread is read with the reply
//!   as it was when the run started (without it, for a new reply): the resumed stream carries
//!   the rest, and a client that appends it to what it read gets each part once.

use std::sync::Arc;

use http::StatusCode;
use http::header::HeaderValue;
use lmchatkit_protocol::RUN_ID_HEADER;
use lmchatkit_protocol::ui_stream::{
    AiSdkChatRequest, AiSdkModelInfo, KEEP_ALIVE_FRAME, Thread, ThreadSummary,
    UI_MESSAGE_STREAM_HEADER, UiMessage, to_ui_messages,
};

use crate::aisdk::chat;
use crate::api::{ApiError, Response, empty, json, json_etag};
use crate::live::runs::Run;
use crate::routes::Req;
use crate::sse;
use crate::state::State;

pub(crate) async fn chat(state: &State, mut req: Req) -> Result<Response, ApiError> {
    // Counted before the body is read: a client at its cap costs no parse. Held by the run and
    // by the response's body, and freed when both are gone (as the native route's).
    let permit = Arc::new(state.streams.open(req.cx.principal().id())?);
    let body: AiSdkChatRequest = req.json().await?;
    let services = state.aisdk();
    let plan = chat::plan(&services, &req.cx, body).await?;
    let run = chat::run(&services, plan, state.agent(), permit.clone()).await?;
    let mut res = ui_stream(state, &run, permit);
    if let Ok(v) = HeaderValue::from_str(run.id()) {
        res.headers_mut().insert(RUN_ID_HEADER, v);
    }
    Ok(res)
}

/// A UI Message Stream response tailing `run` from its start, holding `hold` while open.
fn ui_stream(state: &State, run: &Run, hold: impl Send + 'static) -> Response {
    let mut res = sse::response_with(
        run.follow_holding(0, hold),
        state.settings.heartbeat,
        KEEP_ALIVE_FRAME.as_bytes(),
    );
    let (name, value) = UI_MESSAGE_STREAM_HEADER;
    res.headers_mut()
        .insert(name, HeaderValue::from_static(value));
    res
}

/// `GET /api/aisdk/chat/{id}/stream`: the thread's running run, from its start.
pub(crate) async fn resume(state: &State, req: Req, param: &str) -> Result<Response, ApiError> {
    let Some(raw) = param.strip_suffix("/stream") else {
        return Err(ApiError::NotFound(
            "no such AI SDK route: a chat's stream is GET .../api/aisdk/chat/{id}/stream".into(),
        ));
    };
    let id = crate::store::decode_id(raw)
        .map_err(|_| ApiError::BadRequest(format!("invalid chat id {raw:?}")))?;
    if id == "." || id == ".." {
        return Err(ApiError::BadRequest(format!("invalid chat id {id:?}")));
    }
    let principal = req.cx.principal();
    let Some(run) = state.runs.active(&principal, &id).await else {
        let mut res = http::Response::new(empty());
        *res.status_mut() = StatusCode::NO_CONTENT;
        return Ok(res);
    };
    let permit = state.streams.open(principal.id())?;
    Ok(ui_stream(state, &run, permit))
}

/// `GET /api/aisdk/threads`: the principal's threads, newest first, with the usage totals the
/// store keeps.
pub(crate) async fn threads(state: &State, req: Req) -> Result<Response, ApiError> {
    let list = state.history_store()?.list(&req.cx.principal()).await?;
    let out: Vec<ThreadSummary> = list.iter().map(ThreadSummary::from_summary).collect();
    Ok(json_etag(&req.parts.headers, &out))
}

/// `GET /api/aisdk/threads/{id}`: one thread with its `UIMessage`s.
pub(crate) async fn thread(state: &State, req: Req, raw: &str) -> Result<Response, ApiError> {
    let id = crate::store::decode_id(raw)?;
    match state.history_store()?.get(&req.cx.principal(), &id).await? {
        Some(c) => {
            let mut messages = to_ui_messages(&c.messages);
            if let Some(run) = state.runs.active(&req.cx.principal(), &id).await {
                as_before(&mut messages, &run);
            }
            Ok(json(
                StatusCode::OK,
                &Thread {
                    summary: ThreadSummary::from_summary(&c.summary()),
                    messages,
                },
            ))
        }
        None => Err(ApiError::NotFound("thread not found".into())),
    }
}

/// Puts back the message `run` writes as it was when the run started (drops it when new).
fn as_before(messages: &mut Vec<UiMessage>, run: &Run) {
    let Some(i) = messages.iter().position(|m| m.id == run.message_id()) else {
        return;
    };
    let before = run
        .resume_base()
        .and_then(|v| serde_json::from_value::<UiMessage>(v.clone()).ok());
    match before {
        Some(m) => messages[i] = m,
        None => {
            messages.remove(i);
        }
    }
}

/// `GET /api/aisdk/models`: the host's models in the AI SDK apps' shape.
pub(crate) async fn models(state: &State, req: Req) -> Result<Response, ApiError> {
    let list: Vec<AiSdkModelInfo> = state
        .models(&req.cx)
        .await?
        .into_iter()
        .map(|m| {
            let provider = m
                .provider
                .clone()
                .or_else(|| m.id.split_once('/').map(|(p, _)| p.to_owned()))
                .unwrap_or_default();
            AiSdkModelInfo {
                label: m.label.clone().unwrap_or_else(|| m.id.clone()),
                provider,
                reasoning: m.reasoning,
                configured: m.configured,
                context_window: m.context_window.unwrap_or(0),
                id: m.id,
            }
        })
        .collect();
    Ok(json_etag(&req.parts.headers, &list))
}
