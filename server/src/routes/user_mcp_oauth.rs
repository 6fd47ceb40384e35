//! `GET {prefix}/api/mcp/oauth/callback?code&state`: where the authorization server sends the
//! browser at the end of a sign-in to a user's MCP server. It is a top-level navigation, so it
//! answers a small HTML page, never JSON. The rules are [`crate::user_mcp::oauth`]'s.
//!
//! Decisions:
//! - **The page tells the chat UI, which reads the server again.** After a sign-in the page
//!   posts a [`SignInSignal`] (the slug and the new status, as a JSON string) on the
//!   `BroadcastChannel` [`SIGN_IN_CHANNEL`], which reaches the UI's tabs of the same origin
//!   (the "Tools & servers" screen re-reads that server; it also re-reads on window focus, for
//!   a UI on another origin). Nothing from the query string goes into the signal: the slug
//!   comes from the sealed `state`, and the signal is only a hint (the UI believes the
//!   service's answer, not the message). The sign-in tab has no opener (the UI opens it
//!   without), so there is no `window.opener` to post to.
//! - **One fixed script, allowed by its hash.** The page's policy stays `default-src 'none'`
//!   and adds only `script-src 'sha256-…'` of [`SCRIPT`]: no inline script other than that
//!   exact text runs, and no script loads. The signal travels in an HTML-escaped `data-`
//!   attribute that the script reads, so the script's text (and hash) never changes. A page
//!   that failed carries no script. Every text on the page is escaped.

use http::{HeaderValue, StatusCode, header};
use lmchatkit_protocol::{SIGN_IN_CHANNEL, SignInSignal};

use crate::api::{ApiError, Response, full};
use crate::bundle::escape_html;
use crate::routes::Req;
use crate::state::State;
use crate::user_mcp::oauth::Callback;

/// The page's only script: posts the `data-signal` of `#lmck-sign-in` on its `data-channel`.
const SCRIPT: &str = "(function () {\n  var el = document.getElementById(\"lmck-sign-in\");\n  \
    if (!el || typeof BroadcastChannel !== \"function\") return;\n  \
    new BroadcastChannel(el.getAttribute(\"data-channel\")).postMessage(el.getAttribute(\"data-signal\"));\n\
    })();\n";

/// The page's own policy: nothing loads, nothing frames it, no form goes anywhere, and the only
/// script that runs is [`SCRIPT`] (base64 of its SHA-256; a unit test checks it).
const PAGE_CSP: &str = "default-src 'none'; \
    script-src 'sha256-E32LkYUIv4/zwdwo8dWK92Kxmk/Pskd49Dr7/9T6/kU='; \
    base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Ends a sign-in and answers the page saying how it went.
pub(crate) async fn callback(state: &State, req: Req) -> Result<Response, ApiError> {
    let Some(um) = state.user_mcp.as_ref() else {
        return Err(ApiError::NotFound("not found".into()));
    };
    let callback = Callback::parse(req.parts.uri.query().unwrap_or_default());
    let principal = req.cx.has_principal().then(|| req.cx.principal());
    match um.finish_sign_in(principal.as_ref(), callback).await {
        Ok(server) => Ok(page(
            StatusCode::OK,
            &format!("Signed in to {}", server.name),
            "You can close this tab and go back to the chat.",
            Some(&SignInSignal::new(server.slug, server.oauth_status)),
        )),
        Err(e) => {
            let e = ApiError::from(e);
            let text = e.to_string();
            let mut chars = text.chars();
            let text: String = chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_default();
            Ok(page(e.status(), "Sign-in not completed", &text, None))
        }
    }
}

/// The HTML page: `title` and one paragraph, both escaped, and with a `signal` the script that
/// posts it.
fn page(status: StatusCode, title: &str, text: &str, signal: Option<&SignInSignal>) -> Response {
    let (title, text) = (escape_html(title), escape_html(text));
    let (attrs, script) = match signal.map(serde_json::to_string) {
        Some(Ok(json)) => (
            format!(
                " id=\"lmck-sign-in\" data-channel=\"{}\" data-signal=\"{}\"",
                escape_html(SIGN_IN_CHANNEL),
                escape_html(&json)
            ),
            format!("<script>{SCRIPT}</script>\n"),
        ),
        Some(Err(e)) => {
            tracing::error!(error = %e, "the sign-in signal could not be serialized");
            (String::new(), String::new())
        }
        None => (String::new(), String::new()),
    };
    let body = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n</head>\n<body>\n<main{attrs}>\n<h1>{title}</h1>\n<p>{text}</p>\n\
         </main>\n{script}</body>\n</html>\n"
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

#[cfg(test)]
mod tests {
    use base64::Engine;
    use http_body_util::BodyExt;
    use lmchatkit_protocol::OAuthStatus;
    use sha2::{Digest, Sha256};

    use super::*;

    async fn body(res: Response) -> String {
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[test]
    fn the_policy_allows_exactly_the_pages_script() {
        let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(SCRIPT));
        assert!(
            PAGE_CSP.contains(&format!("script-src 'sha256-{hash}';")),
            "{PAGE_CSP} does not allow the script, whose hash is {hash}"
        );
        assert!(!PAGE_CSP.contains("unsafe"), "{PAGE_CSP}");
        assert!(PAGE_CSP.starts_with("default-src 'none';"), "{PAGE_CSP}");
    }

    #[tokio::test]
    async fn a_signed_in_page_carries_only_the_slug_and_status_for_the_ui() {
        let signal = SignInSignal::new("docs", OAuthStatus::SignedIn);
        let res = page(StatusCode::OK, "Signed in to <Docs>", "x", Some(&signal));
        let csp = res.headers()[header::CONTENT_SECURITY_POLICY].clone();
        assert_eq!(csp, PAGE_CSP);
        let html = body(res).await;
        assert!(
            html.contains("<h1>Signed in to &lt;Docs&gt;</h1>"),
            "{html}"
        );
        assert!(
            html.contains(
                "data-channel=\"lmchatkit-mcp-sign-in\" \
                 data-signal=\"{&quot;slug&quot;:&quot;docs&quot;,&quot;oauth&quot;:&quot;signed_in&quot;}\""
            ),
            "{html}"
        );
        assert!(
            html.contains(&format!("<script>{SCRIPT}</script>")),
            "{html}"
        );
        assert_eq!(html.matches("<script").count(), 1, "{html}");
    }

    #[tokio::test]
    async fn a_failed_page_has_no_script_and_escapes_what_it_repeats() {
        let said = "Refused: <script>alert(1)</script>\"'&";
        let html = body(page(
            StatusCode::FORBIDDEN,
            "Sign-in not completed",
            said,
            None,
        ))
        .await;
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("data-signal"), "{html}");
        assert!(
            html.contains("Refused: &lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"),
            "{html}"
        );
    }
}
