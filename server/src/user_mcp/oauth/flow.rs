//! A sign-in from start to callback: discovery, registration and the authorization URL
//! ([`UserMcp::start_sign_in`]), then the code exchange ([`UserMcp::finish_sign_in`]). The
//! rules are the module's ([`super`]).

use std::sync::Arc;

use lmchatkit_protocol::OAuthStatus;
use rmcp::transport::auth::AuthorizationManager;

use super::{Callback, Grant, OAuthError, Pending, STATE_AAD, StateToken, aad, describe, now_ms};
use crate::error::Failure;
use crate::host::Principal;
use crate::mcp::oauth::steps::{self, Step};
use crate::mcp::oauth::{CIMD_PATH, PolicyHttp, request_origin};
use crate::user_mcp::{UserMcp, UserMcpRecord};

/// The callback's path below the prefix.
pub(crate) const CALLBACK_PATH: &str = "/api/mcp/oauth/callback";

/// The redirect URI sign-ins started by this request use (see the module docs).
pub(crate) fn redirect_uri(parts: &http::request::Parts, prefix: &str) -> Result<String, Failure> {
    Ok(format!("{}{prefix}{CALLBACK_PATH}", request_origin(parts)?))
}

/// The client ID metadata document's URL for sign-ins started by this request.
pub(crate) fn document_url(parts: &http::request::Parts, prefix: &str) -> Result<String, Failure> {
    Ok(format!("{}{prefix}{CIMD_PATH}", request_origin(parts)?))
}

impl UserMcp {
    /// An rmcp manager for `url` whose every request goes through the policy.
    pub(super) async fn manager(&self, url: &str) -> Result<AuthorizationManager, OAuthError> {
        let http =
            PolicyHttp::new(&self.policy, self.upstream_timeout).map_err(OAuthError::Internal)?;
        AuthorizationManager::new_with_oauth_http_client(url, Arc::new(http))
            .await
            .map_err(|e| OAuthError::Internal(describe(&e, None)))
    }

    /// Starts a sign-in to `record`'s server: discovers its authorization server, obtains a
    /// client for `redirect_uri` (the metadata document at `document` when the authorization
    /// server takes it, else a registration), keeps the PKCE verifier as the server's pending
    /// sign-in and answers the authorization page's URL.
    pub(crate) async fn start_sign_in(
        &self,
        principal: &Principal,
        record: &UserMcpRecord,
        redirect_uri: &str,
        document: Option<&str>,
    ) -> Result<String, OAuthError> {
        let slug = record.slug.as_str();
        let upstream = |reason: String| OAuthError::Upstream {
            slug: slug.to_owned(),
            reason,
        };
        let manager = self.manager(&record.url).await?;
        let begun = tokio::time::timeout(
            self.upstream_timeout,
            steps::begin(manager, redirect_uri, document),
        )
        .await
        .map_err(|_| upstream(format!("no answer within {:?}", self.upstream_timeout)))?
        .map_err(|e| step_error(slug, e))?;
        // The browser opens it: an http(s) page under the same rules as the server's URL (no
        // `javascript:` from a hostile authorization server's metadata).
        let url = self
            .policy
            .check_url(&begun.url)
            .map_err(|e| upstream(format!("its authorization page is refused: {e}")))?;
        let (nonce, expires_at) = steps::nonce_and_expiry();
        let token = self.seal_json(
            &StateToken {
                principal: principal.id().to_owned(),
                slug: slug.to_owned(),
                nonce: nonce.clone(),
                expires_at,
            },
            STATE_AAD,
        )?;
        // Our state in place of rmcp's: the callback finds the sign-in from it.
        let url = steps::with_state(url, &token);
        let pending = Pending {
            nonce,
            expires_at,
            client: begun.client,
            state: begun.state,
        };
        let sealed = self.seal_json(&pending, &aad(principal, slug, "oauth-pending"))?;
        let at = record.url.clone();
        self.modify(principal, slug, |r| {
            if r.url != at {
                return Err(OAuthError::Changed(slug.to_owned()));
            }
            r.oauth_pending = Some(sealed.clone());
            Ok(true)
        })
        .await?
        .ok_or_else(|| OAuthError::Gone(slug.to_owned()))?;
        tracing::info!(
            principal = principal.id(),
            slug,
            "a sign-in to a user's MCP server started"
        );
        Ok(url)
    }

