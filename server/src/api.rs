//! The HTTP API's plumbing, shared by every route: the response body type, JSON answers with
//! ETags, bounded JSON bodies, and [`ApiError`] — the one place errors become responses.

use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full};
use lmchatkit_protocol::ErrorBody;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use crate::error::Failure;
use crate::host::HostError;
use crate::limits::BodyLimits;
use crate::store::HistoryError;

/// Boxed error type of request and response bodies.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The one response body type of the service.
pub type ResponseBody = UnsyncBoxBody<Bytes, BoxError>;

/// A response of the service.
pub type Response = http::Response<ResponseBody>;

/// A body with the given bytes.
pub(crate) fn full(bytes: impl Into<Bytes>) -> ResponseBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// An empty body.
pub(crate) fn empty() -> ResponseBody {
    Empty::new().map_err(|never| match never {}).boxed_unsync()
}

const JSON: &str = "application/json; charset=utf-8";

/// Every way a request can fail, each mapped to one status and a `{"error": ...}` body.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// Malformed or invalid request (400).
    #[error("{0}")]
    BadRequest(String),
    /// A principal is required and none was given, or a credential is missing or wrong (401).
    #[error("{0}")]
    Unauthorized(String),
    /// Not allowed: a cross-origin request, or a visibility or ownership check failed (403).
    #[error("{0}")]
    Forbidden(String),
    /// No such route, conversation, tool, prompt or resource (404).
    #[error("{0}")]
    NotFound(String),
    /// The path exists but not for this method (405); carries the methods for the `Allow` header.
    #[error("method not allowed")]
    MethodNotAllowed(Vec<Method>),
    /// The request conflicts with what the service holds (409), e.g. an approval already
    /// answered.
    #[error("{0}")]
    Conflict(String),
    /// The body did not arrive within the body timeout (408).
    #[error("{0}")]
    RequestTimeout(String),
    /// The body is larger than the limit (413).
    #[error("{0}")]
    PayloadTooLarge(String),
    /// The request's `Content-Type` is not the one the route takes (415).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// Well-formed, but what it names cannot be used so (422), e.g. a resource that is not an
    /// MCP App view.
    #[error("{0}")]
    Unprocessable(String),
    /// Too many requests of this kind are open (429); the client may retry after the delay
    /// (`Retry-After`).
    #[error("{message}")]
    TooManyRequests {
        /// What is full.
        message: String,
        /// When to try again.
        retry_after: std::time::Duration,
    },
    /// The upstream (LLM or MCP server) failed (502).
    #[error("{0}")]
    BadGateway(String),
    /// A store or shared engine is at capacity or briefly unreachable (503): a pool had no free
    /// connection in time, a command timed out. Nothing was changed; the client may retry after
    /// the delay (`Retry-After`). Overload is this or a 429, never a 500.
    #[error("{message}")]
    Unavailable {
        /// What is busy.
        message: String,
        /// When to try again.
        retry_after: std::time::Duration,
    },
    /// The service or a store failed (500).
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::BadGateway(_) => StatusCode::BAD_GATEWAY,
            ApiError::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The JSON error response.
    pub fn into_response(self) -> Response {
        let mut res = json(
            self.status(),
            &ErrorBody {
                error: self.to_string(),
            },
        );
        if let ApiError::MethodNotAllowed(methods) = &self {
            let allow = methods
                .iter()
                .map(Method::as_str)
                .collect::<Vec<_>>()
                .join(", ");
            if let Ok(v) = HeaderValue::from_str(&allow) {
                res.headers_mut().insert(header::ALLOW, v);
            }
        }
        if let ApiError::TooManyRequests { retry_after, .. }
        | ApiError::Unavailable { retry_after, .. } = &self
        {
            res.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after.as_secs().max(1)),
            );
        }
        if matches!(
            self,
            ApiError::Internal(_) | ApiError::BadGateway(_) | ApiError::Unavailable { .. }
        ) {
            tracing::warn!(status = %self.status(), error = %self, "request failed");
        }
        res
    }
}

