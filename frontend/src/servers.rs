//! The user's own MCP servers in the UI: the client of `{prefix}/api/mcp/servers` and the rules
//! of the "Tools & servers" screen ([`crate::components::servers`]) that need no DOM.
//!
//! Decisions:
//! - **Shown only when `/api/config` says `user_mcp`** (the feature is on and the user is signed
//!   in; the anonymous user would get 401).
//! - **Header values are write-only**: the form sends them once; the screen shows only the
//!   server's `credentials: set | not set`, never a value, and keeps none after saving.
//! - **Nothing is ticked in a review by default**: accepting a tool (or a changed definition)
//!   is the user's deliberate act. The approval offered is the server's suggestion for a new
//!   tool and the user's current setting for a changed one. Tools gone upstream are offered for
//!   removal, ticked (dropping a tool cannot widen anything).
//! - **A tool's settings** (on/off, approval) change by accepting it again with its accepted
//!   hash: the accept route keeps the definition and takes the new settings (there is no other
//!   route for them).
//! - **A 409 on accept** means another refresh replaced the review: the screen says so and
//!   offers to refresh again; nothing is accepted.

use gloo_net::http::Request;
use lmchatkit_protocol::{
    AcceptTool, AcceptTools, AcceptedTool, ToolReview, UserMcpServer, UserMcpServerCreate,
    UserMcpServerPatch, UserToolApproval,
};

use crate::api::{Api, ApiError, encode};

impl Api {
    fn server_url(&self, slug: &str, action: &str) -> String {
        self.url(&format!("mcp/servers/{}{action}", encode(slug)))
    }

    /// `GET {prefix}/api/mcp/servers`.
    pub async fn user_mcp_servers(&self) -> Result<Vec<UserMcpServer>, ApiError> {
        self.get_json("mcp/servers").await
    }

    /// `GET {prefix}/api/mcp/servers/{slug}`.
    pub async fn user_mcp_server(&self, slug: &str) -> Result<UserMcpServer, ApiError> {
        self.get_json(&format!("mcp/servers/{}", encode(slug)))
            .await
    }

    /// `POST {prefix}/api/mcp/servers`.
    pub async fn add_user_mcp_server(
        &self,
        body: &UserMcpServerCreate,
    ) -> Result<UserMcpServer, ApiError> {
        self.send_json(Request::post(&self.url("mcp/servers")), body)
            .await
    }

    /// `PATCH {prefix}/api/mcp/servers/{slug}`.
    pub async fn patch_user_mcp_server(
        &self,
        slug: &str,
        patch: &UserMcpServerPatch,
    ) -> Result<UserMcpServer, ApiError> {
        self.send_json(Request::patch(&self.server_url(slug, "")), patch)
            .await
    }

    /// `DELETE {prefix}/api/mcp/servers/{slug}`.
    pub async fn delete_user_mcp_server(&self, slug: &str) -> Result<(), ApiError> {
        self.send_empty(Request::delete(&self.server_url(slug, "")))
            .await
    }

    /// `POST {prefix}/api/mcp/servers/{slug}/refresh`: upstream's tools against the accepted ones.
    pub async fn refresh_user_mcp_server(&self, slug: &str) -> Result<ToolReview, ApiError> {
        self.send_for_json(Request::post(&self.server_url(slug, "/refresh")))
            .await
    }

    /// `POST {prefix}/api/mcp/servers/{slug}/accept`.
    pub async fn accept_user_mcp_tools(
        &self,
        slug: &str,
        body: &AcceptTools,
    ) -> Result<UserMcpServer, ApiError> {
        self.send_json(Request::post(&self.server_url(slug, "/accept")), body)
            .await
    }
}

/// The "Tools & servers" screen is open, on the list or on one server.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServersScreen {
    /// The server to show first (its row is marked and its Refresh focused).
    pub focus: Option<String>,
}

impl ServersScreen {
    /// Open on the server `slug`.
    pub fn at(slug: impl Into<String>) -> Self {
        Self {
            focus: Some(slug.into()),
        }
    }
}

/// A server's tools: (accepted, offered to the model, stale). Offered: on, not stale, and not
/// `never` (as the service offers them).
pub fn tool_counts(s: &UserMcpServer) -> (usize, usize, usize) {
    let on = s
        .tools
        .iter()
        .filter(|t| t.enabled && !t.stale && t.approval != UserToolApproval::Never)
        .count();
    let stale = s.tools.iter().filter(|t| t.stale).count();
    (s.tools.len(), on, stale)
}

