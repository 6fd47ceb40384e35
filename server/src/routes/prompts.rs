//! `GET /api/prompts` and `POST /api/prompts/get`.

use lmchatkit_protocol::PromptGetRequest;

use crate::access::{self, Scope};
use crate::api::{ApiError, Response, json, json_etag};
use crate::routes::Req;
use crate::state::State;

pub(crate) async fn list(state: &State, req: Req) -> Result<Response, ApiError> {
    let scope = Scope::user(req.cx.clone());
    let prompts = access::list_prompts(&*state.host, &scope).await?;
    Ok(json_etag(&req.parts.headers, &prompts))
}

pub(crate) async fn get(state: &State, mut req: Req) -> Result<Response, ApiError> {
    let body: PromptGetRequest = req.json().await?;
    let result = access::get_prompt(&*state.host, &req.cx, &body.name, body.args).await?;
    Ok(json(http::StatusCode::OK, &result))
}
