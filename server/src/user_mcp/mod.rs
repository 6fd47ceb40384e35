//! Each user's own MCP servers: a registry per principal ([`UserMcpStore`]), credentials
//! sealed at rest and never shown, the operator's [`OutboundPolicy`] on every URL, and tool
//! definitions that are a snapshot the user reviewed and accepted, never a live view.
//!
//! Switched on with [`ConfigBuilder::user_mcp`](crate::ConfigBuilder::user_mcp) and a
//! [`UserMcp`]; off (the default), its routes are absent (404). The routes:
//! `GET/POST {prefix}/api/mcp/servers`, `GET/PATCH/DELETE {prefix}/api/mcp/servers/{slug}`,
//! `POST {prefix}/api/mcp/servers/{slug}/refresh`, `.../{slug}/accept` and `.../{slug}/oauth`,
//! and `GET {prefix}/api/mcp/oauth/callback` (OAuth sign-in: see `user_mcp::oauth`).
//!
//! Decisions:
//! - **A signed-in principal only.** The anonymous user gets 401 on these routes even when the
//!   service does not require a principal: a registry shared by every anonymous visitor would
//!   let each of them add outbound URLs and use the others' credentials. Another principal's
//!   server is a 404, never a 403 (its existence is not revealed).
//! - **Slugs** match `^[a-z0-9][a-z0-9_-]{0,31}$`, are unique per principal, cannot change
//!   (they are the tool namespace and part of the sealing's associated data), and are the
//!   server's id in its routes.
//! - **Credentials** are the headers a create or patch carries (`{name: value}`), sealed as one
//!   JSON object by the [`Keyring`] with associated data `"{principal id}/{slug}"` (a slug has
//!   no `/`, so the split is unambiguous): a sealed value copied to another user's row or
//!   another server does not open. Stores only ever hold the sealed string. Answers say
//!   `"credentials": "set" | "not set"`; `Debug` of every type holding them redacts. Headers
//!   that the transport owns (`Accept`, `Mcp-Session-Id`, `Host`, …) are refused with a 400.
//! - **URLs** pass [`OutboundPolicy::check_url`] on create and on every change (400 naming the
//!   reason), and every connection goes through the policy's client (resolved addresses and
//!   redirects are checked at connect time).
//! - **Snapshots.** A refresh connects, lists tools, disconnects, keeps the listing as the
//!   server's *pending review* and answers a diff against the accepted tools ([`snapshot`]).
//!   Nothing is accepted until an accept names each tool with the hash the user reviewed; a
//!   hash that no longer matches the pending listing (a refresh came between) is a 409.
//!   The hash is `sha256:` + hex of the canonical JSON (keys sorted, no spaces) of
//!   `{name, description, inputSchema}`.
//! - **Tools reach the model from the store only** (`UserToolsHost`, wrapped around
//!   the service's host when the feature is on): assembling a turn performs no network I/O.
//!   Each call connects, re-lists, compares the accepted hash, calls only on a match (else the
//!   tool is marked stale and the model is told to have the user review it), and disconnects.
//! - **`ttlMs`, `cacheScope` and icons** (MCP 2026-07-28) do not apply here: a user's server
//!   is theirs alone (no listing is shared across principals, so `private` holds by
//!   construction), its tools are the snapshot the user accepted (refreshed when they ask, not
//!   when a `ttlMs` passes), and each call's connection is its own (rmcp's response cache
//!   lives and dies with it). The snapshot keeps no icons: a user's tools show none.
//! - **Approval** of a user's tool is its stored value (`always` → allow, `ask`, `never` →
//!   deny) in place of the operator's policy, except that the operator's `deny` wins; the
//!   user's "always allow" list still turns an `ask` into an allow, as for any tool.
//! - **Writes are checked-and-set** on the record's revision: a write that raced with another
//!   is a 409, never a silent loss.
//! - **Presets** ([`UserMcpPreset`], [`UserMcp::with_presets`]): the operator's servers are
//!   seeded into each user's registry, disabled and without tools, the first time the user
//!   uses these routes; the user reviews and accepts them like their own. A preset cannot be
//!   deleted (409: disable it) and its URL cannot change.
//! - **OAuth** tokens are credentials too: sealed, never shown, sent only to the URL they were
//!   issued for (a new URL drops them), refreshed before they expire (`user_mcp::oauth`).
//! - **Limits**: [`MAX_SERVERS`] per principal, [`MAX_HEADERS`] headers of at most
//!   [`MAX_HEADER_BYTES`] each, [`MAX_TOOLS`] tools per listing.

