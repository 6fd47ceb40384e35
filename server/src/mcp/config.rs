//! MCP server configuration: [`McpServerConfig`] (one named server and its transport) and the
//! TOML file format [`McpConfigFile`] (`[[mcp.servers]]`), with `${ENV}` expansion so secrets
//! need not be written into the file.
//!
//! Decisions:
//! - A **stdio server's environment** is not the hub's: it starts from a cleared environment
//!   plus the platform basics and the locale (the list at [`McpTransport::Stdio`], the same
//!   basics the official TypeScript and Python SDKs pass), the variables named in
//!   `inherit_env` (when set), and `env`. So a server never sees `OPENAI_API_KEY` or another
//!   server's token unless its entry says so.
//! - **`Debug`** never prints env values, header values, the bearer token, or a URL's
//!   userinfo and query (URLs in arguments too).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::secrets::{Redacted, redact_url, redact_urls};

/// Opens a fresh in-process byte stream to an MCP server (e.g. one end of a
/// `tokio::io::duplex` pair whose other end an rmcp server serves). Called on every
/// (re)connect.
pub type InProcessConnector = Arc<dyn Fn() -> tokio::io::DuplexStream + Send + Sync>;

/// How the hub reaches one MCP server.
#[derive(Clone)]
#[non_exhaustive]
pub enum McpTransport {
    /// A child process speaking MCP on stdin/stdout (killed when the hub is dropped).
    ///
    /// Its environment is built from scratch, in this order (later wins):
    /// 1. from the hub's environment, when set: `PATH`, `HOME`, `USER`, `LOGNAME`, `SHELL`,
    ///    `TERM`, `TMPDIR`, `LANG`, `LANGUAGE`, `LC_*` and `TZ` (on Windows: `PATH`,
    ///    `PATHEXT`, `SYSTEMROOT`, `SYSTEMDRIVE`, `WINDIR`, `COMSPEC`, `TEMP`, `TMP`,
    ///    `USERNAME`, `USERPROFILE`, `HOMEDRIVE`, `HOMEPATH`, `APPDATA`, `LOCALAPPDATA`,
    ///    `PROGRAMFILES`, `PROCESSOR_ARCHITECTURE`, `LANG`, `TZ`) — what a Node or Python
    ///    server needs to start;
    /// 2. from the hub's environment, the variables named in `inherit_env` that are set;
    /// 3. `env`.
    Stdio {
        /// The program (looked up on `PATH` when it has no `/`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables set for it (over the basics and `inherit_env`).
        env: BTreeMap<String, String>,
        /// Names of variables passed through from the hub's environment when set (e.g.
        /// `HTTPS_PROXY`, `NODE_EXTRA_CA_CERTS`, a token the server needs).
        inherit_env: Vec<String>,
        /// Working directory (default: the hub's).
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint (e.g. `http://127.0.0.1:3001/mcp`).
    Http {
        /// The endpoint URL.
        url: String,
        /// Extra headers sent with every request.
        headers: BTreeMap<String, String>,
        /// A bearer token, sent as `Authorization: Bearer …`.
        bearer: Option<String>,
        /// The operator signs the service in with OAuth (see
        /// [`McpServerConfig::with_oauth`]); the grant's access token replaces `bearer`.
        oauth: bool,
    },
    /// The older HTTP+SSE transport (MCP 2024-11-05), for servers that speak only it: `url` is
    /// the event stream (e.g. `http://127.0.0.1:8000/sse`); the server names where messages
    /// go, which must be on the same origin (`mcp::sse_transport` in the source says why).
    Sse {
        /// The event stream's URL.
        url: String,
        /// Extra headers sent with the stream's request and every message.
        headers: BTreeMap<String, String>,
        /// A bearer token, sent as `Authorization: Bearer …`.
        bearer: Option<String>,
        /// The operator signs the service in with OAuth (see
        /// [`McpServerConfig::with_oauth`]); the grant's access token replaces `bearer`.
        oauth: bool,
    },
    /// An in-process server over a byte pipe (tests, embedded servers).
    InProcess(InProcessConnector),
}

impl std::fmt::Debug for McpTransport {
    // Never prints env values, header values or tokens, nor a URL's userinfo or query: they
    // may be secrets. Names are shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stdio {
                command,
                args,
                env,
                inherit_env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field(
                    "args",
                    &args.iter().map(|a| redact_urls(a)).collect::<Vec<_>>(),
                )
                .field("env", &redacted_values(env))
                .field("inherit_env", inherit_env)
                .field("cwd", cwd)
                .finish(),
            Self::Http {
                url,
                headers,
                bearer,
                oauth,
            }
            | Self::Sse {
                url,
                headers,
                bearer,
                oauth,
            } => f
                .debug_struct(if matches!(self, Self::Sse { .. }) {
                    "Sse"
                } else {
                    "Http"
                })
                .field("url", &redact_url(url))
                .field("headers", &redacted_values(headers))
                .field("bearer", &bearer.as_ref().map(|_| Redacted))
                .field("oauth", oauth)
                .finish(),
            Self::InProcess(_) => f.write_str("InProcess"),
        }
    }
}

