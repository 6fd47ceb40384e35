//! `GET /api/icons/{kind}/{name}`: the icon of an MCP server (`server/{name}`), a tool
//! (`tool/{name}`) or a prompt (`prompt/{name}`), the name percent-encoded, served from the
//! service's own origin so the browser never loads one from an MCP server's host (see
//! [`crate::host::IconImage`] for what an icon may be).
//!
//! Decisions:
//! - **404 `{"error":"no icon"}`** for an item without an icon, one the principal does not
//!   see, and an unknown kind alike; the UI hides the image then.
//! - **Headers**: the image's own type, `X-Content-Type-Options: nosniff`,
//!   `Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; sandbox` (an SVG
//!   opened on its own runs nothing), `Cache-Control: private, max-age=300` on both answers (a
//!   page of tool cards asks once per name), and an ETag.

use http::{HeaderValue, StatusCode, header};

use crate::access;
use crate::api::{ApiError, Response, empty, etag_of, full, json, locked_down, not_modified};
use crate::host::IconOf;
use crate::routes::Req;
use crate::state::State;

/// The `Content-Security-Policy` of a served icon.
const ICON_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; sandbox";
/// How long the browser keeps an icon (or its absence).
const ICON_CACHE: &str = "private, max-age=300";

pub(crate) async fn icon(state: &State, req: Req, param: &str) -> Result<Response, ApiError> {
    let found = match param.split_once('/') {
        Some((kind, name)) => match IconOf::parse(kind) {
            Some(of) => {
                let name = percent_encoding::percent_decode_str(name)
                    .decode_utf8()
                    .map_err(|_| ApiError::BadRequest("the name is not UTF-8".into()))?;
                access::icon(&*state.host, &req.cx, of, &name).await?
            }
            None => None,
        },
        None => None,
    };
    let Some(image) = found else {
        let mut res = json(
            StatusCode::NOT_FOUND,
            &serde_json::json!({ "error": "no icon" }),
        );
        res.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static(ICON_CACHE));
        return Ok(res);
    };
    let etag = etag_of(image.bytes());
    let mut res = if not_modified(&req.parts.headers, &etag) {
        let mut r = http::Response::new(empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        let mut r = http::Response::new(full(image.bytes().clone()));
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(image.mime()));
        r
    };
    let h = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    locked_down(h, HeaderValue::from_static(ICON_CSP), ICON_CACHE);
    Ok(res)
}
