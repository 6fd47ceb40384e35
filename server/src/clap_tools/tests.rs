use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clap::{Arg, ArgAction, ArgMatches, Command, CommandFactory, Parser, Subcommand, ValueEnum};
use lmchatkit_protocol::{ToolDecision, Visibility};
use serde_json::{Value, json};

use super::*;
use crate::access::Scope;
use crate::host::{Host, RequestContext, ToolSource};

/// A CLI with every argument kind, through `#[derive(Parser)]`.
#[derive(Parser, Debug)]
#[command(name = "kit", version)]
struct Kit {
    /// Say more (global).
    #[arg(long, global = true)]
    trace: bool,
    #[command(subcommand)]
    cmd: KitCmd,
}

#[derive(ValueEnum, Clone, Debug, PartialEq)]
enum Format {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
enum KitCmd {
    /// Copy files to a target.
    ///
    /// Copies every source into the target directory.
    Copy {
        /// Files to copy.
        #[arg(required = true)]
        sources: Vec<String>,
        /// Where to.
        target: String,
        /// Overwrite existing files.
        #[arg(long)]
        force: bool,
        /// Keep colours.
        #[arg(long = "no-color", action = ArgAction::SetFalse)]
        color: bool,
        /// Verbosity.
        #[arg(short, action = ArgAction::Count)]
        verbose: u8,
        /// Copies at once.
        #[arg(long, default_value_t = 4)]
        jobs: u16,
        /// Bandwidth share.
        #[arg(long)]
        ratio: Option<f64>,
        /// Verify afterwards.
        #[arg(long)]
        verify: Option<bool>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Patterns to exclude.
        #[arg(long)]
        exclude: Vec<String>,
        /// A short-only option.
        #[arg(short = 'p')]
        prefix: Option<String>,
        /// Not for tools.
        #[arg(long, hide = true)]
        secret_mode: bool,
    },
    /// Database commands.
    Db {
        #[command(subcommand)]
        cmd: DbCmd,
    },
    /// Hidden maintenance.
    #[command(hide = true)]
    Internal,
    /// Shell completions.
    Completions { shell: String },
}

#[derive(Subcommand, Debug)]
enum DbCmd {
    /// Apply migrations.
    Migrate {
        /// Stop at this version.
        #[arg(long)]
        to: Option<i64>,
    },
    /// Show the status.
    Status,
}

fn echo_matches() -> ClapToolset {
    ClapToolset::new(Kit::command(), |m: ArgMatches| async move {
        let kit = <Kit as clap::FromArgMatches>::from_arg_matches(&m)?;
        Ok(ToolOutput::text(format!("{kit:?}")))
    })
}

fn copy_leaf(set: &ClapToolset) -> &schema::Leaf {
    set.leaf("copy").expect("copy is a tool")
}

#[test]
fn every_argument_kind_becomes_its_json_schema() {
    let set = echo_matches();
    assert_eq!(
        copy_leaf(&set).schema,
        json!({
            "type": "object",
            "properties": {
                "sources": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "Files to copy"},
                "target": {"type": "string", "description": "Where to"},
                "force": {"type": "boolean", "default": false, "description": "Overwrite existing files"},
                "color": {"type": "boolean", "default": true, "description": "Keep colours"},
                "verbose": {"type": "integer", "minimum": 0, "maximum": 255, "default": 0, "description": "Verbosity"},
                "jobs": {"type": "integer", "default": 4, "description": "Copies at once"},
                "ratio": {"type": "number", "description": "Bandwidth share"},
                "verify": {"type": "boolean", "description": "Verify afterwards"},
                "format": {"type": "string", "enum": ["text", "json"], "default": "text", "description": "Output format"},
                "exclude": {"type": "array", "items": {"type": "string"}, "description": "Patterns to exclude"},
                "prefix": {"type": "string", "description": "A short-only option"},
                "trace": {"type": "boolean", "default": false, "description": "Say more (global)"},
            },
            "required": ["sources", "target"],
            "additionalProperties": false,
        })
    );
    // Positionals come first, in their order.
    let keys: Vec<&String> = copy_leaf(&set).schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys[..2], ["sources", "target"]);
    assert_eq!(
        set.leaf("db_migrate").unwrap().schema,
        json!({
            "type": "object",
            "properties": {
                "to": {"type": "integer", "description": "Stop at this version"},
                "trace": {"type": "boolean", "default": false, "description": "Say more (global)"},
            },
            "additionalProperties": false,
        })
    );
}

