//! `GET /api/resources` and `POST /api/resources/read` (with `via`: only from the server that
//! owns that tool; an unknown `via` is refused).

use lmchatkit_protocol::{ResourceReadRequest, ResourceResult};

use crate::config::Config;
use crate::host::{RequestContext, ToolSource};
use crate::http_util::{ApiError, Response, json, json_etag, read_json};
use crate::service::Req;

pub(crate) async fn list(config: &Config, req: Req) -> Result<Response, ApiError> {
    let resources = config.host.list_resources(&req.cx).await?;
    Ok(json_etag(&req.parts.headers, &resources))
}

pub(crate) async fn read(config: &Config, req: Req) -> Result<Response, ApiError> {
    let body: ResourceReadRequest =
        read_json(&req.parts.headers, req.body, config.body_limit).await?;
    let result = read_scoped(config, &req.cx, body.uri.trim(), body.via.as_deref()).await?;
    Ok(json(http::StatusCode::OK, &result))
}

/// Reads `uri`; with `via`, only from the server owning that tool.
pub(crate) async fn read_scoped(
    config: &Config,
    cx: &RequestContext,
    uri: &str,
    via: Option<&str>,
) -> Result<ResourceResult, ApiError> {
    if uri.is_empty() {
        return Err(ApiError::BadRequest("uri is required".into()));
    }
    match via.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(config.host.read_resource(cx, uri).await?),
        Some(via) => match config.host.tool_source(cx, via).await {
            ToolSource::Scoped(source) => {
                Ok(config.host.read_resource_from(cx, &source, uri).await?)
            }
            ToolSource::Unscoped => Ok(config.host.read_resource(cx, uri).await?),
            ToolSource::Unknown => Err(ApiError::Forbidden(format!(
                "tool {via:?} is not recognized"
            ))),
        },
    }
}
