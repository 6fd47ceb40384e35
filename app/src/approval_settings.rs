//! `[tools.approval]` of the TOML file: the operator's approval policy for the model's tool
//! calls (`default`, and `allow` / `ask` / `deny` glob lists), mapped to an [`ApprovalPolicy`].
//! Unknown keys and bad values are errors naming the key.

use lmchatkit::ApprovalPolicy;
use lmchatkit::protocol::ToolDecision;
use serde::Deserialize;

/// `[tools]`.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileTools {
    #[serde(default)]
    pub approval: FileApproval,
}

/// `[tools.approval]`: the default decision and the glob lists (see [`approval_policy`]).
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileApproval {
    default: Option<ToolDecision>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
}

/// `[tools.approval]` as a policy: `default` (ask when absent), then the `allow`, `ask` and
/// `deny` globs (their order does not matter: deny beats ask beats allow). A blank glob is an
/// error naming its key.
pub fn approval_policy(file: FileApproval) -> Result<ApprovalPolicy, String> {
    let mut policy = ApprovalPolicy::new(file.default.unwrap_or(ToolDecision::Ask));
    for (key, globs, decision) in [
        ("allow", file.allow, ToolDecision::Allow),
        ("ask", file.ask, ToolDecision::Ask),
        ("deny", file.deny, ToolDecision::Deny),
    ] {
        for glob in globs {
            let glob = glob.trim();
            if glob.is_empty() {
                return Err(format!("tools.approval.{key}: a glob is empty"));
            }
            policy = policy.rule(glob, decision);
        }
    }
    Ok(policy)
}
