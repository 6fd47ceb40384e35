//! The hub's icons (MCP 2026-07-28 `icons` on servers, tools and prompts): which of an item's
//! icons to serve, loading it, and a small cache. What an icon may be, and why the browser
//! never loads one from the server's host, is [`crate::host::IconImage`]'s to say.
//!
//! Decisions:
//! - **Which icon**: the first whose type is an icon type (its `mimeType`, else a `data:`
//!   URL's own type, else the URL path's extension), preferring one not marked for a `dark`
//!   theme (the UI draws icons on its light or dark background alike, small). Only when it
//!   fails to load is the next tried.
//! - **Where from**: a `data:` URL is decoded in place (its encoded size is checked before
//!   decoding). An `http(s):` URL is fetched by the service under the hub's icon policy
//!   ([`McpHub::with_icon_policy`], default [`OutboundPolicy::new`]: https to public addresses
//!   only, redirects on the same origin, checked at connect time), to which the host of an
//!   HTTP server's own configured URL is added (the operator chose that host, loopback or
//!   not). Nothing else (no `file:`, no other scheme). The response's `Content-Type` decides
//!   the type (a declared `mimeType` is not trusted over it), 10 s at most, and the body is
//!   read up to the cap and no further.
//! - **Cache**: per hub, by source URL: an icon an hour, a failure five minutes, at most
//!   [`MAX_CACHED`] sources. Listings carry no icon bytes; the route asks here.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine;
use rmcp::model::{Icon, IconTheme};

use super::hub::McpHub;
use super::listing::Wait;
use super::outbound::OutboundPolicy;
use crate::access::Scope;
use crate::host::{HostError, IconImage, IconOf, IconRefused, MAX_ICON_BYTES, icon_type};
use crate::secrets::redact_urls;

/// Most icon sources the hub keeps.
pub(crate) const MAX_CACHED: usize = 256;
/// How long a loaded icon is kept.
const KEEP_LOADED: Duration = Duration::from_secs(3600);
/// How long a failure is kept (not tried again before).
const KEEP_FAILED: Duration = Duration::from_secs(300);
/// How long fetching one icon may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// A loaded icon or why not, and when.
type Loaded = (Instant, Result<IconImage, IconRefused>);

/// Loaded icons and failures by source URL.
#[derive(Default)]
pub(crate) struct IconCache {
    entries: Mutex<HashMap<String, Loaded>>,
}

impl IconCache {
    fn get(&self, src: &str) -> Option<Result<IconImage, IconRefused>> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let (at, r) = entries.get(src)?;
        let keep = if r.is_ok() { KEEP_LOADED } else { KEEP_FAILED };
        (at.elapsed() < keep).then(|| r.clone())
    }

    fn put(&self, src: &str, r: Result<IconImage, IconRefused>) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if !entries.contains_key(src) && entries.len() >= MAX_CACHED {
            let oldest = entries
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                entries.remove(&k);
            }
        }
        entries.insert(src.to_owned(), (Instant::now(), r));
    }
}

/// The type an icon says it has: its `mimeType`, a `data:` URL's type, or the extension.
fn declared_type(icon: &Icon) -> Option<&'static str> {
    if let Some(t) = icon.mime_type.as_deref().and_then(icon_type) {
        return Some(t);
    }
    if let Some(rest) = icon.src.strip_prefix("data:") {
        let meta = rest.split(',').next().unwrap_or_default();
        return icon_type(meta);
    }
    let path = icon.src.split(['?', '#']).next().unwrap_or_default();
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    match ext.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        "avif" => Some("image/avif"),
        "svg" => Some("image/svg+xml"),
        _ => None,
    }
}

/// True when `icons` holds one worth trying.
pub(crate) fn has_icon(icons: Option<&[Icon]>) -> bool {
    icons.is_some_and(|i| !candidates(i).is_empty())
}

/// The icons worth trying, in order (see the module docs).
pub(crate) fn candidates(icons: &[Icon]) -> Vec<&Icon> {
    let mut out: Vec<&Icon> = icons
        .iter()
        .filter(|i| declared_type(i).is_some())
        .collect();
    out.sort_by_key(|i| i.theme == Some(IconTheme::Dark));
    out
}

