//! A clap command tree as chat tools (feature `clap-tools`): [`ClapToolset`] turns every
//! runnable leaf of a `clap::Command` into a tool the model can call, executed in-process by
//! the application's own dispatcher or by running the clap binary. It is a tool source of
//! [`StandardHost`](crate::StandardHost) beside the MCP hub, and can be served as an MCP server
//! over stdio ([`ClapToolset::serve_stdio`]).
//!
//! Decisions:
//! - **Discovery, once.** The command is built (`Command::build`, which propagates global
//!   arguments) when the toolset is made. Every leaf (a subcommand without subcommands, or the
//!   root when it has none) is a tool; a parent is not, even when its subcommand is optional.
//!   Skipped: the `help` subcommand, hidden commands, completion generators (named
//!   `completion`, `completions`, `generate-completion(s)` or `complete`) and paths given to
//!   [`ClapToolset::skip`]. Arguments of a parent are not offered, except global ones.
//! - **Names.** A leaf's name is its path joined by `_` (`db migrate` → `db_migrate`; the root's
//!   own name when it has no subcommands), every character outside `[a-zA-Z0-9_-]` replaced by
//!   `_`, cut so that the full name `namespace__name` is at most 64 characters (OpenAI's rule).
//!   **Collisions** are resolved in discovery order (depth first, subcommands as defined): the
//!   first keeps the name, the next get `_2`, `_3`, … (the base cut to make room).
//! - **Schemas.** Each argument is a property named by its clap id: `SetTrue`/`SetFalse` flags
//!   are booleans (the property is the resulting value), counted flags integers (0–255), typed
//!   value parsers (`i8`…`usize`, `f32`/`f64`, `bool`) integers, numbers or booleans, possible
//!   values an `enum`, `Append` or several values an array; help text is the description,
//!   defaults are typed, `required` follows clap, positionals come first in their order, and
//!   unknown properties are refused (`additionalProperties: false`). Help, version and hidden
//!   arguments are not offered.
//! - **Execution.** The input becomes an argv (see `argv.rs`) parsed by the same `Command`, so
//!   clap validates it; a bad input is an `is_error` result quoting clap's message. Nothing else
//!   of the application's `main` runs per call: no global set-up, logging or config loading
//!   (the seed's `SkipPreRun`). In-process, the dispatcher receives the root's `ArgMatches` (the
//!   same value the application's `main` dispatches on). As a subprocess, the binary gets the
//!   argv with a cleared environment (the basics an MCP stdio server gets, plus
//!   [`ClapToolset::with_env`] and [`ClapToolset::with_inherited_env`]), stdin closed; its
//!   stdout is the result (stderr appended under `[stderr]`), a non-zero exit an `is_error`
//!   result naming the status, and there is no structured content.
//! - **Limits.** Every call runs under a timeout ([`DEFAULT_TIMEOUT`], 60 s, as MCP calls) and
//!   inside the caller's future: dropping the call drops the dispatcher's future, or kills the
//!   child (`kill_on_drop`). A timeout is an `is_error` result. Output is cut to
//!   [`DEFAULT_OUTPUT_CAP`] (64 KiB) per stream, stdout and stderr each for a subprocess, the
//!   text for a dispatcher, with a note of how many bytes were cut. A dispatcher that panics is
//!   an `is_error` result (and an error log), never a crash.
//! - **Access.** Tools are namespaced (`cli__db_migrate`, [`DEFAULT_NAMESPACE`]) and offered to
//!   the model only (`visibility: ["model"]`: they have no views, so no view may call them). The
//!   access layer's checks apply unchanged: `StandardHost` lists them with the hub's tools and
//!   reports their source as the namespace.
//! - **Approval hints.** Each command is [`CommandHint::ReadOnly`] or [`CommandHint::Mutating`]
//!   (the default, failing safe; set per path with [`ClapToolset::with_hint`]). The hint becomes
//!   the MCP annotations (`readOnlyHint`, `destructiveHint`) of the tool. Nothing in the
//!   approval layer reads annotations (they are hints from a server, and MCP says not to trust
//!   them), so the hint decides the default suggestion through the operator's policy instead:
//!   [`ClapToolset::suggest`] answers `allow` for a read-only command and `ask` for a mutating
//!   one, and [`ClapToolset::approval_check`] is that answer as an
//!   [`ApprovalPolicy::with_check`](crate::ApprovalPolicy::with_check). The policy's precedence
//!   holds: an operator's `deny` (or `ask`) rule still wins over a read-only `allow`, and a
//!   user's "always allow" still turns a mutating command's `ask` into `allow`.
//! - **MCP server.** [`ClapToolset::mcp_server`] is an rmcp server with the same tools under
//!   their un-namespaced names (the client adds its own namespace), the hints as annotations.

mod argv;
mod exec;
mod mcp_server;
mod schema;
mod source;

#[cfg(test)]
mod tests;

pub use mcp_server::ClapMcpServer;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgMatches, ColorChoice, Command};
use serde_json::Value;

