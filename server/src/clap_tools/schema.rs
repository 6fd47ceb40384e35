//! Discovery: the runnable leaves of a built `clap::Command`, their tool names and the JSON
//! Schema of their arguments.

use std::any::TypeId;
use std::collections::HashSet;
use std::path::PathBuf;

use clap::{Arg, ArgAction, Command};
use serde_json::{Map, Value, json};

use super::CommandHint;

/// Names of subcommands that generate shell completions; never offered as tools.
pub(crate) const COMPLETION_COMMANDS: &[&str] = &[
    "completion",
    "completions",
    "generate-completion",
    "generate-completions",
    "complete",
];

/// How an argument takes its input.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ArgKind {
    /// A flag that sets `true` (`--force`).
    SetTrue,
    /// A flag that sets `false` (`--no-color`): the property is the resulting value.
    SetFalse,
    /// A counted flag (`-vvv`): a non-negative integer.
    Count,
    /// An option or positional that takes values.
    Value,
}

/// The JSON type of an argument's values.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ValueType {
    String,
    Integer,
    Number,
    Boolean,
    Enum(Vec<String>),
}

/// How an argument is written on the command line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Switch {
    Long(String),
    Short(char),
    /// Positional, at this index (clap's, 1-based).
    Positional(usize),
}

/// One argument of a leaf, as the argv builder needs it.
#[derive(Debug, Clone)]
pub(crate) struct ArgSpec {
    pub id: String,
    pub kind: ArgKind,
    pub switch: Switch,
    pub value: ValueType,
    /// The property is an array (repeated or several values).
    pub multiple: bool,
    /// Several values go after one occurrence (`--point 1 2`) rather than one per occurrence.
    pub many_per_occurrence: bool,
    pub required: bool,
}

/// A runnable leaf command offered as a tool.
#[derive(Debug, Clone)]
pub(crate) struct Leaf {
    /// Subcommand names below the root (empty for a root without subcommands).
    pub path: Vec<String>,
    /// The tool name, without the namespace.
    pub name: String,
    pub description: String,
    pub args: Vec<ArgSpec>,
    pub schema: Value,
    pub hint: CommandHint,
}

/// The leaves of `root` (already built), named within `budget` characters, in clap's order
/// (depth first, subcommands in definition order). `skip` holds space-joined paths to leave out.
pub(crate) fn discover(
    root: &Command,
    budget: usize,
    skip: &HashSet<String>,
    hint_for: impl Fn(&str) -> CommandHint,
) -> Vec<Leaf> {
    let mut found = Vec::new();
    if root.has_subcommands() {
        walk(root, &mut Vec::new(), skip, &mut found);
    } else {
        found.push((Vec::new(), root));
    }
    let mut used = HashSet::new();
    found
        .into_iter()
        .map(|(path, cmd)| {
            let base = if path.is_empty() {
                root.get_name().to_owned()
            } else {
                path.join("_")
            };
            let name = unique_name(&sanitize(&base, budget), budget, &mut used);
            let args = arg_specs(cmd);
            let schema = input_schema(cmd, &args);
            let description = describe(root, cmd, &path);
            let hint = hint_for(&path.join(" "));
            Leaf {
                path,
                name,
                description,
                args,
                schema,
                hint,
            }
        })
        .collect()
}

fn walk<'a>(
    cmd: &'a Command,
    path: &mut Vec<String>,
    skip: &HashSet<String>,
    out: &mut Vec<(Vec<String>, &'a Command)>,
) {
    for sub in cmd.get_subcommands() {
        let name = sub.get_name();
        if sub.is_hide_set() || name == "help" || COMPLETION_COMMANDS.contains(&name) {
            continue;
        }
        path.push(name.to_owned());
        if !skip.contains(&path.join(" ")) {
            if sub.has_subcommands() {
                walk(sub, path, skip, out);
            } else {
                out.push((path.clone(), sub));
            }
        }
        path.pop();
    }
}

/// `name` with every character outside `[a-zA-Z0-9_-]` replaced by `_`, cut to `budget`
/// characters; `command` when nothing is left.
pub(crate) fn sanitize(name: &str, budget: usize) -> String {
    let s: String = name
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
            _ => '_',
        })
        .take(budget)
        .collect();
    if s.is_empty() {
        "command".chars().take(budget.max(1)).collect()
    } else {
        s
    }
}

/// `name`, or the first free `name_2`, `name_3`, … (the base cut so the suffix fits).
fn unique_name(name: &str, budget: usize, used: &mut HashSet<String>) -> String {
    if used.insert(name.to_owned()) {
        return name.to_owned();
    }
    let mut n = 2usize;
    loop {
        let suffix = format!("_{n}");
        let keep = budget.saturating_sub(suffix.len());
        // Sanitised names are ASCII, so any byte index is a character boundary.
        let candidate = format!("{}{suffix}", &name[..name.len().min(keep)]);
        if used.insert(candidate.clone()) {
            return candidate;
        }
        n += 1;
    }
}

fn describe(root: &Command, cmd: &Command, path: &[String]) -> String {
    let text = cmd
        .get_long_about()
        .or(cmd.get_about())
        .map(|s| s.to_string().trim().to_owned())
        .filter(|s| !s.is_empty());
    text.unwrap_or_else(|| {
        let mut words = vec![root.get_name().to_owned()];
        words.extend(path.iter().cloned());
        format!("Runs `{}`.", words.join(" "))
    })
}

/// True for the arguments a tool never offers: help, version and hidden ones.
fn offered(arg: &Arg) -> bool {
    !arg.is_hide_set()
        && !matches!(
            arg.get_action(),
            ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
        )
}

