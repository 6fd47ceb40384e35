//! Who may use the app. The library leaves authentication to the host's own layer; the app is
//! such a host, and this is its layer: a tower `Layer` + `Service` pair around the chat service.
//!
//! Decisions:
//! - **Token** ([`Gate::Token`]), as local notebook servers do it: `--auth-token`, or one made up
//!   (128 random bits, hex) when the app listens beyond loopback. The URL the app prints carries
//!   it once (`?token=`); opening it sets an `HttpOnly`, `SameSite=Strict` cookie scoped to the
//!   prefix and redirects (303) to the same URL without the token, so it leaves the address bar
//!   and the history. Scripts send `Authorization: Bearer <token>` instead. Everything else,
//!   the page and its assets included, is 401. The cookie's name carries the port: two apps on
//!   one machine (cookies ignore ports) do not overwrite each other's.
//! - **Trusted user header** ([`Gate::Proxy`]) for teams behind an authenticating proxy: the
//!   principal is the header's value, honoured only on connections from the configured proxy
//!   addresses (loopback when none are given); any other peer is refused (403) with or without
//!   the header, and a proxied request without it is 401. The two are exclusive (the settings
//!   refuse both at once).
//! - **Open** on loopback without a token, as before: the host-name and origin checks of the
//!   service keep web pages out; other local users can reach it (give `--auth-token` on shared
//!   machines).
//! - Tokens compare as SHA-256 digests, so the comparison's time says nothing about the token.
//!   `Debug` never prints the token.

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::{self, HeaderName, HeaderValue};
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use ipnet::IpNet;
use lmchatkit::secrets::Redacted;
use lmchatkit::{ApiError, Principal, ResponseBody};
use sha2::{Digest, Sha256};

/// The query parameter of the printed URL.
pub const TOKEN_PARAM: &str = "token";

/// How requests are let in.
#[derive(Clone)]
pub enum Gate {
    /// Everyone who passes the service's own host-name and origin checks.
    Open,
    /// A secret token: cookie, bearer header, or once in the URL.
    Token(Arc<Token>),
    /// The principal from a header, set by an authenticating proxy at one of `from`.
    Proxy {
        header: HeaderName,
        from: Arc<[IpNet]>,
    },
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Open => f.write_str("Open"),
            Self::Token(_) => f.debug_tuple("Token").field(&Redacted).finish(),
            Self::Proxy { header, from } => f
                .debug_struct("Proxy")
                .field("header", header)
                .field("from", from)
                .finish(),
        }
    }
}

/// The app's token and what it is compared with.
pub struct Token {
    value: String,
    digest: [u8; 32],
    /// `lmchatkit-token-<port>`.
    cookie: String,
    /// The cookie's `Path` (the prefix, or `/`).
    path: String,
}

impl Token {
    /// `value` for the app listening on `port` under `prefix`.
    pub fn new(value: String, port: u16, prefix: &str) -> Self {
        Self {
            digest: digest(&value),
            value,
            cookie: format!("lmchatkit-token-{port}"),
            path: if prefix.is_empty() {
                "/".into()
            } else {
                prefix.into()
            },
        }
    }

    /// A new random token (128 bits, hex).
    pub fn generate() -> String {
        hex::encode(rand::random::<[u8; 16]>())
    }

    /// The token, for the printed URL only.
    pub fn value(&self) -> &str {
        &self.value
    }

    fn matches(&self, given: &str) -> bool {
        digest(given) == self.digest
    }
}

fn digest(s: &str) -> [u8; 32] {
    Sha256::digest(s.as_bytes()).into()
}

/// Parses `--trusted-proxy` values: addresses (`10.0.0.5`, `::1`) or ranges (`10.0.0.0/8`).
pub fn parse_proxies(values: &[String]) -> Result<Vec<IpNet>, String> {
    values
        .iter()
        .map(|v| {
            let v = v.trim();
            v.parse::<IpNet>()
                .or_else(|_| v.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| format!("--trusted-proxy: {v:?} is not an address or a range"))
        })
        .collect()
}

/// Puts a [`Gate`] in front of a service; [`GateLayer::for_peer`] makes the service for one
/// connection (the proxy check needs the peer's address).
#[derive(Clone, Debug)]
pub struct GateLayer {
    gate: Gate,
}

impl GateLayer {
    pub fn new(gate: Gate) -> Self {
        Self { gate }
    }

    /// The gated service for a connection from `peer`.
    pub fn for_peer<S>(&self, inner: S, peer: SocketAddr) -> Gated<S> {
        Gated {
            inner,
            gate: self.gate.clone(),
            peer: peer.ip(),
        }
    }
}

/// A service behind a [`Gate`], for one connection.
#[derive(Clone, Debug)]
pub struct Gated<S> {
    inner: S,
    gate: Gate,
    peer: IpAddr,
}

/// What the gate decided for one request.
enum Verdict {
    Pass,
    /// Let in as this principal.
    As(Principal),
    /// The printed URL: set the cookie and send the browser to `location`.
    SetCookie {
        location: String,
    },
    Refuse(ApiError),
}

