//! Tokens in use: [`UserMcp::bearer`] opens a signed-in server's grant for one connection,
//! refreshing it first when it is about to expire, and [`UserMcp::keep`] stores what rmcp
//! refreshed during the connection. The rules are the module's ([`super`]).

use std::hash::{Hash, Hasher};

use rmcp::transport::CredentialStore;
use rmcp::transport::auth::{AuthorizationManager, AuthorizationMetadata, InMemoryCredentialStore};

use super::{Client, Grant, OAuthError, describe};
use crate::host::Principal;
use crate::mcp::oauth::steps::{self, Step};
use crate::mcp::oauth::{access_token, due, now_secs, renewable};
use crate::user_mcp::{UserMcp, UserMcpRecord};

/// The OAuth side of one connection to a signed-in server.
pub(crate) struct Bearer {
    /// For the transport (rmcp's `AuthClient`): its credential store holds the grant's tokens.
    pub(crate) manager: AuthorizationManager,
    /// What [`UserMcp::keep`] needs after the connection.
    pub(crate) kept: Kept,
}

/// The manager's credential store and what the grant holds besides, to store a token rmcp
/// refreshed during the connection.
pub(crate) struct Kept {
    store: InMemoryCredentialStore,
    /// The access token the connection started with.
    sent: Option<String>,
    client: Client,
    metadata: AuthorizationMetadata,
    url: String,
}

impl UserMcp {
    /// The lock serialising refreshes of `principal`'s server `slug` in this process.
    fn refresh_lock(&self, principal: &Principal, slug: &str) -> &tokio::sync::Mutex<()> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (principal.id(), slug).hash(&mut h);
        let i = usize::try_from(h.finish() % self.oauth_locks.len() as u64).unwrap_or(0);
        &self.oauth_locks[i]
    }

    /// The bearer for one connection to `record`'s server: `None` when the user has not
    /// signed in to it. A token about to expire is refreshed first;
    /// [`OAuthError::SignInRequired`] when it cannot be.
    pub(crate) async fn bearer(
        &self,
        principal: &Principal,
        record: &UserMcpRecord,
    ) -> Result<Option<Bearer>, OAuthError> {
        let Some(mut grant) = self.open_grant(principal, record)? else {
            return Ok(None);
        };
        if due(&grant.credentials, now_secs()) {
            let refreshed =
                tokio::time::timeout(self.upstream_timeout, self.refresh(principal, record))
                    .await
                    .map_err(|_| OAuthError::Upstream {
                        slug: record.slug.clone(),
                        reason: format!("no answer within {:?}", self.upstream_timeout),
                    })?;
            grant = refreshed?;
        }
        let mut manager = self.manager(&record.url).await?;
        manager.set_metadata(grant.metadata.clone());
        manager
            .configure_client(grant.client.config())
            .map_err(|e| OAuthError::Internal(describe(&e, None)))?;
        let store = InMemoryCredentialStore::new();
        let sent = access_token(&grant.credentials);
        store
            .save(grant.credentials)
            .await
            .map_err(|e| OAuthError::Internal(describe(&e, None)))?;
        manager.set_credential_store(store.clone());
        Ok(Some(Bearer {
            manager,
            kept: Kept {
                store,
                sent,
                client: grant.client,
                metadata: grant.metadata,
                url: record.url.clone(),
            },
        }))
    }

    /// Refreshes the grant of `record`'s server (once per server at a time: a refresh that
    /// waited finds the token another one stored).
    async fn refresh(
        &self,
        principal: &Principal,
        record: &UserMcpRecord,
    ) -> Result<Grant, OAuthError> {
        let slug = record.slug.as_str();
        let _serialised = self.refresh_lock(principal, slug).lock().await;
        let current = self
            .store
            .get(principal, slug)
            .await?
            .ok_or_else(|| OAuthError::Gone(slug.to_owned()))?;
        if current.url != record.url {
            return Err(OAuthError::Changed(slug.to_owned()));
        }
        let Some(grant) = self.open_grant(principal, &current)? else {
            return Err(OAuthError::SignInRequired(slug.to_owned()));
        };
        if !due(&grant.credentials, now_secs()) {
            return Ok(grant);
        }
        if !renewable(&grant.credentials) {
            self.mark_sign_in_required(principal, slug).await;
            return Err(OAuthError::SignInRequired(slug.to_owned()));
        }
        let manager = self.manager(&record.url).await?;
        let (metadata, credentials) =
            match steps::renew(manager, &grant.client, grant.credentials).await {
                Ok(renewed) => renewed,
                Err(Step::Ended) => {
                    self.mark_sign_in_required(principal, slug).await;
                    return Err(OAuthError::SignInRequired(slug.to_owned()));
                }
                Err(e) => return Err(super::flow::step_error(slug, e)),
            };
        let grant = Grant {
            client: grant.client,
            metadata,
            credentials,
        };
        self.store_grant(principal, slug, &record.url, &grant)
            .await?;
        tracing::info!(
            principal = principal.id(),
            slug,
            "a user's MCP server's token was refreshed"
        );
        Ok(grant)
    }

    /// Stores `grant` for the server `slug` while its URL is still `url`.
    async fn store_grant(
        &self,
        principal: &Principal,
        slug: &str,
        url: &str,
        grant: &Grant,
    ) -> Result<(), OAuthError> {
        let sealed = self.seal_grant(principal, slug, grant)?;
        self.modify(principal, slug, |r| {
            if r.url != url {
                return Err(OAuthError::Changed(slug.to_owned()));
            }
            r.oauth = Some(sealed.clone());
            r.oauth_status = lmchatkit_protocol::OAuthStatus::SignedIn;
            Ok(true)
        })
        .await?
        .ok_or_else(|| OAuthError::Gone(slug.to_owned()))
        .map(drop)
    }

    /// After a connection: stores the token rmcp refreshed during it, if it did.
    pub(crate) async fn keep(&self, principal: &Principal, slug: &str, kept: Kept) {
        let credentials = match kept.store.load().await {
            Ok(Some(c)) if access_token(&c) != kept.sent => c,
            Ok(_) => return,
            Err(e) => {
                tracing::warn!(slug, error = %describe(&e, None), "reading a refreshed token failed");
                return;
            }
        };
        let grant = Grant {
            client: kept.client,
            metadata: kept.metadata,
            credentials,
        };
        if let Err(e) = self.store_grant(principal, slug, &kept.url, &grant).await {
            tracing::warn!(slug, error = %e, "storing a refreshed token failed");
        }
    }
}
