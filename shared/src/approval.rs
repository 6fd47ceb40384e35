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
