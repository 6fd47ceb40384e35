//! Which host names the service answers on (DNS rebinding): a page on `rebind.example` whose
//! name later resolves to 127.0.0.1 sends `Host: rebind.example` and a matching `Origin`, so
//! the CSRF check alone would let it drive the service. Every request, on every route, must
//! name an allowed host.
//!
//! Decisions:
//! - Allowed: `localhost`, `127.0.0.1` and `[::1]` on any port, the sandbox origin's host and its
//!   subdomains on its port (for the sandbox pages; see `apps::origins`), and the names configured with
//!   [`ConfigBuilder::allowed_host`](crate::ConfigBuilder::allowed_host). A configured name
//!   without a port allows every port; with one, that port only.
//! - Names compare case-insensitively, without a trailing dot.
//! - The `Host` header decides, else the request URI's authority (HTTP/2). A request naming no
//!   host at all (no browser sends one) is not checked: in-process calls of the service work.
//! - Anything else is 403, before routing, so a foreign name learns nothing about the routes.

use http::request::Parts;
use http::uri::Authority;

use crate::error::Failure;

/// Names served on any port, whatever is configured.
const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// One allowed host name, with or without a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AllowedHost {
    name: String,
    port: Option<u16>,
    /// Also every subdomain of `name` (the sandbox origins of proxy mode).
    subdomains: bool,
}

impl AllowedHost {
    /// Parses `name` or `name:port` (IPv6 in brackets); `None` when it is not a host.
    pub(crate) fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        let authority: Authority = s.parse().ok()?;
        if authority.as_str().contains('@') || authority.host().is_empty() {
            return None;
        }
        Some(Self {
            name: normalise(authority.host()),
            port: authority.port_u16(),
            subdomains: false,
        })
    }

    /// `name` and its subdomains, on `port` only when one is given.
    pub(crate) fn with_subdomains(name: &str, port: Option<u16>) -> Self {
        Self {
            name: normalise(name),
            port,
            subdomains: true,
        }
    }

    fn allows(&self, name: &str, port: Option<u16>) -> bool {
        let under = self.subdomains
            && name
                .strip_suffix(&self.name)
                .is_some_and(|head| head.len() > 1 && head.ends_with('.'));
        (self.name == name || under) && (self.port.is_none() || self.port == port)
    }
}

fn normalise(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// Refuses a request whose host name is not allowed.
pub(crate) fn check(allowed: &[AllowedHost], parts: &Parts) -> Result<(), Failure> {
    let named = match parts.headers.get(http::header::HOST) {
        Some(h) => h.to_str().unwrap_or("\u{fffd}").to_owned(),
        None => match parts.uri.authority() {
            Some(a) => a.as_str().to_owned(),
            None => return Ok(()),
        },
    };
    let refused = || {
        Failure::Denied(format!(
            "host name {named:?} is not served here (allow it with --allowed-host or \
             Config::allowed_host)"
        ))
    };
    let authority: Authority = named.parse().map_err(|_| refused())?;
    let (name, port) = (normalise(authority.host()), authority.port_u16());
    let ok = LOOPBACK.contains(&name.as_str()) || allowed.iter().any(|a| a.allows(&name, port));
    if ok && !authority.as_str().contains('@') {
        Ok(())
    } else {
        Err(refused())
    }
}

#[cfg(test)]
mod tests {
    use super::AllowedHost;

    #[test]
    fn allowed_hosts_parse_with_and_without_a_port() {
        let a = AllowedHost::parse("Chat.Example.com.").unwrap();
        assert!(a.allows("chat.example.com", None) && a.allows("chat.example.com", Some(1)));
        let b = AllowedHost::parse("intranet:8443").unwrap();
        assert!(b.allows("intranet", Some(8443)) && !b.allows("intranet", Some(80)));
        let v6 = AllowedHost::parse("[fd00::1]").unwrap();
        assert!(v6.allows("[fd00::1]", Some(8080)));
        assert_eq!(AllowedHost::parse("user@host"), None);
        assert_eq!(AllowedHost::parse(""), None);
        assert_eq!(AllowedHost::parse("a b"), None);
        assert!(!b.allows("v-1.intranet", Some(8443)), "no subdomains");
        let w = AllowedHost::with_subdomains("sandbox.example", Some(8443));
        assert!(
            w.allows("v-1.sandbox.example", Some(8443)) && w.allows("sandbox.example", Some(8443))
        );
        assert!(
            !w.allows("v-1.sandbox.example", Some(80))
                && !w.allows("evilsandbox.example", Some(8443))
        );
    }
}
