//! The approval policy on the wire: what the operator's policy says about one tool call
//! ([`ToolDecision`]), and the tools a principal always allows ([`ToolApprovals`], the body of
//! `GET`/`PUT {prefix}/api/tools/approvals`).

use serde::{Deserialize, Serialize};

/// What the approval policy decides for one tool call.
///
/// ```
/// use lmchatkit_protocol::ToolDecision;
/// assert_eq!(serde_json::to_string(&ToolDecision::Ask).unwrap(), r#""ask""#);
/// assert!(ToolDecision::Deny > ToolDecision::Ask && ToolDecision::Ask > ToolDecision::Allow);
/// ```
///
/// The order is the precedence: when several answers meet, the greatest wins (`deny` beats
/// `ask` beats `allow`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolDecision {
    /// The call runs without asking the user.
    Allow,
    /// The user approves or declines the call first.
    Ask,
    /// The call never runs; the model is told the operator's policy blocks it.
    Deny,
}

/// The tools a principal always allows (body and answer of `{prefix}/api/tools/approvals`).
/// A `PUT` replaces the whole list. An "always" never overrides a tool the operator denies.
///
/// ```
/// use lmchatkit_protocol::ToolApprovals;
/// let a = ToolApprovals::new(["demo__echo"]);
/// assert_eq!(serde_json::to_string(&a).unwrap(), r#"{"always":["demo__echo"]}"#);
/// let empty: ToolApprovals = serde_json::from_str("{}").unwrap();
/// assert!(empty.always.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolApprovals {
    /// Tool names (full names, as the model calls them) that run without asking.
    #[serde(default)]
    pub always: Vec<String>,
}

impl ToolApprovals {
    /// A list of these tool names.
    pub fn new<S: Into<String>>(always: impl IntoIterator<Item = S>) -> Self {
        Self {
            always: always.into_iter().map(Into::into).collect(),
        }
    }
}

/// The tool result the model reads for a call the operator's policy blocks (both protocols: our
/// UI writes it, the server-side loop too).
///
/// ```
/// let t = lmchatkit_protocol::blocked_text("fs__rm");
/// assert!(t.contains("'fs__rm'") && t.contains("operator's policy"));
/// ```
pub fn blocked_text(tool: &str) -> String {
    format!(
        "[error] The operator's policy blocks the tool '{tool}'; it was not run. Do not call it \
         again; continue without it or tell the user it is unavailable."
    )
}

/// What a tool's input schema says about one of its arguments: what the approval card shows
/// beside the argument's value, so the user knows what they allow. UI-only, like
/// [`crate::Approval`]: the service puts them on a call that waits for the user
/// ([`crate::ToolCall::hints`]) and strips them before the model sees the conversation (the
/// browser never receives tool lists, only the hints of the call it is asked about).
///
/// ```
/// use lmchatkit_protocol::ArgumentHint;
/// let schema = serde_json::json!({
///     "type": "object",
///     "properties": {
///         "path": {"type": "string", "description": "The file to delete."},
///         "force": {"type": "boolean", "title": "Skip the trash"}
///     },
///     "required": ["path"]
/// });
/// let hints = ArgumentHint::from_schema(&schema);
/// assert_eq!(hints[0], ArgumentHint {
///     name: "path".into(),
///     description: Some("The file to delete.".into()),
///     required: true,
/// });
/// assert_eq!(hints[1].description.as_deref(), Some("Skip the trash"));
/// assert!(!hints[1].required);
/// assert_eq!(
///     serde_json::to_string(&hints[1]).unwrap(),
///     r#"{"name":"force","description":"Skip the trash"}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ArgumentHint {
    /// The argument's name (a key of the arguments object).
    pub name: String,
    /// The schema's `description` of the argument, or its `title` when it has none; omitted
    /// when it has neither. At most [`ArgumentHint::MAX_DESCRIPTION`] characters (longer ones
    /// are cut and end with `…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the schema lists the argument as `required`; omitted when `false`.
    #[serde(default, skip_serializing_if = "crate::is_false")]
    pub required: bool,
}

impl ArgumentHint {
    /// The most hints one call carries (a schema's first properties, in its order).
    pub const MAX_HINTS: usize = 32;
    /// The longest description a hint carries, in characters.
    pub const MAX_DESCRIPTION: usize = 300;

    /// The hints of an object schema's `properties`, in the schema's order; empty for a schema
    /// without properties. A tool's schema comes from its server and is not trusted: names and
    /// texts are data to show, never markup, and their number and length are capped.
    pub fn from_schema(schema: &serde_json::Value) -> Vec<ArgumentHint> {
        let Some(props) = schema.get("properties").and_then(|p| p.as_object()) else {
            return Vec::new();
        };
        let required: Vec<&str> = schema
            .get("required")
            .and_then(|r| r.as_array())
            .map(|r| r.iter().filter_map(|n| n.as_str()).collect())
            .unwrap_or_default();
        props
            .iter()
            .take(Self::MAX_HINTS)
            .map(|(name, prop)| {
                let text = |key: &str| {
                    prop.get(key)
                        .and_then(|d| d.as_str())
                        .map(str::trim)
                        .filter(|d| !d.is_empty())
                };
                ArgumentHint {
                    name: name.clone(),
                    description: text("description").or_else(|| text("title")).map(cap),
                    required: required.contains(&name.as_str()),
                }
            })
            .collect()
    }
}

/// `text` cut to [`ArgumentHint::MAX_DESCRIPTION`] characters, ending with `…` when cut.
fn cap(text: &str) -> String {
    match text.char_indices().nth(ArgumentHint::MAX_DESCRIPTION) {
        Some((at, _)) => format!("{}…", text[..at].trim_end()),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hints_follow_the_schema_order_and_mark_the_required_arguments() {
        let schema = json!({
            "type": "object",
            "properties": {"z": {"type": "string"}, "a": {"description": "  first  "}},
            "required": ["a", "missing"]
        });
        let hints = ArgumentHint::from_schema(&schema);
        let names: Vec<_> = hints.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["z", "a"]);
        assert_eq!(hints[0].description, None);
        assert!(!hints[0].required);
        assert_eq!(hints[1].description.as_deref(), Some("first"));
        assert!(hints[1].required);
    }

    #[test]
    fn a_schema_without_properties_gives_no_hints() {
        for schema in [
            json!({}),
            json!({"type": "object"}),
            json!("x"),
            json!({"properties": []}),
        ] {
            assert!(ArgumentHint::from_schema(&schema).is_empty(), "{schema}");
        }
    }

    #[test]
    fn a_hostile_schema_is_capped_in_count_and_length() {
        let props: serde_json::Map<_, _> = (0..100)
            .map(|i| (format!("p{i}"), json!({"description": "é".repeat(1000)})))
            .collect();
        let hints = ArgumentHint::from_schema(&json!({"properties": props}));
        assert_eq!(hints.len(), ArgumentHint::MAX_HINTS);
        let d = hints[0].description.as_deref().unwrap_or_default();
        assert_eq!(d.chars().count(), ArgumentHint::MAX_DESCRIPTION + 1);
        assert!(d.ends_with('…'));
    }
}