#[test]
fn a_description_is_the_long_about_else_the_about() {
    let set = echo_matches();
    assert_eq!(
        copy_leaf(&set).description,
        "Copy files to a target.\n\nCopies every source into the target directory."
    );
    assert_eq!(
        set.leaf("db_status").unwrap().description,
        "Show the status"
    );
    let bare = ClapToolset::new(Command::new("x").subcommand(Command::new("y")), |_| async {
        Ok(ToolOutput::text(""))
    });
    assert_eq!(bare.leaf("y").unwrap().description, "Runs `x y`.");
}

#[test]
fn help_hidden_and_completion_commands_are_not_tools_and_skip_removes_a_path() {
    let set = echo_matches();
    let names: Vec<String> = set.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["cli__copy", "cli__db_migrate", "cli__db_status"]);
    let fewer = echo_matches().skip("db  migrate");
    let names: Vec<String> = fewer.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["cli__copy", "cli__db_status"]);
    let none_of_db = echo_matches().skip("db");
    assert_eq!(none_of_db.tools().len(), 1);
}

fn parse(set: &ClapToolset, leaf: &str, input: Value) -> Result<ArgMatches, String> {
    let argv = argv::build("kit", set.leaf(leaf).unwrap(), &input)?;
    set.command()
        .clone()
        .try_get_matches_from(&argv)
        .map_err(|e| e.to_string())
}

#[test]
fn every_argument_kind_round_trips_from_input_through_argv_to_arg_matches() {
    let set = echo_matches();
    let m = parse(
        &set,
        "copy",
        json!({
            "sources": ["a.txt", "b.txt"], "target": "out", "force": true, "color": false,
            "verbose": 3, "jobs": 8, "ratio": 0.5, "verify": true, "format": "json",
            "exclude": ["*.tmp", "-x"], "prefix": "-p-", "trace": true,
        }),
    )
    .unwrap();
    let kit = <Kit as clap::FromArgMatches>::from_arg_matches(&m).unwrap();
    assert!(kit.trace);
    let KitCmd::Copy {
        sources,
        target,
        force,
        color,
        verbose,
        jobs,
        ratio,
        verify,
        format,
        exclude,
        prefix,
        secret_mode,
    } = kit.cmd
    else {
        panic!("not copy: {:?}", kit.cmd)
    };
    assert_eq!(sources, ["a.txt", "b.txt"]);
    assert_eq!(target, "out");
    assert!(force);
    assert!(!color);
    assert_eq!(verbose, 3);
    assert_eq!(jobs, 8);
    assert_eq!(ratio, Some(0.5));
    assert_eq!(verify, Some(true));
    assert_eq!(format, Format::Json);
    assert_eq!(exclude, ["*.tmp", "-x"]);
    assert_eq!(prefix.as_deref(), Some("-p-"));
    assert!(!secret_mode);

    // Left out: clap's defaults apply.
    let m = parse(&set, "copy", json!({"sources": ["a"], "target": "b"})).unwrap();
    let kit = <Kit as clap::FromArgMatches>::from_arg_matches(&m).unwrap();
    let KitCmd::Copy {
        color,
        jobs,
        format,
        ..
    } = kit.cmd
    else {
        panic!()
    };
    assert!(color);
    assert_eq!(jobs, 4);
    assert_eq!(format, Format::Text);

    // A nested leaf, numbers given as text.
    let m = parse(&set, "db_migrate", json!({"to": "-3"})).unwrap();
    let (_, db) = m.subcommand().unwrap();
    let (name, mig) = db.subcommand().unwrap();
    assert_eq!(name, "migrate");
    assert_eq!(mig.get_one::<i64>("to"), Some(&-3));
}

