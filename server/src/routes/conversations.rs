//! `/api/conversations` (list), `/api/search` (the caller's messages that match, as
//! `store::search` decides) and `/api/conversations/{id}` (GET, PUT, PATCH, DELETE), with
//! the revision write model (a stale PUT gets 409 and the current copy) and the
//! `conversation_*` events for the caller's other tabs. Branches (`store::tree`):
//! `POST …/{id}/branch` makes another version's branch the active one and
//! `DELETE …/{id}/messages/{node}` deletes a version with all that follows it; both answer the
//! new revision and tell the other tabs as a save does (they read the conversation again).
//! `GET …/{id}?tree=1` adds every branch (`tree`, for an export) and a `PUT` of a new
//! conversation with a `tree` stores every branch (an import, `store::restore`). A conversation a run is writing is
//! answered with the `lmchatkit-run-id` header naming the run, so a tab that opens it (after a
//! reload, say) follows the reply with `GET /api/runs/{id}/stream`.

use http::StatusCode;
use lmchatkit_protocol::{
    BranchSwitch, ConflictResponse, ConversationPatch, RUN_ID_HEADER, SaveResponse, SearchResponse,
    ServerEventType, StoredConversation,
};

use crate::api::{ApiError, Response, empty, json, json_etag};
use crate::routes::Req;
use crate::state::State;
use crate::store::{BranchOutcome, SaveOutcome, SearchQuery};

pub(crate) async fn list(state: &State, req: Req) -> Result<Response, ApiError> {
    let list = state.history_store()?.list(&req.cx.principal()).await?;
    Ok(json_etag(&req.parts.headers, &list))
}

/// `GET /api/search?q=…&limit=…`: the caller's messages that match `q`, newest conversation
/// first. A missing, empty or overlong `q` or a `limit` that is not a whole number is a 400.
pub(crate) async fn search(state: &State, req: Req) -> Result<Response, ApiError> {
    let (mut q, mut limit) = (None, None);
    for pair in req.parts.uri.query().unwrap_or_default().split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "q" => q = Some(form_value(value)?),
            "limit" => {
                let value = form_value(value)?;
                limit = Some(value.parse::<usize>().map_err(|_| {
                    ApiError::BadRequest(format!("invalid limit {value:?}: a whole number"))
                })?);
            }
            _ => {}
        }
    }
    let q = q.ok_or_else(|| ApiError::BadRequest("missing q: the words to search for".into()))?;
    let query = SearchQuery::parse(&q, limit)?;
    let results = state
        .history_store()?
        .search(&req.cx.principal(), &query)
        .await?;
    Ok(json(StatusCode::OK, &SearchResponse { results }))
}

/// A value of a query string (`+` is a space, then percent-decoded).
fn form_value(raw: &str) -> Result<String, ApiError> {
    percent_encoding::percent_decode_str(&raw.replace('+', " "))
        .decode_utf8()
        .map(|v| v.into_owned())
        .map_err(|_| ApiError::BadRequest("the query string is not UTF-8".into()))
}

pub(crate) async fn get(state: &State, req: Req, raw: &str) -> Result<Response, ApiError> {
    let id = crate::store::decode_id(raw)?;
    let principal = req.cx.principal();
    let store = state.history_store()?;
    // `?tree=1`: every branch too (an export that keeps them).
    let with_tree = req
        .parts
        .uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "tree=1"));
    let found = match store.get(&principal, &id).await? {
        Some(mut c) if with_tree => {
            c.tree = store.get_tree(&principal, &id).await?;
            Some(c)
        }
        found => found,
    };
    match found {
        Some(c) => {
            let mut res = json(StatusCode::OK, &c);
            if let Some(run) = state.runs.active(&principal, &id).await
                && let Ok(v) = http::HeaderValue::from_str(run.id())
            {
                res.headers_mut().insert(RUN_ID_HEADER, v);
            }
            Ok(res)
        }
        None => Err(ApiError::NotFound("conversation not found".into())),
    }
}