/// The names of `map`, each with a redacted value.
fn redacted_values(map: &BTreeMap<String, String>) -> BTreeMap<&str, Redacted> {
    map.keys().map(|k| (k.as_str(), Redacted)).collect()
}

/// One named MCP server.
///
/// ```
/// use lmchatkit::mcp::McpServerConfig;
/// let s = McpServerConfig::stdio("everything", "mcp-server-everything", ["stdio"])
///     .with_env("LOG_LEVEL", "warn");
/// assert_eq!(s.name, "everything");
/// assert!(s.namespaced);
/// let h = McpServerConfig::http("remote", "https://mcp.example.com/mcp").with_bearer("t0k3n");
/// assert!(format!("{h:?}").contains("mcp.example.com") && !format!("{h:?}").contains("t0k3n"));
/// ```
///
/// `Debug` never shows env values, header values, the bearer token, or a URL's userinfo and
/// query:
///
/// ```
/// use lmchatkit::mcp::McpServerConfig;
/// let s = McpServerConfig::stdio("gh", "github-mcp", ["stdio"]).with_env("GITHUB_TOKEN", "env-secret");
/// let h = McpServerConfig::http("remote", "https://user:url-pass@mcp.example.com/mcp?token=url-token")
///     .with_header("X-Api-Key", "header-secret")
///     .with_bearer("bearer-secret");
/// let shown = format!("{s:?} {h:?}");
/// for secret in ["env-secret", "url-pass", "url-token", "header-secret", "bearer-secret"] {
///     assert!(!shown.contains(secret), "{secret} in {shown}");
/// }
/// assert!(shown.contains("https://mcp.example.com/mcp") && shown.contains("GITHUB_TOKEN"));
/// ```
#[derive(Debug, Clone)]
pub struct McpServerConfig {
    /// The server's name: the namespace of its tools and prompts, and its id in `/api/config`.
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// Expose tools and prompts as `name{separator}tool` (default true). An un-namespaced
    /// server's names are exposed as they are.
    pub namespaced: bool,
}