/// The one place a domain [`Failure`] becomes a status.
impl From<Failure> for ApiError {
    fn from(e: Failure) -> Self {
        match e {
            Failure::Invalid(m) => ApiError::BadRequest(m),
            Failure::Unauthenticated(m) => ApiError::Unauthorized(m),
            Failure::Denied(m) => ApiError::Forbidden(m),
            Failure::NotFound(m) => ApiError::NotFound(m),
            Failure::Conflict(m) => ApiError::Conflict(m),
            Failure::TimedOut(m) => ApiError::RequestTimeout(m),
            Failure::TooLarge(m) => ApiError::PayloadTooLarge(m),
            Failure::Unusable(m) => ApiError::Unprocessable(m),
            Failure::TooMany {
                message,
                retry_after,
            } => ApiError::TooManyRequests {
                message,
                retry_after,
            },
            Failure::Upstream(m) => ApiError::BadGateway(m),
            Failure::Busy {
                message,
                retry_after,
            } => ApiError::Unavailable {
                message,
                retry_after,
            },
            Failure::Internal(m) => ApiError::Internal(m),
        }
    }
}

#[cfg(feature = "mcp")]
impl From<crate::user_mcp::UserMcpStoreError> for ApiError {
    fn from(e: crate::user_mcp::UserMcpStoreError) -> Self {
        Failure::from(e).into()
    }
}

#[cfg(feature = "mcp")]
impl From<crate::user_mcp::oauth::OAuthError> for ApiError {
    fn from(e: crate::user_mcp::oauth::OAuthError) -> Self {
        Failure::from(e).into()
    }
}

impl From<HostError> for ApiError {
    fn from(e: HostError) -> Self {
        Failure::from(e).into()
    }
}

impl From<HistoryError> for ApiError {
    fn from(e: HistoryError) -> Self {
        Failure::from(e).into()
    }
}

/// A JSON response.
pub(crate) fn json<T: Serialize + ?Sized>(status: StatusCode, value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => json_bytes(status, body),
        Err(e) => {
            let body = serde_json::to_vec(&ErrorBody {
                error: format!("encoding response: {e}"),
            })
            .unwrap_or_default();
            json_bytes(StatusCode::INTERNAL_SERVER_ERROR, body)
        }
    }
}

fn json_bytes(status: StatusCode, body: Vec<u8>) -> Response {
    let mut res = http::Response::new(full(body));
    *res.status_mut() = status;
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
    res
}

/// A strong ETag over `body`: `"` + 16 hex chars of its SHA-256 + `"`.
pub(crate) fn etag_of(body: &[u8]) -> String {
    let digest = Sha256::digest(body);
    format!("\"{}\"", hex::encode(&digest[..8]))
}

/// Whether the request's `Accept-Encoding` allows the content coding `coding` (RFC 9110
/// §12.5.3): named with a non-zero weight, or covered by `*` with a non-zero weight when not
/// named. Names compare case-insensitively; no header allows none (only `identity`).
pub(crate) fn accepts_encoding(headers: &HeaderMap, coding: &str) -> bool {
    let mut star = None;
    for item in headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
    {
        let mut parts = item.split(';').map(str::trim);
        let name = parts.next().unwrap_or_default();
        // A weight that does not parse counts as 0: better plain bytes than a coding the client
        // may have meant to refuse.
        let weight = parts
            .find_map(|p| p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")))
            .map_or(Some(1.0), |q| q.trim().parse::<f32>().ok())
            .unwrap_or(0.0);
        if name.eq_ignore_ascii_case(coding) {
            return weight > 0.0;
        }
        if name == "*" {
            star = Some(weight > 0.0);
        }
    }
    star.unwrap_or(false)
}

/// True when `If-None-Match` matches `etag` (list syntax, `*` and weak tags understood).
pub(crate) fn not_modified(headers: &HeaderMap, etag: &str) -> bool {
    let bare = etag.trim_start_matches("W/");
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| {
            v.split(',')
                .map(str::trim)
                .any(|t| t == "*" || t.trim_start_matches("W/") == bare)
        })
}

/// A 200 JSON response with an ETag, or 304 when the client has it.
pub(crate) fn json_etag<T: Serialize + ?Sized>(req: &HeaderMap, value: &T) -> Response {
    let body = match serde_json::to_vec(value) {
        Ok(b) => b,
        Err(_) => return json(StatusCode::OK, value),
    };
    let etag = etag_of(&body);
    let mut res = if not_modified(req, &etag) {
        let mut r = http::Response::new(empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        json_bytes(StatusCode::OK, body)
    };
    if let Ok(v) = HeaderValue::from_str(&etag) {
        res.headers_mut().insert(header::ETAG, v);
    }
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}

fn body_too_large(limit: usize) -> ApiError {
    ApiError::PayloadTooLarge(format!("request body exceeds {limit} bytes"))
}

/// Reads a whole body, at most `limit` bytes (413 beyond), within `timeout` (408 beyond).
pub(crate) async fn read_body(
    headers: &HeaderMap,
    body: ResponseBody,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ApiError> {
    tokio::time::timeout(timeout, read_body_untimed(headers, body, limit))
        .await
        .unwrap_or_else(|_| {
            Err(ApiError::RequestTimeout(format!(
                "the request body did not arrive within {} s",
                timeout.as_secs_f32()
            )))
        })
}

async fn read_body_untimed(
    headers: &HeaderMap,
    body: ResponseBody,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(body_too_large(limit));
    }
    let mut body = body;
    let mut buf = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| ApiError::BadRequest(format!("reading request body: {e}")))?;
        if let Some(data) = frame.data_ref() {
            if buf.len() + data.len() > limit {
                return Err(body_too_large(limit));
            }
            buf.extend_from_slice(data);
        }
    }
    Ok(buf.freeze())
}