/// The line under a server's name, e.g. `2 tools, 1 offered`.
pub fn tools_summary(s: &UserMcpServer) -> String {
    match tool_counts(s) {
        (0, _, _) => "no tools accepted yet".into(),
        (1, on, _) => format!("1 tool, {on} offered"),
        (n, on, _) => format!("{n} tools, {on} offered"),
    }
}

/// The word for an approval, as the select shows it.
pub fn approval_label(a: UserToolApproval) -> &'static str {
    match a {
        UserToolApproval::Always => "always allow",
        UserToolApproval::Ask => "ask each time",
        UserToolApproval::Never => "never",
    }
}

/// The value of an approval in the select.
pub fn approval_value(a: UserToolApproval) -> &'static str {
    match a {
        UserToolApproval::Always => "always",
        UserToolApproval::Ask => "ask",
        UserToolApproval::Never => "never",
    }
}

/// The approval a select's value names (anything else: `ask`).
pub fn approval_of(value: &str) -> UserToolApproval {
    match value {
        "always" => UserToolApproval::Always,
        "never" => UserToolApproval::Never,
        _ => UserToolApproval::Ask,
    }
}

/// The three approvals, in the order the selects list them.
pub const APPROVALS: [UserToolApproval; 3] = [
    UserToolApproval::Always,
    UserToolApproval::Ask,
    UserToolApproval::Never,
];

/// One tool a review offers to accept: name, the reviewed hash, the approval offered first,
/// and whether the user accepted it before (a changed definition).
#[derive(Debug, Clone, PartialEq)]
pub struct Offer {
    /// The tool's name on its server.
    pub name: String,
    /// The hash of the definition shown.
    pub hash: String,
    /// The approval the select starts on.
    pub approval: UserToolApproval,
}

/// What a review offers: new tools (with the server's suggested approval), then changed ones
/// (with the user's current approval).
pub fn offers(review: &ToolReview) -> Vec<Offer> {
    let added = review.added.iter().map(|t| Offer {
        name: t.name.clone(),
        hash: t.hash.clone(),
        approval: t.suggested_approval,
    });
    let changed = review.changed.iter().map(|c| Offer {
        name: c.upstream.name.clone(),
        hash: c.upstream.hash.clone(),
        approval: c.accepted.approval,
    });
    added.chain(changed).collect()
}

/// The accept body for the ticked offers `(offer, approval)` and the accepted tools to drop.
pub fn accept_body(picked: &[(Offer, UserToolApproval)], remove: Vec<String>) -> AcceptTools {
    AcceptTools::new(picked.iter().map(|(o, approval)| {
        AcceptTool::new(o.name.clone(), o.hash.clone())
            .with_enabled(true)
            .with_approval(*approval)
    }))
    .with_remove(remove)
}

/// The accept body that changes only an accepted tool's settings (its own hash).
pub fn settings_body(t: &AcceptedTool, enabled: bool, approval: UserToolApproval) -> AcceptTools {
    AcceptTools::new([AcceptTool::new(t.name.clone(), t.hash.clone())
        .with_enabled(enabled)
        .with_approval(approval)])
}

/// A slug made from a display name: lower case, runs of other characters as one `-`, at most
/// 32 characters (the user may still edit it).
pub fn slug_from(name: &str) -> String {
    let mut out = String::new();
    for c in crate::text::lower(name.trim()).chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let cut: String = out.chars().take(32).collect();
    cut.trim_end_matches('-').to_owned()
}

