//! OAuth sign-in to users' own MCP servers (the MCP authorization spec), through rmcp's `auth`
//! and the steps it shares with the operator's sign-ins (`mcp::oauth`): discovery of the
//! protected resource metadata and of the authorization server's metadata, the client ID
//! metadata document or dynamic client registration, the authorization code flow with PKCE
//! (S256) and the `resource` indicator, and refresh of expired tokens.
//!
//! The flow: a refresh or call that meets a `401` with a `Bearer` challenge marks the server
//! [`OAuthStatus::SignInRequired`] and answers so (a 403 naming the sign-in, or a tool error).
//! `POST {prefix}/api/mcp/servers/{slug}/oauth` discovers, obtains a client (the service's
//! client ID metadata document where the authorization server takes it, else a registration:
//! `mcp::oauth` says when), and answers the authorization page's URL; the UI opens it in a new
//! tab. The authorization server sends the browser to
//! `GET {prefix}/api/mcp/oauth/callback?code&state`, which exchanges the code and stores the
//! tokens; refreshes and calls then send `Authorization: Bearer` (rmcp's
//! `AuthClient`) and refresh the token before it expires.
//!
//! Decisions:
//! - **Sealed like other credentials.** The grant (tokens, the registered client, the
//!   authorization server's metadata) and a sign-in in progress (PKCE verifier, the `state`'s
//!   nonce) are sealed by the [`Keyring`](crate::secrets::sealing::Keyring) with associated data
//!   `"{principal}/{slug}/oauth"` and `".../oauth-pending"`: neither opens in another row, for
//!   another user, or as the other. They are never in an answer, a `Debug` or a log line; a
//!   code exchange and a refresh run with rmcp's logging switched off (`mcp::oauth::quiet`),
//!   because rmcp logs the code it exchanges at `DEBUG`. Error texts lose URL queries and any
//!   copy of the code. The callback's own URL (which carries the code) is never handed to rmcp.
//! - **The `state`** is a sealed `{principal, slug, nonce, expiry}` (associated data
//!   `"lmchatkit/oauth-state"`) in place of rmcp's random one, so the callback knows which
//!   sign-in it ends without any store of its own. It is **bound to the principal** who started
//!   it: the callback refuses (403) a state whose principal is not the request's, so an
//!   attacker who obtained a victim's authorization URL and signed in with their own account
//!   cannot land their tokens on the victim's server (login CSRF), nor the other way round. It
//!   **expires** after [`SIGN_IN_TTL`] and **works once**: its nonce must match the server's
//!   pending sign-in, which the callback clears (checked-and-set) before exchanging the code. A
//!   new sign-in replaces the pending one.
//! - **The callback is an ordinary guarded GET route.** The authorization server's redirect is
//!   a top-level cross-site navigation: the host-name check applies as for every route (the
//!   browser names this service), the origin check does not apply to a GET, and the principal
//!   must be present. A host whose session cookie is `SameSite=Lax` (or an authenticating proxy
//!   header) sends it on that navigation; a `SameSite=Strict`-only session does not, and the
//!   callback then answers 401 (the page says to sign in to the app and start again). It answers
//!   a small HTML page (`default-src 'none'`, `no-referrer`, `no-store`) whose one script,
//!   allowed by its hash, posts the slug and new status on a `BroadcastChannel`; the UI then
//!   reads the server again (the route's module states the rules).
//! - **The redirect URI** is `{origin}{prefix}/api/mcp/oauth/callback`, the origin being the
//!   request's `Origin` when it names the request's `Host` (the UI's fetch), else `Host` with
//!   `http` for loopback names and `https` otherwise.
//! - **Every OAuth request goes through the [`OutboundPolicy`](crate::mcp::OutboundPolicy)**
//!   (`mcp::oauth::PolicyHttp`): an authorization server or endpoint at a refused address (cloud
//!   metadata, loopback, private) is refused unless the operator allows its host. rmcp adds its
//!   own check of discovered metadata hosts, which refuses private IP literals even when the
//!   operator allows them (allowing a host name works).
//! - **Refresh** happens before a connection when the token has less than
//!   `min(60 s, lifetime / 2)` left (discovery again, for the current endpoints and `resource`),
//!   serialised per server within this process; rmcp's `AuthClient` refreshes too when the
//!   server rejects a token mid-connection. A refreshed grant is stored at once. A refresh the
//!   authorization server rejects, or an expired token without a refresh token, makes the
//!   server [`OAuthStatus::SignInRequired`] and drops the tokens.
//! - **A new URL drops the grant**: tokens issued for one server are never sent to another.

