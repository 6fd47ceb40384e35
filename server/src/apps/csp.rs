//! The view's Content-Security-Policy, exactly the spec's template (MCP Apps 2026-01-26,
//! Security §4) filled with the declared domains, or the restrictive default when `_meta.ui.csp`
//! is absent. Never loosened: a domain entry that could inject a directive or a keyword (`;`,
//! `,`, quotes, whitespace) is dropped, and so is an empty one.
//!
//! Two directives go beyond the template:
//! - `form-action`: a form post is a request `connect-src` does not govern, so without it a view
//!   with `connect-src 'none'` could still send data anywhere. It is `'none'`, or the declared
//!   `connectDomains` (the only places the view may send data to anyway; never `'self'`, which in
//!   default mode is the chat's own origin).
//! - `sandbox allow-scripts allow-forms` in default mode: the page is sandboxed (opaque origin,
//!   no popups, no top navigation) even when opened outside the chat's iframe. Proxy mode has
//!   none: the proxy must stay same-origin with the inner view it writes, and its own host name
//!   isolates it.

use lmchatkit_protocol::{UiCsp, UiPermissions};

/// The policy when the view declares no `csp` (stable spec default, plus `object-src`,
/// `frame-src` and `base-uri` as the sandbox-proxy rules require, and `form-action`).
pub(crate) const DEFAULT_CSP: &str = "default-src 'none'; script-src 'self' 'unsafe-inline'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; media-src 'self' data:; \
     connect-src 'none'; frame-src 'none'; object-src 'none'; base-uri 'self'; \
     form-action 'none'";

/// Added in default mode (the iframe's own sandbox, as a policy).
pub(crate) const SANDBOX: &str = "sandbox allow-scripts allow-forms";

/// How the view is isolated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// An opaque-origin page on the chat's origin.
    Default,
    /// The sandbox proxy on the view's own sandbox origin.
    Proxy,
}

/// A domain entry is kept only when it cannot change the policy's structure.
fn safe(domain: &str) -> bool {
    !domain.is_empty()
        && !domain
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, ';' | ',' | '\'' | '"') || c.is_control())
}

/// The kept entries of a domain list.
pub(crate) fn clean(domains: &[String]) -> Vec<&str> {
    domains
        .iter()
        .map(String::as_str)
        .filter(|d| safe(d))
        .collect()
}

/// Logs the entries [`clean`] drops (once per view, when its policy is built).
fn warn_dropped(domains: &[String]) {
    for d in domains.iter().filter(|d| !safe(d)) {
        tracing::warn!(domain = ?d, "dropping an MCP App CSP domain that could inject");
    }
}

/// Every domain list, in the order the warning names them.
fn lists(csp: &UiCsp) -> [&Vec<String>; 4] {
    [
        &csp.resource_domains,
        &csp.connect_domains,
        &csp.frame_domains,
        &csp.base_uri_domains,
    ]
}

fn with(base: &str, domains: &[&str]) -> String {
    let mut s = base.to_owned();
    for d in domains {
        s.push(' ');
        s.push_str(d);
    }
    s
}

/// The `Content-Security-Policy` header value for a view.
pub(crate) fn build(csp: Option<&UiCsp>, mode: Mode) -> String {
    let policy = template(csp);
    match mode {
        Mode::Default => format!("{policy}; {SANDBOX}"),
        Mode::Proxy => policy,
    }
}

/// The template filled in (or the default), with `form-action`.
fn template(csp: Option<&UiCsp>) -> String {
    let Some(csp) = csp else {
        return DEFAULT_CSP.to_owned();
    };
    lists(csp).into_iter().for_each(|l| warn_dropped(l));
    let r = clean(&csp.resource_domains);
    let c = clean(&csp.connect_domains);
    let f = clean(&csp.frame_domains);
    let b = clean(&csp.base_uri_domains);
    let frame = if f.is_empty() {
        "frame-src 'none'".to_owned()
    } else {
        with("frame-src", &f)
    };
    let base = if b.is_empty() {
        "base-uri 'self'".to_owned()
    } else {
        with("base-uri", &b)
    };
    [
        "default-src 'none'".to_owned(),
        with("script-src 'self' 'unsafe-inline'", &r),
        with("style-src 'self' 'unsafe-inline'", &r),
        with("connect-src 'self'", &c),
        with("img-src 'self' data:", &r),
        with("font-src 'self'", &r),
        with("media-src 'self' data:", &r),
        frame,
        "object-src 'none'".to_owned(),
        base,
        if c.is_empty() {
            "form-action 'none'".to_owned()
        } else {
            with("form-action", &c)
        },
    ]
    .join("; ")
}

