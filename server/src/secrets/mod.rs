//! Keeping secrets out of what lmchatkit shows, logs and forwards.
//!
//! Decisions:
//! - **`Debug`** of every type that holds a key, a token, a header value or an environment
//!   value prints [`REDACTED`] (or only the names) instead: `OpenAiConfig`, `OpenAiBackend`,
//!   `McpServerConfig` and the app's settings. Each says so in a doctest or unit test.
//! - **URLs** in logs, in `Debug` output and in the MCP statuses and errors of `/api/config`
//!   lose their userinfo, query and fragment ([`redact_url`], [`redact_urls`]). Scheme, host,
//!   port and path stay, so an operator can still tell which endpoint failed; a secret in the
//!   *path* (rare) is not caught.
//! - **Log lines of other crates** (rmcp logs a failed connection's URL, query and all) are
//!   caught at the writer: [`RedactingWriter`] runs [`redact_urls`] over each whole line before
//!   it reaches its output. The app writes its logs through it; a library user can do the same.
//! - **Redirects** of the OpenAI-compatible upstream and of Streamable HTTP MCP servers are
//!   followed only within the origin (scheme, host and port) of the first request
//!   ([`same_origin_redirects`]). reqwest drops `Authorization` and cookies on a cross-host
//!   redirect but keeps every other header, so a configured `api-key` or `X-Api-Key` would
//!   reach the other host. Another port is another origin too (another service may listen
//!   there). A refused redirect fails the request with an error naming both origins.
//! - **stdio MCP servers** start from a cleared environment: the platform basics, the
//!   locale, and only what their configuration lists (see `McpTransport::Stdio`).
//! - **At rest**, credentials users hand over are sealed under the server's key ([`sealing`]).

use std::fmt;

pub mod sealing;
pub(crate) mod signing;

/// What `Debug` output shows in place of a secret.
pub const REDACTED: &str = "<redacted>";

/// `Debug`-prints as [`REDACTED`]: a stand-in for a secret field in a hand-written `Debug`.
///
/// ```
/// use lmchatkit::secrets::Redacted;
/// let key = Some("sk-secret");
/// assert_eq!(format!("{:?}", key.map(|_| Redacted)), "Some(<redacted>)");
/// ```
#[derive(Clone, Copy, Default)]
pub struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Header names with their values redacted, for `Debug`.
///
/// ```
/// use lmchatkit::secrets::redacted_headers;
/// let h = vec![("api-key".to_owned(), "sk-secret".to_owned())];
/// assert_eq!(format!("{:?}", redacted_headers(&h)), r#"[("api-key", <redacted>)]"#);
/// ```
pub fn redacted_headers(headers: &[(String, String)]) -> Vec<(&str, Redacted)> {
    headers
        .iter()
        .map(|(name, _)| (name.as_str(), Redacted))
        .collect()
}

/// One URL without its userinfo, query and fragment; text without `://` is returned as is.
///
/// ```
/// use lmchatkit::secrets::redact_url;
/// assert_eq!(
///     redact_url("https://user:pass@host.example/path?token=x#f"),
///     "https://host.example/path"
/// );
/// ```
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    // The authority ends at the first '/', '?' or '#'; the query and fragment go whole.
    let rest = &rest[..rest.find(['?', '#']).unwrap_or(rest.len())];
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    format!("{scheme}://{host}{path}")
}

/// `text` with every URL in it (any `scheme://…`, up to whitespace, a quote, `<`, `>`, a
/// backtick or a backslash) passed through [`redact_url`]. Punctuation that ends a URL
/// (`)`, `.`, `,`, …) is kept as text.
///
/// ```
/// use lmchatkit::secrets::redact_urls;
/// assert_eq!(
///     redact_urls("error sending request for url (http://h:1/mcp?token=x): refused"),
///     "error sending request for url (http://h:1/mcp): refused"
/// );
/// ```
pub fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(sep) = rest.find("://") {
        // The scheme: ASCII letters, digits, '+', '-', '.' before "://", from a letter on.
        let bytes = rest.as_bytes();
        let mut start = sep
            - bytes[..sep]
                .iter()
                .rev()
                .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
                .count();
        while start < sep && !bytes[start].is_ascii_alphabetic() {
            start += 1;
        }
        if start == sep {
            out.push_str(&rest[..sep + 3]);
            rest = &rest[sep + 3..];
            continue;
        }
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | '\\'))
            .unwrap_or(tail.len());
        let url = &tail[..end];
        let kept = url.trim_end_matches([')', ']', '}', '.', ',', ';', ':', '!']);
        out.push_str(&redact_url(kept));
        out.push_str(&url[kept.len()..]);
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// A writer that holds what is written until it is dropped, then writes it with every URL's
/// userinfo, query and fragment removed ([`redact_urls`]). A `tracing` formatter writes one
/// event per writer, so each log line is redacted whole, whatever crate logged it:
///
/// ```
/// use std::io::Write;
/// use lmchatkit::secrets::RedactingWriter;
///
/// let mut out = Vec::new();
/// {
///     let mut w = RedactingWriter::new(&mut out);
///     write!(w, "connecting to http://h.example/mcp").unwrap();
///     writeln!(w, "?token=secret failed").unwrap();
/// }
/// assert_eq!(String::from_utf8(out).unwrap(), "connecting to http://h.example/mcp failed\n");
/// // With tracing-subscriber:
/// // fmt().with_writer(|| RedactingWriter::new(std::io::stderr())).init();
/// ```
pub struct RedactingWriter<W: std::io::Write> {
    inner: W,
    held: Vec<u8>,
}

