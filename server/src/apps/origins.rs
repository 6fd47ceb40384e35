//! Proxy mode's sandbox origins: every MCP server's views get an origin of their own, so a view
//! can never script another server's view (same-origin frames can reach each other through
//! `window.parent.frames`) nor call that server's tools as it.
//!
//! Decisions:
//! - **A host-name scheme under the configured origin.** The configured sandbox origin
//!   (`scheme://base[:port]`) is a base: the views of server `S` run on
//!   `scheme://v-<hash>.base[:port]`, `<hash>` the first 16 hex digits of SHA-256 of `S`'s label
//!   (stable across restarts, so a view keeps its storage; a label never has to be a valid host
//!   name). One listener answers them all, no port per server. Browsers resolve `*.localhost` to
//!   loopback without DNS (the app's default base is `http://localhost:PORT`); any other base
//!   needs a wildcard DNS entry (and, for https, a wildcard certificate) for `*.base`.
//! - **The base is a DNS name**, not an IP address (an address has no subdomains); the config
//!   refuses one.
//! - **`_meta.ui.domain`** is honoured when it names a host one label under the base
//!   (`budget.localhost` for base `localhost`), the label is not one of ours (`v-…`), and no other
//!   server claimed it first; the first server to use a domain keeps it for the service's life.
//!   Anything else falls back to the server's own origin, with a warning.
//! - **Sandbox host names** are the base authority itself (name and port, so a chat on another
//!   port of `localhost` is unaffected) and every subdomain of the base name. The service answers
//!   only the sandbox page on them, never an API route (see `ChatService`), and the page only on
//!   the host name its token was issued for.
//! - A single-source host (no server label) has one origin for its views: `v-default`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use http::request::Parts;
use http::uri::Authority;
use sha2::{Digest, Sha256};

use crate::access::host_names::AllowedHost;

/// The prefix of the host labels the service derives (reserved: a declared domain may not use it).
const OURS: &str = "v-";

/// The configured base of the sandbox origins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Base {
    scheme: String,
    name: String,
    port: Option<u16>,
}

impl Base {
    /// The host check's entry for the base and its subdomains (on the base's port).
    pub(crate) fn allowed_host(&self) -> AllowedHost {
        AllowedHost::with_subdomains(&self.name, self.port)
    }
}

impl Base {
    /// Parses `http(s)://name[:port]`; `None` for anything else, an IP address included.
    pub(crate) fn parse(origin: &str) -> Option<Self> {
        let (scheme, rest) = origin.trim().trim_end_matches('/').split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        if !matches!(scheme.as_str(), "http" | "https") {
            return None;
        }
        let authority: Authority = rest.parse().ok()?;
        let name = authority.host().trim_end_matches('.').to_ascii_lowercase();
        let plain = !name.is_empty()
            && !authority.as_str().contains('@')
            && name.parse::<IpAddr>().is_err()
            && !name.starts_with('[')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'));
        plain.then(|| Self {
            scheme,
            name,
            port: authority.port_u16(),
        })
    }

    fn origin(&self, name: &str) -> String {
        match self.port {
            Some(p) => format!("{}://{name}:{p}", self.scheme),
            None => format!("{}://{name}", self.scheme),
        }
    }

    /// True when `name:port` is the base authority or names a subdomain of the base.
    fn covers(&self, name: &str, port: Option<u16>) -> bool {
        let sub = name
            .strip_suffix(&self.name)
            .is_some_and(|head| head.len() > 1 && head.ends_with('.'));
        (name == self.name || sub) && port == self.port
    }
}

/// The host name of a view's server (`v-<hash>`).
fn label_of(server: Option<&str>) -> String {
    match server {
        None => format!("{OURS}default"),
        Some(s) => {
            let digest = Sha256::digest(s.as_bytes());
            format!("{OURS}{}", &hex::encode(digest)[..16])
        }
    }
}

/// The sandbox origins of a service in proxy mode.
#[derive(Debug)]
pub(crate) struct Sandboxes {
    base: Base,
    /// Declared domains (full host names) and the server that claimed each first.
    claims: Mutex<HashMap<String, String>>,
}

impl Sandboxes {
    /// The origins under `base`.
    pub(crate) fn new(base: Base) -> Self {
        Self {
            base,
            claims: Mutex::default(),
        }
    }

