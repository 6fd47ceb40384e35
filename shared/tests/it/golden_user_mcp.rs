//! Golden JSON shapes of the user MCP server types (`{prefix}/api/mcp/servers`). A failing test
//! here is a protocol change: update both sides deliberately.

use lmchatkit_protocol::*;
use serde_json::{Value, json};

fn to(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap()
}

#[test]
fn a_server_answer_says_whether_credentials_are_set_and_lists_accepted_tools() {
    let reviewed = ReviewedTool::new(
        "search",
        "Searches",
        json!({"type": "object"}),
        "sha256:ab",
        UserToolApproval::Always,
    );
    let mut tool = AcceptedTool::from_review(&reviewed, true, UserToolApproval::Ask);
    let server = UserMcpServer {
        name: "Docs".into(),
        slug: "docs".into(),
        url: "https://mcp.example.com/mcp".into(),
        transport: UserMcpTransport::StreamableHttp,
        credentials: CredentialsState::Set,
        oauth: OAuthStatus::SignedIn,
        enabled: true,
        created_at: 1,
        updated_at: 2,
        tools: vec![tool.clone()],
        preset: false,
    };
    assert_eq!(
        to(&server),
        json!({"name": "Docs", "slug": "docs", "url": "https://mcp.example.com/mcp",
               "transport": "streamable_http", "credentials": "set", "oauth": "signed_in",
               "enabled": true,
               "created_at": 1, "updated_at": 2,
               "tools": [{"name": "search", "description": "Searches",
                          "input_schema": {"type": "object"}, "hash": "sha256:ab",
                          "enabled": true, "approval": "ask"}]})
    );
    tool.stale = true;
    assert_eq!(to(&tool)["stale"], true);
    let back: UserMcpServer = serde_json::from_value(to(&server)).unwrap();
    assert_eq!(back, server);
    let preset = UserMcpServer {
        preset: true,
        ..server.clone()
    };
    assert_eq!(to(&preset)["preset"], true, "only a preset says so");
    assert_eq!(to(&CredentialsState::NotSet), json!("not set"));
    // An answer without `oauth` (an older server) reads as not used.
    let mut old = to(&server);
    old.as_object_mut().unwrap().remove("oauth");
    let back: UserMcpServer = serde_json::from_value(old).unwrap();
    assert_eq!(back.oauth, OAuthStatus::NotUsed);
}

#[test]
fn the_oauth_status_and_the_sign_in_answer_have_fixed_shapes() {
    assert_eq!(to(&OAuthStatus::NotUsed), json!("not_used"));
    assert_eq!(to(&OAuthStatus::SignInRequired), json!("sign_in_required"));
    assert_eq!(to(&OAuthStatus::SignedIn), json!("signed_in"));
    assert_eq!(
        to(&OAuthStart::new("https://as.example/authorize?state=s")),
        json!({"authorization_url": "https://as.example/authorize?state=s"})
    );
}