#[test]
fn values_that_look_like_options_stay_values() {
    let cmd = Command::new("t").subcommand(
        Command::new("rm")
            .arg(Arg::new("path").required(true))
            .arg(Arg::new("mode").long("mode"))
            .arg(Arg::new("tag").short('t')),
    );
    let set = ClapToolset::new(cmd, |_| async { Ok(ToolOutput::text("")) });
    let leaf = set.leaf("rm").unwrap();
    let input = json!({"path": "-rf", "mode": "--all", "tag": "-x"});
    let argv = argv::build("t", leaf, &input).unwrap();
    assert_eq!(argv, ["t", "rm", "--mode=--all", "-t=-x", "--", "-rf"]);
    let m = set.command().clone().try_get_matches_from(&argv).unwrap();
    let (_, rm) = m.subcommand().unwrap();
    assert_eq!(rm.get_one::<String>("path").unwrap(), "-rf");
    assert_eq!(rm.get_one::<String>("mode").unwrap(), "--all");
    assert_eq!(rm.get_one::<String>("tag").unwrap(), "-x");
}

#[test]
fn several_values_for_one_occurrence_round_trip() {
    let cmd = Command::new("geo").subcommand(
        Command::new("point").arg(
            Arg::new("xy")
                .long("xy")
                .num_args(2)
                .value_parser(clap::value_parser!(i32)),
        ),
    );
    let set = ClapToolset::new(cmd, |_| async { Ok(ToolOutput::text("")) });
    let leaf = set.leaf("point").unwrap();
    assert_eq!(
        leaf.schema["properties"]["xy"],
        json!({"type": "array", "items": {"type": "integer"}})
    );
    let argv = argv::build("geo", leaf, &json!({"xy": [3, 4]})).unwrap();
    let m = set.command().clone().try_get_matches_from(&argv).unwrap();
    let (_, p) = m.subcommand().unwrap();
    let xy: Vec<i32> = p.get_many::<i32>("xy").unwrap().copied().collect();
    assert_eq!(xy, [3, 4]);
}

