//! One connect-list-disconnect with a user's server: Streamable HTTP through the operator's
//! [`OutboundPolicy`] client (resolved addresses and every redirect checked), the user's
//! headers opened for this connection only, the OAuth bearer through rmcp's `AuthClient` when
//! the user signed in, and a cap on time and on the listing's size. No connection outlives the
//! request that opened it. A `401` with a `Bearer` challenge is
//! [`UpstreamError::SignInRequired`], not a failure like any other.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::time::Duration;

use lmchatkit_protocol::ReviewedTool;
use rmcp::model::{CallToolRequestParams, PaginatedRequestParams, ProtocolVersion};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::{AuthClient, AuthorizationManager};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};

use super::{MAX_TOOLS, UserMcp, UserMcpRecord, snapshot};
use crate::host::Principal;
use crate::mcp::OutboundPolicy;
use crate::mcp::http_client::SessionAwareClient;
use crate::secrets::redact_urls;

/// Default limit of one connect-list-disconnect (15 s).
pub const DEFAULT_UPSTREAM_TIMEOUT: Duration = Duration::from_secs(15);

/// Most pages a listing may take.
const MAX_PAGES: usize = 32;

/// Why a connection to a user's server did not get its answer.
#[derive(Debug)]
pub(crate) enum UpstreamError {
    /// The server answered 401 with a `Bearer` challenge (or the stored tokens cannot be
    /// used): the user must sign in.
    SignInRequired,
    /// Anything else, fit for the user (URLs in it lose their query and user info; header
    /// values and tokens are never in it).
    Failed(String),
}

impl UpstreamError {
    fn redacted(self) -> Self {
        match self {
            Self::Failed(e) => Self::Failed(redact_urls(&e)),
            other => other,
        }
    }
}

/// Whether a `WWW-Authenticate` challenge asks for a bearer token (OAuth).
fn is_bearer(challenge: &str) -> bool {
    challenge
        .trim_start()
        .get(..6)
        .is_some_and(|s| s.eq_ignore_ascii_case("bearer"))
}

/// What the server's refusal means: a sign-in, or a failure to report.
fn refused(authorization_required: bool, challenge: Option<&str>, failed: String) -> UpstreamError {
    match authorization_required && challenge.is_none_or(is_bearer) {
        true => UpstreamError::SignInRequired,
        false => UpstreamError::Failed(failed),
    }
}

/// Lists `url`'s tools with `headers` (and `auth`'s bearer), hashed for review.
async fn list_tools(
    policy: &OutboundPolicy,
    url: &str,
    headers: &BTreeMap<String, String>,
    auth: Option<AuthorizationManager>,
    timeout: Duration,
) -> Result<Vec<ReviewedTool>, UpstreamError> {
    tokio::time::timeout(timeout, list(policy, url, headers, auth, timeout))
        .await
        .map_err(|_| UpstreamError::Failed(format!("no answer within {timeout:?}")))?
        .map_err(UpstreamError::redacted)
}

async fn list(
    policy: &OutboundPolicy,
    url: &str,
    headers: &BTreeMap<String, String>,
    auth: Option<AuthorizationManager>,
    timeout: Duration,
) -> Result<Vec<ReviewedTool>, UpstreamError> {
    let svc = connect(policy, url, headers, auth, timeout).await?;
    let listed = list_pages(svc.peer(), None).await;
    close(svc).await;
    listed
}

/// What a call found upstream.
#[derive(Debug)]
pub(crate) enum CallOutcome {
    /// The definition matched the accepted hash and the tool ran.
    Ran(Box<rmcp::model::CallToolResult>),
    /// The definition upstream is not the accepted one (or the tool is gone): not run.
    Stale,
}

/// One tool call: the tool's name, the hash the user accepted, the arguments.
pub(crate) struct Call<'a> {
    pub(crate) tool: &'a str,
    pub(crate) accepted_hash: &'a str,
    pub(crate) arguments: serde_json::Map<String, serde_json::Value>,
}