/// The create body from the form: header rows with neither name nor value are skipped; a row
/// with only one of them is an error naming it (values are never named).
pub fn create_body(
    name: &str,
    slug: &str,
    url: &str,
    headers: &[(String, String)],
) -> Result<UserMcpServerCreate, String> {
    let mut body = UserMcpServerCreate::new(slug.trim(), url.trim()).with_name(name.trim());
    for (i, (n, v)) in headers.iter().enumerate() {
        match (n.trim(), v.is_empty()) {
            ("", true) => continue,
            ("", false) => return Err(format!("header {} has a value but no name", i + 1)),
            (n, true) => return Err(format!("the header {n:?} has no value")),
            (n, false) => body = body.with_header(n, v.clone()),
        }
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lmchatkit_protocol::{ChangedTool, CredentialsState, ReviewedTool, UserMcpTransport};
    use serde_json::json;

    fn reviewed(name: &str, hash: &str, suggested: UserToolApproval) -> ReviewedTool {
        ReviewedTool::new(name, "d", json!({}), hash, suggested)
    }

    fn server(tools: Vec<AcceptedTool>) -> UserMcpServer {
        UserMcpServer {
            name: "Docs".into(),
            slug: "docs".into(),
            url: "https://x.example/mcp".into(),
            transport: UserMcpTransport::StreamableHttp,
            credentials: CredentialsState::Set,
            enabled: true,
            created_at: 0,
            updated_at: 0,
            tools,
            oauth: Default::default(),
            preset: false,
        }
    }

    #[test]
    fn counts_tell_accepted_offered_and_stale_tools_apart() {
        let t = |enabled, stale, approval| {
            let mut a = AcceptedTool::from_review(
                &reviewed("t", "h", UserToolApproval::Ask),
                enabled,
                approval,
            );
            a.stale = stale;
            a
        };
        let s = server(vec![
            t(true, false, UserToolApproval::Ask),
            t(false, false, UserToolApproval::Always),
            t(true, true, UserToolApproval::Always),
            t(true, false, UserToolApproval::Never),
        ]);
        assert_eq!(tool_counts(&s), (4, 1, 1));
        assert_eq!(tools_summary(&s), "4 tools, 1 offered");
        assert_eq!(tools_summary(&server(vec![])), "no tools accepted yet");
    }

    #[test]
    fn a_review_offers_new_tools_with_the_suggestion_and_changed_ones_with_the_users_setting() {
        let old = AcceptedTool::from_review(
            &reviewed("edit", "h-old", UserToolApproval::Always),
            true,
            UserToolApproval::Never,
        );
        let review = ToolReview {
            added: vec![reviewed("search", "h1", UserToolApproval::Always)],
            changed: vec![ChangedTool {
                accepted: old,
                upstream: reviewed("edit", "h-new", UserToolApproval::Always),
                description_changed: true,
                schema_changed: false,
            }],
            ..Default::default()
        };
        let o = offers(&review);
        assert_eq!(
            o.iter()
                .map(|o| (o.name.as_str(), o.hash.as_str(), o.approval))
                .collect::<Vec<_>>(),
            [
                ("search", "h1", UserToolApproval::Always),
                ("edit", "h-new", UserToolApproval::Never)
            ]
        );
        let body = accept_body(
            &[(o[0].clone(), UserToolApproval::Ask)],
            vec!["gone".into()],
        );
        assert_eq!(
            serde_json::to_value(&body).unwrap(),
            json!({"tools": [{"name": "search", "hash": "h1", "enabled": true, "approval": "ask"}],
                   "remove": ["gone"]})
        );
    }

    #[test]
    fn settings_are_changed_with_the_accepted_hash() {
        let t = AcceptedTool::from_review(
            &reviewed("search", "h1", UserToolApproval::Always),
            true,
            UserToolApproval::Always,
        );
        assert_eq!(
            serde_json::to_value(settings_body(&t, false, UserToolApproval::Never)).unwrap(),
            json!({"tools": [{"name": "search", "hash": "h1", "enabled": false, "approval": "never"}]})
        );
    }

    #[test]
    fn approvals_round_trip_through_the_select() {
        for a in APPROVALS {
            assert_eq!(approval_of(approval_value(a)), a);
        }
        assert_eq!(approval_of("bogus"), UserToolApproval::Ask);
    }

    #[test]
    fn a_slug_is_suggested_from_the_name() {
        assert_eq!(slug_from("My Docs (prod)"), "my-docs-prod");
        assert_eq!(slug_from("  GitHub  "), "github");
        assert_eq!(slug_from("ÜBER tools"), "ber-tools");
        assert_eq!(slug_from(&"a ".repeat(40)).len(), 31);
    }

    #[test]
    fn header_rows_become_the_create_body_and_half_rows_are_refused_without_their_value() {
        let rows = vec![
            ("X-Api-Key".to_owned(), "s3cret".to_owned()),
            (String::new(), String::new()),
        ];
        let body = create_body(" Docs ", "docs", " https://x.example/mcp ", &rows).unwrap();
        assert_eq!(body.name, "Docs");
        assert_eq!(body.url, "https://x.example/mcp");
        assert_eq!(
            body.headers.get("X-Api-Key").map(String::as_str),
            Some("s3cret")
        );
        let e = create_body("", "d", "u", &[("X-Api-Key".into(), String::new())]).unwrap_err();
        assert!(e.contains("X-Api-Key"), "{e}");
        let e = create_body("", "d", "u", &[(String::new(), "s3cret".into())]).unwrap_err();
        assert!(!e.contains("s3cret"), "{e}");
    }
}