mod flow;
mod tokens;

pub(crate) use crate::mcp::oauth::Callback;
pub(crate) use flow::{CALLBACK_PATH, document_url, redirect_uri};

use lmchatkit_protocol::OAuthStatus;
use serde::{Deserialize, Serialize};

use super::{UserMcp, UserMcpRecord, UserMcpStoreError};
use crate::error::Failure;
use crate::host::Principal;
pub(crate) use crate::mcp::oauth::{Client, Grant, Pending, describe};

pub use crate::mcp::oauth::SIGN_IN_TTL;

/// Associated data of the `state` parameter.
const STATE_AAD: &[u8] = b"lmchatkit/oauth-state";

/// What a sign-in, a refresh or a callback can fail with. The messages are fit for the user:
/// URLs lose their queries, codes and tokens are never in them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum OAuthError {
    /// The server publishes no OAuth metadata (it does not sign users in with OAuth).
    #[error(
        "the MCP server {0:?} publishes no OAuth metadata, so it cannot be signed in to; check its URL and headers"
    )]
    NotOAuth(String),
    /// The server (or its authorization server) failed or answered something unusable.
    #[error("signing in to the MCP server {slug:?} failed: {reason}")]
    Upstream { slug: String, reason: String },
    /// The tokens are gone or rejected: the user must sign in again.
    #[error("the MCP server {0:?} needs you to sign in (OAuth); sign in to it, then try again")]
    SignInRequired(String),
    /// The callback's `state` is not one this service issued, was used, or was replaced.
    #[error(
        "this sign-in is unknown, was used already or was replaced by a newer one; start it again"
    )]
    UnknownState,
    /// The callback's `state` expired.
    #[error("this sign-in took longer than {} minutes; start it again", SIGN_IN_TTL.as_secs() / 60)]
    Expired,
    /// The callback's `state` was started by another principal.
    #[error("this sign-in was started by another user; start it again while signed in as yourself")]
    OtherPrincipal,
    /// The callback came without a signed-in user.
    #[error(
        "the sign-in ended without your session (are you signed in to this app?); sign in and start it again"
    )]
    NoPrincipal,
    /// The callback's query is not a code and a state (or an error and a state).
    #[error("{0}")]
    BadCallback(String),
    /// The authorization server refused the sign-in (the user declined, or another error).
    #[error("the authorization server refused the sign-in: {0}")]
    Refused(String),
    /// The server was deleted meanwhile.
    #[error("no MCP server {0:?}")]
    Gone(String),
    /// The server's URL changed meanwhile.
    #[error("the MCP server {0:?} was changed meanwhile; start the sign-in again")]
    Changed(String),
    /// The store or the sealing failed.
    #[error("{0}")]
    Internal(String),
}

impl From<OAuthError> for Failure {
    fn from(e: OAuthError) -> Self {
        match e {
            OAuthError::NotOAuth(_) => Failure::Unusable(e.to_string()),
            OAuthError::Upstream { .. } => Failure::Upstream(e.to_string()),
            OAuthError::SignInRequired(_) | OAuthError::OtherPrincipal => {
                Failure::Denied(e.to_string())
            }
            OAuthError::NoPrincipal => Failure::Unauthenticated(e.to_string()),
            OAuthError::Gone(_) => Failure::NotFound(e.to_string()),
            OAuthError::Changed(_) => Failure::Conflict(e.to_string()),
            OAuthError::UnknownState
            | OAuthError::Expired
            | OAuthError::BadCallback(_)
            | OAuthError::Refused(_) => Failure::Invalid(e.to_string()),
            OAuthError::Internal(_) => Failure::Internal(e.to_string()),
        }
    }
}

