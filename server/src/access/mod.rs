//! The access layer: the one place that decides who may do what, for whom. Routes and the turn
//! builder ask it; they never check visibility, ownership or sources themselves, and never call
//! each other.
//!
//! Every request acts in a [`Scope`]: the principal (from the host's auth layer), the
//! [`Role`] that acts (the user through the UI, the model through a tool call, or an MCP App
//! view) and the [`Sources`] a host may answer from (all of them, or the one server whose tool
//! mounted the calling view). [`Host`] methods receive the scope, so a host can answer per
//! principal and per server.
//!
//! Decisions:
//! - **Fail closed.** A tool that no listing names, a listing that fails, or a tool source the
//!   host does not know is refused (403), never guessed.
//! - **Visibility.** The model calls only tools visible to the model; a view only tools visible
//!   to apps, of the server that owns the tool that mounted it (`via`).
//! - **Views are scoped to one server.** Everything a view reads or lists goes through a scope
//!   with [`Sources::Server`]; a host that answers `Unscoped` for `via` (it has a single source)
//!   gets [`Sources::All`].
//! - **Reads name what was offered.** `@uri` references and reads without `via` resolve only
//!   URIs that a listing offers (a resource, or a match of a resource template); an unlisted URI
//!   is an error and reaches no server. A host then reads it from the source that lists it.
//! - **The skill tool** (`lmchatkit__get_skill`) exists only while skills are listed, and reads
//!   only `skill://` URIs that the skill index lists.

pub mod approval;
pub(crate) mod host_names;
pub mod input;
pub(crate) mod operator;
mod template;

#[cfg(test)]
mod tests;

pub use crate::host::{Role, Scope, Sources};
pub(crate) use template::matches_template;

use std::collections::BTreeMap;

use lmchatkit_protocol::{
    Prompt, PromptResult, Resource, ResourceResult, SKILL_TOOL_NAME, Tool, ToolCallRequest,
    ToolCallSource, ToolResult, Visibility,
};
use serde_json::{Value, json};

use crate::error::Failure;
use crate::host::{Host, HostError, IconImage, IconOf, RequestContext, ToolInput, ToolSource};

/// The scope of a view mounted by the tool `via`: its server's, or every source for a
/// single-source host. An unknown `via` is refused.
pub(crate) async fn view_scope(
    host: &dyn Host,
    cx: &RequestContext,
    via: &str,
) -> Result<Scope, Failure> {
    let via = via.trim();
    if via.is_empty() {
        return Err(Failure::Invalid("via is required".into()));
    }
    match host.tool_source(cx, via).await {
        ToolSource::Scoped(server) => Ok(Scope::view(cx.clone(), Some(server))),
        ToolSource::Unscoped => Ok(Scope::view(cx.clone(), None)),
        ToolSource::Unknown => Err(Failure::Denied(format!("tool {via:?} is not recognized"))),
    }
}

/// The tools offered to the model for a turn: the model-visible ones, plus the skill tool
/// while skills are listed.
pub(crate) async fn model_tools(host: &dyn Host, cx: &RequestContext) -> Vec<Tool> {
    let scope = Scope::model(cx.clone());
    let mut tools: Vec<Tool> = match host.list_tools(&scope).await {
        Ok(t) => t
            .into_iter()
            .filter(|t| t.visible_to(Visibility::Model))
            .collect(),
        Err(e) => {
            tracing::warn!(error = %e, "listing tools failed; the turn runs without tools");
            Vec::new()
        }
    };
    if !tools.iter().any(|t| t.name == SKILL_TOOL_NAME) && !skills(host, &scope).await.is_empty() {
        tools.push(skill_tool());
    }
    tools
}

/// The scope of a tool call: the model's, or the view's that `via` names.
pub(crate) async fn call_scope(
    host: &dyn Host,
    cx: &RequestContext,
    call: &ToolCallRequest,
) -> Result<Scope, Failure> {
    match call.source {
        ToolCallSource::Model => Ok(Scope::model(cx.clone())),
        ToolCallSource::App => {
            let via = call.via.as_deref().unwrap_or("").trim();
            if via.is_empty() {
                return Err(Failure::Invalid(
                    "via is required for calls from a view".into(),
                ));
            }
            view_scope(host, cx, via).await
        }
    }
}

