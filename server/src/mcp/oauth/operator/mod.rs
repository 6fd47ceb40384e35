//! [`OperatorOAuth`]: the operator signs the service in, once, to the remote MCP servers they
//! configured with OAuth (`oauth = true`, [`McpServerConfig::with_oauth`]); the hub's
//! connections to those servers then carry the grant's access token.
//!
//! The flow: the operator opens `{prefix}/mcp/operator` (a page only the operator sees; see
//! `access::operator`), which lists these servers with their state, and presses "Sign in" on
//! one: a same-origin form post to `{prefix}/mcp/operator/sign-in/{server}`, which discovers
//! the server's authorization server, obtains a client (the metadata document or a registration,
//! see [`super`]) and answers `303` to the authorization page. The authorization server sends
//! the browser back to `GET {prefix}/mcp/operator/callback?code&state&iss`, which checks the
//! state, exchanges the code (checking `iss`) and stores the grant; the hub's next connection
//! to the server uses it.
//!
//! Decisions:
//! - **Sealed like users' grants, never openable as one.** One record per server (its URL, the
//!   grant: tokens, client, the authorization server's metadata; a sign-in in progress: PKCE
//!   verifier and the state's nonce) is sealed by the [`Keyring`] with associated data
//!   `"lmchatkit/operator-mcp/{server}#grant"`, and the `state` parameter with
//!   `"lmchatkit/operator-mcp#state"`. Users' associated data end in a slug, `/oauth` or
//!   `/oauth-pending`, never in `#…` (a slug has no `#`), so an operator's record does not open
//!   as a user's, nor a user's as the operator's, nor one server's as another's. The sealed
//!   record is all an [`OperatorGrantStore`] sees. Nothing of it is in an answer, a `Debug` or
//!   a log line: exchanges and refreshes run with logging off (rmcp logs the code), error texts
//!   lose URL queries and the code.
//! - **The state** is a sealed `{principal, server, nonce, expiry}`: bound to the operator who
//!   started the sign-in (another principal's callback is refused), expiring after
//!   [`SIGN_IN_TTL`](crate::mcp::oauth::SIGN_IN_TTL), and good once (the callback clears the
//!   pending sign-in before it exchanges the code). A new sign-in replaces the pending one.
//! - **Redirect URI and metadata document** are built from the origin the operator's browser
//!   reached the service by (as for users' sign-ins): `{origin}{prefix}/mcp/operator/callback`
//!   and `{origin}{prefix}/oauth/client-metadata.json`.
//! - **The OAuth requests go through an [`OutboundPolicy`]** (default [`OutboundPolicy::new`]:
//!   https to public addresses), to which the host of each OAuth server's own URL is added: the
//!   operator named it. An authorization server elsewhere on a private network needs
//!   [`OperatorOAuth::with_policy`].
//! - **Refresh** happens before the hub connects when the token has less than
//!   `min(60 s, lifetime / 2)` left, and a connection whose token reaches that point is closed
//!   and opened again at its next use (the same for Streamable HTTP and HTTP+SSE, whose headers
//!   are fixed per connection). A server that rejects the token before its time (401, e.g.
//!   revoked) gets one refresh at once, and the refused request (which ran nothing) one retry.
//!   Refreshes are serialised in this process, and each reads the stored record again first,
//!   so a token another refresh (or instance) stored is used, not refreshed twice. A refresh
//!   the authorization server rejects, or an expired token without a refresh token, drops the
//!   grant: the server needs the operator again (`/api/config` and the page say so).
//! - **A changed URL drops the grant**: tokens issued for one server are never sent to
//!   another.

mod flow;
mod tokens;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rmcp::transport::auth::AuthorizationManager;
use serde::{Deserialize, Serialize};

use super::steps::{self, Step};
use super::store::{GrantStoreError, OperatorGrantStore};
use super::{Grant, Pending, PolicyHttp, access_token, describe, due_at, now_secs};
use crate::error::Failure;
use crate::mcp::OutboundPolicy;
use crate::secrets::Redacted;
use crate::secrets::sealing::Keyring;

/// The operator's page, below the prefix.
pub const OPERATOR_PAGE_PATH: &str = "/mcp/operator";
/// Where the operator's sign-ins end, below the prefix.
pub const OPERATOR_CALLBACK_PATH: &str = "/mcp/operator/callback";

