//! An MCP server that did not start or connect, as the operator's [`SetupProblem`]: [`fix`]
//! reads the connect error against the server's transport and names the setting to change.
//!
//! Decisions:
//! - **From the error the hub already has**: the connect error is the hub's own text (the
//!   spawn's `io::Error`, rmcp's handshake error, the connect timeout), so no probe is sent;
//!   the problem lasts while the server's status is `error` and goes when it connects.
//! - **One fix per cause**: a command not found names `PATH` and `command`; one that is not
//!   executable names its permissions; a child that exits or closes its output during the
//!   handshake is run by hand to see its error (its stderr is only in the debug log); a request
//!   that got no answer (refused, unknown host) names the URL's host and port; 401/403 the credentials (`headers`, sign-in);
//!   404 the endpoint path; a timeout the first `npx`/`uvx` download or the URL.
//! - URLs are redacted like the status error (no userinfo or query).

use lmchatkit_protocol::SetupProblem;

use super::{McpServerConfig, McpTransport};
use crate::secrets::redact_url;

/// The problem of server `cfg` whose connection failed with `error` (already redacted).
pub(crate) fn problem(cfg: &McpServerConfig, error: &str) -> SetupProblem {
    SetupProblem::new(
        format!("MCP server {}", cfg.name),
        error,
        fix(&cfg.transport, error),
    )
}

