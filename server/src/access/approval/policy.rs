//! [`ApprovalPolicy`]: the operator's rules for which tool calls run unattended.

use std::sync::Arc;

use lmchatkit_protocol::ToolDecision;
use serde_json::Value;

use crate::access::Scope;

/// A check over one call: the scope it runs in, the tool's full name and its input. `None`
/// means no opinion; an answer joins the rules' by precedence (`deny` > `ask` > `allow`).
pub type ApprovalCheck = dyn Fn(&Scope, &str, &Value) -> Option<ToolDecision> + Send + Sync;

/// The operator's approval policy: ordered rules of tool-name globs, each mapping to
/// [`ToolDecision::Allow`], [`Ask`](ToolDecision::Ask) or [`Deny`](ToolDecision::Deny), a
/// default for calls no rule matches, and an optional check over (scope, tool, input).
///
/// Among every rule that matches (and the check's answer, when it has one) the strongest
/// decision wins, whatever the order: `deny` beats `ask` beats `allow`. The default applies
/// only when nothing matched and the check had no opinion. The default policy asks for every
/// call, which is what the chat UI does without one.
///
/// Globs match the whole tool name: `*` any run of characters (also none), `?` exactly one
/// character; every other character stands for itself.
///
/// ```
/// use lmchatkit::protocol::ToolDecision::{self, Allow, Ask, Deny};
/// use lmchatkit::{ApprovalPolicy, Scope};
/// use serde_json::{Value, json};
///
/// let scope = Scope::default();
/// let policy = ApprovalPolicy::new(Ask)
///     .allow("demo__*")
///     .deny("*__delete_*")
///     .ask("demo__send_mail");
/// assert_eq!(policy.decide(&scope, "demo__echo", &json!({})), Allow);
/// assert_eq!(policy.decide(&scope, "demo__send_mail", &json!({})), Ask);
/// assert_eq!(policy.decide(&scope, "demo__delete_all", &json!({})), Deny); // deny wins
/// assert_eq!(policy.decide(&scope, "web__fetch", &json!({})), Ask); // the default
///
/// // The Go seed's `RequireApprovalFor []string`: ask rules over a default of allow.
/// let require_approval_for = ["fs__write", "shell__*"];
/// let seed_list = require_approval_for
///     .iter()
///     .fold(ApprovalPolicy::new(Allow), |p, name| p.ask(*name));
/// assert_eq!(seed_list.decide(&scope, "shell__run", &json!({})), Ask);
/// assert_eq!(seed_list.decide(&scope, "fs__read", &json!({})), Allow);
///
/// // The Go seed's `ApprovalPolicy func(toolName, input) bool` (true = ask the user).
/// fn needs_approval(tool: &str, input: &Value) -> bool {
///     tool.starts_with("fs__") && input["path"].as_str().is_some_and(|p| p.starts_with("/etc"))
/// }
/// let seed_fn = ApprovalPolicy::new(Allow)
///     .with_check(|_, tool, input| Some(if needs_approval(tool, input) { Ask } else { Allow }));
/// assert_eq!(seed_fn.decide(&scope, "fs__read", &json!({"path": "/etc/passwd"})), Ask);
/// assert_eq!(seed_fn.decide(&scope, "fs__read", &json!({"path": "/tmp/x"})), Allow);
/// ```
#[derive(Clone)]
pub struct ApprovalPolicy {
    default: ToolDecision,
    rules: Vec<(String, ToolDecision)>,
    check: Option<Arc<ApprovalCheck>>,
}

/// Asks for every call.
impl Default for ApprovalPolicy {
    fn default() -> Self {
        Self::new(ToolDecision::Ask)
    }
}

impl std::fmt::Debug for ApprovalPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalPolicy")
            .field("default", &self.default)
            .field("rules", &self.rules)
            .field("check", &self.check.is_some())
            .finish()
    }
}

impl ApprovalPolicy {
    /// A policy without rules that answers `default` for every call.
    pub fn new(default: ToolDecision) -> Self {
        Self {
            default,
            rules: Vec::new(),
            check: None,
        }
    }

    /// Adds a rule: tools matching `glob` get `decision` (joined with every other match).
    pub fn rule(mut self, glob: impl Into<String>, decision: ToolDecision) -> Self {
        self.rules.push((glob.into(), decision));
        self
    }

    /// Tools matching `glob` run without asking (unless another match asks or denies).
    pub fn allow(self, glob: impl Into<String>) -> Self {
        self.rule(glob, ToolDecision::Allow)
    }

    /// Tools matching `glob` need the user's approval (unless another match denies).
    pub fn ask(self, glob: impl Into<String>) -> Self {
        self.rule(glob, ToolDecision::Ask)
    }

    /// Tools matching `glob` never run.
    pub fn deny(self, glob: impl Into<String>) -> Self {
        self.rule(glob, ToolDecision::Deny)
    }

    /// Adds a check over (scope, tool, input); its answer joins the rules' by precedence,
    /// `None` is no opinion. A second call replaces the first check.
    pub fn with_check(
        mut self,
        check: impl Fn(&Scope, &str, &Value) -> Option<ToolDecision> + Send + Sync + 'static,
    ) -> Self {
        self.check = Some(Arc::new(check));
        self
    }

    /// The decision when no rule matches and the check has no opinion.
    pub fn default_decision(&self) -> ToolDecision {
        self.default
    }

    /// The rules, in the order they were added.
    pub fn rules(&self) -> impl Iterator<Item = (&str, ToolDecision)> {
        self.rules.iter().map(|(g, d)| (g.as_str(), *d))
    }

    /// The decision for calling `tool` with `input` in `scope`: the strongest of every
    /// matching rule and the check's answer, else the default. Pure and synchronous.
    pub fn decide(&self, scope: &Scope, tool: &str, input: &Value) -> ToolDecision {
        let from_rules = self
            .rules
            .iter()
            .filter(|(glob, _)| glob_matches(glob, tool))
            .map(|(_, d)| *d)
            .max();
        let from_check = self.check.as_ref().and_then(|c| c(scope, tool, input));
        from_rules.max(from_check).unwrap_or(self.default)
    }
}

/// Whether `glob` matches all of `name`: `*` is any run of characters, `?` one character.
/// Linear backtracking over the last `*` (no exponential blow-up on `*a*a*a…`).
pub(crate) fn glob_matches(glob: &str, name: &str) -> bool {
    let (p, s): (Vec<char>, Vec<char>) = (glob.chars().collect(), name.chars().collect());
    let (mut pi, mut si) = (0, 0);
    // The last `*` seen and the position in `name` it is tried against.
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(&c) if c == '?' || c == s[si] => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}