/// Connects, re-lists until the tool is found, compares its hash with the accepted one, calls
/// it only on a match, and disconnects, within `timeout`.
async fn call_tool(
    policy: &OutboundPolicy,
    url: &str,
    headers: &BTreeMap<String, String>,
    auth: Option<AuthorizationManager>,
    timeout: Duration,
    call: Call<'_>,
) -> Result<CallOutcome, UpstreamError> {
    let Call {
        tool,
        accepted_hash,
        arguments,
    } = call;
    let run = async {
        let svc = connect(policy, url, headers, auth, timeout).await?;
        let outcome = async {
            let found = list_pages(svc.peer(), Some(tool)).await?;
            match found.iter().find(|t| t.name == tool) {
                Some(t) if t.hash == accepted_hash => {}
                _ => return Ok(CallOutcome::Stale),
            }
            let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
            let result = svc.peer().call_tool(params).await.map_err(|e| {
                refused(
                    e.is_authorization_required(),
                    e.auth_challenge(),
                    format!("calling {tool} failed: {}", chain(&e)),
                )
            })?;
            Ok(CallOutcome::Ran(Box::new(result)))
        }
        .await;
        close(svc).await;
        outcome
    };
    tokio::time::timeout(timeout, run)
        .await
        .map_err(|_| UpstreamError::Failed(format!("no answer within {timeout:?}")))?
        .map_err(UpstreamError::redacted)
}

type Connection = rmcp::service::RunningService<rmcp::RoleClient, ()>;

/// Connects with `headers`, and with `auth`'s bearer token when given (which then replaces an
/// `Authorization` header of the user's).
async fn connect(
    policy: &OutboundPolicy,
    url: &str,
    headers: &BTreeMap<String, String>,
    auth: Option<AuthorizationManager>,
    timeout: Duration,
) -> Result<Connection, UpstreamError> {
    precheck(policy, url).await.map_err(UpstreamError::Failed)?;
    let client = policy
        .client_builder()
        .connect_timeout(timeout)
        .build()
        .map_err(|e| UpstreamError::Failed(format!("cannot build the HTTP client: {e}")))?;
    let mut hs = HashMap::new();
    for (k, v) in headers {
        if auth.is_some() && k.eq_ignore_ascii_case("authorization") {
            continue;
        }
        // Checked on the way in; a stored header that no longer parses names only its name.
        let name = http::HeaderName::try_from(k.as_str()).map_err(|_| {
            UpstreamError::Failed(format!("the stored header {k:?} is not a header name"))
        })?;
        let value = http::HeaderValue::try_from(v.as_str()).map_err(|_| {
            UpstreamError::Failed(format!("the stored header {k:?} has an invalid value"))
        })?;
        hs.insert(name, value);
    }
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(hs);
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    let client = SessionAwareClient::new(client);
    let connected = match auth {
        Some(manager) => {
            let transport = StreamableHttpClientTransport::with_client(
                AuthClient::new(client, manager),
                config,
            );
            ().serve_with_lifecycle(transport, lifecycle).await
        }
        None => {
            let transport = StreamableHttpClientTransport::with_client(client, config);
            ().serve_with_lifecycle(transport, lifecycle).await
        }
    };
    connected.map_err(|e| {
        refused(
            e.is_authorization_required(),
            e.auth_challenge(),
            format!("connecting failed: {}", chain(&e)),
        )
    })
}

async fn close(svc: Connection) {
    if let Err(e) = svc.cancel().await {
        tracing::debug!(error = %e, "closing a user's MCP connection failed");
    }
}