#[tokio::test]
async fn clap_errors_are_error_results_quoting_clap() {
    let set = echo_matches();
    let r = set
        .call(
            "cli__copy",
            json!({"sources": ["a"], "target": "b", "jobs": "many"}),
        )
        .await;
    assert!(r.is_error);
    assert!(
        r.content.starts_with(
            "invalid input for `kit copy`: error: invalid value 'many' for '--jobs <JOBS>'"
        ),
        "{}",
        r.content
    );
    assert!(!r.content.contains("--help"), "{}", r.content);

    let r = set.call("cli__copy", json!({"sources": ["a"]})).await;
    assert!(r.is_error);
    assert!(
        r.content
            .starts_with("invalid input for `kit copy`: error: the following required arguments were not provided:"),
        "{}",
        r.content
    );

    let r = set
        .call(
            "cli__copy",
            json!({"sources": ["a"], "target": "b", "format": "xml"}),
        )
        .await;
    assert!(r.is_error);
    assert!(
        r.content
            .contains("invalid value 'xml' for '--format <FORMAT>'"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn inputs_clap_cannot_be_told_are_refused_with_a_clear_message() {
    let set = echo_matches();
    let cases = [
        (
            json!({"nope": 1}),
            "unknown argument \"nope\"; this command takes sources, target",
        ),
        (json!([1]), "the input must be a JSON object, not an array"),
        (
            json!({"sources": ["a"], "target": "b", "force": "yes"}),
            "argument \"force\" is a flag: true or false",
        ),
        (
            json!({"sources": ["a"], "target": "b", "verbose": 300}),
            "argument \"verbose\" is a count: an integer from 0 to 255",
        ),
        (
            json!({"sources": ["a"], "target": ["b", "c"]}),
            "argument \"target\" takes a single value",
        ),
        (
            json!({"target": "b"}),
            "argument \"target\" is given without the earlier positional argument \"sources\"",
        ),
        (
            json!({"sources": [{"a": 1}], "target": "b"}),
            "argument \"sources\" takes text, a number or a boolean, not an object",
        ),
    ];
    for (input, want) in cases {
        let r = set.call("cli__copy", input.clone()).await;
        assert!(r.is_error, "{input}");
        assert!(r.content.contains(want), "{input}: {}", r.content);
    }
    let r = set.call("cli__nope", json!({})).await;
    assert!(r.is_error);
    assert_eq!(r.content, "unknown tool \"cli__nope\"");
}

#[test]
fn names_are_sanitised_cut_to_64_characters_and_collisions_numbered_in_order() {
    let long: &'static str = "a".repeat(80).leak();
    let longer: &'static str = format!("{long}b").leak();
    let cmd = Command::new("t")
        .subcommand(Command::new("db").subcommand(Command::new("migrate")))
        .subcommand(Command::new("db.migrate"))
        .subcommand(Command::new("db_migrate"))
        .subcommand(Command::new("ünïcode"))
        .subcommand(Command::new(long))
        .subcommand(Command::new(longer));
    let set = ClapToolset::new(cmd, |_| async { Ok(ToolOutput::text("")) });
    let names: Vec<String> = set.tools().into_iter().map(|t| t.name).collect();
    let cut = "a".repeat(59);
    assert_eq!(
        names,
        [
            "cli__db_migrate".to_owned(),
            "cli__db_migrate_2".to_owned(),
            "cli__db_migrate_3".to_owned(),
            "cli___n_code".to_owned(),
            format!("cli__{cut}"),
            format!("cli__{}_2", "a".repeat(57)),
        ]
    );
    let re = regex::Regex::new("^[a-zA-Z0-9_-]{1,64}$").unwrap();
    assert!(names.iter().all(|n| re.is_match(n)), "{names:?}");
    // The same tree names the same way every time.
    let again = ClapToolset::new(set.command().clone(), |_| async {
        Ok(ToolOutput::text(""))
    });
    let again: Vec<String> = again.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(again, names);
    // A longer namespace leaves less room; an invalid one is cleaned.
    let set = set.with_namespace("my tools!");
    assert_eq!(set.namespace(), "my-tools-");
    assert!(set.tools().iter().all(|t| t.name.len() <= 64));
}

#[test]
fn a_root_without_subcommands_is_one_tool_named_after_it() {
    let cmd = Command::new("grep-lite").arg(Arg::new("pattern").required(true));
    let set = ClapToolset::new(cmd, |_| async { Ok(ToolOutput::text("")) });
    let names: Vec<String> = set.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["cli__grep-lite"]);
}

#[tokio::test]
async fn the_dispatcher_gets_the_root_matches_and_its_output_reaches_the_result() {
    let set = echo_matches();
    let r = set
        .call("cli__db_migrate", json!({"to": 7, "trace": true}))
        .await;
    assert!(!r.is_error, "{}", r.content);
    assert_eq!(
        r.content,
        "Kit { trace: true, cmd: Db { cmd: Migrate { to: Some(7) } } }"
    );
    let json_out = ClapToolset::new(Kit::command(), |_| async {
        Ok(ToolOutput::json(json!({"ok": true})))
    });
    let r = json_out.call("cli__db_status", json!({})).await;
    assert_eq!(r.structured_content, Some(json!({"ok": true})));
    let failing = ClapToolset::new(Kit::command(), |_| async {
        Err("the database is locked".into())
    });
    let r = failing.call("cli__db_status", Value::Null).await;
    assert!(r.is_error);
    assert_eq!(r.content, "the database is locked");
}

#[tokio::test]
async fn a_dispatcher_that_panics_is_an_error_result() {
    let set = ClapToolset::new(Kit::command(), |_| async {
        if true {
            panic!("boom");
        }
        Ok(ToolOutput::text(""))
    });
    let r = set.call("cli__db_status", json!({})).await;
    assert!(r.is_error);
    assert_eq!(r.content, "`kit db status` failed: the command panicked");
}

#[tokio::test]
async fn in_process_output_is_cut_to_the_cap() {
    let set = ClapToolset::new(Kit::command(), |_| async {
        Ok(ToolOutput::text("é".repeat(100)))
    })
    .with_output_cap(51);
    let r = set.call("cli__db_status", json!({})).await;
    assert_eq!(
        r.content,
        format!("{}\n[output cut: 150 more bytes]", "é".repeat(25))
    );
}

/// Counts drops of the slow command's future: a cancelled command is dropped unfinished.
struct Guard(Arc<AtomicUsize>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn slow_set(dropped: Arc<AtomicUsize>, finished: Arc<AtomicUsize>) -> ClapToolset {
    ClapToolset::new(Kit::command(), move |_| {
        let (dropped, finished) = (dropped.clone(), finished.clone());
        async move {
            let _guard = Guard(dropped);
            tokio::time::sleep(Duration::from_secs(30)).await;
            finished.fetch_add(1, Ordering::SeqCst);
            Ok(ToolOutput::text("done"))
        }
    })
}

#[tokio::test(start_paused = true)]
async fn a_slow_command_times_out_as_an_error_result_and_is_stopped() {
    let (dropped, finished) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let set = slow_set(dropped.clone(), finished.clone()).with_timeout(Duration::from_millis(1500));
    let r = set.call("cli__db_status", json!({})).await;
    assert!(r.is_error);
    assert_eq!(r.content, "`kit db status` timed out after 1500 ms");
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
    assert_eq!(finished.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_call_cancels_the_command() {
    let (dropped, finished) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let set = slow_set(dropped.clone(), finished.clone());
    let call = tokio::spawn({
        let set = set.clone();
        async move { set.call("cli__db_status", json!({})).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(dropped.load(Ordering::SeqCst), 0, "still running");
    call.abort();
    let _ = call.await;
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(finished.load(Ordering::SeqCst), 0);
}

#[test]
fn hints_become_annotations_and_approval_suggestions() {
    let set = echo_matches().with_hint("db status", CommandHint::ReadOnly);
    let tools = set.tools();
    let status = tools.iter().find(|t| t.name == "cli__db_status").unwrap();
    assert_eq!(status.annotations, Some(json!({"readOnlyHint": true})));
    assert_eq!(status.visibility, [Visibility::Model]);
    let migrate = tools.iter().find(|t| t.name == "cli__db_migrate").unwrap();
    assert_eq!(
        migrate.annotations,
        Some(json!({"readOnlyHint": false, "destructiveHint": true}))
    );
    assert_eq!(set.suggest("cli__db_status"), Some(ToolDecision::Allow));
    assert_eq!(set.suggest("cli__db_migrate"), Some(ToolDecision::Ask));
    assert_eq!(set.suggest("demo__roll_dice"), None);
    let policy = crate::ApprovalPolicy::new(ToolDecision::Allow)
        .ask("cli__db_status")
        .with_check(set.approval_check());
    let scope = Scope::default();
    // The operator's ask wins over the read-only allow; the mutating command asks even over a
    // default of allow; other tools keep the default.
    assert_eq!(
        policy.decide(&scope, "cli__db_status", &json!({})),
        ToolDecision::Ask
    );
    assert_eq!(
        policy.decide(&scope, "cli__db_migrate", &json!({})),
        ToolDecision::Ask
    );
    assert_eq!(
        policy.decide(&scope, "web__fetch", &json!({})),
        ToolDecision::Allow
    );
    let everything_read_only = echo_matches().with_default_hint(CommandHint::ReadOnly);
    assert_eq!(
        everything_read_only.suggest("cli__copy"),
        Some(ToolDecision::Allow)
    );
}

#[test]
fn debug_names_the_environment_but_never_its_values() {
    let set = ClapToolset::subprocess(Kit::command(), "/bin/kit").with_env("KIT_TOKEN", "s3cret");
    let shown = format!("{set:?}");
    assert!(shown.contains("KIT_TOKEN"), "{shown}");
    assert!(!shown.contains("s3cret"), "{shown}");
}

/// An LLM host with one tool of its own (used when there is no hub).
struct Llm;

#[async_trait::async_trait]
impl Host for Llm {
    async fn models(
        &self,
        _: &RequestContext,
    ) -> Result<Vec<lmchatkit_protocol::Model>, crate::HostError> {
        Ok(Vec::new())
    }
    fn complete(&self, _: &RequestContext, _: crate::CompleteRequest) -> crate::EventStream {
        Box::pin(futures_util::stream::empty())
    }
    async fn list_tools(
        &self,
        _: &Scope,
    ) -> Result<Vec<lmchatkit_protocol::Tool>, crate::HostError> {
        Ok(vec![lmchatkit_protocol::Tool::new("own")])
    }
}

#[tokio::test]
async fn standard_host_lists_routes_and_scopes_the_toolset_beside_its_other_tools() {
    let host = crate::StandardHost::new(Llm).with_toolset(echo_matches());
    let cx = RequestContext::default();
    let names: Vec<String> = host
        .list_tools(&Scope::model(cx.clone()))
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(
        names,
        ["own", "cli__copy", "cli__db_migrate", "cli__db_status"]
    );
    assert_eq!(
        host.tool_source(&cx, "cli__db_status").await,
        ToolSource::Scoped("cli".into())
    );
    // A view of another server sees none of them.
    let other = Scope::view(cx.clone(), Some("demo".into()));
    let names: Vec<String> = host
        .list_tools(&other)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["own"]);

    // Through the access layer: the model may call it, a view of another server may not, and
    // a view scoped to the toolset may not either (the tools are the model's only).
    let r = crate::access::call_tool(
        &host,
        &Scope::model(cx.clone()),
        "cli__db_migrate",
        &json!({"to": 2}),
    )
    .await
    .unwrap();
    assert_eq!(
        r.content,
        "Kit { trace: false, cmd: Db { cmd: Migrate { to: Some(2) } } }"
    );
    let e = crate::access::call_tool(&host, &other, "cli__db_migrate", &json!({}))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("does not belong"), "{e}");
    let own_view = Scope::view(cx.clone(), Some("cli".into()));
    let e = crate::access::call_tool(&host, &own_view, "cli__db_migrate", &json!({}))
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("not callable from this context"),
        "{e}"
    );
}

#[tokio::test]
async fn the_mcp_server_mode_is_listed_and_called_by_the_hub() {
    let set = echo_matches().with_hint("db status", CommandHint::ReadOnly);
    let hub = crate::McpHub::new(vec![set.in_process_server("kit")]);
    let scope = Scope::default();
    let tools = hub.list_tools(&scope).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["kit__copy", "kit__db_migrate", "kit__db_status"]);
    let status = tools.iter().find(|t| t.name == "kit__db_status").unwrap();
    assert_eq!(status.annotations, Some(json!({"readOnlyHint": true})));
    assert_eq!(
        tools[0].input_schema.as_ref().unwrap(),
        &copy_leaf(&set).schema
    );
    let r = hub
        .call_tool(&scope, "kit__db_migrate", json!({"to": 5}))
        .await
        .unwrap();
    assert!(!r.is_error, "{}", r.content);
    assert_eq!(
        r.content,
        "Kit { trace: false, cmd: Db { cmd: Migrate { to: Some(5) } } }"
    );
    let r = hub
        .call_tool(&scope, "kit__db_migrate", json!({"to": "soon"}))
        .await
        .unwrap();
    assert!(r.is_error);
    assert!(
        r.content.contains("invalid value 'soon' for '--to <TO>'"),
        "{}",
        r.content
    );
    hub.shutdown().await;
}
