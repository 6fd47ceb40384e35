//! The AI SDK routes (see [`crate::aisdk`]): `POST /api/aisdk/chat` (a turn as a UI Message
//! Stream), `GET /api/aisdk/chat/{id}/stream` (resume), `GET /api/aisdk/threads[/{id}]` and
//! `GET /api/aisdk/models`.
//!
//! Decisions:
//! - Resume answers 204 while no run is resumable (runs that outlive their request come with
//!   the scale-out work); ids `.` and `..` are refused as the AI SDK's client refuses them.
//! - Threads are the principal's conversations; without server-side history they are 404, as
//!   `/api/conversations` is.

use http::StatusCode;
use http::header::HeaderValue;
use lmchatkit_protocol::ui_stream::{
    AiSdkChatRequest, AiSdkModelInfo, KEEP_ALIVE_FRAME, Thread, ThreadSummary,
    UI_MESSAGE_STREAM_HEADER, to_ui_messages,
};

use crate::aisdk::turn;
use crate::http_util::{ApiError, Response, empty, json, json_etag};
use crate::service::Req;
use crate::sse;
use crate::state::State;

pub(crate) async fn chat(state: &State, mut req: Req) -> Result<Response, ApiError> {
    // Counted before the body is read: a client at its cap costs no parse.
    let permit = state.streams.open(req.cx.principal().id())?;
    let body: AiSdkChatRequest = req.json().await?;
    let plan = turn::plan(state, &req.cx, body).await?;
    let frames = turn::run(state, plan, state.agent(), permit);
    let mut res = sse::response_with(
        tokio_stream::wrappers::ReceiverStream::new(frames),
        state.settings.heartbeat,
        KEEP_ALIVE_FRAME.as_bytes(),
    );
    let (name, value) = UI_MESSAGE_STREAM_HEADER;
    res.headers_mut()
        .insert(name, HeaderValue::from_static(value));
    Ok(res)
}

/// `GET /api/aisdk/chat/{id}/stream`.
pub(crate) fn resume(param: &str) -> Result<Response, ApiError> {
    let Some(raw) = param.strip_suffix("/stream") else {
        return Err(ApiError::NotFound(
            "no such AI SDK route: a chat's stream is GET .../api/aisdk/chat/{id}/stream".into(),
        ));
    };
    let id = crate::history::decode_id(raw)
        .map_err(|_| ApiError::BadRequest(format!("invalid chat id {raw:?}")))?;
    if id == "." || id == ".." {
        return Err(ApiError::BadRequest(format!("invalid chat id {id:?}")));
    }
    let mut res = http::Response::new(empty());
    *res.status_mut() = StatusCode::NO_CONTENT;
    Ok(res)
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
    let id = crate::history::decode_id(raw)?;
    match state.history_store()?.get(&req.cx.principal(), &id).await? {
        Some(c) => Ok(json(
            StatusCode::OK,
            &Thread {
                summary: ThreadSummary::from_summary(&c.summary()),
                messages: to_ui_messages(&c.messages),
            },
        )),
        None => Err(ApiError::NotFound("thread not found".into())),
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
