//! Where a user-supplied URL may lead: [`OutboundPolicy`] keeps requests to users' own MCP
//! servers off the machine's and the network's private side (SSRF).
//!
//! Decisions:
//! - **Refused addresses**: loopback, unspecified, private (RFC 1918, IPv6 unique-local),
//!   carrier-grade NAT (100.64.0.0/10), link-local (169.254.0.0/16, where cloud metadata
//!   services answer, and fe80::/10), multicast, broadcast, documentation, benchmarking and
//!   reserved ranges. An IPv4 address written as IPv6 (`::ffff:a.b.c.d`, `64:ff9b::/96`,
//!   `::a.b.c.d`) is judged as the IPv4 address it carries.
//! - **Checked where the connection is made**: the policy's client resolves names through
//!   [`OutboundPolicy::client`]'s resolver, which drops refused addresses (and fails when none
//!   is left). The address checked is the address connected to, so a name that resolves to a
//!   public address when checked and to 127.0.0.1 when used (DNS rebinding) cannot slip
//!   through. IP literals, which reqwest connects to without resolving, are checked with the
//!   URL.
//! - **Every redirect** is checked like the first URL, and must stay on the first URL's
//!   origin (the user's credentials go with the request; they must not reach another host).
//! - **https** is required, except for the hosts the operator allows (`allow_hosts`: exact
//!   host names or IP literals, case-insensitive), which may also resolve to refused
//!   addresses (an operator's internal MCP server).
//! - URLs with user info (`https://user:pass@host/`) are refused: credentials go in headers,
//!   where they are kept write-only.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Why a URL or an address was refused. The messages are fit for a 400 and for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OutboundError {
    /// Not an absolute http(s) URL with a host.
    #[error("{0:?} is not an http(s) URL with a host")]
    NotHttp(String),
    /// Plain http to a host the operator did not allow.
    #[error("{0} must use https (only hosts the operator allows may use http)")]
    HttpsRequired(String),
    /// User info in the URL.
    #[error("put credentials in headers, not in the URL")]
    UserInfo,
    /// The host is, or resolves only to, an address the policy refuses.
    #[error("{host} resolves to {addr}, a {kind} address, which user servers may not reach")]
    Refused {
        /// The host as written in the URL.
        host: String,
        /// The refused address.
        addr: IpAddr,
        /// What kind of address it is (`loopback`, `private`, `link-local`, …).
        kind: &'static str,
    },
    /// The name did not resolve.
    #[error("{host} did not resolve: {reason}")]
    Unresolved {
        /// The host.
        host: String,
        /// The resolver's reason.
        reason: String,
    },
    /// A redirect left the first URL's origin.
    #[error(
        "a redirect from {from} to {to} was refused: redirects must stay on the server's origin"
    )]
    CrossOrigin {
        /// The first URL's origin.
        from: String,
        /// The redirect's target origin.
        to: String,
    },
}

/// The rules for URLs users supply (see the module docs).
///
/// ```
/// use lmchatkit::mcp::{OutboundError, OutboundPolicy};
///
/// let policy = OutboundPolicy::new().with_allowed_host("mcp.internal");
/// assert!(policy.check_url("https://mcp.example.com/mcp").is_ok());
/// assert!(policy.check_url("http://mcp.internal:8080/mcp").is_ok());
/// assert!(matches!(policy.check_url("http://mcp.example.com/"), Err(OutboundError::HttpsRequired(_))));
/// assert!(matches!(
///     policy.check_url("https://169.254.169.254/latest/meta-data"),
///     Err(OutboundError::Refused { kind: "link-local", .. })
/// ));
/// ```
#[derive(Debug, Clone, Default)]
pub struct OutboundPolicy {
    allowed: Arc<Vec<String>>,
}

impl OutboundPolicy {
    /// A policy that allows no exception.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same policy, also allowing `host` (a host name or an IP literal, as written in
    /// URLs; IPv6 without brackets): http, and any address it resolves to.
    pub fn with_allowed_host(mut self, host: impl AsRef<str>) -> Self {
        let host = host
            .as_ref()
            .trim()
            .trim_matches(['[', ']'])
            .to_ascii_lowercase();
        Arc::make_mut(&mut self.allowed).push(host);
        self
    }

    /// Whether the operator allows `host`.
    pub fn is_allowed(&self, host: &str) -> bool {
        let host = host.trim_matches(['[', ']']);
        self.allowed.iter().any(|h| h.eq_ignore_ascii_case(host))
    }

    /// Checks what can be checked without resolving: an http(s) URL with a host, https unless
    /// allowed, no user info, and an IP-literal host that is not refused.
    pub fn check_url(&self, url: &str) -> Result<reqwest::Url, OutboundError> {
        let parsed = reqwest::Url::parse(url).map_err(|_| OutboundError::NotHttp(url.into()))?;
        self.check_parsed(&parsed)?;
        Ok(parsed)
    }