/// Every external origin the policy admits, deduplicated (for the user-facing warning).
pub(crate) fn external_domains(csp: Option<&UiCsp>) -> Vec<String> {
    let Some(csp) = csp else { return Vec::new() };
    let mut out: Vec<String> = Vec::new();
    for list in lists(csp) {
        for d in clean(list) {
            if !out.iter().any(|o| o == d) {
                out.push(d.to_owned());
            }
        }
    }
    out
}

/// The iframe `allow` attribute for the asked permissions (`buildAllowAttribute`).
pub(crate) fn allow_attribute(p: Option<&UiPermissions>) -> String {
    let Some(p) = p else { return String::new() };
    [
        (p.camera.is_some(), "camera"),
        (p.microphone.is_some(), "microphone"),
        (p.geolocation.is_some(), "geolocation"),
        (p.clipboard_write.is_some(), "clipboard-write"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect::<Vec<_>>()
    .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn csp(v: serde_json::Value) -> UiCsp {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn absent_csp_is_the_restrictive_default() {
        assert_eq!(build(None, Mode::Proxy), DEFAULT_CSP);
        assert!(DEFAULT_CSP.contains("connect-src 'none'"));
    }

    #[test]
    fn template_filled_with_declared_domains() {
        let c = csp(json!({
            "connectDomains": ["https://api.example"],
            "resourceDomains": ["https://cdn.example", "https://*.fonts.example"],
            "frameDomains": ["https://embed.example"],
            "baseUriDomains": ["https://base.example"]
        }));
        assert_eq!(
            build(Some(&c), Mode::Proxy),
            "default-src 'none'; \
             script-src 'self' 'unsafe-inline' https://cdn.example https://*.fonts.example; \
             style-src 'self' 'unsafe-inline' https://cdn.example https://*.fonts.example; \
             connect-src 'self' https://api.example; \
             img-src 'self' data: https://cdn.example https://*.fonts.example; \
             font-src 'self' https://cdn.example https://*.fonts.example; \
             media-src 'self' data: https://cdn.example https://*.fonts.example; \
             frame-src https://embed.example; object-src 'none'; base-uri https://base.example; \
             form-action https://api.example"
        );
    }

    #[test]
    fn empty_lists_fall_back_to_none_and_self() {
        let s = build(Some(&csp(json!({}))), Mode::Proxy);
        assert!(s.contains("frame-src 'none'"), "{s}");
        assert!(s.contains("base-uri 'self'"), "{s}");
        assert!(s.contains("connect-src 'self';"), "{s}");
    }

    #[test]
    fn injection_attempts_are_dropped() {
        let c = csp(json!({"connectDomains": [
            "https://ok.example",
            "https://a.example; script-src *",
            "'unsafe-eval'",
            "https://b.example\nscript-src *",
            "https://c.example https://d.example",
            "\"x\"",
            "https://e.example,https://f.example",
            ""
        ]}));
        let s = build(Some(&c), Mode::Proxy);
        assert!(s.contains("connect-src 'self' https://ok.example;"), "{s}");
        for bad in [
            "a.example",
            "unsafe-eval",
            "b.example",
            "c.example",
            "e.example",
            "*",
        ] {
            assert!(!s.contains(bad), "{bad} leaked into {s}");
        }
        assert_eq!(s.matches(';').count(), 10, "eleven directives: {s}");
        assert_eq!(external_domains(Some(&c)), vec!["https://ok.example"]);
    }

    #[test]
    fn views_may_not_post_forms_and_default_mode_is_sandboxed() {
        let none = build(None, Mode::Default);
        assert!(none.contains("; form-action 'none'"), "{none}");
        assert!(
            none.ends_with("; sandbox allow-scripts allow-forms"),
            "{none}"
        );
        let declared = build(
            Some(&csp(json!({"connectDomains": ["https://api.example"]}))),
            Mode::Default,
        );
        assert_eq!(
            build(None, Mode::Proxy),
            DEFAULT_CSP,
            "no sandbox in proxy mode"
        );
        assert!(
            declared.contains("; form-action https://api.example"),
            "{declared}"
        );
        assert!(!declared.contains("form-action 'self'"), "{declared}");
    }

    #[test]
    fn permissions_map_to_allow() {
        let p: UiPermissions =
            serde_json::from_value(json!({"camera": {}, "clipboardWrite": {}})).unwrap();
        assert_eq!(allow_attribute(Some(&p)), "camera; clipboard-write");
        assert_eq!(allow_attribute(None), "");
    }
}
