//! MCP server configuration: [`McpServerConfig`] (one named server and its transport) and the
//! TOML file format [`McpConfigFile`] (`[[mcp.servers]]`), with `${ENV}` expansion so secrets
//! need not be written into the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

/// Opens a fresh in-process byte stream to an MCP server (e.g. one end of a
/// `tokio::io::duplex` pair whose other end an rmcp server serves). Called on every
/// (re)connect.
pub type InProcessConnector = Arc<dyn Fn() -> tokio::io::DuplexStream + Send + Sync>;

/// How the hub reaches one MCP server.
#[derive(Clone)]
pub enum McpTransport {
    /// A child process speaking MCP on stdin/stdout (killed when the hub is dropped).
    Stdio {
        /// The program (looked up on `PATH` when it has no `/`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables (the hub's own environment is inherited).
        env: BTreeMap<String, String>,
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
    },
    /// An in-process server over a byte pipe (tests, embedded servers).
    InProcess(InProcessConnector),
}

impl std::fmt::Debug for McpTransport {
    // Never prints env values, headers or tokens: they may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stdio { command, args, .. } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .finish_non_exhaustive(),
            Self::Http { url, .. } => f
                .debug_struct("Http")
                .field("url", url)
                .finish_non_exhaustive(),
            Self::InProcess(_) => f.write_str("InProcess"),
        }
    }
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

    /// Sets the working directory of a stdio server (ignored for other transports).
    pub fn with_cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let McpTransport::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Adds a header to every request of an HTTP server (ignored for other transports).
    pub fn with_header(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http { headers, .. } = &mut self.transport {
            headers.insert(key.into(), value.into());
        }
        self
    }

    /// Sets the bearer token of an HTTP server (ignored for other transports).
    pub fn with_bearer(mut self, token: impl Into<String>) -> Self {
        if let McpTransport::Http { bearer, .. } = &mut self.transport {
            *bearer = Some(token.into());
        }
        self
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
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    bearer: Option<String>,
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
/// "#).unwrap();
/// assert_eq!(file.servers.len(), 2);
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
    let transport = match (&f.command, &f.url) {
        (Some(command), None) => McpTransport::Stdio {
            command: expand_env(command)?,
            args: f
                .args
                .iter()
                .map(|a| expand_env(a))
                .collect::<Result<_, _>>()?,
            env: map(&f.env)?,
            cwd: match &f.cwd {
                Some(p) => Some(PathBuf::from(expand_env(&p.to_string_lossy())?)),
                None => None,
            },
        },
        (None, Some(url)) => McpTransport::Http {
            url: expand_env(url)?,
            headers: map(&f.headers)?,
            bearer: f.bearer.as_deref().map(expand_env).transpose()?,
        },
        _ => return Err(bad("set exactly one of `command` (stdio) or `url` (HTTP)")),
    };
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
