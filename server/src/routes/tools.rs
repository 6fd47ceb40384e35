//! `POST /api/tools/call`, and the checks every tool call passes (shared with the app proxy):
//! visibility (the caller — model or app view — must be allowed to call the tool) and, for app
//! views, same-server ownership. Both fail closed: an unknown tool, a failed listing or an
//! unknown source is refused.

use lmchatkit_protocol::{
    SKILL_TOOL_NAME, ToolCallRequest, ToolCallSource, ToolResult, Visibility,
};
use serde_json::Value;

use crate::config::Config;
use crate::host::{HostError, RequestContext, ToolSource};
use crate::http_util::{ApiError, Response, json, read_json};
use crate::service::Req;

pub(crate) async fn call(config: &Config, req: Req) -> Result<Response, ApiError> {
    let body: ToolCallRequest = read_json(&req.parts.headers, req.body, config.body_limit).await?;
    let result = call_checked(config, &req.cx, &body).await?;
    Ok(json(http::StatusCode::OK, &result))
}

/// Runs a tool call after the visibility and ownership checks.
pub(crate) async fn call_checked(
    config: &Config,
    cx: &RequestContext,
    call: &ToolCallRequest,
) -> Result<ToolResult, ApiError> {
    let name = call.name.trim();
    if name.is_empty() {
        return Err(ApiError::BadRequest("name is required".into()));
    }
    let arguments = match &call.arguments {
        Value::Null => Value::Object(Default::default()),
        v => v.clone(),
    };
    if call.source == ToolCallSource::Model && name == SKILL_TOOL_NAME {
        return Ok(read_skill(config, cx, &arguments).await);
    }
    let who = match call.source {
        ToolCallSource::Model => Visibility::Model,
        ToolCallSource::App => Visibility::App,
    };
    check_visibility(config, cx, name, who).await?;
    if call.source == ToolCallSource::App {
        let via = call.via.as_deref().map(str::trim).filter(|v| !v.is_empty());
        let via = via
            .ok_or_else(|| ApiError::BadRequest("via is required for calls from a view".into()))?;
        check_same_server(config, cx, name, via).await?;
    }
    match config.host.call_tool(cx, name, arguments).await {
        Ok(r) => Ok(r),
        // The model (and the user) should see a failing tool, not a transport error.
        Err(HostError::Upstream(msg)) => {
            Ok(ToolResult::error(format!("tool {name} failed: {msg}")))
        }
        Err(e) => Err(e.into()),
    }
}

async fn check_visibility(
    config: &Config,
    cx: &RequestContext,
    name: &str,
    who: Visibility,
) -> Result<(), ApiError> {
    let tools = config.host.list_all_tools(cx).await.map_err(|e| {
        ApiError::Forbidden(format!(
            "tool {name:?} is not callable: tool list unavailable ({e})"
        ))
    })?;
    match tools.iter().find(|t| t.name == name) {
        None => Err(ApiError::Forbidden(format!(
            "tool {name:?} is not recognized"
        ))),
        Some(t) if !t.visible_to(who) => Err(ApiError::Forbidden(format!(
            "tool {name:?} is not callable from this context"
        ))),
        Some(_) => Ok(()),
    }
}

/// A view may only reach tools of the server that owns the tool which mounted it.
pub(crate) async fn check_same_server(
    config: &Config,
    cx: &RequestContext,
    name: &str,
    via: &str,
) -> Result<(), ApiError> {
    let (a, b) = (
        config.host.tool_source(cx, via).await,
        config.host.tool_source(cx, name).await,
    );
    match (&a, &b) {
        (ToolSource::Unscoped, ToolSource::Unscoped) => Ok(()),
        (ToolSource::Scoped(x), ToolSource::Scoped(y)) if x == y => Ok(()),
        (ToolSource::Unknown, _) => Err(ApiError::Forbidden(format!(
            "tool {via:?} is not recognized"
        ))),
        _ => Err(ApiError::Forbidden(format!(
            "tool {name:?} does not belong to the calling view's server"
        ))),
    }
}

/// The virtual skill tool: reads a `skill://` resource for the model.
async fn read_skill(config: &Config, cx: &RequestContext, arguments: &Value) -> ToolResult {
    let uri = arguments
        .get("uri")
        .or_else(|| arguments.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .trim_start_matches('@');
    if uri.is_empty() {
        return ToolResult::error("Error: skill URI is required");
    }
    match config.host.read_resource(cx, uri).await {
        Ok(r) => ToolResult::text(
            r.text
                .filter(|t| !t.is_empty())
                .or(r.blob)
                .unwrap_or_default(),
        ),
        Err(_) => ToolResult::error(format!("Error: skill not found: {uri}")),
    }
}