/// Associated data of the `state` parameter.
const STATE_AAD: &[u8] = b"lmchatkit/operator-mcp#state";

/// Default time the OAuth requests of one step may take.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

pub(super) fn aad(server: &str) -> Vec<u8> {
    format!("lmchatkit/operator-mcp/{server}#grant").into_bytes()
}

fn now_ms() -> i64 {
    i64::try_from(now_secs())
        .unwrap_or(i64::MAX)
        .saturating_mul(1000)
}

/// What a sign-in, a refresh or a callback can fail with; the messages are fit for the
/// operator (no URL query, code or token).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum SignInError {
    #[error("no MCP server {0:?} signs in with OAuth")]
    NotConfigured(String),
    #[error("the MCP server {0:?} publishes no OAuth metadata; check its URL")]
    NotOAuth(String),
    #[error("signing in to the MCP server {server:?} failed: {reason}")]
    Upstream { server: String, reason: String },
    #[error("the MCP server {0:?} needs the operator to sign in again (OAuth)")]
    SignInRequired(String),
    #[error(
        "this sign-in is unknown, was used already or was replaced by a newer one; start it again"
    )]
    UnknownState,
    #[error("this sign-in took too long; start it again")]
    Expired,
    #[error("this sign-in was started by someone else; start it again")]
    OtherPrincipal,
    #[error("{0}")]
    BadCallback(String),
    #[error("the authorization server refused the sign-in: {0}")]
    Refused(String),
    #[error("the MCP server {0:?} changed meanwhile; start the sign-in again")]
    Changed(String),
    #[error("{0}")]
    Internal(String),
}

impl From<GrantStoreError> for SignInError {
    fn from(e: GrantStoreError) -> Self {
        SignInError::Internal(e.to_string())
    }
}

impl From<SignInError> for Failure {
    fn from(e: SignInError) -> Self {
        match e {
            SignInError::NotConfigured(_) => Failure::NotFound(e.to_string()),
            SignInError::NotOAuth(_) => Failure::Unusable(e.to_string()),
            SignInError::Upstream { .. } => Failure::Upstream(e.to_string()),
            SignInError::SignInRequired(_) | SignInError::OtherPrincipal => {
                Failure::Denied(e.to_string())
            }
            SignInError::Changed(_) => Failure::Conflict(e.to_string()),
            SignInError::UnknownState
            | SignInError::Expired
            | SignInError::BadCallback(_)
            | SignInError::Refused(_) => Failure::Invalid(e.to_string()),
            SignInError::Internal(_) => Failure::Internal(e.to_string()),
        }
    }
}

/// What is stored (sealed) for one server.
#[derive(Serialize, Deserialize)]
struct Record {
    url: String,
    #[serde(default)]
    grant: Option<Grant>,
    #[serde(default)]
    pending: Option<Pending>,
}

/// What the `state` parameter carries (sealed).
#[derive(Serialize, Deserialize)]
struct StateToken {
    principal: String,
    server: String,
    nonce: String,
    /// ms since the epoch.
    expires_at: i64,
}

/// The access token for one connection, and when it falls due (seconds since the epoch).
pub(crate) struct Token {
    pub(crate) access: String,
    pub(crate) due_at: Option<u64>,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("access", &Redacted)
            .field("due_at", &self.due_at)
            .finish()
    }
}

impl Token {
    fn of(grant: &Grant) -> Option<Self> {
        Some(Self {
            access: access_token(&grant.credentials)?,
            due_at: due_at(&grant.credentials),
        })
    }
}

/// Whether the service is signed in to one of the operator's servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OperatorStatus {
    SignedIn,
    SignInRequired,
}

/// One of the operator's OAuth servers, for the page.
#[derive(Debug, Clone)]
pub(crate) struct OperatorServer {
    pub(crate) name: String,
    pub(crate) status: OperatorStatus,
}