use exec::{Dispatcher, Executor, Subprocess};
use schema::Leaf;

/// The namespace of a toolset's tools unless [`ClapToolset::with_namespace`] sets another.
pub const DEFAULT_NAMESPACE: &str = "cli";
/// How long a command may run unless [`ClapToolset::with_timeout`] says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Bytes of output kept per stream unless [`ClapToolset::with_output_cap`] says otherwise.
pub const DEFAULT_OUTPUT_CAP: usize = 64 * 1024;
/// The longest full tool name (`namespace__name`) providers accept.
pub const MAX_TOOL_NAME_LEN: usize = 64;
/// Between the namespace and a tool's name, as the MCP hub writes it.
pub const SEPARATOR: &str = "__";
/// The longest namespace; longer ones are cut.
pub const MAX_NAMESPACE_LEN: usize = 32;

/// What a dispatcher may fail with; its text becomes an `is_error` result.
pub type DispatchError = Box<dyn std::error::Error + Send + Sync>;

/// Whether a command changes anything: decides its MCP annotations and the approval suggestion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CommandHint {
    /// Only reads (`readOnlyHint: true`): suggested `allow`.
    ReadOnly,
    /// May change things (`readOnlyHint: false`, `destructiveHint: true`): suggested `ask`.
    #[default]
    Mutating,
}

/// What a command produced: text for the model, optional structured content, and whether it
/// failed.
///
/// ```
/// use lmchatkit::clap_tools::ToolOutput;
/// let out = ToolOutput::json(serde_json::json!({"count": 2}));
/// assert_eq!(out.text, "{\n  \"count\": 2\n}");
/// assert!(!out.is_error);
/// assert!(ToolOutput::error("no such note").is_error);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ToolOutput {
    /// What the model reads.
    pub text: String,
    /// Structured content (MCP `structuredContent`); `None` when unset.
    pub structured: Option<Value>,
    /// The command failed.
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful text output.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// A successful output whose text is `value` pretty-printed and whose structured content
    /// is `value`.
    pub fn json(value: Value) -> Self {
        Self {
            text: serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string()),
            structured: Some(value),
            is_error: false,
        }
    }

    /// A failure the model sees.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            structured: None,
            is_error: true,
        }
    }

    /// Sets the structured content.
    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured = Some(value);
        self
    }
}

#[derive(Clone, Debug)]
struct Settings {
    namespace: String,
    timeout: Duration,
    output_cap: usize,
    skip: HashSet<String>,
    hints: HashMap<String, CommandHint>,
    default_hint: CommandHint,
}

#[derive(Clone)]
struct Inner {
    command: Command,
    executor: Executor,
    settings: Settings,
    leaves: Vec<Leaf>,
}

