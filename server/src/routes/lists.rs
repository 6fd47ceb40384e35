//! `GET /api/personas`, `/api/commands`, `/api/models` and `/api/config`.

use lmchatkit_protocol::{ConfigResponse, HistoryMode, Persona};

use crate::access;
use crate::api::{ApiError, Response, json_etag};
use crate::routes::Req;
use crate::state::State;

pub(crate) async fn personas(state: &State, req: Req) -> Result<Response, ApiError> {
    let mut list = match &state.personas {
        Some(src) => src.personas(&req.cx).await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "persona source failed; offering the Default persona");
            Vec::new()
        }),
        None => Vec::new(),
    };
    if list.is_empty() {
        list.push(Persona::default_persona());
    }
    if state.settings.hide_system_prompts {
        list.iter_mut().for_each(|p| p.system_prompt = None);
    }
    Ok(json_etag(&req.parts.headers, &list))
}

pub(crate) async fn commands(state: &State, req: Req) -> Result<Response, ApiError> {
    let list = match &state.commands {
        Some(src) => src.commands(&req.cx).await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "command source failed");
            Vec::new()
        }),
        None => Vec::new(),
    };
    Ok(json_etag(&req.parts.headers, &list))
}

pub(crate) async fn models(state: &State, req: Req) -> Result<Response, ApiError> {
    let list = state.models(&req.cx).await?;
    Ok(json_etag(&req.parts.headers, &list))
}

pub(crate) fn config(state: &State, req: Req) -> Result<Response, ApiError> {
    let settings = &state.settings;
    let history = match state.history {
        Some(_) => HistoryMode::Server,
        None => HistoryMode::Browser,
    };
    let body = ConfigResponse::new(history)
        .with_upload(settings.file_upload, settings.max_upload_bytes)
        .with_events(state.events.is_some())
        .with_sandbox_origin(settings.sandbox_origin.clone())
        .with_demo(settings.demo)
        .with_user_mcp(user_mcp_on(state, &req));
    // MCP states and set-up problems name URLs and commands: the operator's, when one is set.
    let body = match access::operator::sees_setup(settings.operator.as_deref(), &req.cx) {
        false => body,
        true => body
            .with_mcp(state.mcp_status.as_ref().map(|f| f()).unwrap_or_default())
            .with_problems(state.host.setup_problems()),
    };
    Ok(json_etag(&req.parts.headers, &body))
}

/// Users' own MCP servers are on for this request: the routes answer the anonymous user 401,
/// so they are offered to signed-in users only.
#[cfg(feature = "mcp")]
fn user_mcp_on(state: &State, req: &Req) -> bool {
    state.user_mcp.is_some() && req.cx.has_principal()
}

#[cfg(not(feature = "mcp"))]
fn user_mcp_on(_: &State, _: &Req) -> bool {
    false
}