pub(crate) async fn put(state: &State, mut req: Req, raw: &str) -> Result<Response, ApiError> {
    let id = crate::store::decode_id(raw)?;
    let store = state.history_store()?;
    let mut conv: StoredConversation = req.json().await?;
    conv.id = id.clone();
    let saved = match conv.tree {
        Some(_) if conv.revision != 0 => {
            return Err(ApiError::BadRequest(
                "a tree is imported as a new conversation: revision 0".into(),
            ));
        }
        Some(_) => {
            crate::store::restore::restore(store.as_ref(), &req.cx.principal(), conv).await?
        }
        None => store.save(&req.cx.principal(), conv).await?,
    };
    match saved {
        SaveOutcome::Saved { revision } => {
            state.notify_conversation(
                &req.cx.principal(),
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
    let id = crate::store::decode_id(raw)?;
    let store = state.history_store()?;
    let mut body: ConversationPatch = req.json().await?;
    body.title = body.title.trim().to_owned();
    if body.title.is_empty() {
        return Err(ApiError::BadRequest("title is required".into()));
    }
    match store.patch(&req.cx.principal(), &id, body).await? {
        Some(revision) => {
            state.notify_conversation(
                &req.cx.principal(),
                ServerEventType::ConversationRenamed,
                &id,
                Some(revision),
            );
            Ok(json(StatusCode::OK, &SaveResponse { ok: true, revision }))
        }
        None => Err(ApiError::NotFound("conversation not found".into())),
    }
}

/// `POST {id}/branch` (`{"node": …}`): the branch through that stored message becomes the
/// active one.
pub(crate) async fn action(state: &State, mut req: Req, raw: &str) -> Result<Response, ApiError> {
    let Some((raw_id, "branch")) = raw.split_once('/') else {
        return Err(ApiError::NotFound(
            "no such action: POST {id}/branch switches branches".into(),
        ));
    };
    let id = crate::store::decode_id(raw_id)?;
    let body: BranchSwitch = req.json().await?;
    let principal = req.cx.principal();
    let outcome = state
        .history_store()?
        .switch_branch(&principal, &id, body.node)
        .await?;
    branch_answer(state, &principal, &id, outcome)
}

/// The answer to a branch switch or delete, and the event for the caller's other tabs.
fn branch_answer(
    state: &State,
    principal: &crate::Principal,
    id: &str,
    outcome: Option<BranchOutcome>,
) -> Result<Response, ApiError> {
    match outcome {
        Some(BranchOutcome::Done { revision }) => {
            state.notify_conversation(
                principal,
                ServerEventType::ConversationSaved,
                id,
                Some(revision),
            );
            Ok(json(StatusCode::OK, &SaveResponse { ok: true, revision }))
        }
        Some(BranchOutcome::NoSuchNode) => Err(ApiError::NotFound(
            "the conversation holds no such message".into(),
        )),
        None => Err(ApiError::NotFound("conversation not found".into())),
    }
}

/// `DELETE {id}/messages/{node}`: that stored message and all that follows it on any branch.
async fn delete_branch(
    state: &State,
    req: Req,
    raw_id: &str,
    rest: &str,
) -> Result<Response, ApiError> {
    let id = crate::store::decode_id(raw_id)?;
    let node = rest
        .strip_prefix("messages/")
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or_else(|| {
            ApiError::NotFound("no such path: DELETE {id}/messages/{node} deletes a branch".into())
        })?;
    let principal = req.cx.principal();
    let outcome = state
        .history_store()?
        .delete_branch(&principal, &id, node)
        .await?;
    branch_answer(state, &principal, &id, outcome)
}

pub(crate) async fn delete(state: &State, req: Req, raw: &str) -> Result<Response, ApiError> {
    if let Some((raw_id, rest)) = raw.split_once('/') {
        return delete_branch(state, req, raw_id, rest).await;
    }
    let id = crate::store::decode_id(raw)?;
    if state
        .history_store()?
        .delete(&req.cx.principal(), &id)
        .await?
    {
        state.notify_conversation(
            &req.cx.principal(),
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