pub(crate) mod oauth;
mod presets;
pub mod snapshot;
mod tools;
mod upstream;

#[cfg(any(test, feature = "test-support"))]
pub use crate::store::conformance::user_mcp as conformance;

pub use crate::store::{MemoryUserMcpStore, UserMcpRecord, UserMcpStore, UserMcpStoreError};
pub use oauth::SIGN_IN_TTL;
pub use presets::{PresetError, UserMcpPreset};
pub(crate) use tools::UserToolsHost;
pub use tools::{UNTRUSTED_TOOL_RULES, USER_TOOL_SEPARATOR, exposed_name};
pub use upstream::DEFAULT_UPSTREAM_TIMEOUT;
pub(crate) use upstream::UpstreamError;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error::Failure;
use crate::host::Principal;
use crate::mcp::OutboundPolicy;
use crate::secrets::sealing::Keyring;

/// Most servers one principal may register.
pub const MAX_SERVERS: usize = 50;
/// Most headers one server may carry.
pub const MAX_HEADERS: usize = 16;
/// Longest header name plus value, in bytes.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;
/// Most tools a refresh takes from one server.
pub const MAX_TOOLS: usize = 256;
/// Longest display name, in characters.
pub const MAX_NAME_CHARS: usize = 100;
/// Longest URL, in bytes.
pub const MAX_URL_BYTES: usize = 2048;

/// Headers the transport sets itself; a user may not.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "connection",
    "content-length",
    "content-type",
    "host",
    "last-event-id",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
    "mcp-session-id",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The user MCP feature's parts: the registry, the key that seals credentials, and the
/// operator's outbound policy. `Debug` shows key ids only.
///
/// ```
/// use lmchatkit::mcp::OutboundPolicy;
/// use lmchatkit::secrets::sealing::{Keyring, SealingKey};
/// use lmchatkit::user_mcp::{MemoryUserMcpStore, UserMcp};
///
/// let keyring = Keyring::new(SealingKey::generate("k1").unwrap());
/// let user_mcp = UserMcp::new(MemoryUserMcpStore::default(), keyring, OutboundPolicy::new())
///     .with_upstream_timeout(std::time::Duration::from_secs(10));
/// assert!(format!("{user_mcp:?}").contains("k1"));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct UserMcp {
    pub(crate) store: Arc<dyn UserMcpStore>,
    pub(crate) keyring: Keyring,
    pub(crate) policy: OutboundPolicy,
    pub(crate) upstream_timeout: Duration,
    pub(crate) presets: Arc<presets::Presets>,
    /// Serialise token refreshes per server (hashed into these).
    oauth_locks: Arc<[tokio::sync::Mutex<()>]>,
}

impl fmt::Debug for UserMcp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserMcp")
            .field("keyring", &self.keyring)
            .field("policy", &self.policy.to_string())
            .field("upstream_timeout", &self.upstream_timeout)
            .finish_non_exhaustive()
    }
}

impl UserMcp {
    /// The feature with this store, keyring and policy.
    pub fn new(store: impl UserMcpStore, keyring: Keyring, policy: OutboundPolicy) -> Self {
        Self::new_arc(Arc::new(store), keyring, policy)
    }

    /// Like [`UserMcp::new`], for a store already in an `Arc` (e.g. the history's
    /// [`SqliteStore`](crate::store::SqliteStore), shared).
    pub fn new_arc(store: Arc<dyn UserMcpStore>, keyring: Keyring, policy: OutboundPolicy) -> Self {
        Self {
            store,
            keyring,
            policy,
            upstream_timeout: DEFAULT_UPSTREAM_TIMEOUT,
            presets: Arc::default(),
            oauth_locks: (0..16).map(|_| tokio::sync::Mutex::new(())).collect(),
        }
    }

    /// How long one connect-list-disconnect with a user's server may take (default
    /// [`DEFAULT_UPSTREAM_TIMEOUT`]).
    pub fn with_upstream_timeout(mut self, t: Duration) -> Self {
        self.upstream_timeout = t;
        self
    }

    /// The associated data binding `principal`'s credentials of `slug`.
    fn aad(principal: &Principal, slug: &str) -> Vec<u8> {
        format!("{}/{slug}", principal.id()).into_bytes()
    }