/// Requires `Content-Type: application/json` (CSRF defence: a cross-site form cannot send it).
pub(crate) fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let ok = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        })
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType(
            "Content-Type must be application/json".into(),
        ))
    }
}

/// Reads and decodes a JSON body (bounded, opaque values measured first; malformed, wrong types, invalid UTF-8 and too-deep
/// nesting are 400s).
pub(crate) async fn read_json<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: ResponseBody,
    limits: &BodyLimits,
) -> Result<T, ApiError> {
    require_json(headers)?;
    let bytes = read_body(headers, body, limits.body_bytes, limits.timeout).await?;
    crate::limits::check_opaque(&bytes, limits)?;
    serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::BadRequest(format!("invalid request body: {e}")))
}

/// An HTML page served into a frame (an MCP App view, the diagram frame): its own
/// `Content-Security-Policy`, no MIME sniffing, no referrer, `cache` as its `Cache-Control`.
pub(crate) fn framed_page(html: String, csp: HeaderValue, cache: &'static str) -> Response {
    let mut res = http::Response::new(full(html));
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    locked_down(h, csp, cache);
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    res
}

/// Sets what a response whose body the service does not vouch for carries (a framed page, an
/// MCP server's icon): `csp` as its `Content-Security-Policy`, no MIME sniffing, `cache` as its
/// `Cache-Control`.
pub(crate) fn locked_down(h: &mut http::HeaderMap, csp: HeaderValue, cache: &'static str) {
    h.insert(header::CONTENT_SECURITY_POLICY, csp);
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept_encoding(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn accept_encoding_follows_names_weights_and_star() {
        let yes = |v: &[&str], c| accepts_encoding(&accept_encoding(v), c);
        assert!(yes(&["gzip, deflate, br, zstd"], "br"));
        assert!(yes(&["gzip, deflate"], "gzip"));
        assert!(!yes(&["gzip, deflate"], "br"));
        assert!(!yes(&[], "gzip"), "no header: identity only");
        assert!(yes(&["BR;q=0.5"], "br"), "case-insensitive, weight > 0");
        assert!(!yes(&["br;q=0, gzip"], "br"), "q=0 refuses");
        assert!(yes(&["br;q=0, gzip"], "gzip"));
        assert!(!yes(&["br; q=0.000"], "br"));
        assert!(yes(&["*"], "br"), "* covers codings not named");
        assert!(!yes(&["*;q=0"], "gzip"));
        assert!(yes(&["gzip;q=1, *;q=0"], "gzip"), "a name wins over *");
        assert!(
            !yes(&["br;q=0", "*"], "br"),
            "a name wins over * across headers"
        );
        assert!(
            yes(&["identity", "gzip"], "gzip"),
            "several headers are one list"
        );
        assert!(
            !yes(&["gzip;q=abc"], "gzip"),
            "a weight that does not parse refuses"
        );
        assert!(!yes(&["gzipx, xgzip"], "gzip"), "whole names only");
    }

    #[test]
    fn etag_matching_understands_lists_weak_and_star() {
        let tag = etag_of(b"[]");
        let mut h = HeaderMap::new();
        assert!(!not_modified(&h, &tag));
        h.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_str(&format!("\"x\", W/{tag}")).unwrap(),
        );
        assert!(not_modified(&h, &tag));
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_static("*"));
        assert!(not_modified(&h, &tag));
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_static("\"other\""));
        assert!(!not_modified(&h, &tag));
    }

    #[test]
    fn method_not_allowed_sets_allow() {
        let res = ApiError::MethodNotAllowed(vec![Method::GET, Method::PUT]).into_response();
        assert_eq!(res.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(res.headers()[header::ALLOW], "GET, PUT");
    }
}
