//! The toolset as a tool source: its tools (namespaced), a call by full name, and the approval
//! suggestion of each command.

use lmchatkit_protocol::{Tool, ToolDecision, ToolResult, Visibility};
use serde_json::{Value, json};

use super::exec::{self, Executor, cap_text};
use super::schema::Leaf;
use super::{ClapToolset, CommandHint, SEPARATOR, ToolOutput};
use crate::access::Scope;

/// The MCP annotations of a hint.
pub(crate) fn annotations(hint: CommandHint) -> Value {
    match hint {
        CommandHint::ReadOnly => json!({"readOnlyHint": true}),
        CommandHint::Mutating => json!({"readOnlyHint": false, "destructiveHint": true}),
    }
}

impl ClapToolset {
    /// Every tool, named `namespace__name`, visible to the model only.
    pub fn tools(&self) -> Vec<Tool> {
        self.inner
            .leaves
            .iter()
            .map(|l| {
                let mut t = Tool::new(self.full_name(&l.name))
                    .with_description(l.description.clone())
                    .with_input_schema(l.schema.clone())
                    .with_visibility(vec![Visibility::Model]);
                t.annotations = Some(annotations(l.hint));
                t
            })
            .collect()
    }

    fn full_name(&self, name: &str) -> String {
        format!("{}{SEPARATOR}{name}", self.namespace())
    }

    /// The un-namespaced name of `full` when it is one of this toolset's tools.
    fn own_name<'a>(&self, full: &'a str) -> Option<&'a str> {
        full.strip_prefix(self.namespace())
            .and_then(|rest| rest.strip_prefix(SEPARATOR))
            .filter(|short| self.leaf(short).is_some())
    }

    /// True when `name` (full, namespaced) is one of this toolset's tools.
    pub fn owns(&self, name: &str) -> bool {
        self.own_name(name).is_some()
    }

    pub(crate) fn leaf(&self, short: &str) -> Option<&Leaf> {
        self.inner.leaves.iter().find(|l| l.name == short)
    }

    pub(crate) fn leaves(&self) -> &[Leaf] {
        &self.inner.leaves
    }

    /// The hint of the tool `name` (full, namespaced); `None` for a tool not of this toolset.
    pub fn hint(&self, name: &str) -> Option<CommandHint> {
        self.own_name(name)
            .and_then(|s| self.leaf(s))
            .map(|l| l.hint)
    }

    /// The default suggestion for calling `tool`: `allow` for a read-only command, `ask` for a
    /// mutating one, no opinion for a tool not of this toolset.
    pub fn suggest(&self, tool: &str) -> Option<ToolDecision> {
        self.hint(tool).map(|h| match h {
            CommandHint::ReadOnly => ToolDecision::Allow,
            CommandHint::Mutating => ToolDecision::Ask,
        })
    }

    /// [`ClapToolset::suggest`] as a check for
    /// [`ApprovalPolicy::with_check`](crate::ApprovalPolicy::with_check).
    ///
    /// ```
    /// use lmchatkit::ApprovalPolicy;
    /// use lmchatkit::clap_tools::{ClapToolset, CommandHint, ToolOutput};
    /// use lmchatkit::protocol::ToolDecision::{Allow, Ask, Deny};
    /// use lmchatkit::Scope;
    /// use serde_json::json;
    ///
    /// let cli = clap::Command::new("db")
    ///     .subcommand(clap::Command::new("status"))
    ///     .subcommand(clap::Command::new("migrate"))
    ///     .subcommand(clap::Command::new("drop"));
    /// let tools = ClapToolset::new(cli, |_| async { Ok(ToolOutput::text("ok")) })
    ///     .with_hint("status", CommandHint::ReadOnly);
    /// let policy = ApprovalPolicy::new(Ask).deny("cli__drop").with_check(tools.approval_check());
    /// let scope = Scope::default();
    /// assert_eq!(policy.decide(&scope, "cli__status", &json!({})), Allow);
    /// assert_eq!(policy.decide(&scope, "cli__migrate", &json!({})), Ask);
    /// assert_eq!(policy.decide(&scope, "cli__drop", &json!({})), Deny); // the operator's deny wins
    /// ```
    pub fn approval_check(
        &self,
    ) -> impl Fn(&Scope, &str, &Value) -> Option<ToolDecision> + Send + Sync + 'static {
        let me = self.clone();
        move |_, tool, _| me.suggest(tool)
    }

    /// Calls the tool `name` (full, namespaced) with `arguments`. Every failure (an unknown
    /// tool, a bad input, the command's own error, a timeout) is an `is_error` result.
    pub async fn call(&self, name: &str, arguments: Value) -> ToolResult {
        let out = match self.own_name(name) {
            Some(short) => self.run(short, arguments).await,
            None => ToolOutput::error(format!("unknown tool {name:?}")),
        };
        into_result(out)
    }

    /// Runs the leaf named `short` (un-namespaced).
    pub(crate) async fn run(&self, short: &str, arguments: Value) -> ToolOutput {
        let Some(leaf) = self.leaf(short) else {
            return ToolOutput::error(format!("unknown tool {short:?}"));
        };
        let root = self.inner.command.get_name();
        let shown = std::iter::once(root)
            .chain(leaf.path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let argv = match super::argv::build(root, leaf, &arguments) {
            Ok(a) => a,
            Err(msg) => return ToolOutput::error(format!("invalid input for `{shown}`: {msg}")),
        };
        let matches = match self.inner.command.clone().try_get_matches_from(&argv) {
            Ok(m) => m,
            Err(e) => {
                return ToolOutput::error(format!(
                    "invalid input for `{shown}`: {}",
                    clap_message(&e)
                ));
            }
        };
        let settings = &self.inner.settings;
        let cap = settings.output_cap;
        let run = async {
            match &self.inner.executor {
                Executor::InProcess(d) => {
                    let mut out = exec::in_process(d, matches, &shown).await;
                    out.text = cap_text(out.text, cap);
                    out
                }
                // Capped per stream as it is read.
                Executor::Subprocess(s) => exec::subprocess(s, &argv[1..], cap, &shown).await,
            }
        };
        match tokio::time::timeout(settings.timeout, run).await {
            Ok(out) => out,
            Err(_) => {
                tracing::warn!(command = %shown, timeout = ?settings.timeout, "a CLI tool timed out");
                ToolOutput::error(format!(
                    "`{shown}` timed out after {}",
                    human(settings.timeout)
                ))
            }
        }
    }
}

/// clap's rendered message, without the hint to run `--help` (the model cannot).
pub(crate) fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    text.lines()
        .filter(|l| !l.starts_with("For more information, try"))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

fn human(d: std::time::Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

pub(crate) fn into_result(out: ToolOutput) -> ToolResult {
    let mut r = if out.is_error {
        ToolResult::error(out.text)
    } else {
        ToolResult::text(out.text)
    };
    r.structured_content = out.structured;
    r
}
