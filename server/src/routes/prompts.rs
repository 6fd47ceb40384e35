//! `GET /api/prompts` and `POST /api/prompts/get`.

use lmchatkit_protocol::PromptGetRequest;

use crate::config::Config;
use crate::http_util::{ApiError, Response, json, json_etag, read_json};
use crate::service::Req;

pub(crate) async fn list(config: &Config, req: Req) -> Result<Response, ApiError> {
    let prompts = config.host.list_prompts(&req.cx).await?;
    Ok(json_etag(&req.parts.headers, &prompts))
}

pub(crate) async fn get(config: &Config, req: Req) -> Result<Response, ApiError> {
    let body: PromptGetRequest = read_json(&req.parts.headers, req.body, config.body_limit).await?;
    if body.name.trim().is_empty() {
        return Err(ApiError::BadRequest("name is required".into()));
    }
    let result = config
        .host
        .get_prompt(&req.cx, body.name.trim(), body.args)
        .await?;
    Ok(json(http::StatusCode::OK, &result))
}
