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
//! - **Two client majors** ([`AI_SDK_VERSION_HEADER`]): a run's log holds the v7 stream, and a
//!   client that did not ask for it (an `ai@6` one, which throws on a chunk it does not know)
//!   gets it without the v7-only chunks, whichever client started the run. Threads read by such
//!   a client lose the parts only `ai@7` knows ([`UiMessage::for_v6`]).

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use http::StatusCode;
use http::header::HeaderValue;
use lmchatkit_protocol::RUN_ID_HEADER;
use lmchatkit_protocol::ui_stream::{
    AI_SDK_VERSION_HEADER, AiSdkChatRequest, AiSdkModelInfo, KEEP_ALIVE_FRAME, Thread,
    ThreadSummary, UI_MESSAGE_STREAM_HEADER, UiMessage, to_ui_messages, v6_frames, wants_v7,
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
    let v7 = v7(&req);
    let body: AiSdkChatRequest = req.json().await?;
    let services = state.aisdk();
    let plan = chat::plan(&services, &req.cx, body).await?;
    let run = chat::run(&services, plan, state.agent(), permit.clone()).await?;
    let mut res = ui_stream(state, &run, permit, v7);
    if let Ok(v) = HeaderValue::from_str(run.id()) {
        res.headers_mut().insert(RUN_ID_HEADER, v);
    }
    Ok(res)
}

/// Whether the request asks for the v7 stream.
fn v7(req: &Req) -> bool {
    wants_v7(
        req.parts
            .headers
            .get(AI_SDK_VERSION_HEADER)
            .and_then(|v| v.to_str().ok()),
    )
}

/// What an `ai@6` client may read of `bytes`, frames of the run's log ([`v6_frames`]): the
/// same bytes when nothing is dropped, `None` when nothing is left.
fn for_v6(bytes: Bytes) -> Option<Bytes> {
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Some(bytes);
    };
    match v6_frames(text) {
        Cow::Borrowed(_) => Some(bytes),
        Cow::Owned(kept) => (!kept.is_empty()).then(|| Bytes::from(kept)),
    }
}

/// A UI Message Stream response tailing `run` from its start, holding `hold` while open; the
/// v7-only chunks only when `v7`.
fn ui_stream(state: &State, run: &Run, hold: impl Send + 'static, v7: bool) -> Response {
    use futures_util::StreamExt;
    let frames = run.follow_holding(0, hold);
    let frames = match v7 {
        true => frames,
        false => frames.filter_map(|f| std::future::ready(for_v6(f))).boxed(),
    };
    let mut res = sse::response_with(
        frames,
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
    Ok(ui_stream(state, &run, permit, v7(&req)))
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
            if !v7(&req) {
                messages = messages.into_iter().map(UiMessage::for_v6).collect();
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

#[cfg(test)]
mod tests {
    use lmchatkit_protocol::ui_stream::UiChunk;

    use super::*;

    fn frame(id: u64, c: &UiChunk) -> String {
        format!("id: {id}\ndata: {}\n\n", c.to_json())
    }

    #[test]
    fn a_v6_client_gets_every_frame_of_a_replay_but_the_v7_only_ones() {
        let [request, response] = UiChunk::automatic_approval("ap1", "c1", true, None);
        let input = UiChunk::tool_input_available("c1", "t", serde_json::json!({}));
        let output = UiChunk::tool_output_available("c1", serde_json::json!("ok"));
        let replay = [
            frame(1, &input),
            frame(2, &request),
            frame(3, &response),
            frame(4, &output),
        ]
        .concat();
        let got = for_v6(Bytes::from(replay)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            [frame(1, &input), frame(4, &output)].concat()
        );
        // A frame alone: dropped, or passed on as it is.
        assert_eq!(for_v6(Bytes::from(frame(2, &request))), None);
        let asked = Bytes::from(frame(5, &UiChunk::tool_approval_request("ap2", "c2")));
        assert_eq!(for_v6(asked.clone()), Some(asked));
        let text = Bytes::from(frame(6, &UiChunk::text_delta("t1", "hi")));
        assert_eq!(for_v6(text.clone()), Some(text));
    }
}
