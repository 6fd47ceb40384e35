//! From a tool's JSON input back to an argv that the same `clap::Command` parses.
//!
//! Options are written `--long=value` (or `-s=value`), so a value that starts with `-` stays a
//! value; positionals come last, in their index order, after `--` when one of them starts with
//! `-`. (A positional that takes several values followed by another one cannot take a value
//! starting with `-`: clap then gives everything after `--` to the last positional, and its
//! error is what the model reads.) Only shapes clap could not
//! be told about are refused here (unknown keys, an object, an array for a single value, a
//! later positional without an earlier one); everything else is left to clap's own validation.

use serde_json::{Map, Value};

use super::schema::{ArgKind, ArgSpec, Leaf, Switch};

/// The argv for `leaf` of the command `root_name` with `input`, or a message for the model.
pub(crate) fn build(root_name: &str, leaf: &Leaf, input: &Value) -> Result<Vec<String>, String> {
    let empty = Map::new();
    let input = match input {
        Value::Null => &empty,
        Value::Object(m) => m,
        other => {
            return Err(format!(
                "the input must be a JSON object, not {}",
                kind_of(other)
            ));
        }
    };
    if let Some(unknown) = input
        .keys()
        .find(|k| !leaf.args.iter().any(|a| &a.id == *k))
    {
        let known: Vec<&str> = leaf.args.iter().map(|a| a.id.as_str()).collect();
        return Err(format!(
            "unknown argument {unknown:?}; this command takes {}",
            if known.is_empty() {
                "no arguments".to_owned()
            } else {
                known.join(", ")
            }
        ));
    }
    let mut argv = vec![root_name.to_owned()];
    argv.extend(leaf.path.iter().cloned());
    let mut positionals: Vec<String> = Vec::new();
    let mut gap: Option<&str> = None;
    for spec in &leaf.args {
        let value = input.get(&spec.id).filter(|v| !v.is_null());
        if let Switch::Positional(_) = spec.switch {
            match value {
                None => gap = gap.or(Some(&spec.id)),
                Some(v) => {
                    if let Some(missing) = gap {
                        return Err(format!(
                            "argument {:?} is given without the earlier positional argument {missing:?}",
                            spec.id
                        ));
                    }
                    positionals.extend(values(spec, v)?);
                }
            }
            continue;
        }
        let Some(v) = value else { continue };
        emit_option(spec, v, &mut argv)?;
    }
    // `--` only when a value would read as an option: clap jumps to the last positional after
    // `--` when an earlier one takes several values, so it is not written without need.
    if positionals.iter().any(|p| p.starts_with('-')) {
        argv.push("--".to_owned());
    }
    argv.extend(positionals);
    Ok(argv)
}

fn flag(spec: &ArgSpec) -> String {
    match &spec.switch {
        Switch::Long(l) => format!("--{l}"),
        Switch::Short(s) => format!("-{s}"),
        Switch::Positional(_) => String::new(),
    }
}

fn emit_option(spec: &ArgSpec, v: &Value, argv: &mut Vec<String>) -> Result<(), String> {
    let id = &spec.id;
    match spec.kind {
        ArgKind::SetTrue | ArgKind::SetFalse => {
            let Value::Bool(b) = v else {
                return Err(format!("argument {id:?} is a flag: true or false"));
            };
            // The property is the resulting value: a SetFalse flag is written to get `false`.
            if *b == (spec.kind == ArgKind::SetTrue) {
                argv.push(flag(spec));
            }
        }
        ArgKind::Count => {
            let n = v
                .as_u64()
                .filter(|n| *n <= u64::from(u8::MAX))
                .ok_or_else(|| format!("argument {id:?} is a count: an integer from 0 to 255"))?;
            for _ in 0..n {
                argv.push(flag(spec));
            }
        }
        ArgKind::Value => {
            let vals = values(spec, v)?;
            if spec.many_per_occurrence {
                // One occurrence carrying every value (`--point 1 2`).
                if !vals.is_empty() {
                    argv.push(flag(spec));
                    argv.extend(vals);
                }
            } else {
                for val in vals {
                    argv.push(format!("{}={val}", flag(spec)));
                }
            }
        }
    }
    Ok(())
}

/// The text values of `v`: an array for a multiple argument, else one scalar.
fn values(spec: &ArgSpec, v: &Value) -> Result<Vec<String>, String> {
    match v {
        Value::Array(items) if spec.multiple => items.iter().map(|i| scalar(spec, i)).collect(),
        Value::Array(_) => Err(format!("argument {:?} takes a single value", spec.id)),
        other if spec.multiple => Ok(vec![scalar(spec, other)?]),
        other => Ok(vec![scalar(spec, other)?]),
    }
}

fn scalar(spec: &ArgSpec, v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(format!(
            "argument {:?} takes text, a number or a boolean, not {}",
            spec.id,
            kind_of(other)
        )),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