#[test]
fn a_create_body_defaults_name_transport_headers_and_enabled() {
    let body: UserMcpServerCreate =
        serde_json::from_value(json!({"slug": "docs", "url": "https://x.example/mcp"})).unwrap();
    assert_eq!(
        body,
        UserMcpServerCreate::new("docs", "https://x.example/mcp")
    );
    assert!(body.enabled && body.headers.is_empty() && body.name.is_empty());
    assert_eq!(body.transport, UserMcpTransport::StreamableHttp);
    let full = UserMcpServerCreate::new("docs", "https://x.example/mcp")
        .with_name("Docs")
        .with_header("Authorization", "Bearer s3cret");
    assert_eq!(
        to(&full),
        json!({"name": "Docs", "slug": "docs", "url": "https://x.example/mcp",
               "transport": "streamable_http", "headers": {"Authorization": "Bearer s3cret"},
               "enabled": true})
    );
    let err = serde_json::from_value::<UserMcpServerCreate>(
        json!({"slug": "docs", "url": "u", "transport": "stdio"}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("stdio"), "{err}");
    assert!(
        serde_json::from_value::<UserMcpServerCreate>(
            json!({"slug": "d", "url": "u", "command": "sh"})
        )
        .is_err(),
        "unknown fields are refused"
    );
}

#[test]
fn debug_of_request_bodies_names_headers_but_never_their_values() {
    let create = UserMcpServerCreate::new("docs", "https://x.example/mcp")
        .with_header("X-Api-Key", "canary-value-123");
    let shown = format!("{create:?}");
    assert!(
        shown.contains("X-Api-Key") && !shown.contains("canary-value-123"),
        "{shown}"
    );
    let patch: UserMcpServerPatch =
        serde_json::from_value(json!({"headers": {"X-Api-Key": "canary-value-123"}})).unwrap();
    let shown = format!("{patch:?}");
    assert!(
        shown.contains("X-Api-Key") && !shown.contains("canary-value-123"),
        "{shown}"
    );
}

#[test]
fn a_patch_carries_only_what_changes() {
    assert_eq!(to(&UserMcpServerPatch::default()), json!({}));
    let p: UserMcpServerPatch =
        serde_json::from_value(json!({"headers": {}, "enabled": false})).unwrap();
    assert_eq!(p.headers, Some(Default::default()));
    assert_eq!(p.enabled, Some(false));
    assert_eq!(p.url, None);
}

#[test]
fn a_review_lists_added_removed_changed_and_unchanged() {
    let before = ReviewedTool::new("a", "old", json!({}), "sha256:1", UserToolApproval::Ask);
    let after = ReviewedTool::new("a", "new", json!({}), "sha256:2", UserToolApproval::Ask);
    let review = ToolReview {
        added: vec![],
        removed: vec![],
        changed: vec![ChangedTool {
            accepted: AcceptedTool::from_review(&before, true, UserToolApproval::Ask),
            upstream: after,
            description_changed: true,
            schema_changed: false,
        }],
        unchanged: vec!["b".into()],
    };
    assert_eq!(
        to(&review),
        json!({"added": [], "removed": [], "unchanged": ["b"],
               "changed": [{"accepted": {"name": "a", "description": "old", "input_schema": {},
                                         "hash": "sha256:1", "enabled": true, "approval": "ask"},
                            "upstream": {"name": "a", "description": "new", "input_schema": {},
                                         "hash": "sha256:2", "suggested_approval": "ask"},
                            "description_changed": true, "schema_changed": false}]})
    );
}

#[test]
fn an_accept_body_names_tools_with_their_reviewed_hash() {
    let body = AcceptTools::new([
        AcceptTool::new("a", "sha256:1").with_approval(UserToolApproval::Never),
        AcceptTool::new("b", "sha256:2").with_enabled(false),
    ])
    .with_remove(["c"]);
    assert_eq!(
        to(&body),
        json!({"tools": [{"name": "a", "hash": "sha256:1", "approval": "never"},
                         {"name": "b", "hash": "sha256:2", "enabled": false}],
               "remove": ["c"]})
    );
    let minimal: AcceptTools = serde_json::from_value(json!({"tools": []})).unwrap();
    assert!(minimal.tools.is_empty() && minimal.remove.is_empty());
    assert!(serde_json::from_value::<AcceptTools>(json!({"tools": [{"name": "a"}]})).is_err());
    assert_eq!(UserToolApproval::Never.decision(), ToolDecision::Deny);
    assert_eq!(UserToolApproval::default(), UserToolApproval::Ask);
}

#[test]
fn a_sign_in_signal_names_only_the_server_and_its_status() {
    let signal = SignInSignal::new("docs", OAuthStatus::SignedIn);
    assert_eq!(to(&signal), json!({"slug": "docs", "oauth": "signed_in"}));
    let back: SignInSignal =
        serde_json::from_str(r#"{"slug": "docs", "oauth": "signed_in"}"#).unwrap();
    assert_eq!(back, signal);
    assert_eq!(SIGN_IN_CHANNEL, "lmchatkit-mcp-sign-in");
}