/// A clap command tree offered as tools. Cheap to clone (shared).
///
/// ```
/// use clap::{Arg, ArgAction, Command};
/// use lmchatkit::clap_tools::{ClapToolset, CommandHint, ToolOutput};
///
/// let cli = Command::new("notes")
///     .subcommand(Command::new("list").about("List notes").arg(
///         Arg::new("limit").long("limit").value_parser(clap::value_parser!(u32)),
///     ))
///     .subcommand(Command::new("add").about("Add a note").arg(Arg::new("text").required(true)));
/// let tools = ClapToolset::new(cli, |m: clap::ArgMatches| async move {
///     match m.subcommand() {
///         Some(("list", _)) => Ok(ToolOutput::text("no notes")),
///         Some(("add", a)) => Ok(ToolOutput::text(format!("added {:?}", a.get_one::<String>("text")))),
///         _ => Err("unknown command".into()),
///     }
/// })
/// .with_hint("list", CommandHint::ReadOnly);
/// let names: Vec<String> = tools.tools().into_iter().map(|t| t.name).collect();
/// assert_eq!(names, ["cli__list", "cli__add"]);
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let r = tools.call("cli__add", serde_json::json!({"text": "milk"})).await;
/// assert_eq!(r.content, "added Some(\"milk\")");
/// # });
/// ```
#[derive(Clone)]
pub struct ClapToolset {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ClapToolset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClapToolset")
            .field("command", &self.inner.command.get_name())
            .field("executor", &self.inner.executor)
            .field("settings", &self.inner.settings)
            .field(
                "tools",
                &self
                    .inner
                    .leaves
                    .iter()
                    .map(|l| l.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl ClapToolset {
    /// A toolset running commands in-process: `dispatch` gets the root's `ArgMatches` (as the
    /// application's `main` would after `Command::get_matches`). Use
    /// `<Cli as clap::CommandFactory>::command()` for a `#[derive(Parser)]` CLI, and
    /// `Cli::from_arg_matches(&m)` inside `dispatch`.
    pub fn new<F, Fut>(command: Command, dispatch: F) -> Self
    where
        F: Fn(ArgMatches) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, DispatchError>> + Send + 'static,
    {
        let dispatcher: Dispatcher = Arc::new(move |m| Box::pin(dispatch(m)));
        Self::with_executor(command, Executor::InProcess(dispatcher))
    }

    /// A toolset running the clap binary `program` (whose command line `command` describes) as
    /// a subprocess per call.
    pub fn subprocess(command: Command, program: impl Into<PathBuf>) -> Self {
        Self::with_executor(
            command,
            Executor::Subprocess(Subprocess {
                program: program.into(),
                env: BTreeMap::new(),
                inherit_env: Vec::new(),
                cwd: None,
            }),
        )
    }

    fn with_executor(command: Command, executor: Executor) -> Self {
        let mut command = command.color(ColorChoice::Never);
        command.build();
        let mut inner = Inner {
            command,
            executor,
            settings: Settings {
                namespace: DEFAULT_NAMESPACE.to_owned(),
                timeout: DEFAULT_TIMEOUT,
                output_cap: DEFAULT_OUTPUT_CAP,
                skip: HashSet::new(),
                hints: HashMap::new(),
                default_hint: CommandHint::default(),
            },
            leaves: Vec::new(),
        };
        inner.discover();
        Self {
            inner: Arc::new(inner),
        }
    }

    fn change(mut self, f: impl FnOnce(&mut Inner)) -> Self {
        let inner = Arc::make_mut(&mut self.inner);
        f(inner);
        inner.discover();
        self
    }

    /// The namespace of the tools (`cli` by default): characters outside `[a-zA-Z0-9-]`
    /// become `-`, and it is cut to [`MAX_NAMESPACE_LEN`]; an empty one stays `cli`.
    pub fn with_namespace(self, namespace: impl Into<String>) -> Self {
        let ns: String = namespace
            .into()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .take(MAX_NAMESPACE_LEN)
            .collect();
        self.change(|i| {
            if !ns.is_empty() {
                i.settings.namespace = ns;
            }
        })
    }

    /// How long one call may run (default [`DEFAULT_TIMEOUT`]).
    pub fn with_timeout(self, timeout: Duration) -> Self {
        self.change(|i| i.settings.timeout = timeout)
    }

    /// Bytes of output kept per stream (default [`DEFAULT_OUTPUT_CAP`]).
    pub fn with_output_cap(self, bytes: usize) -> Self {
        self.change(|i| i.settings.output_cap = bytes)
    }

    /// The hint of the command at `path` (subcommand names joined by spaces, e.g. `"db
    /// migrate"`; `""` for a root without subcommands).
    pub fn with_hint(self, path: &str, hint: CommandHint) -> Self {
        let path = normalize_path(path);
        self.change(|i| {
            i.settings.hints.insert(path, hint);
        })
    }

    /// The hint of commands [`ClapToolset::with_hint`] names not (default
    /// [`CommandHint::Mutating`]).
    pub fn with_default_hint(self, hint: CommandHint) -> Self {
        self.change(|i| i.settings.default_hint = hint)
    }

    /// Leaves the command at `path` (and everything below it) out.
    pub fn skip(self, path: &str) -> Self {
        let path = normalize_path(path);
        self.change(|i| {
            i.settings.skip.insert(path);
        })
    }

    /// Sets a variable for the subprocess (over the basics; ignored in-process).
    pub fn with_env(self, key: impl Into<String>, value: impl Into<String>) -> Self {
        let (k, v) = (key.into(), value.into());
        self.change(|i| {
            if let Executor::Subprocess(s) = &mut i.executor {
                s.env.insert(k, v);
            }
        })
    }

    /// Passes the host's variable `name` to the subprocess when it is set (ignored in-process).
    pub fn with_inherited_env(self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.change(|i| {
            if let Executor::Subprocess(s) = &mut i.executor {
                s.inherit_env.push(name);
            }
        })
    }

    /// The subprocess's working directory (ignored in-process).
    pub fn with_cwd(self, dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        self.change(|i| {
            if let Executor::Subprocess(s) = &mut i.executor {
                s.cwd = Some(dir);
            }
        })
    }

    /// The namespace of the tools.
    pub fn namespace(&self) -> &str {
        &self.inner.settings.namespace
    }

    /// The built command the tools come from.
    pub fn command(&self) -> &Command {
        &self.inner.command
    }
}

fn normalize_path(path: &str) -> String {
    path.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Inner {
    fn discover(&mut self) {
        let budget = MAX_TOOL_NAME_LEN - self.settings.namespace.len() - SEPARATOR.len();
        let s = &self.settings;
        self.leaves = schema::discover(&self.command, budget, &s.skip, |path| {
            s.hints.get(path).copied().unwrap_or(s.default_hint)
        });
        for path in s.hints.keys() {
            if !self.leaves.iter().any(|l| &l.path.join(" ") == path) {
                tracing::warn!(
                    path,
                    command = self.command.get_name(),
                    "a CLI tool hint names no offered command"
                );
            }
        }
    }
}