impl From<UserMcpStoreError> for OAuthError {
    fn from(e: UserMcpStoreError) -> Self {
        OAuthError::Internal(e.to_string())
    }
}

/// What the `state` parameter carries (sealed).
#[derive(Serialize, Deserialize)]
struct StateToken {
    principal: String,
    slug: String,
    nonce: String,
    /// ms since the epoch.
    expires_at: i64,
}

fn aad(principal: &Principal, slug: &str, what: &str) -> Vec<u8> {
    format!("{}/{slug}/{what}", principal.id()).into_bytes()
}

impl UserMcp {
    fn seal_json<T: Serialize>(&self, value: &T, aad: &[u8]) -> Result<String, OAuthError> {
        crate::mcp::oauth::steps::seal_json(&self.keyring, value, aad).map_err(OAuthError::Internal)
    }

    fn open_json<T: serde::de::DeserializeOwned>(
        &self,
        sealed: &str,
        aad: &[u8],
    ) -> Result<T, OAuthError> {
        crate::mcp::oauth::steps::open_json(&self.keyring, sealed, aad)
            .map_err(OAuthError::Internal)
    }

    fn open_grant(
        &self,
        principal: &Principal,
        record: &UserMcpRecord,
    ) -> Result<Option<Grant>, OAuthError> {
        record
            .oauth
            .as_deref()
            .map(|s| self.open_json(s, &aad(principal, &record.slug, "oauth")))
            .transpose()
    }

    fn seal_grant(
        &self,
        principal: &Principal,
        slug: &str,
        grant: &Grant,
    ) -> Result<String, OAuthError> {
        self.seal_json(grant, &aad(principal, slug, "oauth"))
    }

    /// Changes `principal`'s server `slug` with `change` and stores it, re-reading and retrying
    /// when another write came between. `change` answers `false` to leave the record as it is.
    /// `None` when the server is gone.
    async fn modify(
        &self,
        principal: &Principal,
        slug: &str,
        mut change: impl FnMut(&mut UserMcpRecord) -> Result<bool, OAuthError>,
    ) -> Result<Option<UserMcpRecord>, OAuthError> {
        for _ in 0..5 {
            let Some(mut record) = self.store.get(principal, slug).await? else {
                return Ok(None);
            };
            if !change(&mut record)? {
                return Ok(Some(record));
            }
            match self.store.update(principal, record.clone()).await {
                Ok(true) => {
                    record.revision += 1;
                    return Ok(Some(record));
                }
                Ok(false) => return Ok(None),
                Err(UserMcpStoreError::Conflict(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(OAuthError::Internal(format!(
            "the MCP server {slug:?} kept changing meanwhile; try again"
        )))
    }

    /// Marks the server as needing a sign-in and drops its tokens.
    pub(crate) async fn mark_sign_in_required(&self, principal: &Principal, slug: &str) {
        let marked = self
            .modify(principal, slug, |r| {
                let changed = r.oauth_status != OAuthStatus::SignInRequired || r.oauth.is_some();
                r.oauth_status = OAuthStatus::SignInRequired;
                r.oauth = None;
                Ok(changed)
            })
            .await;
        match marked {
            Ok(_) => tracing::info!(
                principal = principal.id(),
                slug,
                "a user's MCP server needs a sign-in"
            ),
            Err(e) => {
                tracing::warn!(slug, error = %e, "marking a server as needing a sign-in failed")
            }
        }
    }
}

/// Now, in ms since the epoch.
fn now_ms() -> i64 {
    super::now_ms()
}

#[cfg(test)]
mod tests;
