//! The registry of each principal's own MCP servers as stores keep it: [`UserMcpRecord`], the
//! [`UserMcpStore`] trait and its error. The stores beside it (memory in `user_mcp`, SQLite,
//! PostgreSQL) implement it; `user_mcp` (the feature: sign-in, refresh, tools) uses it, and
//! re-exports all three where they always were (`lmchatkit::user_mcp::…`).

use std::fmt;

use async_trait::async_trait;
use lmchatkit_protocol::{
    AcceptedTool, CredentialsState, OAuthStatus, ReviewedTool, UserMcpServer, UserMcpTransport,
};

use crate::error::Failure;
use crate::host::Principal;
use crate::secrets::Redacted;

/// One stored server of one principal. `credentials` is the sealed headers (see the module
/// docs), never plain text; `Debug` does not print it.
#[derive(Clone, PartialEq)]
pub struct UserMcpRecord {
    /// The server's id among its principal's servers.
    pub slug: String,
    /// The display name.
    pub name: String,
    /// The endpoint.
    pub url: String,
    /// The transport.
    pub transport: UserMcpTransport,
    /// The sealed headers ([`Keyring::seal`](crate::secrets::sealing::Keyring::seal) of their
    /// JSON object), if any.
    pub credentials: Option<String>,
    /// Offered to the model.
    pub enabled: bool,
    /// Creation time, ms since the epoch.
    pub created_at: i64,
    /// Last change, ms since the epoch.
    pub updated_at: i64,
    /// Bumped by every write; [`UserMcpStore::update`] checks it.
    pub revision: u64,
    /// The accepted tools.
    pub tools: Vec<AcceptedTool>,
    /// The last refresh's listing, awaiting the user's review (not offered to anyone).
    pub pending: Vec<ReviewedTool>,
    /// Whether the server uses OAuth and whether the user is signed in.
    pub oauth_status: OAuthStatus,
    /// The sealed OAuth grant (tokens, registered client, authorization server metadata),
    /// when signed in (see `user_mcp::oauth`).
    pub oauth: Option<String>,
    /// The sealed sign-in in progress (PKCE verifier, the state's nonce), if any.
    pub oauth_pending: Option<String>,
}

impl fmt::Debug for UserMcpRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserMcpRecord")
            .field("slug", &self.slug)
            .field("name", &self.name)
            .field("url", &crate::secrets::redact_url(&self.url))
            .field("credentials", &self.credentials.as_ref().map(|_| Redacted))
            .field("enabled", &self.enabled)
            .field("revision", &self.revision)
            .field("tools", &self.tools.len())
            .field("pending", &self.pending.len())
            .field("oauth_status", &self.oauth_status)
            .field("oauth", &self.oauth.as_ref().map(|_| Redacted))
            .field(
                "oauth_pending",
                &self.oauth_pending.as_ref().map(|_| Redacted),
            )
            .finish_non_exhaustive()
    }
}

impl UserMcpRecord {
    /// A new record (no credentials, no tools, revision 0) created `now`.
    pub fn new(
        slug: impl Into<String>,
        name: impl Into<String>,
        url: impl Into<String>,
        now: i64,
    ) -> Self {
        Self {
            slug: slug.into(),
            name: name.into(),
            url: url.into(),
            transport: UserMcpTransport::StreamableHttp,
            credentials: None,
            enabled: true,
            created_at: now,
            updated_at: now,
            revision: 0,
            tools: Vec::new(),
            pending: Vec::new(),
            oauth_status: OAuthStatus::NotUsed,
            oauth: None,
            oauth_pending: None,
        }
    }

    /// The answer of the routes: everything but the credentials, which are only "set" or not.
    pub fn to_wire(&self) -> UserMcpServer {
        UserMcpServer {
            name: self.name.clone(),
            slug: self.slug.clone(),
            url: self.url.clone(),
            transport: self.transport,
            credentials: match self.credentials {
                Some(_) => CredentialsState::Set,
                None => CredentialsState::NotSet,
            },
            oauth: self.oauth_status,
            enabled: self.enabled,
            created_at: self.created_at,
            updated_at: self.updated_at,
            tools: self.tools.clone(),
            preset: false,
        }
    }
}

/// What a [`UserMcpStore`] can fail with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UserMcpStoreError {
    /// The principal already has a server with this slug.
    #[error("a server with the slug {0:?} exists already")]
    Duplicate(String),
    /// The record changed since it was read (its revision moved on).
    #[error("the server {0:?} was changed meanwhile; reload and retry")]
    Conflict(String),
    /// The store failed.
    #[error("user MCP store: {0}")]
    Storage(String),
}

impl From<UserMcpStoreError> for Failure {
    fn from(e: UserMcpStoreError) -> Self {
        match e {
            UserMcpStoreError::Duplicate(_) | UserMcpStoreError::Conflict(_) => {
                Failure::Conflict(e.to_string())
            }
            UserMcpStoreError::Storage(_) => Failure::Internal(e.to_string()),
        }
    }
}

/// Where each principal's servers live. Every method is scoped to one principal: no call can
/// reach another principal's servers. The stores of this crate (memory, SQLite, PostgreSQL) pass the `conformance` suite (feature `test-support`).
#[async_trait]
pub trait UserMcpStore: Send + Sync + 'static {
    /// The principal's servers, by slug.
    async fn list(&self, principal: &Principal) -> Result<Vec<UserMcpRecord>, UserMcpStoreError>;

    /// One server of the principal.
    async fn get(
        &self,
        principal: &Principal,
        slug: &str,
    ) -> Result<Option<UserMcpRecord>, UserMcpStoreError>;

    /// Adds a server (stored with revision 1); [`UserMcpStoreError::Duplicate`] when the slug
    /// is taken.
    async fn create(
        &self,
        principal: &Principal,
        record: UserMcpRecord,
    ) -> Result<(), UserMcpStoreError>;

    /// Replaces the server with `record.slug` when its stored revision is `record.revision`,
    /// storing revision + 1: `Ok(false)` when there is no such server,
    /// [`UserMcpStoreError::Conflict`] when the revision moved on.
    async fn update(
        &self,
        principal: &Principal,
        record: UserMcpRecord,
    ) -> Result<bool, UserMcpStoreError>;

    /// Removes a server; `false` when there was none.
    async fn delete(&self, principal: &Principal, slug: &str) -> Result<bool, UserMcpStoreError>;
}
