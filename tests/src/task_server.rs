//! An MCP server (rmcp, served in process) whose tool runs as a task (the tasks extension of MCP
//! 2026-07-28, SEP-2663, through rmcp's `TaskManager`): `long_job {steps, ms}` answers
//! `tools/call` with a task at once, says "step i of n" as it goes, and completes with
//! "job done after n steps"; `tasks/cancel` stops it (counted in [`TaskServer::cancelled`]).
//! `quick` answers at once, as an ordinary tool. `ask_job` asks the user for a name from inside
//! its task (`tasks/update` answers it) and completes with "hello {name}" (or what they did).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::*;
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};

/// The server; clones share its tasks and counters.
#[derive(Clone, Default)]
pub struct TaskServer {
    tasks: TaskManager,
    /// Tasks that stopped because the client cancelled them.
    pub cancelled: Arc<AtomicUsize>,
    /// `tasks/get` requests answered.
    pub polls: Arc<AtomicUsize>,
}

impl TaskServer {
    /// A new server.
    pub fn new() -> Self {
        Self::default()
    }

    /// A connector for `McpServerConfig::in_process`: each connection gets this server.
    pub fn connector(&self) -> impl Fn() -> tokio::io::DuplexStream + Send + Sync + 'static {
        let server = self.clone();
        move || {
            let (client, srv) = tokio::io::duplex(1 << 20);
            let server = server.clone();
            tokio::spawn(async move {
                if let Ok(running) = server.serve(srv).await {
                    let _ = running.waiting().await;
                }
            });
            client
        }
    }
}

fn tool(name: &str, props: serde_json::Value) -> Tool {
    let schema = serde_json::json!({"type": "object", "properties": props});
    Tool::new(
        name.to_owned(),
        format!("The tool {name}."),
        Arc::new(schema.as_object().cloned().unwrap_or_default()),
    )
}

impl ServerHandler for TaskServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("lmchatkit-task-server", "0.1.0"))
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![
            tool(
                "long_job",
                serde_json::json!({"steps": {"type": "integer"}, "ms": {"type": "integer"}}),
            ),
            tool("quick", serde_json::json!({})),
            tool("ask_job", serde_json::json!({})),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.unwrap_or_default();
        let num = |k: &str, d: u64| args.get(k).and_then(|v| v.as_u64()).unwrap_or(d);
        match request.name.as_ref() {
            "quick" => Ok(CallToolResult::success(vec![ContentBlock::text("quick result")]).into()),
            "ask_job" => {
                let task =
                    self.tasks
                        .spawn(TaskOptions::new().with_poll_interval_ms(100), move |cx| {
                            Box::pin(async move {
                                let schema = ElicitationSchema::builder()
                                    .required_string("name")
                                    .build()
                                    .map_err(|e| {
                                        TaskExit::Error(McpError::internal_error(e, None))
                                    })?;
                                let ask = ElicitRequest::new(
                                    ElicitRequestParams::FormElicitationParams {
                                        meta: None,
                                        message: "Your name?".into(),
                                        requested_schema: schema,
                                    },
                                );
                                let answer = cx
                                    .request_input("who", InputRequest::Elicitation(ask))
                                    .await?;
                                let text = match answer["action"].as_str() {
                                    Some("accept") => format!(
                                        "hello {}",
                                        answer["content"]["name"].as_str().unwrap_or("?")
                                    ),
                                    other => format!("not told: {}", other.unwrap_or("?")),
                                };
                                Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
                            })
                        });
                Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
            }
            "long_job" => {
                let (steps, ms) = (num("steps", 3), num("ms", 300));
                let cancelled = self.cancelled.clone();
                let task = self.tasks.spawn(
                    TaskOptions::new()
                        .with_poll_interval_ms(100)
                        .with_status_message("starting"),
                    move |cx| {
                        Box::pin(async move {
                            for i in 1..=steps {
                                tokio::select! {
                                    _ = tokio::time::sleep(Duration::from_millis(ms / steps.max(1))) => {}
                                    _ = cx.cancelled() => {
                                        cancelled.fetch_add(1, Ordering::SeqCst);
                                        return Err(TaskExit::Cancelled);
                                    }
                                }
                                cx.set_status_message(format!("step {i} of {steps}"));
                            }
                            Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                                "job done after {steps} steps"
                            ))]))
                        })
                    },
                );
                Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
            }
            other => Err(McpError::invalid_params(
                format!("unknown tool {other}"),
                None,
            )),
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.polls.fetch_add(1, Ordering::SeqCst);
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.cancel_task(&request.task_id)
    }
}