    /// Seals `headers` for `principal`'s server `slug` (`None` for no headers).
    pub(crate) fn seal_headers(
        &self,
        principal: &Principal,
        slug: &str,
        headers: &BTreeMap<String, String>,
    ) -> Result<Option<String>, Failure> {
        if headers.is_empty() {
            return Ok(None);
        }
        let json = serde_json::to_vec(headers)
            .map_err(|e| Failure::Internal(format!("encoding headers: {e}")))?;
        Ok(Some(self.keyring.seal(&json, &Self::aad(principal, slug))))
    }

    /// Opens the sealed headers of `record`.
    pub(crate) fn open_headers(
        &self,
        principal: &Principal,
        record: &UserMcpRecord,
    ) -> Result<BTreeMap<String, String>, Failure> {
        let Some(sealed) = &record.credentials else {
            return Ok(BTreeMap::new());
        };
        let plain = self
            .keyring
            .open(sealed, &Self::aad(principal, &record.slug))
            .map_err(|e| {
                tracing::warn!(slug = %record.slug, error = %e, "a user's MCP credentials do not open");
                Failure::Internal(format!(
                    "the stored credentials of {:?} cannot be opened ({e}); set them again",
                    record.slug
                ))
            })?;
        serde_json::from_slice(&plain).map_err(|e| {
            tracing::warn!(slug = %record.slug, error = %e, "a user's MCP credentials are not a header map");
            Failure::Internal(format!(
                "the stored credentials of {:?} are unreadable; set them again",
                record.slug
            ))
        })
    }
}

/// Now, in ms since the epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Checks a slug: `^[a-z0-9][a-z0-9_-]{0,31}$`.
pub fn check_slug(slug: &str) -> Result<(), Failure> {
    let b = slug.as_bytes();
    let ok = (1..=32).contains(&b.len())
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-');
    match ok {
        true => Ok(()),
        false => Err(Failure::Invalid(format!(
            "invalid slug {slug:?}: use 1 to 32 of a-z, 0-9, '_' or '-', starting with a letter or digit"
        ))),
    }
}

/// Checks a display name (trimmed; not blank; at most [`MAX_NAME_CHARS`]).
pub(crate) fn check_name(name: &str) -> Result<String, Failure> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Failure::Invalid("name must not be blank".into()));
    }
    if name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(Failure::Invalid(format!(
            "name must be at most {MAX_NAME_CHARS} characters, without control characters"
        )));
    }
    Ok(name.to_owned())
}

/// Checks a URL against the length cap and the outbound policy; the normalised URL.
pub(crate) fn check_url(policy: &OutboundPolicy, url: &str) -> Result<String, Failure> {
    let url = url.trim();
    if url.len() > MAX_URL_BYTES {
        return Err(Failure::Invalid(format!(
            "url must be at most {MAX_URL_BYTES} bytes"
        )));
    }
    policy
        .check_url(url)
        .map(|u| u.to_string())
        .map_err(|e| Failure::Invalid(format!("url refused: {e}")))
}

/// Checks headers: valid names and values, not reserved, within the caps. The messages name
/// the header, never its value.
pub(crate) fn check_headers(headers: &BTreeMap<String, String>) -> Result<(), Failure> {
    if headers.len() > MAX_HEADERS {
        return Err(Failure::Invalid(format!("at most {MAX_HEADERS} headers")));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (name, value) in headers {
        let parsed = http::HeaderName::try_from(name.as_str())
            .map_err(|_| Failure::Invalid(format!("{name:?} is not a header name")))?;
        if RESERVED_HEADERS.contains(&parsed.as_str()) || parsed.as_str().starts_with("mcp-param-")
        {
            return Err(Failure::Invalid(format!(
                "the header {name:?} is set by the transport and cannot be given"
            )));
        }
        if !seen.insert(parsed.as_str().to_owned()) {
            return Err(Failure::Invalid(format!(
                "the header {name:?} is given twice"
            )));
        }
        if http::HeaderValue::try_from(value.as_str()).is_err() || value.trim().is_empty() {
            return Err(Failure::Invalid(format!(
                "the value of the header {name:?} is empty or has characters a header cannot carry"
            )));
        }
        if name.len() + value.len() > MAX_HEADER_BYTES {
            return Err(Failure::Invalid(format!(
                "the header {name:?} is longer than {MAX_HEADER_BYTES} bytes"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
