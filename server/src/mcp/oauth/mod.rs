//! OAuth for MCP servers, the parts both sign-ins share: the sign-in of the operator to the
//! remote servers they configure ([`OperatorOAuth`], see `operator`) and each user's sign-in to
//! their own servers (`user_mcp::oauth`). Both go through rmcp's `auth` (discovery, PKCE,
//! `resource`, refresh) with the HTTP of [`PolicyHttp`].
//!
//! Decisions:
//! - **How the service is known to an authorization server** ([`obtain_client`]): by its
//!   client ID metadata document (CIMD, SEP-991) when the authorization server's metadata says
//!   `client_id_metadata_document_supported: true` and can fetch the document, else by dynamic
//!   client registration. The document is served at `GET {prefix}`[`CIMD_PATH`] (a public
//!   route: authorization servers fetch it without a session) and its URL is the `client_id`.
//!   "Can fetch": the document's URL is `https`, or it is `http` on a loopback name and so is
//!   the authorization server's issuer (one machine: a development set-up, and the tests). A
//!   service reached over plain http by another name registers instead: no authorization
//!   server accepts, or could fetch, such a client id.
//! - **The document** ([`client_metadata`]) names `client_id` (its own URL), `client_name`,
//!   `client_uri` (the origin), the `redirect_uris` of the sign-ins that are on (the operator's
//!   callback, users' callback), `grant_types` `authorization_code` and `refresh_token`,
//!   `response_types` `code`, `token_endpoint_auth_method: none` (a public client: PKCE, no
//!   secret) and `application_type` (`web` over https, `native` on loopback http, SEP-837).
//!   It is built from the request's host, so it names the URLs the authorization server reached
//!   it by; the host-name check keeps that to the service's own names.
//! - **`iss` (RFC 9207)** is checked by rmcp's `exchange_code_for_token_with_issuer`: an
//!   authorization response whose `iss` is not the issuer recorded when the sign-in started is
//!   refused, and one without `iss` is refused when the authorization server advertises
//!   `authorization_response_iss_parameter_supported`. The pending sign-in is consumed first,
//!   so a forged response cannot be retried.

mod cimd;
mod http;
mod operator;
pub(crate) mod steps;
mod store;

pub use cimd::CIMD_PATH;
pub(crate) use cimd::client_metadata;
pub(crate) use http::PolicyHttp;
pub use operator::{OPERATOR_CALLBACK_PATH, OPERATOR_PAGE_PATH, OperatorOAuth};
pub(crate) use operator::{OperatorStatus, SignInError, Token};
pub use store::{FileGrantStore, GrantStoreError, MemoryGrantStore, OperatorGrantStore};

use std::future::Future;

use oauth2::TokenResponse;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, InMemoryCredentialStore,
    InMemoryStateStore, OAuthClientConfig, StoredAuthorizationState, StoredCredentials,
};
use rmcp::transport::{CredentialStore, StateStore};
use serde::{Deserialize, Serialize};
use tracing::instrument::WithSubscriber;

use crate::error::Failure;
use crate::secrets::redact_urls;

/// How long a sign-in may take, from its start to the callback.
pub const SIGN_IN_TTL: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// The client name sent with dynamic client registration and in the metadata document.
pub(crate) const CLIENT_NAME: &str = "lmchatkit";

/// Most seconds before expiry a token is refreshed (less for short-lived tokens: half their
/// lifetime).
const REFRESH_MARGIN_SECS: u64 = 60;

/// The client an authorization server knows this service by, for one server's sign-ins.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Client {
    pub(crate) client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<String>,
    pub(crate) redirect_uri: String,
    #[serde(default)]
    pub(crate) scopes: Vec<String>,
    /// The authorization server's issuer when the sign-in started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) issuer: Option<String>,
}

impl Client {
    /// rmcp's configuration of this client.
    pub(crate) fn config(&self) -> OAuthClientConfig {
        let mut c = OAuthClientConfig::new(self.client_id.clone(), self.redirect_uri.clone())
            .with_scopes(self.scopes.clone());
        if let Some(secret) = &self.client_secret {
            c = c.with_client_secret(secret.clone());
        }
        c
    }
}

/// A signed-in server's grant: what is sealed for it.
#[derive(Serialize, Deserialize)]
pub(crate) struct Grant {
    pub(crate) client: Client,
    pub(crate) metadata: AuthorizationMetadata,
    pub(crate) credentials: StoredCredentials,
}

