//! The chat page's own `Content-Security-Policy` and framing rules (the page at `{prefix}`; the
//! views' policies are `apps::csp`'s).
//!
//! Decisions:
//! - **What the page needs, nothing more.** `default-src 'self'` covers the loader, the
//!   content-hashed JS/CSS/wasm, the lazily loaded code highlighter (a `<script src>` of the same
//!   origin) and every API call. `script-src 'self' 'wasm-unsafe-eval'`: compiling the wasm is
//!   the only "eval" the UI does; there is no inline script, no `eval`. `style-src 'self'`: the
//!   stylesheet is a file, and the UI sets styles only through the CSSOM (the markdown renderer
//!   emits table alignment as classes, never `style=""`). `img-src 'self' data: blob:`: `data:`
//!   images in replies and attachments; a remote image in model output is never loaded by the
//!   page (the renderer shows a placeholder link), so a reply cannot leak data through an image
//!   URL even if the renderer had a hole. `object-src 'none'`, `base-uri 'none'`,
//!   `form-action 'self'` close the usual side doors.
//! - **MCP App views.** Default mode frames `{prefix}/apps/view/{token}` of this origin
//!   (`frame-src 'self'`); proxy mode also frames the sandbox origin and its subdomains (views
//!   of each MCP server may get an origin of their own under it). A framed view gets its own
//!   policy from its own response (it is a URL, not `srcdoc`), so this policy does not constrain
//!   what a view may do.
//! - **Framing.** `frame-ancestors 'self'` plus the origins configured with
//!   [`ConfigBuilder::frame_ancestor`](crate::ConfigBuilder::frame_ancestor) (for embedders that
//!   frame the page). `X-Frame-Options: SAMEORIGIN` is sent too for old browsers, but only when no
//!   ancestors are configured: it cannot list origins, and a browser that knows both obeys
//!   `frame-ancestors` anyway.
//! - **Validated once.** Every origin that goes into the policy (ancestors, the sandbox origin)
//!   must be a plain `http(s)://host[:port]` (a leading `*.` label is allowed for ancestors), so
//!   nothing configured can add a directive or a keyword. The header is built by
//!   `ConfigBuilder::build`, not per request.
//! - A host page that mounts the loader in its own page keeps its own policy; the README lists
//!   what it must allow.

use http::HeaderValue;

/// The directives that do not depend on the configuration, in the order they are sent.
const FIXED: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
     style-src 'self'; img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; \
     form-action 'self'";

/// The `Content-Security-Policy` of the page, for views framed from `sandbox_origin` (proxy
/// mode) and a page framed by `ancestors`. `None` when a value is not a valid origin (the
/// builder validates them first, so this does not happen).
pub(crate) fn header(sandbox_origin: Option<&str>, ancestors: &[String]) -> Option<HeaderValue> {
    let mut policy = String::from(FIXED);
    policy.push_str("; frame-src 'self'");
    if let Some(origin) = sandbox_origin {
        let source = origin_source(origin, false)?;
        // Proxy mode may give each MCP server its own subdomain of the sandbox origin.
        let subdomains = match source.split_once("://") {
            Some((scheme, authority)) if !authority.starts_with('[') => {
                format!(" {scheme}://*.{authority}")
            }
            _ => String::new(),
        };
        policy.push(' ');
        policy.push_str(&source);
        policy.push_str(&subdomains);
    }
    policy.push_str("; frame-ancestors 'self'");
    for a in ancestors {
        policy.push(' ');
        policy.push_str(&origin_source(a, true)?);
    }
    HeaderValue::from_str(&policy).ok()
}

/// `value` as a CSP source expression when it is an origin: `http` or `https`, a host name
/// (letters, digits, `-`, `.`; a leading `*.` label when `wildcard`) or a bracketed IPv6
/// address, an optional numeric port, an optional trailing `/` (dropped). Lowercased.
pub(crate) fn origin_source(value: &str, wildcard: bool) -> Option<String> {
    let v = value
        .strip_suffix('/')
        .unwrap_or(value)
        .to_ascii_lowercase();
    let (scheme, authority) = v.split_once("://")?;
    let (host, port) = if authority.starts_with('[') {
        authority.split_at(authority.find(']')? + 1)
    } else {
        authority.split_at(authority.find(':').unwrap_or(authority.len()))
    };
    let host_ok = match host.strip_prefix('[') {
        Some(v6) => v6.strip_suffix(']').is_some_and(|a| {
            !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        }),
        None => {
            let name = match host.strip_prefix("*.") {
                Some(rest) if wildcard => rest,
                _ => host,
            };
            name.split('.').all(|label| {
                !label.is_empty() && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            })
        }
    };
    let port_ok = port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()));
    (matches!(scheme, "http" | "https") && host_ok && port_ok).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_origins_become_sources() {
        assert_eq!(
            origin_source("HTTPS://X.Example:8443/", false).as_deref(),
            Some("https://x.example:8443")
        );
        assert_eq!(
            origin_source("https://*.x.example", true).as_deref(),
            Some("https://*.x.example")
        );
        assert_eq!(origin_source("https://*.x.example", false), None);
        assert_eq!(
            origin_source("http://[::1]:8080", false).as_deref(),
            Some("http://[::1]:8080")
        );
        for bad in [
            "x.example",
            "https://x.example/a",
            "https://x.example;a",
            "https://x.example a",
            "https://a@x.example",
            "https://x..example",
            "https://x.example:",
            "https://x.example:123456",
            "https://[]",
            "https://[::1]x",
            "data:,x",
            "'self'",
        ] {
            assert_eq!(origin_source(bad, true), None, "{bad}");
        }
    }

    #[test]
    fn the_header_lists_the_sandbox_and_the_ancestors() {
        let h = header(
            Some("https://sb.example"),
            &["https://a.example".to_owned()],
        )
        .unwrap();
        let h = h.to_str().unwrap();
        assert!(h.starts_with("default-src 'self'; "), "{h}");
        assert!(
            h.contains("; frame-src 'self' https://sb.example https://*.sb.example;"),
            "{h}"
        );
        assert!(
            h.ends_with("; frame-ancestors 'self' https://a.example"),
            "{h}"
        );
        assert_eq!(header(Some("https://sb.example;x"), &[]), None);
    }
}
