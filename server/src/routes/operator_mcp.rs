//! The operator's sign-ins to the MCP servers they configured with OAuth (the rules are
//! `mcp::oauth`'s), and the client ID metadata document:
//! - `GET {prefix}/mcp/operator`: a page listing those servers, each signed in or not, with a
//!   "Sign in" button (a form posting to the next route);
//! - `POST {prefix}/mcp/operator/sign-in/{server}`: starts a sign-in and answers `303` to the
//!   authorization page;
//! - `GET {prefix}/mcp/operator/callback`: where the authorization server sends the browser
//!   back; a page saying how it went;
//! - `GET {prefix}/oauth/client-metadata.json`: the document (public: authorization servers
//!   fetch it without a session).
//!
//! Decisions:
//! - **The operator only**: the three operator routes ask `access::operator::may_operate`
//!   first (anyone else gets a 404, or a 403 when no operator is named and principals exist).
//!   The post is a mutating route: the usual origin check refuses a cross-site form.
//! - **Plain pages, no script**: `default-src 'none'` (nothing loads, nothing runs), no
//!   framing, `no-store`, no referrer (the callback's URL carries the code). Every text is
//!   escaped. There is no `form-action` directive: the form's post answers a redirect to the
//!   authorization server, which `form-action 'self'` would block in some browsers.

use http::{HeaderValue, StatusCode, header};

use crate::access;
use crate::api::{ApiError, Response, empty, framed_page, json};
use crate::bundle::escape_html;
use crate::mcp::OperatorOAuth;
use crate::mcp::oauth::{
    Callback, OPERATOR_CALLBACK_PATH, OPERATOR_PAGE_PATH, OperatorStatus, client_metadata,
    request_origin,
};
use crate::routes::Req;
use crate::state::State;

/// The pages' policy.
const PAGE_CSP: &str = "default-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/// The sign-ins, when on, after the access check.
fn operating<'a>(state: &'a State, req: &Req) -> Result<&'a OperatorOAuth, ApiError> {
    let oauth = state
        .mcp_oauth
        .as_ref()
        .ok_or_else(|| ApiError::NotFound("not found".into()))?;
    access::operator::may_operate(state.settings.operator.as_deref(), &req.cx)?;
    Ok(oauth)
}

/// `GET {prefix}/mcp/operator`.
pub(crate) async fn page(state: &State, req: Req) -> Result<Response, ApiError> {
    let oauth = operating(state, &req)?;
    let prefix = &state.settings.prefix;
    let mut rows = String::new();
    for server in oauth.list().await {
        let name = escape_html(&server.name);
        let (status, label) = match server.status {
            OperatorStatus::SignedIn => ("signed-in", "signed in"),
            OperatorStatus::SignInRequired => ("sign-in-required", "sign-in required"),
        };
        let button = match server.status {
            OperatorStatus::SignedIn => "Sign in again",
            OperatorStatus::SignInRequired => "Sign in",
        };
        let action = escape_html(&format!(
            "{prefix}{OPERATOR_PAGE_PATH}/sign-in/{}",
            encode_segment(&server.name)
        ));
        rows.push_str(&format!(
            "<li data-server=\"{name}\" data-status=\"{status}\"><strong>{name}</strong>: \
             {label} <form method=\"post\" action=\"{action}\"><button>{button}</button></form></li>\n"
        ));
    }
    let body = if rows.is_empty() {
        "<p>No MCP server is configured with <code>oauth = true</code>.</p>".to_owned()
    } else {
        format!("<ul>\n{rows}</ul>")
    };
    Ok(html(StatusCode::OK, "MCP servers: sign-in", &body))
}

/// `POST {prefix}/mcp/operator/sign-in/{server}`.
pub(crate) async fn sign_in(state: &State, req: Req, server: &str) -> Result<Response, ApiError> {
    let oauth = operating(state, &req)?;
    let server = decode_segment(server).ok_or_else(|| ApiError::NotFound("not found".into()))?;
    let origin = request_origin(&req.parts)?;
    let at = oauth
        .start(
            &req.cx.principal(),
            &server,
            &origin,
            &state.settings.prefix,
        )
        .await
        .map_err(crate::error::Failure::from)?;
    let location = HeaderValue::try_from(at)
        .map_err(|_| ApiError::Internal("the authorization URL is not a header value".into()))?;
    let mut res = http::Response::new(empty());
    *res.status_mut() = StatusCode::SEE_OTHER;
    let h = res.headers_mut();
    h.insert(header::LOCATION, location);
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    Ok(res)
}

/// `GET {prefix}/mcp/operator/callback`.
pub(crate) async fn callback(state: &State, req: Req) -> Result<Response, ApiError> {
    let oauth = operating(state, &req)?;
    let back = escape_html(&format!("{}{OPERATOR_PAGE_PATH}", state.settings.prefix));
    let callback = Callback::parse(req.parts.uri.query().unwrap_or_default());
    match oauth.finish(&req.cx.principal(), callback).await {
        Ok(server) => Ok(html(
            StatusCode::OK,
            &format!("Signed in to {server}"),
            &format!(
                "<p>The service uses this sign-in for the MCP server {}.</p>\
                 <p><a href=\"{back}\">Back to the MCP servers</a></p>",
                escape_html(&server)
            ),
        )),
        Err(e) => {
            let e = ApiError::from(crate::error::Failure::from(e));
            Ok(html(
                e.status(),
                "Sign-in not completed",
                &format!(
                    "<p>{}</p><p><a href=\"{back}\">Back to the MCP servers</a></p>",
                    escape_html(&e.to_string())
                ),
            ))
        }
    }
}

/// `GET {prefix}/oauth/client-metadata.json`: the client ID metadata document, naming the
/// callbacks of the sign-ins that are on.
pub(crate) fn document(state: &State, req: &Req) -> Result<Response, ApiError> {
    let origin = request_origin(&req.parts)?;
    let mut callbacks = Vec::new();
    if state.mcp_oauth.is_some() {
        callbacks.push(OPERATOR_CALLBACK_PATH);
    }
    if state.user_mcp.is_some() {
        callbacks.push(crate::user_mcp::oauth::CALLBACK_PATH);
    }
    let doc = client_metadata(&origin, &state.settings.prefix, &callbacks);
    let mut res = json(StatusCode::OK, &doc);
    res.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    Ok(res)
}

/// A path segment, percent-decoded (`None` when that is not UTF-8).
fn decode_segment(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// `name` as one path segment.
fn encode_segment(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A page: `title` (escaped) and `body` (HTML the caller escaped).
fn html(status: StatusCode, title: &str, body: &str) -> Response {
    let title = escape_html(title);
    let page = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n</head>\n<body>\n<main>\n<h1>{title}</h1>\n{body}\n</main>\n\
         </body>\n</html>\n"
    );
    let mut res = framed_page(page, HeaderValue::from_static(PAGE_CSP), "no-store");
    *res.status_mut() = status;
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_name_goes_through_its_path_segment_and_back() {
        for name in ["docs", "a b/c%", "ünï"] {
            assert_eq!(decode_segment(&encode_segment(name)).as_deref(), Some(name));
        }
    }
}