fn arg_specs(cmd: &Command) -> Vec<ArgSpec> {
    let mut args: Vec<ArgSpec> = cmd
        .get_arguments()
        .filter(|a| offered(a))
        .map(spec)
        .collect();
    // Positionals first, in their order; then options as defined.
    args.sort_by_key(|a| match a.switch {
        Switch::Positional(i) => (0, i),
        _ => (1, 0),
    });
    args
}

fn spec(arg: &Arg) -> ArgSpec {
    let kind = match arg.get_action() {
        ArgAction::SetTrue => ArgKind::SetTrue,
        ArgAction::SetFalse => ArgKind::SetFalse,
        ArgAction::Count => ArgKind::Count,
        _ => ArgKind::Value,
    };
    let switch = match (arg.get_long(), arg.get_short(), arg.get_index()) {
        (Some(l), _, _) => Switch::Long(l.to_owned()),
        (None, Some(s), _) => Switch::Short(s),
        (None, None, i) => Switch::Positional(i.unwrap_or(usize::MAX)),
    };
    let max = arg.get_num_args().map_or(1, |r| r.max_values());
    let appends = matches!(arg.get_action(), ArgAction::Append);
    let multiple = kind == ArgKind::Value && (appends || max > 1);
    ArgSpec {
        id: arg.get_id().to_string(),
        value: value_type(arg),
        kind,
        switch,
        multiple,
        many_per_occurrence: max > 1,
        required: arg.is_required_set(),
    }
}

fn value_type(arg: &Arg) -> ValueType {
    let id = arg.get_value_parser().type_id();
    let is = |t: TypeId| id == t;
    if is(TypeId::of::<bool>()) {
        return ValueType::Boolean;
    }
    let ints = [
        TypeId::of::<i8>(),
        TypeId::of::<i16>(),
        TypeId::of::<i32>(),
        TypeId::of::<i64>(),
        TypeId::of::<isize>(),
        TypeId::of::<u8>(),
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<usize>(),
    ];
    if ints.into_iter().any(is) {
        return ValueType::Integer;
    }
    if is(TypeId::of::<f64>()) || is(TypeId::of::<f32>()) {
        return ValueType::Number;
    }
    let values: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|p| !p.is_hide_set())
        .map(|p| p.get_name().to_owned())
        .collect();
    if !values.is_empty() {
        return ValueType::Enum(values);
    }
    if is(TypeId::of::<PathBuf>()) || is(TypeId::of::<String>()) {
        return ValueType::String;
    }
    ValueType::String
}

fn item_schema(v: &ValueType) -> Map<String, Value> {
    let mut m = Map::new();
    match v {
        ValueType::String => m.insert("type".into(), json!("string")),
        ValueType::Integer => m.insert("type".into(), json!("integer")),
        ValueType::Number => m.insert("type".into(), json!("number")),
        ValueType::Boolean => m.insert("type".into(), json!("boolean")),
        ValueType::Enum(values) => {
            m.insert("type".into(), json!("string"));
            m.insert("enum".into(), json!(values))
        }
    };
    m
}

/// A default as clap holds it (text), in the property's JSON type.
fn typed_default(v: &ValueType, raw: &str) -> Value {
    match v {
        ValueType::Integer => raw.parse::<i64>().map_or_else(|_| json!(raw), |n| json!(n)),
        ValueType::Number => raw.parse::<f64>().map_or_else(|_| json!(raw), |n| json!(n)),
        ValueType::Boolean => raw
            .parse::<bool>()
            .map_or_else(|_| json!(raw), |b| json!(b)),
        ValueType::String | ValueType::Enum(_) => json!(raw),
    }
}

fn property(arg: &Arg, spec: &ArgSpec) -> Value {
    let mut p = match spec.kind {
        ArgKind::SetTrue | ArgKind::SetFalse => {
            let mut m = Map::new();
            m.insert("type".into(), json!("boolean"));
            m.insert("default".into(), json!(spec.kind == ArgKind::SetFalse));
            m
        }
        ArgKind::Count => {
            let mut m = Map::new();
            m.insert("type".into(), json!("integer"));
            m.insert("minimum".into(), json!(0));
            m.insert("maximum".into(), json!(u8::MAX));
            m.insert("default".into(), json!(0));
            m
        }
        ArgKind::Value => {
            let item = item_schema(&spec.value);
            let defaults: Vec<Value> = arg
                .get_default_values()
                .iter()
                .map(|d| typed_default(&spec.value, &d.to_string_lossy()))
                .collect();
            let mut m = if spec.multiple {
                let mut m = Map::new();
                m.insert("type".into(), json!("array"));
                m.insert("items".into(), Value::Object(item));
                if !defaults.is_empty() {
                    m.insert("default".into(), Value::Array(defaults));
                }
                m
            } else {
                let mut m = item;
                if let Some(d) = defaults.into_iter().next() {
                    m.insert("default".into(), d);
                }
                m
            };
            if spec.multiple && spec.required {
                m.insert("minItems".into(), json!(1));
            }
            m
        }
    };
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string().trim().to_owned())
        .filter(|h| !h.is_empty());
    if let Some(h) = help {
        p.insert("description".into(), json!(h));
    }
    Value::Object(p)
}

fn input_schema(cmd: &Command, specs: &[ArgSpec]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for spec in specs {
        let Some(arg) = cmd.get_arguments().find(|a| a.get_id() == spec.id.as_str()) else {
            continue;
        };
        properties.insert(spec.id.clone(), property(arg, spec));
        if spec.required {
            required.push(json!(spec.id));
        }
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    schema.insert("additionalProperties".into(), json!(false));
    Value::Object(schema)
}