/// Runs a tool call in `scope` after the checks: visibility for the caller's role and, for a
/// view of one server, ownership by that server.
pub(crate) async fn call_tool(
    host: &dyn Host,
    scope: &Scope,
    name: &str,
    arguments: &Value,
) -> Result<ToolResult, Failure> {
    call_tool_with(host, scope, name, arguments, None).await
}

/// What a call made again carries (checked by [`input::InputTickets`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Again {
    /// The user's answers to the call's request for input.
    Input(ToolInput),
    /// Poll the call's task (and cancel it first when asked).
    Task { id: String, cancel: bool },
}

/// [`call_tool`], or with `again` the call made again with the user's answers, or its task
/// polled; the same checks either way.
pub(crate) async fn call_tool_with(
    host: &dyn Host,
    scope: &Scope,
    name: &str,
    arguments: &Value,
    again: Option<Again>,
) -> Result<ToolResult, Failure> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Failure::Invalid("name is required".into()));
    }
    let arguments = match arguments {
        Value::Null => Value::Object(Default::default()),
        v => v.clone(),
    };
    let tools = host.list_tools(scope).await.map_err(|e| {
        Failure::Denied(format!(
            "tool {name:?} is not callable: tool list unavailable ({e})"
        ))
    })?;
    if scope.role() == Role::Model
        && name == SKILL_TOOL_NAME
        && !tools.iter().any(|t| t.name == name)
    {
        let listed = skills(host, scope).await;
        if !listed.is_empty() {
            return Ok(read_skill(host, scope, &listed, &arguments).await);
        }
    }
    if let Some(server) = scope.server() {
        check_owner(host, scope.cx(), name, server).await?;
    }
    check_visibility(&tools, name, scope.role())?;
    let result = match again {
        None => host.call_tool(scope, name, arguments).await,
        Some(Again::Input(input)) => {
            host.call_tool_with_input(scope, name, arguments, input)
                .await
        }
        Some(Again::Task { id, cancel }) => host.poll_tool_task(scope, name, &id, cancel).await,
    };
    match result {
        Ok(r) => Ok(r),
        // The model (and the user) should see a failing tool, not a transport error.
        Err(HostError::Upstream(msg)) => {
            Ok(ToolResult::error(format!("tool {name} failed: {msg}")))
        }
        Err(e) => Err(e.into()),
    }
}

/// The shortest and longest wait between two polls of a task: the server's interval, kept
/// within these.
pub(crate) const TASK_POLL_MIN: std::time::Duration = std::time::Duration::from_millis(100);
pub(crate) const TASK_POLL_MAX: std::time::Duration = std::time::Duration::from_secs(5);

/// How long the service follows a task for a caller that waits (a view, the AI SDK loop)
/// before it gives up and cancels it: 30 minutes.
pub(crate) const TASK_FOLLOW_FOR: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// How long to wait before polling `task` again.
pub(crate) fn task_wait(task: &lmchatkit_protocol::ToolTask) -> std::time::Duration {
    task.poll_interval_ms
        .map_or(
            std::time::Duration::from_secs(1),
            std::time::Duration::from_millis,
        )
        .clamp(TASK_POLL_MIN, TASK_POLL_MAX)
}