/// A sign-in in progress: what is sealed for it until its callback.
#[derive(Serialize, Deserialize)]
pub(crate) struct Pending {
    pub(crate) nonce: String,
    /// ms since the epoch.
    pub(crate) expires_at: i64,
    pub(crate) client: Client,
    pub(crate) state: StoredAuthorizationState,
}

/// Whether `url` names a loopback host (`localhost`, `127.0.0.0/8`, `[::1]`).
fn loopback_url(url: &str) -> bool {
    let Ok(u) = reqwest::Url::parse(url) else {
        return false;
    };
    let Some(host) = u.host_str() else {
        return false;
    };
    let bare = host.trim_matches(['[', ']']);
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => {
            let name = bare.to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
    }
}

/// Whether an authorization server with `metadata` takes `document` (the metadata document's
/// URL) as a client id: it says it supports CIMD, and can fetch the document (see the module
/// docs).
pub(crate) fn takes_cimd(metadata: &AuthorizationMetadata, document: &str) -> bool {
    let supported = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let fetchable = match reqwest::Url::parse(document) {
        Ok(u) if u.scheme() == "https" => true,
        Ok(u) if u.scheme() == "http" => {
            loopback_url(document) && metadata.issuer.as_deref().is_some_and(loopback_url)
        }
        _ => false,
    };
    supported && fetchable
}

/// How the service is known to the authorization server whose metadata `manager` holds, for a
/// sign-in that ends at `redirect_uri`: the metadata document at `document` when the server
/// takes it, else a client registered now. Configures `manager` with it.
pub(crate) async fn obtain_client(
    manager: &mut AuthorizationManager,
    metadata: &AuthorizationMetadata,
    redirect_uri: &str,
    document: Option<&str>,
    scopes: &[String],
) -> Result<OAuthClientConfig, AuthError> {
    let web = redirect_uri.starts_with("https://");
    if let Some(document) = document.filter(|d| takes_cimd(metadata, d)) {
        let config = OAuthClientConfig::new(document, redirect_uri)
            .with_scopes(scopes.to_vec())
            .with_application_type(if web { "web" } else { "native" });
        manager.configure_client(config.clone())?;
        return Ok(config);
    }
    if web {
        // SEP-837: a service on the web registers as a "web" client (rmcp's default is
        // "native", right for a loopback redirect). rmcp has no setter for it besides the
        // client configuration, which the registration below replaces.
        manager.configure_client(
            OAuthClientConfig::new("unregistered", redirect_uri).with_application_type("web"),
        )?;
    }
    let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
    let config = manager
        .register_client(CLIENT_NAME, redirect_uri, &refs)
        .await?;
    Ok(config)
}

/// Exchanges `code` with `manager` (its metadata and client configured) for the sign-in whose
/// PKCE verifier and expected issuer are `state`, checking `iss` (RFC 9207); logging is off
/// meanwhile ([`quiet`]). The tokens, as rmcp keeps them.
pub(crate) async fn exchange_code(
    mut manager: AuthorizationManager,
    state: StoredAuthorizationState,
    key: &str,
    code: &str,
    iss: Option<&str>,
) -> Result<StoredCredentials, AuthError> {
    let states = InMemoryStateStore::new();
    let credentials = InMemoryCredentialStore::new();
    states.save(key, state).await?;
    manager.set_state_store(states);
    manager.set_credential_store(credentials.clone());
    quiet(manager.exchange_code_for_token_with_issuer(code, key, iss)).await?;
    credentials
        .load()
        .await?
        .ok_or_else(|| AuthError::InternalError("the exchange stored no tokens".into()))
}

/// Refreshes `credentials` with `manager` (its metadata and client configured), logging off.
pub(crate) async fn refresh_credentials(
    mut manager: AuthorizationManager,
    credentials: StoredCredentials,
) -> Result<StoredCredentials, AuthError> {
    let store = InMemoryCredentialStore::new();
    store.save(credentials).await?;
    manager.set_credential_store(store.clone());
    quiet(manager.refresh_token()).await?;
    store
        .load()
        .await?
        .ok_or_else(|| AuthError::InternalError("the refresh stored no tokens".into()))
}

/// Whether `credentials` carry a refresh token.
pub(crate) fn renewable(credentials: &StoredCredentials) -> bool {
    credentials
        .token_response
        .as_ref()
        .is_some_and(|t| t.refresh_token().is_some())
}