/// Decodes a `data:` URL's icon.
fn decode_data_url(rest: &str) -> Result<IconImage, IconRefused> {
    let (meta, data) = rest
        .split_once(',')
        .ok_or_else(|| IconRefused::NotImage("a data: URL without data".into()))?;
    let (mime, base64) = match meta.strip_suffix(";base64") {
        Some(m) => (m, true),
        None => (meta, false),
    };
    let bytes = if base64 {
        // Base64 grows by 4/3: refuse what cannot fit before decoding it.
        if data.len() > MAX_ICON_BYTES.div_ceil(3) * 4 + 4 {
            return Err(IconRefused::TooLarge);
        }
        let clean: String = data.chars().filter(|c| !c.is_whitespace()).collect();
        base64::engine::general_purpose::STANDARD
            .decode(clean.as_bytes())
            .map_err(|_| IconRefused::Mismatch("base64"))?
    } else {
        if data.len() > MAX_ICON_BYTES * 3 {
            return Err(IconRefused::TooLarge);
        }
        percent_encoding::percent_decode_str(data).collect()
    };
    IconImage::new(mime, bytes)
}

/// Fetches an icon over http(s) under `policy`.
async fn fetch(src: &str, policy: &OutboundPolicy) -> Result<IconImage, IconRefused> {
    let unreachable = |e: String| IconRefused::Unreachable(redact_urls(&e));
    let url = policy
        .check_url(src)
        .map_err(|e| unreachable(e.to_string()))?;
    let client = policy
        .client_builder()
        .timeout(FETCH_TIMEOUT)
        .build()
        .map_err(|e| unreachable(e.to_string()))?;
    let mut res = client
        .get(url)
        .header(http::header::ACCEPT, ICON_ACCEPT)
        .send()
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    if !res.status().is_success() {
        return Err(unreachable(format!("answered {}", res.status())));
    }
    let mime = res
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if icon_type(&mime).is_none() {
        return Err(IconRefused::NotImage(mime));
    }
    if res
        .content_length()
        .is_some_and(|n| n > MAX_ICON_BYTES as u64)
    {
        return Err(IconRefused::TooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = res.chunk().await.map_err(|e| unreachable(e.to_string()))? {
        if body.len() + chunk.len() > MAX_ICON_BYTES {
            return Err(IconRefused::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    IconImage::new(&mime, body)
}

/// What the icon fetch accepts.
const ICON_ACCEPT: &str = "image/png,image/jpeg,image/gif,image/webp,image/avif,image/svg+xml";

/// Loads one icon (a `data:` URL, or an http(s) URL under `policy`).
pub(crate) async fn load(icon: &Icon, policy: &OutboundPolicy) -> Result<IconImage, IconRefused> {
    if let Some(rest) = icon.src.strip_prefix("data:") {
        return decode_data_url(rest);
    }
    match icon
        .src
        .split_once(':')
        .map(|(s, _)| s.to_ascii_lowercase())
    {
        Some(s) if s == "https" || s == "http" => fetch(&icon.src, policy).await,
        _ => Err(IconRefused::Unreachable(
            "only data: and http(s) icons are loaded".into(),
        )),
    }
}

impl McpHub {
    /// The icon of a server, tool or prompt in `scope` (see [`crate::host::Host::icon`]), or
    /// `None` when it has none, none of its icons loads, or `scope` does not reach it.
    pub async fn icon(
        &self,
        scope: &Scope,
        of: IconOf,
        name: &str,
    ) -> Result<Option<IconImage>, HostError> {
        let who = scope.principal();
        // The item's own icons (none for a server: its icons come next).
        let found = match of {
            IconOf::Server => self
                .servers_in(scope)
                .find(|s| s.name() == name)
                .map(|s| (s, Vec::new())),
            IconOf::Tool => match self.resolve_tool(scope, name).await {
                Some((s, original)) => {
                    let tools = s.tools(&who, Wait::ForCall).await;
                    tools
                        .as_ref()
                        .and_then(|ts| ts.iter().find(|t| t.name == original))
                        .map(|t| (s, t.icons.clone().unwrap_or_default()))
                }
                None => None,
            },
            IconOf::Prompt => self.prompt_icons(scope, name).await,
        };
        let Some((server, mut icons)) = found else {
            return Ok(None);
        };
        // A tool or prompt without an icon of its own shows its server's.
        icons.extend(server.server_icons().unwrap_or_default());
        let policy = self.icon_policy_for(server);
        for icon in candidates(&icons) {
            // By server too: the policy differs per server.
            let key = format!("{}\n{}", server.name(), icon.src);
            let r = match self.inner.icons.get(&key) {
                Some(r) => r,
                None => {
                    let r = load(icon, &policy).await;
                    if let Err(e) = &r {
                        tracing::debug!(server = %server.name(), "an icon was refused: {e}");
                    }
                    self.inner.icons.put(&key, r.clone());
                    r
                }
            };
            if let Ok(image) = r {
                return Ok(Some(image));
            }
        }
        Ok(None)
    }
}