/// Resolves the URL's host and applies the policy once before connecting, for an error that
/// names the refused address (rmcp's connect error drops the reason). The connection itself is
/// checked again by the policy's resolver: this is for the message, not the protection.
async fn precheck(policy: &OutboundPolicy, url: &str) -> Result<(), String> {
    let parsed = policy.check_url(url).map_err(|e| e.to_string())?;
    let Some(host) = parsed.host_str() else {
        return Ok(());
    };
    let bare = host.trim_matches(['[', ']']);
    if policy.is_allowed(bare) || bare.parse::<std::net::IpAddr>().is_ok() {
        return Ok(());
    }
    let port = parsed.port_or_known_default().unwrap_or(443);
    let addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host((bare, port))
        .await
        .map_err(|e| format!("{bare} did not resolve: {e}"))?
        .collect();
    policy
        .filter(bare, addrs)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Lists every page, or (with `until`) stops at the page naming that tool.
async fn list_pages(
    peer: &rmcp::Peer<rmcp::RoleClient>,
    until: Option<&str>,
) -> Result<Vec<ReviewedTool>, UpstreamError> {
    let mut out = Vec::new();
    let mut cursor = None;
    let failed = UpstreamError::Failed;
    for _ in 0..MAX_PAGES {
        let page = peer
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await
            .map_err(|e| {
                refused(
                    e.is_authorization_required(),
                    e.auth_challenge(),
                    format!("listing tools failed: {}", chain(&e)),
                )
            })?;
        for t in page.tools {
            let annotations = t.annotations.as_ref();
            out.push(snapshot::reviewed(
                &t.name,
                t.description.as_deref().unwrap_or(""),
                serde_json::Value::Object((*t.input_schema).clone()),
                annotations.and_then(|a| a.read_only_hint),
                annotations.and_then(|a| a.destructive_hint),
            ));
        }
        if out.len() > MAX_TOOLS {
            return Err(failed(format!(
                "the server lists more than {MAX_TOOLS} tools"
            )));
        }
        cursor = page.next_cursor;
        let found = until.is_some_and(|name| out.iter().any(|t| t.name == name));
        if cursor.is_none() || found {
            return dedup(out).map_err(failed);
        }
    }
    Err(failed(format!(
        "the tool list has more than {MAX_PAGES} pages"
    )))
}

/// An error with its sources (reqwest's own message omits why a connection failed, e.g. the
/// policy's refusal of an address).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !out.contains(&s_text) {
            out.push_str(": ");
            out.push_str(&s_text);
        }
        source = s.source();
    }
    out
}

/// Refuses a listing that names a tool twice (which definition would the user accept?).
fn dedup(tools: Vec<ReviewedTool>) -> Result<Vec<ReviewedTool>, String> {
    let mut names = std::collections::BTreeSet::new();
    for t in &tools {
        if !names.insert(t.name.as_str()) {
            return Err(format!("the server lists the tool {:?} twice", t.name));
        }
    }
    Ok(tools)
}

impl UserMcp {
    /// The user's headers and, when they signed in, the bearer for one connection to
    /// `record`'s server; then `op`; then the token rmcp refreshed meanwhile is stored, and a
    /// server that asked for a sign-in is marked so.
    async fn with_connection<T, F, Fut>(
        &self,
        principal: &Principal,
        record: &UserMcpRecord,
        op: F,
    ) -> Result<T, UpstreamError>
    where
        F: FnOnce(BTreeMap<String, String>, Option<AuthorizationManager>) -> Fut,
        Fut: Future<Output = Result<T, UpstreamError>>,
    {
        let headers = self
            .open_headers(principal, record)
            .map_err(|e| UpstreamError::Failed(e.to_string()))?;
        let bearer = match self.bearer(principal, record).await {
            Ok(b) => b,
            Err(super::oauth::OAuthError::SignInRequired(_)) => {
                return Err(UpstreamError::SignInRequired);
            }
            Err(e) => return Err(UpstreamError::Failed(e.to_string())),
        };
        let (manager, kept) = match bearer {
            Some(b) => (Some(b.manager), Some(b.kept)),
            None => (None, None),
        };
        let out = op(headers, manager).await;
        if let Some(kept) = kept {
            self.keep(principal, &record.slug, kept).await;
        }
        if matches!(out, Err(UpstreamError::SignInRequired)) {
            self.mark_sign_in_required(principal, &record.slug).await;
        }
        out
    }

    /// Connects to `record`'s server, lists its tools (hashed for review) and disconnects,
    /// within the configured timeout.
    pub(crate) async fn list_upstream(
        &self,
        principal: &Principal,
        record: &UserMcpRecord,
    ) -> Result<Vec<ReviewedTool>, UpstreamError> {
        self.with_connection(principal, record, |headers, auth| async move {
            list_tools(
                &self.policy,
                &record.url,
                &headers,
                auth,
                self.upstream_timeout,
            )
            .await
        })
        .await
    }

    /// One call of an accepted tool on `record`'s server ([`call_tool`]).
    pub(crate) async fn call_upstream(
        &self,
        principal: &Principal,
        record: &UserMcpRecord,
        call: Call<'_>,
    ) -> Result<CallOutcome, UpstreamError> {
        self.with_connection(principal, record, |headers, auth| async move {
            call_tool(
                &self.policy,
                &record.url,
                &headers,
                auth,
                self.upstream_timeout,
                call,
            )
            .await
        })
        .await
    }
}
