//! The page at `{prefix}` and the bundle under `{prefix}/assets/`. The page carries its
//! `Content-Security-Policy` and framing rules (`page_policy`); the
//! stable loader revalidates (`no-cache` + ETag), content-hashed files are `immutable`; `HEAD`
//! answers the headers only. A file with precompressed copies is sent as brotli or gzip when
//! `Accept-Encoding` allows it (`Content-Encoding`, the copy's own ETag, `Vary: Accept-Encoding`).
//! The diagram frame's page and its two scripts are served below `{prefix}/diagram`.

use http::StatusCode;
use http::header::{self, HeaderValue};

use crate::api::{ApiError, Response, accepts_encoding, empty, etag_of, full, not_modified};
use crate::bundle;
use crate::routes::Req;
use crate::state::State;

pub(crate) fn page(state: &State, head: bool) -> Result<Response, ApiError> {
    let html = bundle::page_html(&state.settings.prefix, &state.settings.title);
    let mut res = http::Response::new(if head { empty() } else { full(html.clone()) });
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        state.settings.page_csp.clone(),
    );
    if state.settings.frame_ancestors.is_empty() {
        h.insert(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static("SAMEORIGIN"),
        );
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if let Ok(v) = HeaderValue::from_str(&etag_of(html.as_bytes())) {
        h.insert(header::ETAG, v);
    }
    Ok(res)
}

pub(crate) fn asset(req: &Req, raw: &str, head: bool) -> Result<Response, ApiError> {
    let path = percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .map_err(|_| not_found())?;
    send(req, bundle::asset(&path).ok_or_else(not_found)?, head)
}

/// The diagram frame's page (`{prefix}/diagram`), with its own policy
/// ([`bundle::DIAGRAM_CSP`]). An open route, like its scripts: the frame is sandboxed, so the
/// requests it makes come from an opaque origin, which carries no session cookie; and nothing
/// here is the user's (the page and its two scripts are the same for everyone, and the diagram's
/// source stays in the URL's fragment, which is never sent). 404 when the bundle has no diagram
/// renderer.
pub(crate) fn diagram_page(state: &State) -> Result<Response, ApiError> {
    let html = bundle::diagram_page(&state.settings.prefix)
        .ok_or_else(|| ApiError::NotFound("the UI bundle has no diagram renderer".into()))?;
    // The page names the scripts by their hashed names: a new bundle makes a new page.
    let csp = HeaderValue::from_static(bundle::DIAGRAM_CSP);
    Ok(crate::api::framed_page(html, csp, "no-cache"))
}

/// One of the diagram frame's two scripts (`{prefix}/diagram/{name}`), as [`asset`] sends a file.
pub(crate) fn diagram_script(req: &Req, name: &str) -> Result<Response, ApiError> {
    let script = bundle::diagram_script(name)
        .ok_or_else(|| ApiError::NotFound("no such diagram script".into()))?;
    send(req, script, false)
}

fn send(req: &Req, asset: bundle::Asset, head: bool) -> Result<Response, ApiError> {
    let headers = &req.parts.headers;
    let encoded = asset.encoded(|coding| accepts_encoding(headers, coding));
    let (body, etag) = encoded.map_or((asset.body, asset.etag), |(_, c)| (c.body, c.etag));
    let fresh = not_modified(headers, etag);
    let mut res = http::Response::new(if head || fresh { empty() } else { full(body) });
    if fresh {
        *res.status_mut() = StatusCode::NOT_MODIFIED;
    }
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    h.insert(header::ETAG, HeaderValue::from_static(etag));
    if let Some((coding, _)) = encoded.filter(|_| !fresh) {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding));
    }
    if asset.has_encodings() {
        h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if asset.immutable {
            "public, max-age=31536000, immutable"
        } else {
            "no-cache"
        }),
    );
    Ok(res)
}

fn not_found() -> ApiError {
    ApiError::NotFound("not found".into())
}