impl McpServerConfig {
    /// A stdio server started as `command args…`.
    pub fn stdio<I, S>(name: impl Into<String>, command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            name: name.into(),
            transport: McpTransport::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
                inherit_env: Vec::new(),
                cwd: None,
            },
            namespaced: true,
        }
    }

    /// A Streamable HTTP server.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            transport: McpTransport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
                bearer: None,
                oauth: false,
            },
            namespaced: true,
        }
    }

    /// A server on the older HTTP+SSE transport, its event stream at `url`.
    pub fn sse(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            transport: McpTransport::Sse {
                url: url.into(),
                headers: BTreeMap::new(),
                bearer: None,
                oauth: false,
            },
            namespaced: true,
        }
    }

    /// An in-process server reached through `connect` (called on every (re)connect).
    pub fn in_process(
        name: impl Into<String>,
        connect: impl Fn() -> tokio::io::DuplexStream + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            transport: McpTransport::InProcess(Arc::new(connect)),
            namespaced: true,
        }
    }

    /// Sets an environment variable of a stdio server (ignored for other transports).
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// Passes the hub's variable `name` (when set) to a stdio server, which otherwise starts
    /// with only the basics listed at [`McpTransport::Stdio`] (ignored for other transports).
    pub fn with_inherited_env(mut self, name: impl Into<String>) -> Self {
        if let McpTransport::Stdio { inherit_env, .. } = &mut self.transport {
            inherit_env.push(name.into());
        }
        self
    }

    /// Sets the working directory of a stdio server (ignored for other transports).
    pub fn with_cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let McpTransport::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Adds a header to every request of an HTTP or SSE server (ignored for other transports).
    pub fn with_header(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http { headers, .. } | McpTransport::Sse { headers, .. } =
            &mut self.transport
        {
            headers.insert(key.into(), value.into());
        }
        self
    }

    /// Sets the bearer token of an HTTP or SSE server (ignored for other transports).
    pub fn with_bearer(mut self, token: impl Into<String>) -> Self {
        if let McpTransport::Http { bearer, .. } | McpTransport::Sse { bearer, .. } =
            &mut self.transport
        {
            *bearer = Some(token.into());
        }
        self
    }

    /// Signs the service in to this HTTP or SSE server with OAuth (ignored for other
    /// transports): the operator signs in once, on the page an
    /// [`OperatorOAuth`](crate::mcp::OperatorOAuth) serves (`{prefix}/mcp/operator`), and the
    /// hub's connections then send the grant's access token, refreshed before it expires. Until
    /// then the server is unavailable, and `/api/config` says it needs the operator.
    ///
    /// ```
    /// use lmchatkit::mcp::{McpServerConfig, McpTransport};
    /// let s = McpServerConfig::http("docs", "https://mcp.example.com/mcp").with_oauth();
    /// assert!(matches!(s.transport, McpTransport::Http { oauth: true, .. }));
    /// ```
    pub fn with_oauth(mut self) -> Self {
        if let McpTransport::Http { oauth, .. } | McpTransport::Sse { oauth, .. } =
            &mut self.transport
        {
            *oauth = true;
        }
        self
    }

    /// Whether the operator signs the service in to this server with OAuth.
    pub fn uses_oauth(&self) -> bool {
        matches!(
            self.transport,
            McpTransport::Http { oauth: true, .. } | McpTransport::Sse { oauth: true, .. }
        )
    }

    /// Exposes this server's tools and prompts without the `name__` prefix.
    pub fn unnamespaced(mut self) -> Self {
        self.namespaced = false;
        self
    }
}