    /// The origin of a view of `server` that declared `domain` (its `_meta.ui.domain`).
    pub(crate) fn origin_for(&self, server: Option<&str>, domain: Option<&str>) -> String {
        if let Some(d) = domain.map(|d| d.trim().trim_end_matches('.').to_ascii_lowercase())
            && !d.is_empty()
        {
            if self.may_claim(&d, server.unwrap_or_default()) {
                return self.base.origin(&d);
            }
            tracing::warn!(
                domain = %d,
                server = server.unwrap_or_default(),
                "ignoring an MCP App view's domain: not one label under the sandbox host, \
                 reserved, or claimed by another server"
            );
        }
        self.base
            .origin(&format!("{}.{}", label_of(server), self.base.name))
    }

    /// True when `domain` is ours to give `server`: one free label under the base name.
    fn may_claim(&self, domain: &str, server: &str) -> bool {
        let Some(label) = domain
            .strip_suffix(&self.base.name)
            .and_then(|h| h.strip_suffix('.'))
        else {
            return false;
        };
        let valid = !label.is_empty()
            && !label.starts_with(OURS)
            && !label.starts_with('-')
            && label.len() <= 63
            && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !valid {
            return false;
        }
        let mut claims = self.claims.lock().unwrap_or_else(|e| e.into_inner());
        claims
            .entry(domain.to_owned())
            .or_insert_with(|| server.to_owned())
            == server
    }

    /// True when the request names a sandbox host (see the module docs).
    pub(crate) fn is_sandbox_host(&self, parts: &Parts) -> bool {
        host_of(parts).is_some_and(|(name, port)| self.base.covers(&name, port))
    }
}

/// The lower-cased host name and port a request names (`Host`, else the URI's authority).
pub(crate) fn host_of(parts: &Parts) -> Option<(String, Option<u16>)> {
    let named = match parts.headers.get(http::header::HOST) {
        Some(h) => h.to_str().ok()?.to_owned(),
        None => parts.uri.authority()?.as_str().to_owned(),
    };
    let a: Authority = named.parse().ok()?;
    Some((
        a.host().trim_end_matches('.').to_ascii_lowercase(),
        a.port_u16(),
    ))
}

/// The lower-cased `name[:port]` of an origin URL.
pub(crate) fn authority_of(origin: &str) -> String {
    let rest = origin.split_once("://").map_or(origin, |(_, r)| r);
    rest.split('/')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> Sandboxes {
        Sandboxes::new(Base::parse("http://localhost:8081/").unwrap())
    }

    #[test]
    fn the_base_is_a_dns_name_with_a_web_scheme() {
        assert!(Base::parse("https://sandbox.example").is_some());
        assert!(
            Base::parse("http://127.0.0.1:8081").is_none(),
            "no subdomains"
        );
        assert!(Base::parse("http://[::1]:8081").is_none());
        assert!(Base::parse("ftp://sandbox.example").is_none());
        assert!(Base::parse("http://u@sandbox.example").is_none());
    }

    #[test]
    fn each_server_has_its_own_stable_origin() {
        let s = local();
        let a = s.origin_for(Some("budget"), None);
        assert_eq!(a, s.origin_for(Some("budget"), None));
        assert_ne!(a, s.origin_for(Some("monitor"), None));
        assert!(
            a.starts_with("http://v-") && a.ends_with(".localhost:8081"),
            "{a}"
        );
        assert_eq!(s.origin_for(None, None), "http://v-default.localhost:8081");
    }

    #[test]
    fn a_declared_domain_is_honoured_once_and_under_the_base_only() {
        let s = local();
        let d = Some("budget.localhost");
        assert_eq!(s.origin_for(Some("a"), d), "http://budget.localhost:8081");
        assert_eq!(s.origin_for(Some("a"), d), "http://budget.localhost:8081");
        let own_b = s.origin_for(Some("b"), None);
        assert_eq!(s.origin_for(Some("b"), d), own_b, "claimed by a");
        let own_a = s.origin_for(Some("a"), None);
        for bad in [
            "evil.example",
            "localhost",
            "a.b.localhost",
            "v-0123.localhost",
            "x_y.localhost",
        ] {
            assert_eq!(s.origin_for(Some("a"), Some(bad)), own_a, "{bad}");
        }
    }

    #[test]
    fn sandbox_hosts_are_the_base_authority_and_its_subdomains() {
        let s = local();
        let req = |host: &str| {
            http::Request::get("/")
                .header("host", host)
                .body(())
                .unwrap()
                .into_parts()
                .0
        };
        for yes in ["localhost:8081", "v-12.localhost:8081", "X.LOCALHOST:8081"] {
            assert!(s.is_sandbox_host(&req(yes)), "{yes}");
        }
        for no in [
            "localhost:8080",
            "localhost",
            "127.0.0.1:8081",
            "evillocalhost:8081",
            "v-1.localhost:8080",
        ] {
            assert!(!s.is_sandbox_host(&req(no)), "{no}");
        }
    }
}