/// The operator's sign-ins to the remote MCP servers they configured with OAuth: give one to
/// [`McpHub::with_oauth`](crate::mcp::McpHub::with_oauth) (whose OAuth servers it then signs
/// in to) and to [`ConfigBuilder::mcp_oauth`](crate::ConfigBuilder::mcp_oauth) (which serves
/// the operator's page, its callback and the client ID metadata document). Cheap to clone;
/// `Debug` shows key ids and server names only.
///
/// ```
/// use lmchatkit::mcp::{McpHub, McpServerConfig, MemoryGrantStore, OperatorOAuth};
/// use lmchatkit::secrets::sealing::{Keyring, SealingKey};
///
/// let keyring = Keyring::new(SealingKey::generate("k1").unwrap());
/// let oauth = OperatorOAuth::new(keyring, MemoryGrantStore::default());
/// let hub = McpHub::new(vec![
///     McpServerConfig::http("docs", "https://mcp.example.com/mcp").with_oauth(),
/// ])
/// .with_oauth(oauth.clone());
/// assert!(format!("{oauth:?}").contains("docs"));
/// # let _ = hub;
/// ```
#[derive(Clone)]
pub struct OperatorOAuth {
    inner: Arc<Inner>,
}

struct Inner {
    keyring: Keyring,
    store: Arc<dyn OperatorGrantStore>,
    policy: OutboundPolicy,
    timeout: Duration,
    /// The OAuth servers, by name: their URLs.
    servers: RwLock<BTreeMap<String, String>>,
    /// Serialises writes of records and refreshes in this process.
    lock: tokio::sync::Mutex<()>,
    /// Bumped by every sign-in (the hub retries a server at once after one).
    generation: AtomicU64,
}

impl std::fmt::Debug for OperatorOAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorOAuth")
            .field("keyring", &self.inner.keyring)
            .field("servers", &self.names())
            .field("policy", &self.inner.policy.to_string())
            .finish_non_exhaustive()
    }
}

impl OperatorOAuth {
    /// Sign-ins sealed by `keyring` and kept in `store`.
    pub fn new(keyring: Keyring, store: impl OperatorGrantStore) -> Self {
        Self::from_parts(
            keyring,
            Arc::new(store),
            OutboundPolicy::new(),
            DEFAULT_TIMEOUT,
        )
    }