/// What the authorization server's redirect carries.
#[derive(Default)]
pub(crate) struct Callback {
    pub(crate) code: Option<String>,
    pub(crate) state: Option<String>,
    pub(crate) iss: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) error_description: Option<String>,
}

impl Callback {
    /// The callback's query string, parsed.
    pub(crate) fn parse(query: &str) -> Self {
        let mut out = Self::default();
        let Ok(url) = reqwest::Url::parse(&format!("http://callback.invalid/?{query}")) else {
            return out;
        };
        for (k, v) in url.query_pairs() {
            let slot = match k.as_ref() {
                "code" => &mut out.code,
                "state" => &mut out.state,
                "iss" => &mut out.iss,
                "error" => &mut out.error,
                "error_description" => &mut out.error_description,
                _ => continue,
            };
            slot.get_or_insert_with(|| v.into_owned());
        }
        out
    }

    /// The authorization server's refusal, when it refused: `error (description)`, without
    /// control characters or URL queries, at most 300 characters.
    pub(crate) fn refusal(&self) -> Option<String> {
        let error = self.error.clone()?;
        let said = match &self.error_description {
            Some(d) => format!("{error} ({d})"),
            None => error,
        };
        let said: String = said.chars().filter(|c| !c.is_control()).take(300).collect();
        Some(redact_urls(&said))
    }
}

/// The origin the browser reached this service by: the request's `Origin` when it names the
/// request's `Host` (the UI's fetch, a form's post), else `Host` with `http` for loopback names
/// and `https` otherwise.
pub(crate) fn request_origin(parts: &::http::request::Parts) -> Result<String, Failure> {
    let host = parts
        .headers
        .get(::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| parts.uri.authority().map(|a| a.as_str()))
        .ok_or_else(|| Failure::Invalid("the request names no host".into()))?;
    let origin = parts
        .headers
        .get(::http::header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .filter(|o| {
            o.split_once("://")
                .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(host))
        });
    let base = match origin {
        Some(o) => o.to_owned(),
        None => {
            let loopback = loopback_url(&format!("http://{host}/"));
            format!("{}://{host}", if loopback { "http" } else { "https" })
        }
    };
    match reqwest::Url::parse(&base) {
        Ok(u) if u.host_str().is_some() && u.query().is_none() && u.path() == "/" => {
            Ok(base.trim_end_matches('/').to_owned())
        }
        _ => Err(Failure::Invalid(format!(
            "{host:?} does not make a callback URL"
        ))),
    }
}

/// Runs `f` with logging switched off: rmcp logs the authorization code at `DEBUG` while it
/// exchanges it, and token responses while it refreshes them.
pub(crate) fn quiet<F: Future>(f: F) -> impl Future<Output = F::Output> {
    f.with_subscriber(tracing::subscriber::NoSubscriber::default())
}

/// An rmcp error as text for people: sources included, URLs without their queries, and
/// `secret` (e.g. the code) replaced wherever it appears.
pub(crate) fn describe(e: &AuthError, secret: Option<&str>) -> String {
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    if let Some(secret) = secret.filter(|s| !s.is_empty()) {
        out = out.replace(secret, "<redacted>");
    }
    redact_urls(&out)
}

/// Now, in seconds since the epoch.
pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The access token of `c`, if any.
pub(crate) fn access_token(c: &StoredCredentials) -> Option<String> {
    c.token_response
        .as_ref()
        .map(|t| t.access_token().secret().to_owned())
}

/// Whether `c`'s access token has less than `min(60 s, lifetime / 2)` left at `now` (seconds).
/// A token without a lifetime is used until the server rejects it.
pub(crate) fn due(c: &StoredCredentials, now: u64) -> bool {
    let Some(token) = &c.token_response else {
        return true;
    };
    match (token.expires_in(), c.token_received_at) {
        (Some(lifetime), Some(at)) => {
            let lifetime = lifetime.as_secs();
            let left = lifetime.saturating_sub(now.saturating_sub(at));
            left <= (lifetime / 2).min(REFRESH_MARGIN_SECS)
        }
        _ => false,
    }
}

/// When `c`'s access token falls [`due`], in seconds since the epoch (`None`: never, by the
/// clock).
pub(crate) fn due_at(c: &StoredCredentials) -> Option<u64> {
    let token = c.token_response.as_ref()?;
    let lifetime = token.expires_in()?.as_secs();
    let at = c.token_received_at?;
    Some(at + lifetime - (lifetime / 2).min(REFRESH_MARGIN_SECS))
}

#[cfg(test)]
mod tests;
