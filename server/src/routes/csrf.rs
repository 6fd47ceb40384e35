//! CSRF defence for cookie-authenticated hosts: a mutating request whose `Origin` is present
//! and is neither the service's own origin nor in the configured allow-list is refused (403).
//! JSON routes additionally require `Content-Type: application/json`, which a cross-site form
//! cannot send.

use http::{Method, header};

use crate::api::ApiError;
use crate::config::Settings;

pub(crate) fn check(settings: &Settings, parts: &http::request::Parts) -> Result<(), ApiError> {
    if matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    let Some(origin) = parts.headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or("null").trim_end_matches('/');
    if settings.allowed_origins.iter().any(|o| o == origin) {
        return Ok(());
    }
    // Same origin: the Origin's authority equals the Host the request was sent to.
    let authority = origin.split_once("://").map(|(_, a)| a);
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| parts.uri.authority().map(|a| a.as_str()));
    match (authority, host) {
        (Some(a), Some(h)) if a.eq_ignore_ascii_case(h) => Ok(()),
        _ => Err(ApiError::Forbidden(format!(
            "cross-origin request from {origin} refused"
        ))),
    }
}
