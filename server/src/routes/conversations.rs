//! `/api/conversations` (list) and `/api/conversations/{id}` (GET, PUT, PATCH, DELETE), with
//! the revision write model (a stale PUT gets 409 and the current copy) and the
//! `conversation_*` events for the caller's other tabs.

use std::sync::Arc;

use http::StatusCode;
use lmchatkit_protocol::{
    ConflictResponse, ConversationPatch, SaveResponse, ServerEvent, ServerEventType,
    StoredConversation,
};

use crate::history::{HistoryStore, SaveOutcome, validate_id};
use crate::host::RequestContext;
use crate::http_util::{ApiError, Response, empty, json, json_etag};
use crate::service::Req;
use crate::state::State;

fn store(state: &State) -> Result<&Arc<dyn HistoryStore>, ApiError> {
    state
        .history
        .as_ref()
        .ok_or_else(|| ApiError::NotFound("server-side history is not enabled".into()))
}

/// The percent-decoded, validated id from the path.
fn id(raw: &str) -> Result<String, ApiError> {
    let id = percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .map_err(|_| ApiError::BadRequest("invalid conversation id".into()))?
        .into_owned();
    validate_id(&id)?;
    Ok(id)
}

fn notify(
    state: &State,
    cx: &RequestContext,
    kind: ServerEventType,
    id: &str,
    revision: Option<u64>,
) {
    if let Some(events) = &state.events {
        events.broadcast_to(
            &cx.principal(),
            ServerEvent::conversation(kind, id, revision),
        );
    }
}

pub(crate) async fn list(state: &State, req: Req) -> Result<Response, ApiError> {
    let list = store(state)?.list(&req.cx.principal()).await?;
    Ok(json_etag(&req.parts.headers, &list))
}

pub(crate) async fn get(state: &State, req: Req, raw: &str) -> Result<Response, ApiError> {
    let id = id(raw)?;
    match store(state)?.get(&req.cx.principal(), &id).await? {
        Some(c) => Ok(json(StatusCode::OK, &c)),
        None => Err(ApiError::NotFound("conversation not found".into())),
    }
}

pub(crate) async fn put(state: &State, mut req: Req, raw: &str) -> Result<Response, ApiError> {
    let id = id(raw)?;
    let store = store(state)?;
    let mut conv: StoredConversation = req.json().await?;
    conv.id = id.clone();
    match store.save(&req.cx.principal(), conv).await? {
        SaveOutcome::Saved { revision } => {
            notify(
                state,
                &req.cx,
                ServerEventType::ConversationSaved,
                &id,
                Some(revision),
            );
            Ok(json(StatusCode::OK, &SaveResponse { ok: true, revision }))
        }
        SaveOutcome::Conflict(current) => Ok(json(
            StatusCode::CONFLICT,
            &ConflictResponse {
                error: "the conversation was changed elsewhere; merge with this copy and retry"
                    .into(),
                revision: current.revision,
                conversation: *current,
            },
        )),
    }
}

pub(crate) async fn patch(state: &State, mut req: Req, raw: &str) -> Result<Response, ApiError> {
    let id = id(raw)?;
    let store = store(state)?;
    let mut body: ConversationPatch = req.json().await?;
    body.title = body.title.trim().to_owned();
    if body.title.is_empty() {
        return Err(ApiError::BadRequest("title is required".into()));
    }
    match store.patch(&req.cx.principal(), &id, body).await? {
        Some(revision) => {
            notify(
                state,
                &req.cx,
                ServerEventType::ConversationRenamed,
                &id,
                Some(revision),
            );
            Ok(json(StatusCode::OK, &SaveResponse { ok: true, revision }))
        }
        None => Err(ApiError::NotFound("conversation not found".into())),
    }
}

pub(crate) async fn delete(state: &State, req: Req, raw: &str) -> Result<Response, ApiError> {
    let id = id(raw)?;
    if store(state)?.delete(&req.cx.principal(), &id).await? {
        notify(
            state,
            &req.cx,
            ServerEventType::ConversationDeleted,
            &id,
            None,
        );
        let mut res = http::Response::new(empty());
        *res.status_mut() = StatusCode::NO_CONTENT;
        Ok(res)
    } else {
        Err(ApiError::NotFound("conversation not found".into()))
    }
}
