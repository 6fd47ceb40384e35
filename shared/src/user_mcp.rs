//! Each user's own MCP servers on the wire: the server as `{prefix}/api/mcp/servers` answers it
//! ([`UserMcpServer`]), the bodies that create and change one ([`UserMcpServerCreate`],
//! [`UserMcpServerPatch`]), the review of a refresh ([`ToolReview`]), what the user accepts
//! ([`AcceptTools`]), and OAuth sign-in: the server's [`OAuthStatus`] and the answer of
//! `POST .../servers/{slug}/oauth` ([`OAuthStart`]).
//!
//! Credentials are write-only: requests may carry `headers`, answers only say whether some
//! are set ([`CredentialsState`]), and OAuth tokens never leave the server (answers only say
//! whether the user is signed in). `Debug` of a request prints header names, never values.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ToolDecision;

/// The one transport users may give their servers. stdio stays operator-only: spawning
/// processes for users is not safe.
///
/// ```
/// use lmchatkit_protocol::UserMcpTransport;
/// assert_eq!(serde_json::to_string(&UserMcpTransport::StreamableHttp).unwrap(), r#""streamable_http""#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UserMcpTransport {
    /// MCP Streamable HTTP.
    #[default]
    StreamableHttp,
}

/// Whether a server has credentials (they are never shown).
///
/// ```
/// use lmchatkit_protocol::CredentialsState;
/// assert_eq!(serde_json::to_string(&CredentialsState::NotSet).unwrap(), r#""not set""#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CredentialsState {
    /// Headers are stored (sealed).
    #[serde(rename = "set")]
    Set,
    /// None.
    #[serde(rename = "not set")]
    NotSet,
}

/// Whether a server signs its users in with OAuth, and whether this user is signed in. The
/// tokens themselves are never shown.
///
/// ```
/// use lmchatkit_protocol::OAuthStatus;
/// assert_eq!(serde_json::to_string(&OAuthStatus::SignInRequired).unwrap(), r#""sign_in_required""#);
/// assert_eq!(OAuthStatus::default(), OAuthStatus::NotUsed);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OAuthStatus {
    /// The server has not asked for a sign-in.
    #[default]
    NotUsed,
    /// The server answered that it needs a sign-in (HTTP 401), or its tokens expired and could
    /// not be refreshed: `POST .../servers/{slug}/oauth` starts one.
    SignInRequired,
    /// Tokens are stored (sealed) and sent with every request to the server.
    SignedIn,
}

/// The answer of `POST {prefix}/api/mcp/servers/{slug}/oauth`: the authorization server's page
/// to open (in a new tab). It ends on `{prefix}/api/mcp/oauth/callback`, which stores the
/// tokens; the sign-in it starts expires after ten minutes and works once, for the user who
/// started it.
///
/// ```
/// use lmchatkit_protocol::OAuthStart;
/// let start: OAuthStart = serde_json::from_str(r#"{"authorization_url": "https://as.example/authorize?x=1"}"#).unwrap();
/// assert_eq!(start, OAuthStart::new("https://as.example/authorize?x=1"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OAuthStart {
    /// The authorization server's page, with this sign-in's `state` and PKCE challenge.
    pub authorization_url: String,
}

impl OAuthStart {
    /// The answer for `authorization_url`.
    pub fn new(authorization_url: impl Into<String>) -> Self {
        Self {
            authorization_url: authorization_url.into(),
        }
    }
}

/// The user's approval setting of one accepted tool. `always` runs it without asking, `ask`
/// asks each time, `never` never runs it. Only the stored value counts at call time; the
/// server's annotations only suggest a default at review time.
///
/// ```
/// use lmchatkit_protocol::{ToolDecision, UserToolApproval};
/// assert_eq!(serde_json::to_string(&UserToolApproval::Never).unwrap(), r#""never""#);
/// assert_eq!(UserToolApproval::Always.decision(), ToolDecision::Allow);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UserToolApproval {
    /// Runs without asking.
    Always,
    /// Asks each time.
    #[default]
    Ask,
    /// Never runs.
    Never,
}