/// The likely fix for a connect `error` of a server reached over `transport`.
pub(crate) fn fix(transport: &McpTransport, error: &str) -> String {
    // Without its URLs: a port or path such as `:4040` must not read as a status.
    let e = error
        .split_whitespace()
        .filter(|word| !word.contains("://"))
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| e.contains(n));
    let timed_out = has(&["no answer within", "timed out", "timeout"]);
    match transport {
        McpTransport::Stdio { command, args, .. } => {
            let line = std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ");
            if has(&["no such file", "not found", "os error 2"]) && e.contains("cannot start") {
                format!(
                    "`{command}` was not found: install it (`npx` and `node` come with Node.js, \
                     `uvx` with uv) or put its full path in `command`; the server is started \
                     with the app's PATH"
                )
            } else if has(&["permission denied", "os error 13"]) {
                format!("`{command}` is not executable: check its permissions (chmod +x)")
            } else if timed_out {
                format!(
                    "`{line}` did not finish the MCP handshake in time: a first `npx`/`uvx` run \
                     downloads the package (install it ahead, or start the app again), and a \
                     program that is not an MCP server never answers"
                )
            } else {
                format!(
                    "`{line}` exited or closed its output before the MCP handshake: run it by \
                     hand to see its error (its stderr is in the log at debug level: \
                     RUST_LOG=lmchatkit=debug), and check `args`, `env` and `cwd`"
                )
            }
        }
        McpTransport::Http { url, .. } | McpTransport::Sse { url, .. } => {
            let sse = matches!(transport, McpTransport::Sse { .. });
            let shown = redact_url(url);
            let origin = crate::secrets::origin(url);
            if has(&["operator must sign"]) {
                format!(
                    "sign the service in to {shown}: open the operator's page, \
                     `{{prefix}}{}` (e.g. /chat{}), and press Sign in",
                    super::OPERATOR_PAGE_PATH,
                    super::OPERATOR_PAGE_PATH
                )
            } else if has(&["401", "403", "unauthorized", "forbidden"]) {
                format!(
                    "{shown} refused the credentials: check the server's `headers` (or its \
                     bearer token), or sign in again for an OAuth server"
                )
            } else if has(&["404", "not found"]) && sse {
                format!(
                    "{shown} answered 404: check `url`'s path (HTTP+SSE servers usually serve \
                     their event stream at `/sse`)"
                )
            } else if has(&["404", "not found"]) {
                format!(
                    "{shown} answered 404: check `url`'s path (Streamable HTTP servers usually \
                     serve `/mcp`)"
                )
            } else if timed_out {
                format!("{origin} did not answer in time: check that it is reachable from here")
            } else if has(&[
                "connect",
                "refused",
                "dns",
                "resolve",
                "error sending request",
            ]) {
                // reqwest's "error sending request" is a request that got no answer at all.
                format!(
                    "no answer from {origin}: check that the server runs and that `url`'s host \
                     and port are right"
                )
            } else if e.starts_with("header ") {
                "a header in `headers` is not a valid HTTP header name or value".to_owned()
            } else if sse {
                format!(
                    "check that {shown} is the event stream of an HTTP+SSE MCP server (`url` with \
                     `transport = \"sse\"`): {e}"
                )
            } else {
                format!("check that {shown} is a Streamable HTTP MCP endpoint (`url`)")
            }
        }
        McpTransport::InProcess(_) => {
            "the in-process server failed its handshake: see the log for its error".to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(command: &str) -> McpTransport {
        McpServerConfig::stdio("s", command, ["-y", "pkg"]).transport
    }

    fn http(url: &str) -> McpTransport {
        McpServerConfig::http("h", url).transport
    }

    #[test]
    fn a_command_not_on_path_names_path_and_command() {
        let f = fix(
            &stdio("npx"),
            "cannot start \"npx\": No such file or directory (os error 2)",
        );
        assert!(
            f.starts_with("`npx` was not found") && f.contains("`command`"),
            "{f}"
        );
    }

    #[test]
    fn a_child_that_exits_is_run_by_hand_and_a_slow_one_is_the_first_download() {
        let f = fix(&stdio("npx"), "connection closed: initialize response");
        assert!(
            f.contains("run it by hand") && f.contains("`npx -y pkg`"),
            "{f}"
        );
        let f = fix(&stdio("npx"), "no answer within 30s");
        assert!(f.contains("download"), "{f}");
        let f = fix(
            &stdio("./srv"),
            "cannot start \"./srv\": Permission denied (os error 13)",
        );
        assert!(f.contains("not executable"), "{f}");
    }

    #[test]
    fn an_http_server_names_credentials_path_or_host_by_cause() {
        let url = "http://u:p@127.0.0.1:9/mcp?token=t";
        let f = fix(&http(url), "Transport send error: 401 Unauthorized");
        assert!(f.contains("credentials"), "{f}");
        let f = fix(&http(url), "unexpected status 404 Not Found");
        assert!(f.contains("`url`'s path"), "{f}");
        let f = fix(
            &http(url),
            "error sending request for url (http://127.0.0.1:9/mcp): client error (Connect)",
        );
        assert!(f.starts_with("no answer from http://127.0.0.1:9"), "{f}");
        let f = fix(
            &http("http://127.0.0.1:40401/mcp"),
            "Client error: error sending request for url (http://127.0.0.1:40401/mcp), when \
             send discover request",
        );
        assert!(
            f.starts_with("no answer from http://127.0.0.1:40401"),
            "a port is not a status: {f}"
        );
        let f = fix(
            &http(url),
            &format!(
                "{} (the page /mcp/operator below the chat's prefix)",
                crate::mcp::client::NEEDS_OPERATOR
            ),
        );
        assert!(
            f.contains("open the operator's page") && f.contains("/chat/mcp/operator"),
            "{f}"
        );
        for f in [
            fix(&http(url), "401"),
            fix(&http(url), "404"),
            fix(&http(url), "other"),
        ] {
            assert!(!f.contains("token=t") && !f.contains("u:p"), "{f}");
        }
    }

    #[test]
    fn the_problem_is_named_after_the_server() {
        let cfg = McpServerConfig::stdio("files", "nope", Vec::<String>::new());
        let p = problem(
            &cfg,
            "cannot start \"nope\": No such file or directory (os error 2)",
        );
        assert_eq!(p.subject, "MCP server files");
        assert!(p.problem.contains("No such file"));
    }
}
