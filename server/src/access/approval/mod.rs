//! The approval policy, decided here for both protocols: whether a model's tool call runs
//! unattended (`allow`), waits for the user (`ask`) or never runs (`deny`).
//!
//! `decide` is the one decision: the operator's [`ApprovalPolicy`], except that `ask` becomes
//! `allow` when the principal's stored "always allow" list ([`ApprovalStore`]) names the tool.
//!
//! Decisions:
//! - **Deny beats ask beats allow** among every matching rule and the policy's check, whatever
//!   the order they were given in; the default applies only when nothing matched.
//! - **The operator's deny is final.** A stored "always" turns only an `ask` into an `allow`.
//!   A principal may store a denied tool (the `PUT` is accepted, the list is theirs), but it has
//!   no effect on that tool while the operator denies it.
//! - **Fail closed.** A store that fails is logged and counts as "nothing stored": the call
//!   asks.
//! - **`ask` and `allow` are about the model; `deny` is about everyone.** The policy decides the
//!   model's calls (the chat stream's annotation, `POST /api/tools/call` with `source: "model"`,
//!   the server-side agent loop). A view's calls are not asked about (the user is looking at
//!   the view, and the access layer limits it to its own server's app-visible tools), but a
//!   tool the operator denies is refused to views too: a view is untrusted content that can post
//!   without the user acting, and "never run" must mean never.
//! - **Globs are hand-written**: `*` and `?` over whole tool names are a dozen lines, and a glob
//!   crate would bring path semantics (`/` separators, classes, alternations) that tool names
//!   do not have and operators would not expect.
//! - **Live state.** The policy is a setting, but the store is live: both sit in the service's
//!   state as `Approvals`, built once.

mod policy;

#[cfg(test)]
mod tests;

pub use crate::store::{ApprovalStore, ApprovalStoreError, MemoryApprovalStore};
pub use policy::{ApprovalCheck, ApprovalPolicy};

use std::sync::Arc;

use lmchatkit_protocol::ToolDecision;
use serde_json::Value;

use crate::access::Scope;
use crate::error::Failure;
use crate::host::{HostError, Principal};

/// Where each principal's own tools (users' MCP servers) keep the approval the user gave each,
/// which the policy consults ([`decide`]). `user_mcp::UserMcp` is the one implementation.
#[async_trait::async_trait]
pub(crate) trait OwnToolApprovals: Send + Sync {
    /// The stored decision for `tool` when it is one of `principal`'s own tools, else `None`.
    async fn own_tool_decision(
        &self,
        principal: &Principal,
        tool: &str,
    ) -> Result<Option<ToolDecision>, HostError>;
}

/// Most tools one principal may always allow.
pub const MAX_ALWAYS: usize = 1000;
/// Longest tool name (in characters) an "always" list may hold.
pub const MAX_TOOL_NAME_CHARS: usize = 256;

/// The live approval pieces of a service: the operator's policy and the per-principal store.
#[derive(Clone)]
pub(crate) struct Approvals {
    pub(crate) policy: ApprovalPolicy,
    pub(crate) store: Arc<dyn ApprovalStore>,
    /// Each user's own tools, whose stored approval replaces the policy's unless it denies.
    pub(crate) own_tools: Option<Arc<dyn OwnToolApprovals>>,
}

impl Approvals {
    /// `policy` with `store`, or with a fresh [`MemoryApprovalStore`].
    pub(crate) fn new(policy: ApprovalPolicy, store: Option<Arc<dyn ApprovalStore>>) -> Self {
        Self {
            policy,
            store: store.unwrap_or_else(|| Arc::new(MemoryApprovalStore::default())),
            own_tools: None,
        }
    }
}

/// The decision for the call of `tool` with `input` in `scope`: the policy's, with `ask`
/// turned into `allow` when the principal always allows the tool. A `deny` is never
/// overridden; a failing store counts as an empty list.
pub(crate) async fn decide(
    approvals: &Approvals,
    scope: &Scope,
    tool: &str,
    input: &Value,
) -> ToolDecision {
    let mut decision = approvals.policy.decide(scope, tool, input);
    // A user's own tool: the user's stored approval, unless the operator denies.
    if decision != ToolDecision::Deny
        && let Some(stored) = user_tool_approval(approvals, scope, tool).await
    {
        decision = stored;
    }
    if decision != ToolDecision::Ask {
        return decision;
    }
    match approvals.store.always(&scope.principal()).await {
        Ok(list) if list.iter().any(|t| t == tool) => ToolDecision::Allow,
        Ok(_) => ToolDecision::Ask,
        Err(e) => {
            tracing::warn!(error = %e, tool, "reading the always-allow list failed; asking");
            ToolDecision::Ask
        }
    }
}

/// The stored approval of `tool` when it is one of the principal's own tools. A store that
/// fails is logged and counts as "not a user tool" (the operator's policy decides).
async fn user_tool_approval(
    approvals: &Approvals,
    scope: &Scope,
    tool: &str,
) -> Option<ToolDecision> {
    let own = approvals.own_tools.as_ref()?;
    if !scope.cx().has_principal() || scope.server().is_some() {
        return None;
    }
    match own.own_tool_decision(&scope.principal(), tool).await {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(error = %e, tool, "reading a user's tool approval failed");
            None
        }
    }
}

/// What a caller is told when the operator's policy blocks `tool`.
pub(crate) fn blocked_message(tool: &str) -> String {
    format!("tool {tool:?} is blocked by the operator's policy")
}

/// Refuses a call of a tool the policy denies (403), whoever calls (the model, or a view);
/// anything else passes.
pub(crate) async fn check_not_denied(
    approvals: &Approvals,
    scope: &Scope,
    tool: &str,
    input: &Value,
) -> Result<(), Failure> {
    let input = match input {
        Value::Null => &Value::Object(Default::default()),
        v => v,
    };
    match decide(approvals, scope, tool.trim(), input).await {
        ToolDecision::Deny => Err(Failure::Denied(blocked_message(tool.trim()))),
        _ => Ok(()),
    }
}

/// A list as a `PUT` sends it, cleaned: names trimmed, blanks and repeats dropped (first
/// occurrence kept). Too many names, a name too long or with control characters: 400.
pub(crate) fn clean_list(tools: Vec<String>) -> Result<Vec<String>, Failure> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for name in &tools {
        let name = name.trim();
        if name.is_empty() || !seen.insert(name) {
            continue;
        }
        if name.chars().count() > MAX_TOOL_NAME_CHARS {
            return Err(Failure::Invalid(format!(
                "a tool name is longer than {MAX_TOOL_NAME_CHARS} characters"
            )));
        }
        if name.chars().any(char::is_control) {
            return Err(Failure::Invalid(format!(
                "tool name {name:?} holds control characters"
            )));
        }
        out.push(name.to_owned());
        if out.len() > MAX_ALWAYS {
            return Err(Failure::Invalid(format!(
                "at most {MAX_ALWAYS} tools may be always allowed"
            )));
        }
    }
    Ok(out)
}
