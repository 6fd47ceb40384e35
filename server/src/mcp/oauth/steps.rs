//! The steps both sign-ins (the operator's, a user's) take with rmcp, each on a manager whose
//! requests go through the policy: [`begin`] (discovery, the client, the authorization URL and
//! its PKCE state), [`finish`] (the code exchange, `iss` checked) and [`renew`] (a refresh).
//! Each caller keeps its own state, store and words; what is sealed is [`seal_json`]'s.

use rmcp::transport::StateStore;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, InMemoryStateStore,
    StoredAuthorizationState, StoredCredentials,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Client, describe, exchange_code, obtain_client, refresh_credentials};
use crate::secrets::sealing::Keyring;

/// How a step failed.
pub(crate) enum Step {
    /// The server publishes no OAuth metadata.
    NotOAuth,
    /// The server or its authorization server failed or answered something unusable.
    Upstream(String),
    /// The authorization response's `iss` is not the authorization server's (RFC 9207).
    Issuer,
    /// The grant is over: the authorization server changed or refused the refresh.
    Ended,
    /// Something of ours failed.
    Internal(String),
}

/// A sign-in begun: the authorization URL (with rmcp's `state`), the client, the PKCE state.
pub(crate) struct Begun {
    pub(crate) url: String,
    pub(crate) client: Client,
    pub(crate) state: StoredAuthorizationState,
}

/// Discovers `manager`'s server's authorization server, obtains a client for `redirect_uri`
/// (the metadata document at `document` where taken, else a registration) and makes the
/// authorization URL.
pub(crate) async fn begin(
    mut manager: AuthorizationManager,
    redirect_uri: &str,
    document: Option<&str>,
) -> Result<Begun, Step> {
    let upstream = |e: AuthError| Step::Upstream(describe(&e, None));
    let states = InMemoryStateStore::new();
    manager.set_state_store(states.clone());
    let resolution = manager.resolve_metadata().await.map_err(upstream)?;
    if !resolution.source.is_discovered() {
        return Err(Step::NotOAuth);
    }
    let metadata = resolution.metadata;
    let issuer = metadata.issuer.clone();
    manager.set_metadata(metadata.clone());
    let scopes = manager.select_initial_scopes(&[]).await;
    let config = obtain_client(&mut manager, &metadata, redirect_uri, document, &scopes)
        .await
        .map_err(upstream)?;
    let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
    let url = manager
        .get_authorization_url(&refs)
        .await
        .map_err(upstream)?;
    let rmcp_state = reqwest::Url::parse(&url)
        .ok()
        .and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "state")
                .map(|(_, v)| v.into_owned())
        })
        .ok_or_else(|| Step::Upstream("the authorization URL has no state".into()))?;
    let state = states
        .load(&rmcp_state)
        .await
        .ok()
        .flatten()
        .ok_or_else(|| Step::Internal("the sign-in's PKCE verifier is missing".into()))?;
    let client = Client {
        client_id: config.client_id,
        client_secret: config.client_secret,
        redirect_uri: redirect_uri.to_owned(),
        scopes,
        issuer,
    };
    Ok(Begun { url, client, state })
}

/// `url` with `state` in place of rmcp's `state` (the caller's sealed one, by which its
/// callback finds the sign-in).
pub(crate) fn with_state(mut url: reqwest::Url, state: &str) -> String {
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| match k.as_ref() {
            "state" => (k.into_owned(), state.to_owned()),
            _ => (k.into_owned(), v.into_owned()),
        })
        .collect();
    url.query_pairs_mut().clear().extend_pairs(pairs);
    url.to_string()
}

/// Exchanges `code` for the sign-in of `client` whose PKCE state is `state` (rmcp's key
/// `key`), after checking that the server still names the same authorization server; `iss` is
/// checked (RFC 9207). The authorization server's metadata and the tokens.
pub(crate) async fn finish(
    mut manager: AuthorizationManager,
    client: &Client,
    state: StoredAuthorizationState,
    key: &str,
    code: &str,
    iss: Option<&str>,
) -> Result<(AuthorizationMetadata, StoredCredentials), Step> {
    let resolution = manager
        .resolve_metadata()
        .await
        .map_err(|e| Step::Upstream(describe(&e, None)))?;
    if !resolution.source.is_discovered() || resolution.metadata.issuer != client.issuer {
        return Err(Step::Upstream(
            "the server names another authorization server than when the sign-in started".into(),
        ));
    }
    manager.set_metadata(resolution.metadata.clone());
    manager
        .configure_client(client.config())
        .map_err(|e| Step::Upstream(describe(&e, None)))?;
    match exchange_code(manager, state, key, code, iss).await {
        Ok(credentials) => Ok((resolution.metadata, credentials)),
        Err(
            e @ (AuthError::AuthorizationServerMismatch { .. }
            | AuthError::AuthorizationServerMissingIssuer { .. }),
        ) => {
            tracing::warn!(error = %describe(&e, Some(code)), "an authorization response's `iss` is not its authorization server's; refused");
            Err(Step::Issuer)
        }
        Err(e) => Err(Step::Upstream(describe(&e, Some(code)))),
    }
}

/// Refreshes `credentials` of `client`, after discovering again (the current endpoints, and
/// the `resource` the token is for): [`Step::Ended`] when the server names another
/// authorization server or the refresh is refused.
pub(crate) async fn renew(
    mut manager: AuthorizationManager,
    client: &Client,
    credentials: StoredCredentials,
) -> Result<(AuthorizationMetadata, StoredCredentials), Step> {
    let resolution = manager
        .resolve_metadata()
        .await
        .map_err(|e| Step::Upstream(describe(&e, None)))?;
    if resolution.metadata.issuer != client.issuer {
        return Err(Step::Ended);
    }
    manager.set_metadata(resolution.metadata.clone());
    manager
        .configure_client(client.config())
        .map_err(|e| Step::Internal(describe(&e, None)))?;
    match refresh_credentials(manager, credentials).await {
        Ok(c) => Ok((resolution.metadata, c)),
        Err(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) => {
            Err(Step::Ended)
        }
        Err(e) => Err(Step::Upstream(describe(&e, None))),
    }
}

/// A fresh nonce for a sign-in's `state`, and when that sign-in expires (ms since the epoch).
pub(crate) fn nonce_and_expiry() -> (String, i64) {
    let nonce = hex::encode(rand::random::<[u8; 16]>());
    let ttl = i64::try_from(super::SIGN_IN_TTL.as_millis()).unwrap_or(i64::MAX);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    (nonce, now.saturating_add(ttl))
}

/// `value` as JSON, sealed by `keyring` with `aad`.
pub(crate) fn seal_json<T: Serialize>(
    keyring: &Keyring,
    value: &T,
    aad: &[u8],
) -> Result<String, String> {
    let json = serde_json::to_vec(value).map_err(|e| format!("encoding the sign-in: {e}"))?;
    Ok(keyring.seal(&json, aad))
}

/// What [`seal_json`] sealed with `aad`.
pub(crate) fn open_json<T: DeserializeOwned>(
    keyring: &Keyring,
    sealed: &str,
    aad: &[u8],
) -> Result<T, String> {
    let plain = keyring
        .open(sealed, aad)
        .map_err(|e| format!("a stored sign-in does not open ({e}); sign in again"))?;
    serde_json::from_slice(&plain)
        .map_err(|_| "a stored sign-in is unreadable; sign in again".into())
}
