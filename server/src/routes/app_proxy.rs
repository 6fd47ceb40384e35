//! `POST /api/app-proxy`: the JSON-RPC calls an MCP App view makes, always scoped to the server
//! owning the tool that mounted it (`via`). Answers are MCP result shapes, so the UI's bridge
//! passes them to the view unchanged. Other methods are 400; visibility and ownership failures
//! are 403.

use lmchatkit_protocol::{
    AppProxyRequest, Resource, ResourceResult, ToolCallRequest, ToolCallSource,
};
use serde_json::{Value, json};

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
    let result = match body.method.as_str() {
        "tools/call" => {
            let name = body
                .params
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim();
            // Views name their server's tools without the namespace.
            let name = if name.is_empty() {
                String::new()
            } else {
                config.host.resolve_view_tool(cx, via, name).await
            };
            let call = ToolCallRequest {
                name,
                arguments: body.params.get("arguments").cloned().unwrap_or(Value::Null),
                source: ToolCallSource::App,
                via: Some(via.to_owned()),
            };
            let r = tools::call_checked(config, cx, &call).await?;
            let mut out = json!({"content": [{"type": "text", "text": r.content}]});
            if r.is_error {
                out["isError"] = Value::Bool(true);
            }
            if let Some(sc) = r.structured_content {
                out["structuredContent"] = sc;
            }
            out
        }
        "resources/read" => {
            let uri = body.params.get("uri").and_then(Value::as_str).unwrap_or("");
            if uri.trim().is_empty() {
                return Err(ApiError::BadRequest("params.uri is required".into()));
            }
            let r = resources::read_scoped(config, cx, uri, Some(via)).await?;
            json!({"contents": [mcp_contents(r)]})
        }
        "resources/list" => {
            let list = scoped_resources(config, cx, via).await?;
            let items: Vec<Value> = list
                .iter()
                .filter(|r| !r.template)
                .map(mcp_resource)
                .collect();
            json!({"resources": items})
        }
        "resources/templates/list" => {
            let list = scoped_resources(config, cx, via).await?;
            let items: Vec<Value> = list
                .iter()
                .filter(|r| r.template)
                .map(|r| {
                    let mut v = mcp_resource(r);
                    if let Some(uri) = v.as_object_mut().and_then(|o| o.remove("uri")) {
                        v["uriTemplate"] = uri;
                    }
                    v
                })
                .collect();
            json!({"resourceTemplates": items})
        }
        "prompts/list" => {
            let prompts = match source_of(config, cx, via).await? {
                Some(s) => config.host.list_prompts_from(cx, &s).await?,
                None => config.host.list_prompts(cx).await?,
            };
            json!({"prompts": prompts})
        }
        other => {
            return Err(ApiError::BadRequest(format!(
                "method {other:?} is not allowed from a view"
            )));
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

fn mcp_resource(r: &Resource) -> Value {
    let mut v = json!({"uri": r.uri});
    if let Some(n) = &r.name {
        v["name"] = json!(n);
    }
    if let Some(d) = &r.description {
        v["description"] = json!(d);
    }
    if let Some(m) = &r.mime_type {
        v["mimeType"] = json!(m);
    }
    v
}

fn mcp_contents(r: ResourceResult) -> Value {
    let mut v = json!({"uri": r.uri});
    if let Some(m) = r.mime_type {
        v["mimeType"] = json!(m);
    }
    match (r.text, r.blob) {
        (Some(t), _) => v["text"] = json!(t),
        (None, Some(b)) => v["blob"] = json!(b),
        (None, None) => v["text"] = json!(""),
    }
    if let Some(ui) = r.ui {
        v["_meta"] = json!({"ui": ui});
    }
    v
}