/// Follows a call that runs as a task (`result` has [`ToolResult::task`]) to its result,
/// polling at the server's interval and telling `on_state` each state it sees. Dropping the
/// future stops following; the caller cancels the task if it must ([`TaskGuard`]). A task
/// that outlives [`TASK_FOLLOW_FOR`] is cancelled and is an error result.
pub(crate) async fn follow_task(
    host: &dyn Host,
    scope: &Scope,
    name: &str,
    arguments: &Value,
    mut result: ToolResult,
    mut on_state: impl FnMut(&lmchatkit_protocol::ToolTask),
) -> ToolResult {
    let started = std::time::Instant::now();
    while let Some(task) = result.task.take() {
        if result.input_required.is_some() {
            // The task waits for the user: the caller asks them (the task goes on meanwhile).
            result.task = Some(task);
            return result;
        }
        on_state(&task);
        if started.elapsed() > TASK_FOLLOW_FOR {
            let _ = call_tool_with(
                host,
                scope,
                name,
                arguments,
                Some(Again::Task {
                    id: task.task_id.clone(),
                    cancel: true,
                }),
            )
            .await;
            return ToolResult::error(format!(
                "tool {name} ran as a task for longer than {} minutes and was cancelled",
                TASK_FOLLOW_FOR.as_secs() / 60
            ));
        }
        tokio::time::sleep(task_wait(&task)).await;
        let again = Some(Again::Task {
            id: task.task_id.clone(),
            cancel: false,
        });
        result = match call_tool_with(host, scope, name, arguments, again).await {
            Ok(r) => r,
            Err(e) => ToolResult::error(format!("tool {name}'s task could not be read: {e}")),
        };
    }
    result
}

/// Cancels a task when dropped unless [`disarm`](Self::disarm)ed: a stopped AI SDK run (its
/// loop dropped) cancels the tasks it was following, as the tasks extension says a client
/// that no longer wants a result does.
pub(crate) struct TaskGuard {
    pub host: std::sync::Arc<dyn Host>,
    pub scope: Scope,
    pub name: String,
    pub task_id: Option<String>,
}

impl TaskGuard {
    pub(crate) fn disarm(&mut self) {
        self.task_id = None;
    }
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        let Some(id) = self.task_id.take() else {
            return;
        };
        let (host, scope, name) = (self.host.clone(), self.scope.clone(), self.name.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = host.poll_tool_task(&scope, &name, &id, true).await;
            });
        }
    }
}

fn check_visibility(tools: &[Tool], name: &str, role: Role) -> Result<(), Failure> {
    let who = match role {
        Role::App => Visibility::App,
        Role::Model | Role::User => Visibility::Model,
    };
    match tools.iter().find(|t| t.name == name) {
        None => Err(Failure::Denied(format!("tool {name:?} is not recognized"))),
        Some(t) if !t.visible_to(who) => Err(Failure::Denied(format!(
            "tool {name:?} is not callable from this context"
        ))),
        Some(_) => Ok(()),
    }
}

/// A view may only reach tools of its own server.
async fn check_owner(
    host: &dyn Host,
    cx: &RequestContext,
    name: &str,
    server: &str,
) -> Result<(), Failure> {
    match host.tool_source(cx, name).await {
        ToolSource::Scoped(s) if s == server => Ok(()),
        _ => Err(Failure::Denied(format!(
            "tool {name:?} does not belong to the calling view's server"
        ))),
    }
}

/// The full name a view means by `name` (views call their server's tools by the server's own
/// names).
pub(crate) async fn view_tool_name(host: &dyn Host, scope: &Scope, name: &str) -> String {
    let name = name.trim();
    if name.is_empty() {
        return String::new();
    }
    host.resolve_view_tool(scope, name).await
}

/// Reads `uri` in `scope`: a view reads from its server (or a single-source host); anyone
/// else only a URI that a listing offers, from the source that lists it.
pub(crate) async fn read_resource(
    host: &dyn Host,
    scope: &Scope,
    uri: &str,
) -> Result<ResourceResult, Failure> {
    let uri = uri.trim();
    if uri.is_empty() {
        return Err(Failure::Invalid("uri is required".into()));
    }
    match scope.role() {
        Role::App => Ok(host.read_resource(scope, uri).await?),
        _ => Ok(read_listed(host, scope, uri).await?),
    }
}

/// The scope of a request that may come from a view: the view's when `via` is given, else the
/// user's.
pub(crate) async fn scope_via(
    host: &dyn Host,
    cx: &RequestContext,
    via: Option<&str>,
) -> Result<Scope, Failure> {
    match via.map(str::trim).filter(|v| !v.is_empty()) {
        Some(via) => view_scope(host, cx, via).await,
        None => Ok(Scope::user(cx.clone())),
    }
}