    fn from_parts(
        keyring: Keyring,
        store: Arc<dyn OperatorGrantStore>,
        policy: OutboundPolicy,
        timeout: Duration,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                keyring,
                store,
                policy,
                timeout,
                servers: RwLock::new(BTreeMap::new()),
                lock: tokio::sync::Mutex::new(()),
                generation: AtomicU64::new(0),
            }),
        }
    }

    fn rebuild(self, f: impl FnOnce(&mut OutboundPolicy, &mut Duration)) -> Self {
        let (mut policy, mut timeout) = (self.inner.policy.clone(), self.inner.timeout);
        f(&mut policy, &mut timeout);
        let out = Self::from_parts(
            self.inner.keyring.clone(),
            self.inner.store.clone(),
            policy,
            timeout,
        );
        for (name, url) in self.servers() {
            out.register(&name, &url);
        }
        out
    }

    /// The policy the OAuth requests (discovery, registration, tokens) go through (default
    /// [`OutboundPolicy::new`]); the host of each OAuth server's own URL is allowed besides.
    /// Call it before handing this to the hub and the config.
    pub fn with_policy(self, policy: OutboundPolicy) -> Self {
        self.rebuild(|p, _| *p = policy)
    }

    /// How long each step's OAuth requests may take (default 30 s).
    pub fn with_timeout(self, timeout: Duration) -> Self {
        self.rebuild(|_, t| *t = timeout)
    }

    /// Whether the service holds a grant for the OAuth server `server` (at its current URL).
    pub async fn is_signed_in(&self, server: &str) -> bool {
        let Some(url) = self.url_of(server) else {
            return false;
        };
        matches!(self.load(server).await, Ok(Some(r)) if r.url == url && r.grant.is_some())
    }

    /// Adds the OAuth server `name` at `url` (the hub does, for each of its OAuth servers).
    pub(crate) fn register(&self, name: &str, url: &str) {
        let mut servers = self
            .inner
            .servers
            .write()
            .unwrap_or_else(|p| p.into_inner());
        servers.insert(name.to_owned(), url.to_owned());
    }

    fn servers(&self) -> Vec<(String, String)> {
        let servers = self.inner.servers.read().unwrap_or_else(|p| p.into_inner());
        servers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    fn names(&self) -> Vec<String> {
        self.servers().into_iter().map(|(n, _)| n).collect()
    }

    fn url_of(&self, server: &str) -> Option<String> {
        let servers = self.inner.servers.read().unwrap_or_else(|p| p.into_inner());
        servers.get(server).cloned()
    }

    fn configured(&self, server: &str) -> Result<String, SignInError> {
        self.url_of(server)
            .ok_or_else(|| SignInError::NotConfigured(server.to_owned()))
    }

    /// Changes after every sign-in.
    pub(crate) fn generation(&self) -> u64 {
        self.inner.generation.load(Ordering::SeqCst)
    }

    /// The OAuth servers and whether each is signed in, by name.
    pub(crate) async fn list(&self) -> Vec<OperatorServer> {
        let mut out = Vec::new();
        for (name, _) in self.servers() {
            let status = match self.is_signed_in(&name).await {
                true => OperatorStatus::SignedIn,
                false => OperatorStatus::SignInRequired,
            };
            out.push(OperatorServer { name, status });
        }
        out
    }

    async fn load(&self, server: &str) -> Result<Option<Record>, SignInError> {
        let Some(sealed) = self.inner.store.load(server).await? else {
            return Ok(None);
        };
        match self.open_json(&sealed, &aad(server)) {
            Ok(r) => Ok(Some(r)),
            Err(e) => {
                // A record sealed by a key the keyring no longer has: sign in again.
                tracing::warn!(server, error = %e, "an operator's MCP sign-in does not open");
                Ok(None)
            }
        }
    }

    async fn save(&self, server: &str, record: &Record) -> Result<(), SignInError> {
        let sealed = self.seal_json(record, &aad(server))?;
        self.inner.store.store(server, Some(sealed)).await?;
        Ok(())
    }

    fn seal_json<T: Serialize>(&self, value: &T, aad: &[u8]) -> Result<String, SignInError> {
        steps::seal_json(&self.inner.keyring, value, aad).map_err(SignInError::Internal)
    }

    fn open_json<T: serde::de::DeserializeOwned>(
        &self,
        sealed: &str,
        aad: &[u8],
    ) -> Result<T, SignInError> {
        steps::open_json(&self.inner.keyring, sealed, aad).map_err(SignInError::Internal)
    }

    /// The policy for the OAuth requests of the server at `url`: the configured one, with
    /// `url`'s host allowed (the operator named it).
    fn policy_for(&self, url: &str) -> OutboundPolicy {
        let policy = self.inner.policy.clone();
        match reqwest::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(|h| h.trim_matches(['[', ']']).to_owned()))
        {
            Some(host) => policy.with_allowed_host(host),
            None => policy,
        }
    }

    /// A step's failure, in the operator's words.
    fn step_error(&self, server: &str, e: Step) -> SignInError {
        match e {
            Step::NotOAuth => SignInError::NotOAuth(server.to_owned()),
            Step::Upstream(reason) => SignInError::Upstream {
                server: server.to_owned(),
                reason,
            },
            Step::Issuer => SignInError::Refused(
                "the response does not come from the server's authorization server (its `iss` \
                 is another issuer's, or missing; RFC 9207)"
                    .into(),
            ),
            Step::Ended => SignInError::SignInRequired(server.to_owned()),
            Step::Internal(e) => SignInError::Internal(e),
        }
    }

    /// An rmcp manager for the server at `url`, its requests through the policy (with `url`'s
    /// host allowed).
    async fn manager(&self, url: &str) -> Result<AuthorizationManager, SignInError> {
        let http = PolicyHttp::new(&self.policy_for(url), self.inner.timeout)
            .map_err(SignInError::Internal)?;
        AuthorizationManager::new_with_oauth_http_client(url, Arc::new(http))
            .await
            .map_err(|e| SignInError::Internal(describe(&e, None)))
    }

    /// Runs `f` within the timeout.
    async fn timed<T>(
        &self,
        server: &str,
        f: impl Future<Output = Result<T, SignInError>>,
    ) -> Result<T, SignInError> {
        tokio::time::timeout(self.inner.timeout, f)
            .await
            .map_err(|_| SignInError::Upstream {
                server: server.to_owned(),
                reason: format!("no answer within {:?}", self.inner.timeout),
            })?
    }
}
