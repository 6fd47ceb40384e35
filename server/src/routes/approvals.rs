//! `GET`/`PUT {prefix}/api/tools/approvals`: the caller's "always allow" list (tools that run
//! without asking, in every chat). A `PUT` replaces the list after cleaning it (trimmed, blanks
//! and repeats dropped; too many names or too long a name is 400). A tool the operator's
//! policy denies may be listed, but stays denied (see [`crate::access::approval`]).

use http::StatusCode;
use lmchatkit_protocol::ToolApprovals;

use crate::access::approval::clean_list;
use crate::api::{ApiError, Response, json};
use crate::routes::Req;
use crate::state::State;

fn storage(e: impl std::fmt::Display) -> ApiError {
    tracing::warn!(error = %e, "approval store failed");
    ApiError::Internal("the approval store failed".into())
}

pub(crate) async fn get(state: &State, req: Req) -> Result<Response, ApiError> {
    let always = state
        .approvals
        .store
        .always(&req.cx.principal())
        .await
        .map_err(storage)?;
    Ok(json(StatusCode::OK, &ToolApprovals::new(always)))
}

pub(crate) async fn put(state: &State, mut req: Req) -> Result<Response, ApiError> {
    let body: ToolApprovals = req.json().await?;
    let always = clean_list(body.always)?;
    state
        .approvals
        .store
        .set_always(&req.cx.principal(), always.clone())
        .await
        .map_err(storage)?;
    Ok(json(StatusCode::OK, &ToolApprovals::new(always)))
}