/// Reads a URI the user referenced (`@uri`): only when a listing offers it.
pub(crate) async fn read_reference(
    host: &dyn Host,
    cx: &RequestContext,
    uri: &str,
) -> Result<ResourceResult, HostError> {
    read_listed(host, &Scope::user(cx.clone()), uri).await
}

async fn read_listed(
    host: &dyn Host,
    scope: &Scope,
    uri: &str,
) -> Result<ResourceResult, HostError> {
    let listed = host.list_resources(scope).await?;
    if !offers(&listed, uri) {
        return Err(HostError::NotFound(format!(
            "no server offers the resource {uri:?}"
        )));
    }
    host.read_resource(scope, uri).await
}

/// True when `uri` is a listed resource or matches a listed template.
pub(crate) fn offers(listed: &[Resource], uri: &str) -> bool {
    listed.iter().any(|r| match r.template {
        false => r.uri == uri,
        true => matches_template(&r.uri, uri),
    })
}

/// Resources and templates in `scope` (the user's `@` menu, or a view's server).
pub(crate) async fn list_resources(
    host: &dyn Host,
    scope: &Scope,
) -> Result<Vec<Resource>, Failure> {
    Ok(host.list_resources(scope).await?)
}

/// Prompts in `scope` (the user's `/` menu, or a view's server).
pub(crate) async fn list_prompts(host: &dyn Host, scope: &Scope) -> Result<Vec<Prompt>, Failure> {
    Ok(host.list_prompts(scope).await?)
}

/// The icon of a server, tool or prompt the user sees (`None`: it has none, or the user does
/// not reach it: the same answer, so an icon reveals nothing a listing would not).
pub(crate) async fn icon(
    host: &dyn Host,
    cx: &RequestContext,
    of: IconOf,
    name: &str,
) -> Result<Option<IconImage>, Failure> {
    let name = name.trim();
    if name.is_empty() {
        return Ok(None);
    }
    Ok(host.icon(&Scope::user(cx.clone()), of, name).await?)
}

/// Expands a prompt the user named.
pub(crate) async fn get_prompt(
    host: &dyn Host,
    cx: &RequestContext,
    name: &str,
    args: BTreeMap<String, String>,
) -> Result<PromptResult, Failure> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Failure::Invalid("name is required".into()));
    }
    Ok(host
        .get_prompt(&Scope::user(cx.clone()), name, args)
        .await?)
}

/// The `skill://` resources the skill index lists for this scope.
async fn skills(host: &dyn Host, scope: &Scope) -> Vec<Resource> {
    match host.list_resources(scope).await {
        Ok(list) => list
            .into_iter()
            .filter(|r| !r.template && r.uri.starts_with("skill://"))
            .collect(),
        Err(e) => {
            tracing::warn!(error = %e, "listing resources failed; no skills offered");
            Vec::new()
        }
    }
}

/// The virtual skill tool: reads one listed `skill://` resource for the model.
async fn read_skill(
    host: &dyn Host,
    scope: &Scope,
    listed: &[Resource],
    arguments: &Value,
) -> ToolResult {
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
    if !listed.iter().any(|r| r.uri == uri) {
        return ToolResult::error(format!(
            "Error: {uri} is not a listed skill; call this tool with a skill:// URI from the skill index"
        ));
    }
    match host.read_resource(scope, uri).await {
        Ok(r) => ToolResult::text(
            r.text
                .filter(|t| !t.is_empty())
                .or(r.blob)
                .unwrap_or_default(),
        ),
        Err(e) => {
            tracing::warn!(uri, error = %e, "reading a listed skill failed");
            ToolResult::error(format!("Error: skill not found: {uri}"))
        }
    }
}

/// The virtual tool that reads a `skill://` resource.
pub(crate) fn skill_tool() -> Tool {
    Tool::new(SKILL_TOOL_NAME)
        .with_description(
            "Retrieve a skill's detailed instructions by URI, e.g. 'skill://golang/SKILL.md'. \
             Call it before working on a task a listed skill covers.",
        )
        .with_input_schema(json!({
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "The skill:// URI"}},
            "required": ["uri"]
        }))
}
