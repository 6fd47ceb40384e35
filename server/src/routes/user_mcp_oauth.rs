//! `GET {prefix}/api/mcp/oauth/callback?code&state`: where the authorization server sends the
//! browser at the end of a sign-in to a user's MCP server. It is a top-level navigation, so it
//! answers a small HTML page (no script, its own strict policy), never JSON. The rules are
//! [`crate::user_mcp::oauth`]'s.

use http::{HeaderValue, StatusCode, header};

use crate::bundle::escape_html;
use crate::http_util::{ApiError, Response, full};
use crate::service::Req;
use crate::state::State;
use crate::user_mcp::oauth::Callback;

/// The page's own policy: nothing loads, nothing frames it, no form goes anywhere.
const PAGE_CSP: &str =
    "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Ends a sign-in and answers the page saying how it went.
pub(crate) async fn callback(state: &State, req: Req) -> Result<Response, ApiError> {
    let Some(um) = state.user_mcp.as_ref() else {
        return Err(ApiError::NotFound("not found".into()));
    };
    let callback = Callback::parse(req.parts.uri.query().unwrap_or_default());
    let principal = req.cx.has_principal().then(|| req.cx.principal());
    match um.finish_sign_in(principal.as_ref(), callback).await {
        Ok(name) => Ok(page(
            StatusCode::OK,
            &format!("Signed in to {name}"),
            "You can close this tab and go back to the chat.",
        )),
        Err(e) => {
            let e = ApiError::from(e);
            let text = e.to_string();
            let mut chars = text.chars();
            let text: String = chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_default();
            Ok(page(e.status(), "Sign-in not completed", &text))
        }
    }
}

/// The HTML page: `title` and one paragraph, both escaped.
fn page(status: StatusCode, title: &str, text: &str) -> Response {
    let (title, text) = (escape_html(title), escape_html(text));
    let body = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n</head>\n<body>\n<main>\n<h1>{title}</h1>\n<p>{text}</p>\n\
         </main>\n</body>\n</html>\n"
    );
    let mut res = http::Response::new(full(body));
    *res.status_mut() = status;
    let h = res.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CONTENT_SECURITY_POLICY, PAGE_CSP),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ] {
        h.insert(name, HeaderValue::from_static(value));
    }
    res
}
