//! `POST /api/app-proxy`: the JSON-RPC calls an MCP App view makes, always scoped to the server
//! owning the tool that mounted it (`via`). The body is a typed [`AppCall`]; answers are its
//! [`AppResult`] in MCP's result shapes, so the UI's bridge passes them to the view unchanged.
//! Other methods and bad params are 400 (the body does not deserialize); visibility and
//! ownership failures are 403.

use lmchatkit_protocol::{
    AppCall, AppProxyRequest, AppResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, McpResource, McpResourceTemplate, ReadResourceResult, Resource,
    ToolCallRequest, ToolCallSource,
};
use serde_json::Value;

use crate::config::Config;
use crate::host::{RequestContext, ToolSource};
use crate::http_util::{self, ApiError, Response, read_json};
use crate::routes::{resources, tools};
use crate::service::Req;

pub(crate) async fn proxy(config: &Config, req: Req) -> Result<Response, ApiError> {
    let body: AppProxyRequest = read_json(&req.parts.headers, req.body, config.body_limit).await?;
    let via = body.via.trim();
    if via.is_empty() {
        return Err(ApiError::BadRequest("via is required".into()));
    }
    let cx = &req.cx;
    let result = match body.call {
        AppCall::CallTool(params) => {
            let name = params.name.trim();
            // Views name their server's tools without the namespace.
            let name = if name.is_empty() {
                String::new()
            } else {
                config.host.resolve_view_tool(cx, via, name).await
            };
            let call = ToolCallRequest {
                name,
                arguments: params.arguments.map_or(Value::Null, Value::Object),
                source: ToolCallSource::App,
                via: Some(via.to_owned()),
            };
            let r = tools::call_checked(config, cx, &call).await?;
            AppResult::CallTool(r.into())
        }
        AppCall::ReadResource(params) => {
            let uri = params.uri.as_str();
            if uri.trim().is_empty() {
                return Err(ApiError::BadRequest("params.uri is required".into()));
            }
            let r = resources::read_scoped(config, cx, uri, Some(via)).await?;
            AppResult::ReadResource(ReadResourceResult {
                contents: vec![r.into()],
            })
        }
        AppCall::ListResources(_) => {
            let list = scoped_resources(config, cx, via).await?;
            let resources = list
                .iter()
                .filter(|r| !r.template)
                .map(McpResource::from)
                .collect();
            AppResult::ListResources(ListResourcesResult { resources })
        }
        AppCall::ListResourceTemplates(_) => {
            let list = scoped_resources(config, cx, via).await?;
            let resource_templates = list
                .iter()
                .filter(|r| r.template)
                .map(McpResourceTemplate::from)
                .collect();
            AppResult::ListResourceTemplates(ListResourceTemplatesResult { resource_templates })
        }
        AppCall::ListPrompts(_) => {
            let prompts = match source_of(config, cx, via).await? {
                Some(s) => config.host.list_prompts_from(cx, &s).await?,
                None => config.host.list_prompts(cx).await?,
            };
            AppResult::ListPrompts(ListPromptsResult { prompts })
        }
    };
    Ok(http_util::json(http::StatusCode::OK, &result))
}

/// The server owning `via` (`None` for a single-source host); unknown fails closed.
async fn source_of(
    config: &Config,
    cx: &RequestContext,
    via: &str,
) -> Result<Option<String>, ApiError> {
    match config.host.tool_source(cx, via).await {
        ToolSource::Scoped(s) => Ok(Some(s)),
        ToolSource::Unscoped => Ok(None),
        ToolSource::Unknown => Err(ApiError::Forbidden(format!(
            "tool {via:?} is not recognized"
        ))),
    }
}

async fn scoped_resources(
    config: &Config,
    cx: &RequestContext,
    via: &str,
) -> Result<Vec<Resource>, ApiError> {
    Ok(match source_of(config, cx, via).await? {
        Some(s) => config.host.list_resources_from(cx, &s).await?,
        None => config.host.list_resources(cx).await?,
    })
}
