//! `POST /api/app-proxy`: the JSON-RPC calls an MCP App view makes, always scoped to the server
//! owning the tool that mounted it (`via`). Answers are MCP result shapes, so the UI's bridge
//! passes them to the view unchanged. Other methods are 400; visibility and ownership failures
//! are 403.

use lmchatkit_protocol::{
    AppProxyRequest, Resource, ResourceResult, ToolCallRequest, ToolCallSource,
};
use serde_json::{Value, json};

use crate::state::State;
use crate::access;
use crate::http_util::{self, ApiError, Response};
use crate::service::Req;

pub(crate) async fn proxy(state: &State, mut req: Req) -> Result<Response, ApiError> {
    let body: AppProxyRequest = req.json().await?;
    let via = body.via.trim();
    let host = &*state.host;
    let cx = &req.cx;
    let scope = access::view_scope(host, cx, via).await?;
    let result = match body.method.as_str() {
        "tools/call" => {
            let name = body
                .params
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim();
            // Views name their server's tools without the namespace.
            let name = access::view_tool_name(host, &scope, name).await;
            let call = ToolCallRequest {
                name,
                arguments: body.params.get("arguments").cloned().unwrap_or(Value::Null),
                source: ToolCallSource::App,
                via: Some(via.to_owned()),
            };
            let r = access::call_tool(host, cx, &call).await?;
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
            let r = access::read_resource(host, cx, uri, Some(via)).await?;
            json!({"contents": [mcp_contents(r)]})
        }
        "resources/list" => {
            let list = access::list_resources(host, cx, Some(via)).await?;
            let items: Vec<Value> = list
                .iter()
                .filter(|r| !r.template)
                .map(mcp_resource)
                .collect();
            json!({"resources": items})
        }
        "resources/templates/list" => {
            let list = access::list_resources(host, cx, Some(via)).await?;
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
            let prompts = access::list_prompts(host, cx, Some(via)).await?;
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
