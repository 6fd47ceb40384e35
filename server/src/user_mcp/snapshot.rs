//! Tool snapshots: the hash of a tool's canonical definition, the approval a server's
//! annotations suggest, the review of a listing against the accepted tools, and an accept.
//!
//! Decisions:
//! - **Canonical JSON**: objects with keys sorted by their UTF-8 bytes, no whitespace, strings
//!   and numbers as serde_json writes them. The crate's `serde_json` keeps insertion order
//!   (`preserve_order`), so the sorting is done here, not left to the map type.
//! - **What is hashed**: `{"description", "inputSchema", "name"}` (a missing description is
//!   `""`). Title, annotations, output schema and `_meta` are not: they do not change what the
//!   model is told (the annotations only suggest an approval, at review time).
//! - **Suggested approval**: `always` for a tool that says it is read-only and not destructive,
//!   else `ask`. Never `never`: refusing a tool is the user's call. Annotations are advisory
//!   and untrusted; they count only here.
//! - **A rename** is a removal plus an addition: tools are matched by name only.

use std::collections::BTreeSet;

use lmchatkit_protocol::{
    AcceptTools, AcceptedTool, ChangedTool, ReviewedTool, ToolReview, UserToolApproval,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{MAX_TOOLS, UserMcpRecord};
use crate::error::Failure;

/// `value` as canonical JSON (keys sorted, no whitespace).
///
/// ```
/// use lmchatkit::user_mcp::snapshot::canonical_json;
/// let v = serde_json::json!({"b": 1, "a": {"d": [true, null], "c": "x"}});
/// assert_eq!(canonical_json(&v), r#"{"a":{"c":"x","d":[true,null]},"b":1}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(k) {
                    write_canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// `sha256:` + hex of the canonical JSON of `{name, description, inputSchema}`.
///
/// ```
/// use lmchatkit::user_mcp::snapshot::tool_hash;
/// let a = tool_hash("t", "d", &serde_json::json!({"type": "object", "properties": {}}));
/// let b = tool_hash("t", "d", &serde_json::json!({"properties": {}, "type": "object"}));
/// assert_eq!(a, b, "key order does not matter");
/// assert_ne!(a, tool_hash("t", "d2", &serde_json::json!({"type": "object", "properties": {}})));
/// assert!(a.starts_with("sha256:") && a.len() == 7 + 64);
/// ```
pub fn tool_hash(name: &str, description: &str, input_schema: &Value) -> String {
    let canonical = canonical_json(&json!({
        "name": name,
        "description": description,
        "inputSchema": input_schema,
    }));
    format!(
        "sha256:{}",
        hex::encode(Sha256::digest(canonical.as_bytes()))
    )
}

/// The approval a tool's annotations suggest (see the module docs).
pub fn suggested_approval(read_only: Option<bool>, destructive: Option<bool>) -> UserToolApproval {
    match (read_only, destructive) {
        (Some(true), None | Some(false)) => UserToolApproval::Always,
        _ => UserToolApproval::Ask,
    }
}

/// A listed tool, hashed, with its suggested approval.
pub fn reviewed(
    name: &str,
    description: &str,
    input_schema: Value,
    read_only: Option<bool>,
    destructive: Option<bool>,
) -> ReviewedTool {
    let hash = tool_hash(name, description, &input_schema);
    ReviewedTool::new(
        name,
        description,
        input_schema,
        hash,
        suggested_approval(read_only, destructive),
    )
}

/// Upstream's listing against the accepted tools.
pub fn review(accepted: &[AcceptedTool], upstream: &[ReviewedTool]) -> ToolReview {
    let mut out = ToolReview::default();
    for u in upstream {
        match accepted.iter().find(|a| a.name == u.name) {
            None => out.added.push(u.clone()),
            Some(a) if a.hash == u.hash => out.unchanged.push(u.name.clone()),
            Some(a) => out.changed.push(ChangedTool {
                accepted: a.clone(),
                upstream: u.clone(),
                description_changed: a.description != u.description,
                schema_changed: canonical_json(&a.input_schema) != canonical_json(&u.input_schema),
            }),
        }
    }
    out.removed = accepted
        .iter()
        .filter(|a| !upstream.iter().any(|u| u.name == a.name))
        .cloned()
        .collect();
    out
}

/// Applies an accept to `record`: each named tool takes the pending definition with the
/// reviewed hash (or, for the accepted definition's hash, only new settings); `remove` drops
/// accepted tools. Nothing changes when anything is refused.
pub(crate) fn accept(record: &mut UserMcpRecord, body: AcceptTools) -> Result<(), Failure> {
    let mut tools = record.tools.clone();
    let mut named = BTreeSet::new();
    for t in body.tools {
        if !named.insert(t.name.clone()) {
            return Err(Failure::Invalid(format!(
                "the tool {:?} is named twice",
                t.name
            )));
        }
        check_tool_name(&record.slug, &t.name)?;
        let pending = record.pending.iter().find(|p| p.name == t.name);
        let slot = tools.iter().position(|a| a.name == t.name);
        match (pending, slot) {
            (Some(p), _) if p.hash == t.hash => {
                let mut new = AcceptedTool::from_review(
                    p,
                    t.enabled.unwrap_or(true),
                    t.approval.unwrap_or(p.suggested_approval),
                );
                if let Some(i) = slot {
                    // Settings the user made stay unless this accept gives new ones.
                    let old = &tools[i];
                    new.enabled = t.enabled.unwrap_or(old.enabled);
                    new.approval = t.approval.unwrap_or(old.approval);
                    tools[i] = new;
                } else {
                    tools.push(new);
                }
            }
            (_, Some(i)) if tools[i].hash == t.hash => {
                let a = &mut tools[i];
                a.enabled = t.enabled.unwrap_or(a.enabled);
                a.approval = t.approval.unwrap_or(a.approval);
            }
            (Some(_), _) | (_, Some(_)) => {
                return Err(Failure::Conflict(format!(
                    "the definition of {:?} is not the one reviewed (hash {}); refresh and review it again",
                    t.name, t.hash
                )));
            }
            (None, None) => {
                return Err(Failure::Invalid(format!(
                    "the tool {:?} is not in the last refresh; refresh first",
                    t.name
                )));
            }
        }
    }
    for name in body.remove {
        if named.contains(&name) {
            return Err(Failure::Invalid(format!(
                "the tool {name:?} is both accepted and removed"
            )));
        }
        let before = tools.len();
        tools.retain(|a| a.name != name);
        if tools.len() == before {
            return Err(Failure::Invalid(format!(
                "the tool {name:?} is not accepted, so it cannot be removed"
            )));
        }
    }
    if tools.len() > MAX_TOOLS {
        return Err(Failure::Invalid(format!(
            "at most {MAX_TOOLS} tools per server"
        )));
    }
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    record.tools = tools;
    Ok(())
}

/// Longest name the model sees (`{slug}__{tool}`): the common limit of model APIs.
pub const MAX_EXPOSED_NAME: usize = 64;

/// A tool can be accepted only when the name the model would call it by is one model APIs take:
/// 1 to [`MAX_EXPOSED_NAME`] of `A-Z a-z 0-9 _ -`.
fn check_tool_name(slug: &str, tool: &str) -> Result<(), Failure> {
    let exposed = super::exposed_name(slug, tool);
    let ok = !tool.is_empty()
        && exposed.len() <= MAX_EXPOSED_NAME
        && exposed
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    match ok {
        true => Ok(()),
        false => Err(Failure::Invalid(format!(
            "the tool {tool:?} cannot be accepted: as {exposed:?} its name must be 1 to \
             {MAX_EXPOSED_NAME} of A-Z, a-z, 0-9, '_' or '-' for models to call it"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lmchatkit_protocol::AcceptTool;

    fn listed(name: &str, desc: &str) -> ReviewedTool {
        reviewed(name, desc, json!({"type": "object"}), None, None)
    }

    #[test]
    fn the_hash_ignores_key_order_but_not_content() {
        let a = tool_hash("t", "d", &json!({"a": 1, "b": {"x": [1, 2]}}));
        assert_eq!(a, tool_hash("t", "d", &json!({"b": {"x": [1, 2]}, "a": 1})));
        assert_ne!(a, tool_hash("t", "d", &json!({"b": {"x": [2, 1]}, "a": 1})));
        assert_ne!(a, tool_hash("u", "d", &json!({"a": 1, "b": {"x": [1, 2]}})));
        // The hash is over the documented canonical text.
        let text = r#"{"description":"d","inputSchema":{},"name":"t"}"#;
        assert_eq!(
            tool_hash("t", "d", &json!({})),
            format!("sha256:{}", hex::encode(Sha256::digest(text)))
        );
    }

    #[test]
    fn only_read_only_non_destructive_tools_suggest_always() {
        assert_eq!(
            suggested_approval(Some(true), None),
            UserToolApproval::Always
        );
        assert_eq!(
            suggested_approval(Some(true), Some(true)),
            UserToolApproval::Ask
        );
        assert_eq!(suggested_approval(None, None), UserToolApproval::Ask);
        assert_eq!(
            suggested_approval(Some(false), Some(false)),
            UserToolApproval::Ask
        );
    }

    #[test]
    fn a_review_sorts_tools_into_added_removed_changed_and_unchanged() {
        let old = [
            AcceptedTool::from_review(&listed("keep", "k"), true, UserToolApproval::Ask),
            AcceptedTool::from_review(&listed("edit", "before"), true, UserToolApproval::Ask),
            AcceptedTool::from_review(&listed("old_name", "r"), true, UserToolApproval::Ask),
        ];
        let now = [
            listed("keep", "k"),
            listed("edit", "after"),
            listed("new_name", "r"),
        ];
        let r = review(&old, &now);
        assert_eq!(r.unchanged, ["keep"]);
        assert_eq!(
            r.added.iter().map(|t| &t.name).collect::<Vec<_>>(),
            ["new_name"]
        );
        assert_eq!(
            r.removed.iter().map(|t| &t.name).collect::<Vec<_>>(),
            ["old_name"]
        );
        assert_eq!(r.changed.len(), 1);
        assert!(r.changed[0].description_changed && !r.changed[0].schema_changed);
        let schema = reviewed(
            "keep",
            "k",
            json!({"type": "object", "required": ["x"]}),
            None,
            None,
        );
        let r = review(&old[..1], &[schema]);
        assert!(r.changed[0].schema_changed && !r.changed[0].description_changed);
    }

    fn record_with(pending: Vec<ReviewedTool>, tools: Vec<AcceptedTool>) -> UserMcpRecord {
        let mut r = UserMcpRecord::new("s", "S", "https://s.example/", 0);
        r.pending = pending;
        r.tools = tools;
        r
    }

    #[test]
    fn an_accept_takes_the_reviewed_definition_with_the_suggested_approval() {
        let ro = reviewed("read", "r", json!({}), Some(true), None);
        let mut rec = record_with(vec![ro.clone(), listed("write", "w")], vec![]);
        let body = AcceptTools::new([
            AcceptTool::new("read", ro.hash.clone()),
            AcceptTool::new("write", rec.pending[1].hash.clone())
                .with_approval(UserToolApproval::Never)
                .with_enabled(false),
        ]);
        accept(&mut rec, body).unwrap();
        assert_eq!(rec.tools.len(), 2);
        assert_eq!(
            (rec.tools[0].approval, rec.tools[0].enabled),
            (UserToolApproval::Always, true)
        );
        assert_eq!(
            (rec.tools[1].approval, rec.tools[1].enabled),
            (UserToolApproval::Never, false)
        );
    }

    #[test]
    fn an_accept_with_a_hash_other_than_reviewed_changes_nothing() {
        let mut rec = record_with(vec![listed("a", "now")], vec![]);
        let before = rec.clone();
        let stale = listed("a", "what the user saw").hash;
        let e = accept(&mut rec, AcceptTools::new([AcceptTool::new("a", stale)])).unwrap_err();
        assert!(matches!(e, Failure::Conflict(_)), "{e}");
        let e = accept(
            &mut rec,
            AcceptTools::new([AcceptTool::new("zz", "sha256:0")]),
        )
        .unwrap_err();
        assert!(matches!(e, Failure::Invalid(_)), "{e}");
        assert_eq!(rec, before);
    }

    #[test]
    fn a_tool_whose_name_models_cannot_call_is_refused() {
        for name in ["has space", "dots.too", "", &"x".repeat(62)] {
            let t = listed(name, "d");
            let mut rec = record_with(vec![t.clone()], vec![]);
            let e =
                accept(&mut rec, AcceptTools::new([AcceptTool::new(name, t.hash)])).unwrap_err();
            assert!(matches!(e, Failure::Invalid(_)), "{name}: {e}");
            assert!(rec.tools.is_empty());
        }
        let t = listed(&"x".repeat(64 - 3), "d");
        let mut rec = record_with(vec![t.clone()], vec![]);
        accept(
            &mut rec,
            AcceptTools::new([AcceptTool::new(t.name.clone(), t.hash)]),
        )
        .unwrap();
    }

    #[test]
    fn settings_of_an_accepted_tool_change_with_its_own_hash_and_removal_drops_it() {
        let t = listed("a", "d");
        let mut rec = record_with(
            vec![],
            vec![AcceptedTool::from_review(&t, true, UserToolApproval::Ask)],
        );
        accept(
            &mut rec,
            AcceptTools::new([AcceptTool::new("a", t.hash.clone()).with_enabled(false)]),
        )
        .unwrap();
        assert!(!rec.tools[0].enabled);
        assert_eq!(rec.tools[0].approval, UserToolApproval::Ask);
        let e = accept(&mut rec, AcceptTools::default().with_remove(["b"])).unwrap_err();
        assert!(matches!(e, Failure::Invalid(_)));
        accept(&mut rec, AcceptTools::default().with_remove(["a"])).unwrap();
        assert!(rec.tools.is_empty());
    }
}
