//! MCP App views. `POST /api/apps/view {via, uri}` reads the view's
//! `ui://` resource from the server owning `via`, builds its CSP and answers a short-lived URL:
//!
//! - default mode: `{prefix}/apps/view/{token}`, bound to the asking principal, serving the HTML
//!   with the CSP as an HTTP header (the UI frames it without `allow-same-origin`);
//! - proxy mode (a sandbox origin is configured): `{sandbox}{prefix}/apps/sandbox?t={token}` on
//!   the view's own sandbox origin (one per MCP server, or its allowed `_meta.ui.domain`; see
//!   [`crate::apps::origins`]), the spec's sandbox proxy, served with the view's CSP, only on that
//!   host name, and pinned to the host page's origin; the HTML comes back in the answer for the
//!   UI to send in `sandbox-resource-ready`.

use base64::Engine;
use http::{HeaderValue, StatusCode, header};
use lmchatkit_protocol::{AppViewRequest, AppViewResponse};

use crate::access;
use crate::api::{self, ApiError, Response};
use crate::apps::origins::{authority_of, host_of};
use crate::apps::{APP_MIME, SANDBOX_PAGE, csp, is_app_mime};
use crate::live::views::ViewTicket;
use crate::routes::Req;
use crate::state::State;

/// `POST /api/apps/view`.
pub(crate) async fn create(state: &State, mut req: Req) -> Result<Response, ApiError> {
    let origin = req
        .parts
        .headers
        .get(header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .map(|o| o.trim_end_matches('/').to_owned());
    let body: AppViewRequest = req.json().await?;
    let (via, uri) = (body.via.trim(), body.uri.trim());
    if via.is_empty() {
        return Err(ApiError::BadRequest("via is required".into()));
    }
    if !uri.starts_with("ui://") {
        return Err(ApiError::BadRequest(format!(
            "uri {uri:?} is not a ui:// resource"
        )));
    }
    let host = &*state.host;
    let scope = access::view_scope(host, &req.cx, via).await?;
    let r = access::read_resource(host, &scope, uri).await?;
    if !is_app_mime(r.mime_type.as_deref()) {
        return Err(ApiError::Unprocessable(format!(
            "{uri} is {:?}, not an MCP App view ({APP_MIME})",
            r.mime_type.as_deref().unwrap_or("untyped")
        )));
    }
    let html = match (r.text, r.blob) {
        (Some(t), _) => t,
        (None, Some(b)) => base64::engine::general_purpose::STANDARD
            .decode(b.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| ApiError::Unprocessable(format!("{uri}: blob is not UTF-8 HTML")))?,
        (None, None) => return Err(ApiError::Unprocessable(format!("{uri} is empty"))),
    };
    let ui = r.ui.unwrap_or_default();
    let mode = match state.sandboxes {
        Some(_) => csp::Mode::Proxy,
        None => csp::Mode::Default,
    };
    let policy = csp::build(ui.csp.as_ref(), mode);
    let external_domains = csp::external_domains(ui.csp.as_ref());
    tracing::info!(via, uri, csp = %policy, "MCP App view");
    if !external_domains.is_empty() {
        tracing::warn!(via, uri, domains = ?external_domains, "MCP App view reaches external domains");
    }
    let principal = req.cx.principal().id().to_owned();
    let mut answer = AppViewResponse {
        permissions: ui.permissions.clone(),
        prefers_border: ui.prefers_border,
        allow: csp::allow_attribute(ui.permissions.as_ref()),
        external_domains,
        server: scope.server().map(str::to_owned),
        ..Default::default()
    };
    match &state.sandboxes {
        None => {
            let token = state
                .views
                .issue(ViewTicket {
                    principal,
                    csp: policy,
                    html: Some(html),
                    host_origin: None,
                    sandbox_origin: None,
                })
                .await?;
            answer.url = format!("{}/apps/view/{token}", state.settings.prefix);
        }
        Some(sandboxes) => {
            let host_origin = origin.filter(|o| is_origin(o)).ok_or_else(|| {
                ApiError::BadRequest("proxy mode needs the page's Origin header".into())
            })?;
            let sandbox = sandboxes.origin_for(scope.server(), ui.domain.as_deref());
            let token = state
                .views
                .issue(ViewTicket {
                    principal,
                    csp: policy,
                    html: None,
                    host_origin: Some(host_origin),
                    sandbox_origin: Some(sandbox.clone()),
                })
                .await?;
            answer.url = format!("{sandbox}{}/apps/sandbox?t={token}", state.settings.prefix);
            answer.proxy = true;
            answer.html = Some(html);
        }
    }
    Ok(api::json(StatusCode::OK, &answer))
}

/// `GET /apps/view/{token}` (default mode): the view's HTML under its CSP, once, for the
/// principal that asked for it.
pub(crate) async fn page(state: &State, req: Req, token: &str) -> Result<Response, ApiError> {
    let me = req.cx.principal();
    let ticket = state
        .views
        .redeem(token, |t| t.html.is_some() && t.principal == me.id())
        .await?
        .ok_or_else(|| ApiError::NotFound("this view link expired or is not yours".into()))?;
    let mut res = html_response(ticket.html.unwrap_or_default(), &ticket.csp)?;
    // Only the chat page (same origin) may frame it.
    res.headers_mut().insert(
        header::X_FRAME_OPTIONS,
        HeaderValue::from_static("SAMEORIGIN"),
    );
    Ok(res)
}

/// `GET /apps/sandbox?t={token}` (proxy mode, on the view's own sandbox origin only): the
/// sandbox proxy page under the view's CSP, talking only to the host origin recorded in the
/// token.
pub(crate) async fn sandbox(state: &State, req: Req) -> Result<Response, ApiError> {
    let sandboxes = state
        .sandboxes
        .as_ref()
        .ok_or_else(|| ApiError::NotFound("not found".into()))?;
    // Served on the host's own origin, the proxy would hand the view the host's origin; served
    // on another server's, the view could script that server's views.
    if !sandboxes.is_sandbox_host(&req.parts) {
        return Err(ApiError::NotFound(
            "the sandbox is served on the sandbox origin only".into(),
        ));
    }
    let host = host_of(&req.parts)
        .map(|(name, port)| match port {
            Some(p) => format!("{name}:{p}"),
            None => name,
        })
        .unwrap_or_default();
    let token = req
        .parts
        .uri
        .query()
        .unwrap_or_default()
        .split('&')
        .find_map(|kv| kv.strip_prefix("t="))
        .unwrap_or_default();
    let ticket = state
        .views
        .redeem(token, |t| {
            t.host_origin.is_some()
                && t.sandbox_origin.as_deref().map(authority_of).as_deref() == Some(host.as_str())
        })
        .await?
        .ok_or_else(|| ApiError::NotFound("this view link expired".into()))?;
    let host_origin = ticket.host_origin.unwrap_or_default();
    let quoted = serde_json::to_string(&host_origin).unwrap_or_else(|_| "\"\"".into());
    html_response(
        SANDBOX_PAGE.replace("{{HOST_ORIGIN}}", &quoted),
        &ticket.csp,
    )
}

/// `scheme://host[:port]` with nothing that could break out of a JSON string in a script.
fn is_origin(o: &str) -> bool {
    let Some((scheme, rest)) = o.split_once("://") else {
        return false;
    };
    matches!(scheme, "http" | "https")
        && !rest.is_empty()
        && rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
}

fn html_response(html: String, csp: &str) -> Result<Response, ApiError> {
    let csp = HeaderValue::from_str(csp)
        .map_err(|_| ApiError::Internal("the view's CSP is not a valid header".into()))?;
    Ok(api::framed_page(html, csp, "no-store"))
}

#[cfg(test)]
mod tests {
    use super::is_origin;

    #[test]
    fn origins_are_plain() {
        assert!(is_origin("http://127.0.0.1:8080"));
        assert!(is_origin("https://chat.example"));
        assert!(is_origin("http://[::1]:3000"));
        assert!(!is_origin("null"));
        assert!(!is_origin("javascript://x"));
        assert!(!is_origin("http://a\"</script>"));
        assert!(!is_origin("http://a/path"));
    }
}