impl UserToolApproval {
    /// The approval policy's word for it.
    pub fn decision(self) -> ToolDecision {
        match self {
            Self::Always => ToolDecision::Allow,
            Self::Ask => ToolDecision::Ask,
            Self::Never => ToolDecision::Deny,
        }
    }
}

/// One tool as the upstream server lists it, with the hash of its canonical definition and the
/// approval its annotations suggest (in a [`ToolReview`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReviewedTool {
    /// The tool's name on its server (the model sees `{slug}__{name}`).
    pub name: String,
    /// Its description.
    #[serde(default)]
    pub description: String,
    /// Its JSON Schema for arguments.
    #[serde(default)]
    pub input_schema: Value,
    /// `sha256:` + hex of the canonical JSON `{name, description, inputSchema}`.
    pub hash: String,
    /// What the server's annotations suggest (advisory).
    pub suggested_approval: UserToolApproval,
}

impl ReviewedTool {
    /// A reviewed tool.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        hash: impl Into<String>,
        suggested_approval: UserToolApproval,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            hash: hash.into(),
            suggested_approval,
        }
    }
}

/// One accepted tool: the definition the user accepted (the complete description the model is
/// given), its hash, and the user's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AcceptedTool {
    /// The tool's name on its server.
    pub name: String,
    /// Its accepted description.
    #[serde(default)]
    pub description: String,
    /// Its accepted JSON Schema.
    #[serde(default)]
    pub input_schema: Value,
    /// `sha256:` + hex of the canonical JSON of the accepted definition.
    pub hash: String,
    /// Offered to the model.
    pub enabled: bool,
    /// The user's approval setting.
    pub approval: UserToolApproval,
    /// A call found that upstream no longer matches the accepted definition; the tool does not
    /// run until the user reviews it.
    #[serde(default, skip_serializing_if = "crate::is_false")]
    pub stale: bool,
}

impl AcceptedTool {
    /// An accepted tool from a reviewed one.
    pub fn from_review(t: &ReviewedTool, enabled: bool, approval: UserToolApproval) -> Self {
        Self {
            name: t.name.clone(),
            description: t.description.clone(),
            input_schema: t.input_schema.clone(),
            hash: t.hash.clone(),
            enabled,
            approval,
            stale: false,
        }
    }
}

/// A user's MCP server, as the routes answer it. No credential value is ever in here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMcpServer {
    /// The display name.
    pub name: String,
    /// The server's id among the principal's servers, and its tool namespace.
    pub slug: String,
    /// The endpoint.
    pub url: String,
    /// The transport.
    pub transport: UserMcpTransport,
    /// Whether headers are stored.
    pub credentials: CredentialsState,
    /// Whether the server uses OAuth and whether the user is signed in (absent in answers of
    /// older servers: not used).
    #[serde(default)]
    pub oauth: OAuthStatus,
    /// Offered to the model.
    pub enabled: bool,
    /// Creation time, ms since the epoch.
    pub created_at: i64,
    /// Last change, ms since the epoch.
    pub updated_at: i64,
    /// The accepted tools.
    #[serde(default)]
    pub tools: Vec<AcceptedTool>,
    /// One of the operator's presets: it cannot be deleted (disable it) and its URL cannot
    /// change.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preset: bool,
}

/// The body of `POST {prefix}/api/mcp/servers`.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct UserMcpServerCreate {
    /// The display name (default: the slug).
    #[serde(default)]
    pub name: String,
    /// `^[a-z0-9][a-z0-9_-]{0,31}$`, unique among the principal's servers.
    pub slug: String,
    /// The endpoint (checked by the operator's outbound policy).
    pub url: String,
    /// The transport (only Streamable HTTP).
    #[serde(default)]
    pub transport: UserMcpTransport,
    /// Headers sent with every request (credentials; write-only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Offered to the model (default true; a server has no tools until the user accepts some).
    #[serde(default = "crate::is_true_default")]
    pub enabled: bool,
}