/// Errors reading an MCP configuration file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The TOML is malformed or has unknown keys.
    #[error("invalid MCP configuration: {0}")]
    Toml(#[from] toml::de::Error),
    /// A server entry is wrong (both or neither of `command`/`url`, a duplicate or bad name).
    #[error("MCP server {name:?}: {reason}")]
    Server {
        /// The server's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// `${VAR}` names an environment variable that is not set.
    #[error("environment variable {0} is not set (referenced as ${{{0}}})")]
    MissingEnv(String),
}

/// Other top-level tables (the standalone app's own settings) are ignored here.
#[derive(Deserialize)]
struct FileRoot {
    #[serde(default)]
    mcp: FileMcp,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileMcp {
    #[serde(default)]
    servers: Vec<FileServer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileServer {
    name: String,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    inherit_env: Vec<String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    /// `"sse"` for the older HTTP+SSE transport; Streamable HTTP otherwise.
    transport: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    bearer: Option<String>,
    /// The operator signs in with OAuth (`oauth = true`).
    #[serde(default)]
    oauth: bool,
    #[serde(default = "yes")]
    namespaced: bool,
}

fn yes() -> bool {
    true
}

/// The `[[mcp.servers]]` list of a TOML configuration file. Every string value may use
/// `${VAR}` (expanded from the environment; a missing variable is an error) and `$$` for a
/// literal `$`.
///
/// ```
/// use lmchatkit::mcp::{McpConfigFile, McpTransport};
/// // SAFETY: a doctest is single-threaded.
/// unsafe { std::env::set_var("DOC_MCP_TOKEN", "s3cret") };
/// let file = McpConfigFile::from_toml_str(r#"
///     [[mcp.servers]]
///     name = "everything"
///     command = "npx"
///     args = ["-y", "@modelcontextprotocol/server-everything", "stdio"]
///
///     [[mcp.servers]]
///     name = "remote"
///     url = "https://mcp.example.com/mcp"
///     bearer = "${DOC_MCP_TOKEN}"
///     namespaced = false
///
///     [[mcp.servers]]
///     name = "older"
///     url = "http://127.0.0.1:8000/sse"
///     transport = "sse"
///
///     [[mcp.servers]]
///     name = "docs"
///     url = "https://mcp.example.com/mcp"
///     oauth = true
/// "#).unwrap();
/// assert_eq!(file.servers.len(), 4);
/// assert!(file.servers[3].uses_oauth() && !file.servers[1].uses_oauth());
/// assert!(matches!(&file.servers[2].transport, McpTransport::Sse { .. }));
/// assert!(matches!(&file.servers[1].transport, McpTransport::Http { bearer: Some(t), .. } if t == "s3cret"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct McpConfigFile {
    /// The configured servers, in file order.
    pub servers: Vec<McpServerConfig>,
}

impl McpConfigFile {
    /// Parses a TOML document. Other top-level tables are ignored, so the `[[mcp.servers]]`
    /// list can live in a larger configuration file; unknown keys of a server are errors.
    pub fn from_toml_str(s: &str) -> Result<Self, McpConfigError> {
        let root: FileRoot = toml::from_str(s)?;
        let mut servers = Vec::new();
        for f in root.mcp.servers {
            let server = convert(f)?;
            if servers
                .iter()
                .any(|s: &McpServerConfig| s.name == server.name)
            {
                return Err(McpConfigError::Server {
                    name: server.name,
                    reason: "duplicate name".into(),
                });
            }
            servers.push(server);
        }
        Ok(Self { servers })
    }

    /// Reads and parses a TOML file.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Self, McpConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| McpConfigError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::from_toml_str(&text)
    }
}

fn convert(f: FileServer) -> Result<McpServerConfig, McpConfigError> {
    let bad = |reason: &str| McpConfigError::Server {
        name: f.name.clone(),
        reason: reason.into(),
    };
    if f.name.is_empty()
        || !f
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return Err(bad(
            "the name must be non-empty ASCII letters, digits or '-' (it prefixes tool names)",
        ));
    }
    let map = |m: &BTreeMap<String, String>| -> Result<BTreeMap<String, String>, McpConfigError> {
        m.iter()
            .map(|(k, v)| Ok((k.clone(), expand_env(v)?)))
            .collect()
    };
    if let Some(name) = f
        .inherit_env
        .iter()
        .find(|n| n.is_empty() || n.contains(['=', '\0']))
    {
        return Err(bad(&format!(
            "invalid variable name {name:?} in inherit_env"
        )));
    }
    let transport = match (&f.command, &f.url) {
        (Some(command), None) => McpTransport::Stdio {
            command: expand_env(command)?,
            args: f
                .args
                .iter()
                .map(|a| expand_env(a))
                .collect::<Result<_, _>>()?,
            env: map(&f.env)?,
            inherit_env: f.inherit_env.clone(),
            cwd: match &f.cwd {
                Some(p) => Some(PathBuf::from(expand_env(&p.to_string_lossy())?)),
                None => None,
            },
        },
        (None, Some(url)) => {
            let (url, headers) = (expand_env(url)?, map(&f.headers)?);
            let bearer = f.bearer.as_deref().map(expand_env).transpose()?;
            match f.transport.as_deref() {
                None | Some("streamable-http" | "http") => McpTransport::Http {
                    url,
                    headers,
                    bearer,
                    oauth: f.oauth,
                },
                Some("sse") => McpTransport::Sse {
                    url,
                    headers,
                    bearer,
                    oauth: f.oauth,
                },
                Some(other) => {
                    return Err(bad(&format!(
                        "unknown transport {other:?}: \"sse\" (the older HTTP+SSE transport) or \
                         \"streamable-http\" (the default for a `url`)"
                    )));
                }
            }
        }
        _ => return Err(bad("set exactly one of `command` (stdio) or `url` (HTTP)")),
    };
    if f.oauth && f.command.is_some() {
        return Err(bad(
            "`oauth` is for a `url`; a `command` is a local process",
        ));
    }
    if f.oauth && f.bearer.is_some() {
        return Err(bad(
            "set `oauth` or `bearer`, not both: with `oauth` the token comes from the sign-in",
        ));
    }
    if f.transport.is_some() && f.command.is_some() {
        return Err(bad(
            "`transport` is for a `url`; a `command` is always stdio",
        ));
    }
    Ok(McpServerConfig {
        name: f.name,
        transport,
        namespaced: f.namespaced,
    })
}

/// Expands `${VAR}` from the environment; `$$` is a literal `$`; any other `$` stays.
pub fn expand_env(s: &str) -> Result<String, McpConfigError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
        } else if let Some(r) = after.strip_prefix('{') {
            let end = r
                .find('}')
                .ok_or_else(|| McpConfigError::MissingEnv(r.into()))?;
            let var = &r[..end];
            let val = std::env::var(var).map_err(|_| McpConfigError::MissingEnv(var.into()))?;
            out.push_str(&val);
            rest = &r[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