    fn check_parsed(&self, url: &reqwest::Url) -> Result<(), OutboundError> {
        let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
            return Err(OutboundError::NotHttp(url.to_string()));
        };
        let allowed = self.is_allowed(host);
        match url.scheme() {
            "https" => {}
            "http" if allowed => {}
            "http" => return Err(OutboundError::HttpsRequired(host.to_owned())),
            _ => return Err(OutboundError::NotHttp(url.to_string())),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(OutboundError::UserInfo);
        }
        // The URL parser has normalised IPv4 literals (`0x7f000001` is `127.0.0.1`) and
        // bracketed IPv6 ones.
        let literal = host.trim_matches(['[', ']']).parse::<IpAddr>().ok();
        match literal {
            Some(addr) if !allowed => check_addr(host, addr),
            _ => Ok(()),
        }
    }

    /// A reqwest client that applies the policy to every connection and redirect. Build the
    /// users' MCP transports on it.
    pub fn client(&self) -> reqwest::Client {
        self.client_builder()
            .build()
            // Only a broken TLS setup fails here, and then `Client::new` panics with why.
            .unwrap_or_default()
    }

    /// [`client`](Self::client)'s builder, to add timeouts and the like.
    pub fn client_builder(&self) -> reqwest::ClientBuilder {
        let policy = self.clone();
        let redirects = reqwest::redirect::Policy::custom(move |attempt| {
            let Some(first) = attempt.previous().first() else {
                return attempt.follow();
            };
            let (from, to) = (first.origin(), attempt.url().origin());
            if from != to {
                let error = OutboundError::CrossOrigin {
                    from: from.ascii_serialization(),
                    to: to.ascii_serialization(),
                };
                return attempt.error(error);
            }
            if attempt.previous().len() > 10 {
                return attempt.error("too many redirects");
            }
            match policy.check_parsed(attempt.url()) {
                Ok(()) => attempt.follow(),
                Err(e) => attempt.error(e),
            }
        });
        crate::tls::client_builder()
            .redirect(redirects)
            .dns_resolver(Arc::new(Resolver(self.clone())))
    }
}

impl fmt::Display for OutboundPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.allowed.as_slice() {
            [] => f.write_str("public https only"),
            hosts => write!(f, "public https only, and {}", hosts.join(", ")),
        }
    }
}

/// Resolves with the system resolver and drops the addresses the policy refuses.
struct Resolver(OutboundPolicy);

impl Resolve for Resolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.0.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(|e| OutboundError::Unresolved {
                    host: host.clone(),
                    reason: e.to_string(),
                })?
                .collect();
            let addrs = policy.filter(&host, found)?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

impl OutboundPolicy {
    /// The addresses `host` may be reached at: all of them for an allowed host, else those the
    /// policy does not refuse; an error naming the first refused one when none is left.
    pub fn filter(
        &self,
        host: &str,
        addrs: Vec<SocketAddr>,
    ) -> Result<Vec<SocketAddr>, OutboundError> {
        if self.is_allowed(host) {
            return Ok(addrs);
        }
        let mut refused = None;
        let kept: Vec<SocketAddr> = addrs
            .into_iter()
            .filter(|a| match check_addr(host, a.ip()) {
                Ok(()) => true,
                Err(e) => {
                    refused.get_or_insert(e);
                    false
                }
            })
            .collect();
        match (kept.is_empty(), refused) {
            (true, Some(e)) => Err(e),
            (true, None) => Err(OutboundError::Unresolved {
                host: host.to_owned(),
                reason: "no address".into(),
            }),
            (false, _) => Ok(kept),
        }
    }
}

fn check_addr(host: &str, addr: IpAddr) -> Result<(), OutboundError> {
    match refused_kind(addr) {
        None => Ok(()),
        Some(kind) => Err(OutboundError::Refused {
            host: host.to_owned(),
            addr,
            kind,
        }),
    }
}

/// What kind of refused address `addr` is; `None` for a public one.
pub fn refused_kind(addr: IpAddr) -> Option<&'static str> {
    match addr {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => refused_v4(v4),
            None => refused_v6(v6),
        },
    }
}

fn refused_v4(a: Ipv4Addr) -> Option<&'static str> {
    let [o0, o1, o2, _] = a.octets();
    Some(match () {
        _ if a.is_loopback() => "loopback",
        _ if a.is_unspecified() || o0 == 0 => "unspecified",
        _ if a.is_private() => "private",
        _ if o0 == 100 && (o1 & 0xc0) == 64 => "shared (carrier-grade NAT)",
        _ if a.is_link_local() => "link-local",
        _ if a.is_broadcast() => "broadcast",
        _ if a.is_multicast() => "multicast",
        _ if a.is_documentation() => "documentation",
        _ if o0 == 198 && (o1 & 0xfe) == 18 => "benchmarking",
        _ if o0 == 192 && o1 == 0 && o2 == 0 => "protocol-assignment",
        _ if o0 >= 240 => "reserved",
        _ => return None,
    })
}

fn refused_v6(a: Ipv6Addr) -> Option<&'static str> {
    let s = a.segments();
    Some(match () {
        _ if a.is_loopback() => "loopback",
        _ if a.is_unspecified() => "unspecified",
        _ if (s[0] & 0xfe00) == 0xfc00 => "private",
        _ if (s[0] & 0xffc0) == 0xfe80 => "link-local",
        _ if (s[0] & 0xffc0) == 0xfec0 => "site-local",
        _ if (s[0] & 0xff00) == 0xff00 => "multicast",
        _ if s[0] == 0x2001 && s[1] == 0x0db8 => "documentation",
        _ => return None,
    })
}

/// The IPv4 address an IPv6 address carries: mapped (`::ffff:a.b.c.d`), compatible
/// (`::a.b.c.d`, deprecated but still routed by some stacks) or NAT64 (`64:ff9b::/96`).
fn embedded_v4(a: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = a.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    let mapped = s[..5] == [0; 5] && s[5] == 0xffff;
    let compatible = s[..6] == [0; 6] && !(s[6] == 0 && s[7] <= 1);
    let nat64 = s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4];
    (mapped || compatible || nat64).then_some(tail)
}

#[cfg(test)]
mod tests;