impl UserMcpServerCreate {
    /// A body for `slug` at `url`.
    pub fn new(slug: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            slug: slug.into(),
            url: url.into(),
            enabled: true,
            ..Default::default()
        }
    }

    /// With a header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// With a display name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

/// Header names only.
struct HeaderNames<'a>(&'a BTreeMap<String, String>);

impl fmt::Debug for HeaderNames<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, "<redacted>")))
            .finish()
    }
}

impl fmt::Debug for UserMcpServerCreate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserMcpServerCreate")
            .field("name", &self.name)
            .field("slug", &self.slug)
            .field("url", &self.url)
            .field("transport", &self.transport)
            .field("headers", &HeaderNames(&self.headers))
            .field("enabled", &self.enabled)
            .finish()
    }
}

/// The body of `PATCH {prefix}/api/mcp/servers/{slug}`: what is given changes. `headers`
/// replaces every stored header (`{}` removes them); absent, they stay.
///
/// ```
/// use lmchatkit_protocol::UserMcpServerPatch;
/// let p: UserMcpServerPatch = serde_json::from_str(r#"{"headers": {"Authorization": "Bearer x"}}"#).unwrap();
/// assert!(!format!("{p:?}").contains("Bearer"));
/// ```
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct UserMcpServerPatch {
    /// A new display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A new endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// New headers, replacing the stored ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    /// On or off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

impl fmt::Debug for UserMcpServerPatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserMcpServerPatch")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("headers", &self.headers.as_ref().map(HeaderNames))
            .field("enabled", &self.enabled)
            .finish()
    }
}

/// A tool whose definition differs between the accepted snapshot and upstream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangedTool {
    /// The accepted definition.
    pub accepted: AcceptedTool,
    /// What upstream lists now.
    pub upstream: ReviewedTool,
    /// The description differs.
    pub description_changed: bool,
    /// The input schema differs.
    pub schema_changed: bool,
}

/// The answer of `POST .../servers/{slug}/refresh`: upstream's listing against the accepted
/// snapshot. A rename is a removal plus an addition. Nothing is accepted by a refresh.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolReview {
    /// Listed upstream, not accepted.
    pub added: Vec<ReviewedTool>,
    /// Accepted, no longer listed upstream.
    pub removed: Vec<AcceptedTool>,
    /// Accepted, listed upstream with another definition.
    pub changed: Vec<ChangedTool>,
    /// Accepted and unchanged (names).
    pub unchanged: Vec<String>,
}

/// One tool the user accepts: the `hash` of the reviewed definition they saw (a definition that
/// changed since is refused), and their settings (default: enabled, the suggested approval).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AcceptTool {
    /// The tool's name on its server.
    pub name: String,
    /// The hash from the review.
    pub hash: String,
    /// Offered to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// The approval setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<UserToolApproval>,
}

impl AcceptTool {
    /// Accept `name` as reviewed with `hash`.
    pub fn new(name: impl Into<String>, hash: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            hash: hash.into(),
            enabled: None,
            approval: None,
        }
    }

    /// With an approval setting.
    pub fn with_approval(mut self, approval: UserToolApproval) -> Self {
        self.approval = Some(approval);
        self
    }

    /// Enabled or not.
    pub fn with_enabled(mut self, enabled: bool) -> Self {
        self.enabled = Some(enabled);
        self
    }
}

/// The body of `POST .../servers/{slug}/accept`: tools to accept (new or changed definitions
/// from the last refresh, or settings of an accepted one) and accepted tools to drop.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AcceptTools {
    /// Tools to accept.
    #[serde(default)]
    pub tools: Vec<AcceptTool>,
    /// Accepted tools to remove (names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove: Vec<String>,
}

impl AcceptTools {
    /// Accepting `tools`.
    pub fn new(tools: impl IntoIterator<Item = AcceptTool>) -> Self {
        Self {
            tools: tools.into_iter().collect(),
            remove: Vec::new(),
        }
    }

    /// Also removing `names`.
    pub fn with_remove<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.remove = names.into_iter().map(Into::into).collect();
        self
    }
}
