//! The toolset as an MCP server (rmcp): `tools/list` and `tools/call` with the un-namespaced
//! names (an MCP client adds its own namespace), the hints as tool annotations.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use super::{ClapToolset, CommandHint};
use crate::mcp::McpServerConfig;

/// An rmcp [`ServerHandler`] serving a [`ClapToolset`]'s tools. Made by
/// [`ClapToolset::mcp_server`].
///
/// `get_tool` is left at rmcp's default (no schema check by rmcp), so a bad input reaches clap
/// and the client reads clap's message in an `isError` result rather than a protocol error.
#[derive(Clone, Debug)]
pub struct ClapMcpServer {
    tools: ClapToolset,
}

impl ClapToolset {
    /// This toolset as an rmcp server (serve it on any rmcp transport).
    pub fn mcp_server(&self) -> ClapMcpServer {
        ClapMcpServer {
            tools: self.clone(),
        }
    }

    /// Serves the tools as an MCP server on stdin/stdout until the client goes away (for a
    /// `my-cli mcp` command that MCP clients start).
    pub async fn serve_stdio(&self) -> std::io::Result<()> {
        let running = self
            .mcp_server()
            .serve(rmcp::transport::stdio())
            .await
            .map_err(std::io::Error::other)?;
        running.waiting().await.map_err(std::io::Error::other)?;
        Ok(())
    }

    /// The MCP server as an in-process server of the [`McpHub`](crate::McpHub) named `name`
    /// (a fresh server on a pipe per connect; needs a Tokio runtime when the hub connects).
    /// Mostly for tests: [`StandardHost::with_toolset`](crate::StandardHost::with_toolset)
    /// offers the tools without MCP in between.
    pub fn in_process_server(&self, name: impl Into<String>) -> McpServerConfig {
        let server = self.mcp_server();
        McpServerConfig::in_process(name, move || {
            let (client, end) = tokio::io::duplex(1 << 20);
            let server = server.clone();
            tokio::spawn(async move {
                match server.serve(end).await {
                    Ok(running) => {
                        if let Err(e) = running.waiting().await {
                            tracing::warn!(error = %e, "CLI MCP server ended with an error");
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "CLI MCP server: handshake failed"),
                }
            });
            client
        })
    }
}

fn rmcp_tool(tools: &ClapToolset, name: &str) -> Option<Tool> {
    let leaf = tools.leaf(name)?;
    let schema = match &leaf.schema {
        Value::Object(m) => m.clone(),
        _ => Default::default(),
    };
    let annotations = match leaf.hint {
        CommandHint::ReadOnly => ToolAnnotations::new().read_only(true),
        CommandHint::Mutating => ToolAnnotations::new().read_only(false).destructive(true),
    };
    Some(
        Tool::new(
            leaf.name.clone(),
            leaf.description.clone(),
            Arc::new(schema),
        )
        .with_annotations(annotations),
    )
}

impl ServerHandler for ClapMcpServer {
    fn get_info(&self) -> ServerConfig {
        let cmd = self.tools.command();
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new(
                cmd.get_name().to_owned(),
                cmd.get_version().unwrap_or("0.0.0").to_owned(),
            ),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = self
            .tools
            .leaves()
            .iter()
            .filter_map(|l| rmcp_tool(&self.tools, &l.name))
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if self.tools.leaf(&request.name).is_none() {
            return Err(McpError::invalid_params(
                format!("unknown tool {:?}", request.name),
                None,
            ));
        }
        let args = request.arguments.map_or(Value::Null, Value::Object);
        let out = self.tools.run(&request.name, args).await;
        let content = vec![ContentBlock::text(out.text)];
        let mut result = if out.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        };
        result.structured_content = out.structured;
        Ok(result.into())
    }
}
