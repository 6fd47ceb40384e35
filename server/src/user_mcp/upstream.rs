//! One connect-list-disconnect with a user's server: Streamable HTTP through the operator's
//! [`OutboundPolicy`] client (resolved addresses and every redirect checked), the user's
//! headers opened for this connection only, and a cap on time and on the listing's size. No
//! connection outlives the request that opened it.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use lmchatkit_protocol::ReviewedTool;
use rmcp::model::{CallToolRequestParams, PaginatedRequestParams, ProtocolVersion};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};

use super::{MAX_TOOLS, snapshot};
use crate::mcp::OutboundPolicy;
use crate::mcp::http_client::SessionAwareClient;
use crate::secrets::redact_urls;

/// Default limit of one connect-list-disconnect (15 s).
pub const DEFAULT_UPSTREAM_TIMEOUT: Duration = Duration::from_secs(15);

/// Most pages a listing may take.
const MAX_PAGES: usize = 32;

/// Lists `url`'s tools with `headers`, hashed for review. The error is fit for the user (URLs
/// in it lose their query and user info; header values are never in it).
pub(crate) async fn list_tools(
    policy: &OutboundPolicy,
    url: &str,
    headers: &BTreeMap<String, String>,
    timeout: Duration,
) -> Result<Vec<ReviewedTool>, String> {
    tokio::time::timeout(timeout, list(policy, url, headers, timeout))
        .await
        .map_err(|_| format!("no answer within {timeout:?}"))?
        .map_err(|e| redact_urls(&e))
}

async fn list(
    policy: &OutboundPolicy,
    url: &str,
    headers: &BTreeMap<String, String>,
    timeout: Duration,
) -> Result<Vec<ReviewedTool>, String> {
    let svc = connect(policy, url, headers, timeout).await?;
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

/// Connects, re-lists until `tool` is found, compares its hash with `accepted_hash`, calls it
/// only on a match, and disconnects, within `timeout`.
pub(crate) async fn call_tool(
    policy: &OutboundPolicy,
    url: &str,
    headers: &BTreeMap<String, String>,
    timeout: Duration,
    tool: &str,
    accepted_hash: &str,
    arguments: serde_json::Map<String, serde_json::Value>,
) -> Result<CallOutcome, String> {
    let run = async {
        let svc = connect(policy, url, headers, timeout).await?;
        let outcome = async {
            let found = list_pages(svc.peer(), Some(tool)).await?;
            match found.iter().find(|t| t.name == tool) {
                Some(t) if t.hash == accepted_hash => {}
                _ => return Ok(CallOutcome::Stale),
            }
            let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
            let result = svc
                .peer()
                .call_tool(params)
                .await
                .map_err(|e| format!("calling {tool} failed: {}", chain(&e)))?;
            Ok(CallOutcome::Ran(Box::new(result)))
        }
        .await;
        close(svc).await;
        outcome
    };
    tokio::time::timeout(timeout, run)
        .await
        .map_err(|_| format!("no answer within {timeout:?}"))?
        .map_err(|e: String| redact_urls(&e))
}

type Connection = rmcp::service::RunningService<rmcp::RoleClient, ()>;

async fn connect(
    policy: &OutboundPolicy,
    url: &str,
    headers: &BTreeMap<String, String>,
    timeout: Duration,
) -> Result<Connection, String> {
    precheck(policy, url).await?;
    let client = policy
        .client_builder()
        .connect_timeout(timeout)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let mut hs = HashMap::new();
    for (k, v) in headers {
        // Checked on the way in; a stored header that no longer parses names only its name.
        let name = http::HeaderName::try_from(k.as_str())
            .map_err(|_| format!("the stored header {k:?} is not a header name"))?;
        let value = http::HeaderValue::try_from(v.as_str())
            .map_err(|_| format!("the stored header {k:?} has an invalid value"))?;
        hs.insert(name, value);
    }
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(hs);
    let transport =
        StreamableHttpClientTransport::with_client(SessionAwareClient::new(client), config);
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    ().serve_with_lifecycle(transport, lifecycle)
        .await
        .map_err(|e| format!("connecting failed: {}", chain(&e)))
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
) -> Result<Vec<ReviewedTool>, String> {
    let mut out = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let page = peer
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await
            .map_err(|e| format!("listing tools failed: {}", chain(&e)))?;
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
            return Err(format!("the server lists more than {MAX_TOOLS} tools"));
        }
        cursor = page.next_cursor;
        let found = until.is_some_and(|name| out.iter().any(|t| t.name == name));
        if cursor.is_none() || found {
            return dedup(out);
        }
    }
    Err(format!("the tool list has more than {MAX_PAGES} pages"))
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
