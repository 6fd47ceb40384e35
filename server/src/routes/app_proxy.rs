//! `POST /api/app-proxy`: the JSON-RPC calls an MCP App view makes, always in the scope of the
//! server owning the tool that mounted it (`via`), as the access layer decides. The body is a
//! typed [`AppCall`]; answers are its [`AppResult`] in MCP's result shapes, so the UI's bridge
//! passes them to the view unchanged. Other methods and bad params are 400 (the body does not
//! deserialize); visibility and ownership failures, and tools the operator's policy denies, are
//! 403.

use lmchatkit_protocol::{
    AppCall, AppProxyRequest, AppResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, McpResource, McpResourceTemplate, ReadResourceResult,
};
use serde_json::Value;

use crate::access;
use crate::api::{self, ApiError, Response};
use crate::routes::Req;
use crate::state::State;

pub(crate) async fn proxy(state: &State, mut req: Req) -> Result<Response, ApiError> {
    let body: AppProxyRequest = req.json().await?;
    let host = &*state.host;
    let scope = access::view_scope(host, &req.cx, &body.via).await?;
    let result = match body.call {
        AppCall::CallTool(params) => {
            // Views name their server's tools without the namespace.
            let name = access::view_tool_name(host, &scope, &params.name).await;
            let arguments = params.arguments.map_or(Value::Null, Value::Object);
            access::approval::check_not_denied(&state.approvals, &scope, &name, &arguments).await?;
            AppResult::CallTool(
                access::call_tool(host, &scope, &name, &arguments)
                    .await?
                    .into(),
            )
        }
        AppCall::ReadResource(params) => {
            if params.uri.trim().is_empty() {
                return Err(ApiError::BadRequest("params.uri is required".into()));
            }
            let r = access::read_resource(host, &scope, &params.uri).await?;
            AppResult::ReadResource(ReadResourceResult {
                contents: vec![r.into()],
            })
        }
        AppCall::ListResources(_) => {
            let list = access::list_resources(host, &scope).await?;
            let resources = list
                .iter()
                .filter(|r| !r.template)
                .map(McpResource::from)
                .collect();
            AppResult::ListResources(ListResourcesResult { resources })
        }
        AppCall::ListResourceTemplates(_) => {
            let list = access::list_resources(host, &scope).await?;
            let resource_templates = list
                .iter()
                .filter(|r| r.template)
                .map(McpResourceTemplate::from)
                .collect();
            AppResult::ListResourceTemplates(ListResourceTemplatesResult { resource_templates })
        }
        AppCall::ListPrompts(_) => {
            let mut prompts = access::list_prompts(host, &scope).await?;
            // The UI's icon flag is not MCP's (`icons`): views get none.
            prompts.iter_mut().for_each(|p| p.icon = false);
            AppResult::ListPrompts(ListPromptsResult { prompts })
        }
    };
    Ok(api::json(http::StatusCode::OK, &result))
}