impl<W: std::io::Write> RedactingWriter<W> {
    /// Redacts into `inner`.
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            held: Vec::new(),
        }
    }
}

impl<W: std::io::Write> std::io::Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.held.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        // Held until the end: a URL may be split across writes.
        Ok(())
    }
}

impl<W: std::io::Write> Drop for RedactingWriter<W> {
    fn drop(&mut self) {
        if self.held.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&self.held);
        // Nowhere to report a failed log write.
        let _ = self.inner.write_all(redact_urls(&text).as_bytes());
        let _ = self.inner.flush();
    }
}

/// `scheme://host:port` of `url`, as set-up problems name a server; [`redact_url`]'s text when
/// it does not parse.
#[cfg(any(feature = "openai", feature = "mcp"))]
pub(crate) fn origin(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => u.origin().ascii_serialization(),
        Err(_) => redact_url(url),
    }
}

/// The redirect policy of lmchatkit's HTTP clients: follow at most 10 redirects, and only
/// within the origin (scheme, host, port) of the first request; any other redirect fails the
/// request. Give it to a client of your own passed to `OpenAiConfig::with_http_client`.
///
/// ```
/// let client = reqwest::Client::builder()
///     .redirect(lmchatkit::secrets::same_origin_redirects())
///     .build()
///     .unwrap();
/// # let _ = client;
/// ```
#[cfg(any(feature = "openai", feature = "mcp"))]
pub fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let Some(first) = attempt.previous().first() else {
            return attempt.follow();
        };
        let (from, to) = (first.origin(), attempt.url().origin());
        if from != to {
            let error = CrossOriginRedirect {
                from: from.ascii_serialization(),
                to: to.ascii_serialization(),
            };
            attempt.error(error)
        } else if attempt.previous().len() > 10 {
            attempt.error("too many redirects")
        } else {
            attempt.follow()
        }
    })
}

/// A redirect to another origin, refused.
#[cfg(any(feature = "openai", feature = "mcp"))]
#[derive(Debug)]
struct CrossOriginRedirect {
    from: String,
    to: String,
}

#[cfg(any(feature = "openai", feature = "mcp"))]
impl fmt::Display for CrossOriginRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "refused a redirect from {} to another origin ({}); configure the final URL instead",
            self.from, self.to
        )
    }
}

#[cfg(any(feature = "openai", feature = "mcp"))]
impl std::error::Error for CrossOriginRedirect {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_loses_its_userinfo_query_and_fragment() {
        for (url, want) in [
            (
                "https://user:pass@host.example:8443/path/x?token=t#frag",
                "https://host.example:8443/path/x",
            ),
            ("http://127.0.0.1:1/mcp?token=t", "http://127.0.0.1:1/mcp"),
            ("https://host/path", "https://host/path"),
            ("https://:only-pass@host", "https://host"),
            ("https://a@b@host/p", "https://host/p"),
            ("https://host?key=k", "https://host"),
            ("https://host#k", "https://host"),
            (
                "postgres://app:db-pass@db:5432/app",
                "postgres://db:5432/app",
            ),
            ("not a url", "not a url"),
        ] {
            assert_eq!(redact_url(url), want, "{url}");
        }
    }

    #[test]
    fn every_url_in_a_text_is_redacted_and_the_rest_kept() {
        let text = "error sending request for url (https://u:p@h.example/mcp?token=t): \
                    connection refused; also see HTTP://x:y@other/a#f, ws://w/s?k=v.";
        assert_eq!(
            redact_urls(text),
            "error sending request for url (https://h.example/mcp): \
             connection refused; also see HTTP://other/a, ws://w/s."
        );
    }

    #[test]
    fn urls_end_at_whitespace_quotes_and_brackets_of_the_text() {
        assert_eq!(
            redact_urls(r#"{"url":"https://h/p?key=k","x":1} <http://h/?a=b> `ftp://u:p@f/`"#),
            r#"{"url":"https://h/p","x":1} <http://h/> `ftp://f/`"#
        );
        assert_eq!(
            redact_urls(r#"said \"https://h/p?key=k\" twice"#),
            r#"said \"https://h/p\" twice"#
        );
    }

    #[test]
    fn a_query_is_dropped_whole_even_when_it_holds_brackets() {
        assert_eq!(redact_urls("(https://h/p?t=se)cret x"), "(https://h/p x");
        assert_eq!(redact_urls("(https://h/p?t=secret)"), "(https://h/p)");
    }

    #[test]
    fn text_without_urls_is_unchanged() {
        for text in ["", "plain", "a :// b", "://x?y", "1://x", "ünïcödé ://"] {
            assert_eq!(redact_urls(text), text);
        }
    }

    #[test]
    fn redacted_debug_shows_no_value() {
        assert_eq!(format!("{:?}", Some(Redacted)), "Some(<redacted>)");
    }
}