impl Gate {
    fn judge<B>(&self, req: &Request<B>, peer: IpAddr) -> Verdict {
        match self {
            Gate::Open => Verdict::Pass,
            Gate::Token(token) => judge_token(token, req),
            Gate::Proxy { header, from } => {
                let peer = canonical(peer);
                if !from.iter().any(|net| net.contains(&peer)) {
                    return Verdict::Refuse(ApiError::Forbidden(
                        "this app is used through its authenticating proxy; requests from \
                         elsewhere are refused"
                            .into(),
                    ));
                }
                match req.headers().get(header).map(|v| v.to_str().map(str::trim)) {
                    Some(Ok(user)) if !user.is_empty() => Verdict::As(Principal::new(user)),
                    _ => Verdict::Refuse(ApiError::Unauthorized(format!(
                        "the proxy sent no {header} header"
                    ))),
                }
            }
        }
    }
}

/// An IPv4 peer seen through an IPv6 socket (`::ffff:a.b.c.d`) as the IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn judge_token<B>(token: &Token, req: &Request<B>) -> Verdict {
    let headers = req.headers();
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if bearer.is_some_and(|b| token.matches(b.trim())) {
        return Verdict::Pass;
    }
    let from_cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .any(|(name, value)| name == token.cookie && token.matches(value));
    if from_cookie {
        return Verdict::Pass;
    }
    let uri = req.uri();
    if let Some(given) = query_token(uri.query().unwrap_or_default())
        && token.matches(&given)
    {
        let rest = without_token(uri.query().unwrap_or_default());
        let location = match rest.is_empty() {
            true => uri.path().to_owned(),
            false => format!("{}?{rest}", uri.path()),
        };
        return Verdict::SetCookie { location };
    }
    Verdict::Refuse(ApiError::Unauthorized(
        "a token is required: open the URL lmchatkit printed when it started (it carries \
         ?token=), or send Authorization: Bearer <token>"
            .into(),
    ))
}

fn query_token(query: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| *name == TOKEN_PARAM)
        .map(|(_, v)| {
            percent_encoding::percent_decode_str(v)
                .decode_utf8_lossy()
                .into_owned()
        })
}

fn without_token(query: &str) -> String {
    query
        .split('&')
        .filter(|pair| !pair.is_empty() && pair.split('=').next() != Some(TOKEN_PARAM))
        .collect::<Vec<_>>()
        .join("&")
}

fn set_cookie(token: &Token, location: &str) -> http::Response<ResponseBody> {
    let mut res = http::Response::new(Empty::new().map_err(|never| match never {}).boxed_unsync());
    *res.status_mut() = StatusCode::SEE_OTHER;
    let cookie = format!(
        "{}={}; Path={}; HttpOnly; SameSite=Strict",
        token.cookie, token.value, token.path
    );
    let h = res.headers_mut();
    for (name, value) in [
        (header::SET_COOKIE, cookie),
        (header::LOCATION, location.into()),
    ] {
        match HeaderValue::from_str(&value) {
            Ok(v) => {
                h.insert(name, v);
            }
            Err(_) => return ApiError::BadRequest("invalid location".into()).into_response(),
        }
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

impl<S, B> tower::Service<Request<B>> for Gated<S>
where
    S: tower::Service<
            Request<B>,
            Response = http::Response<ResponseBody>,
            Error = Infallible,
            Future: Send + 'static,
        >,
{
    type Response = http::Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let res = match self.gate.judge(&req, self.peer) {
            Verdict::Pass => return Box::pin(self.inner.call(req)),
            Verdict::As(principal) => {
                req.extensions_mut().insert(principal);
                return Box::pin(self.inner.call(req));
            }
            Verdict::SetCookie { location } => match &self.gate {
                Gate::Token(token) => set_cookie(token, &location),
                _ => ApiError::Internal("no token".into()).into_response(),
            },
            Verdict::Refuse(e) => e.into_response(),
        };
        Box::pin(async move { Ok(res) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_the_token() {
        let gate = Gate::Token(Arc::new(Token::new("s3cret-token".into(), 8080, "/chat")));
        let shown = format!("{gate:?} {:?}", GateLayer::new(gate.clone()));
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("redacted"), "{shown}");
    }

    #[test]
    fn the_token_leaves_the_query_and_the_rest_stays() {
        assert_eq!(without_token("token=abc"), "");
        assert_eq!(without_token("a=1&token=abc&b=2"), "a=1&b=2");
        assert_eq!(query_token("a=1&token=ab%2Bc"), Some("ab+c".into()));
        assert_eq!(query_token("tokens=1"), None);
    }

    #[test]
    fn proxy_addresses_are_addresses_or_ranges() {
        let nets = parse_proxies(&["10.0.0.0/8".into(), " ::1 ".into()]).unwrap();
        assert!(nets[0].contains(&"10.1.2.3".parse::<IpAddr>().unwrap()));
        assert!(nets[1].contains(&"::1".parse::<IpAddr>().unwrap()));
        assert!(parse_proxies(&["proxy.example".into()]).is_err());
        assert_eq!(
            canonical("::ffff:127.0.0.1".parse().unwrap()),
            "127.0.0.1".parse::<IpAddr>().unwrap()
        );
    }
}
