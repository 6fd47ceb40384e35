//! MCP App views (SEP-1865) as the service serves them: the Content-Security-Policy built from a
//! view's `_meta.ui.csp` ([`csp`]), the short-lived tokens behind `{prefix}/apps/view/{token}` and
//! `{prefix}/apps/sandbox` ([`crate::live::views`]), proxy mode's per-server sandbox origins ([`origins`]) and
//! the sandbox proxy page ([`SANDBOX_PAGE`]).

pub(crate) mod csp;
pub(crate) mod origins;

/// The sandbox proxy page (proxy mode). `{{HOST_ORIGIN}}` is replaced by the JSON string of the
/// host page's origin, the only parent it talks to.
pub(crate) const SANDBOX_PAGE: &str = include_str!("sandbox.html");

/// The MIME type of an MCP App view (`RESOURCE_MIME_TYPE`).
pub(crate) const APP_MIME: &str = "text/html;profile=mcp-app";

/// True for `text/html;profile=mcp-app`, ignoring case and spaces around `;`.
pub(crate) fn is_app_mime(mime: Option<&str>) -> bool {
    mime.is_some_and(|m| {
        let parts: Vec<String> = m
            .split(';')
            .map(|p| p.trim().to_ascii_lowercase())
            .collect();
        parts == ["text/html", "profile=mcp-app"]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_mime_is_exact_modulo_case_and_spaces() {
        assert!(is_app_mime(Some(APP_MIME)));
        assert!(is_app_mime(Some("Text/HTML; profile=mcp-app")));
        assert!(!is_app_mime(Some("text/html")));
        assert!(!is_app_mime(Some("text/html+mcp")));
        assert!(!is_app_mime(Some("text/html;profile=mcp-app;x=1")));
        assert!(!is_app_mime(None));
    }
}
