//! `POST /api/tools/call`: a tool call of the model (approved in the UI) or of an MCP App view,
//! checked and run by the access layer. A call of a tool the operator's approval policy denies
//! is refused (403) before anything else, whoever calls (see [`crate::access::approval`]).

use lmchatkit_protocol::ToolCallRequest;

use crate::access;
use crate::api::{ApiError, Response, json};
use crate::routes::Req;
use crate::state::State;

pub(crate) async fn call(state: &State, mut req: Req) -> Result<Response, ApiError> {
    let body: ToolCallRequest = req.json().await?;
    let host = &*state.host;
    let scope = access::call_scope(host, &req.cx, &body).await?;
    let approvals = &state.approvals;
    access::approval::check_not_denied(approvals, &scope, &body.name, &body.arguments).await?;
    let result = access::call_tool(host, &scope, &body.name, &body.arguments).await?;
    Ok(json(http::StatusCode::OK, &result))
}