    /// Ends a sign-in: checks the state (the request's principal's, not expired, the server's
    /// pending one), consumes it, exchanges the code and stores the grant. Answers the server
    /// as stored (signed in).
    pub(crate) async fn finish_sign_in(
        &self,
        principal: Option<&Principal>,
        callback: Callback,
    ) -> Result<UserMcpRecord, OAuthError> {
        let sealed_state = callback
            .state
            .clone()
            .ok_or_else(|| OAuthError::BadCallback("the callback carries no state".into()))?;
        let token: StateToken = self
            .open_json(&sealed_state, STATE_AAD)
            .map_err(|_| OAuthError::UnknownState)?;
        let principal = principal.ok_or(OAuthError::NoPrincipal)?;
        if principal.id() != token.principal {
            tracing::warn!(
                principal = principal.id(),
                slug = %token.slug,
                "a sign-in callback carried another user's state; refused"
            );
            return Err(OAuthError::OtherPrincipal);
        }
        if token.expires_at < now_ms() {
            return Err(OAuthError::Expired);
        }
        let slug = token.slug.as_str();
        // Single use: the pending sign-in is cleared before the code is exchanged.
        let mut taken: Option<Pending> = None;
        let record = self
            .modify(principal, slug, |r| {
                taken = None;
                let sealed = r.oauth_pending.as_deref().ok_or(OAuthError::UnknownState)?;
                let pending: Pending = self
                    .open_json(sealed, &aad(principal, slug, "oauth-pending"))
                    .map_err(|_| OAuthError::UnknownState)?;
                if pending.nonce != token.nonce {
                    return Err(OAuthError::UnknownState);
                }
                r.oauth_pending = None;
                taken = Some(pending);
                Ok(true)
            })
            .await?
            .ok_or(OAuthError::UnknownState)?;
        let pending = taken.ok_or(OAuthError::UnknownState)?;
        if pending.expires_at < now_ms() {
            return Err(OAuthError::Expired);
        }
        if let Some(refusal) = callback.refusal() {
            return Err(OAuthError::Refused(refusal));
        }
        let code = callback
            .code
            .ok_or_else(|| OAuthError::BadCallback("the callback carries no code".into()))?;
        let exchanged = tokio::time::timeout(
            self.upstream_timeout,
            self.exchange(
                &record,
                pending,
                &token.nonce,
                &code,
                callback.iss.as_deref(),
            ),
        )
        .await
        .map_err(|_| OAuthError::Upstream {
            slug: slug.to_owned(),
            reason: format!("no answer within {:?}", self.upstream_timeout),
        })??;
        let sealed = self.seal_grant(principal, slug, &exchanged)?;
        let at = record.url.clone();
        let stored = self
            .modify(principal, slug, |r| {
                if r.url != at {
                    return Err(OAuthError::Changed(slug.to_owned()));
                }
                r.oauth = Some(sealed.clone());
                r.oauth_status = OAuthStatus::SignedIn;
                r.updated_at = now_ms();
                Ok(true)
            })
            .await?
            .ok_or_else(|| OAuthError::Gone(slug.to_owned()))?;
        tracing::info!(
            principal = principal.id(),
            slug,
            "signed in to a user's MCP server"
        );
        Ok(stored)
    }

    /// Exchanges `code` with rmcp (logging off: rmcp logs the code).
    async fn exchange(
        &self,
        record: &UserMcpRecord,
        pending: Pending,
        key: &str,
        code: &str,
        iss: Option<&str>,
    ) -> Result<Grant, OAuthError> {
        let manager = self.manager(&record.url).await?;
        let (metadata, credentials) =
            steps::finish(manager, &pending.client, pending.state, key, code, iss)
                .await
                .map_err(|e| step_error(&record.slug, e))?;
        Ok(Grant {
            client: pending.client,
            metadata,
            credentials,
        })
    }
}

/// A step's failure, in the user's words.
pub(super) fn step_error(slug: &str, e: Step) -> OAuthError {
    match e {
        Step::NotOAuth => OAuthError::NotOAuth(slug.to_owned()),
        Step::Upstream(reason) => OAuthError::Upstream {
            slug: slug.to_owned(),
            reason,
        },
        Step::Issuer => OAuthError::Refused(
            "the response does not come from the server's authorization server (its `iss` is \
             another issuer's, or missing)"
                .into(),
        ),
        Step::Ended => OAuthError::SignInRequired(slug.to_owned()),
        Step::Internal(e) => OAuthError::Internal(e),
    }
}
