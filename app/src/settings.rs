//! The TOML configuration file and the merge of flags, environment (both through clap) and
//! file into one [`Settings`]: flag > environment > file > default.
//!
//! In the file every string outside `[mcp]` may use `${VAR}` (the `[[mcp.servers]]` list
//! expands its own; a `[[providers]]` entry's `api_key` is expanded by `providers.rs`, so an
//! unset variable leaves that provider not configured rather than refusing the file), and relative paths (`db`, `personas_dir`, `commands_dir`) are taken
//! relative to the file's directory (a PostgreSQL URL in `db` is not a path), so a config file and its folders move together.
//!
//! No type here prints a secret in `Debug`: [`Upstream`]'s and `ProviderSettings`' are hand-written (the key and header
//! values redacted, URLs without userinfo and query), and the file's raw tables have none.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use lmchatkit::ApprovalPolicy;
use lmchatkit::mcp::{McpConfigFile, McpServerConfig, expand_env};
use lmchatkit::secrets::{Redacted, redact_url, redacted_headers};
use lmchatkit::store::Synchronous;
use serde::Deserialize;

use crate::approval_settings::{FileTools, approval_policy};
use crate::cli::{Args, EngineKind, LogFormat, check_header};
use crate::db_settings::PostgresDb;
use crate::providers::{FileProvider, ProviderSettings};
use lmchatkit::models::{Catalog, ModelSpec};

/// The file's top level. Unknown keys are errors, so a typo does not silently do nothing.
/// (No `Debug`: it holds the API key.)
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    listen: Option<SocketAddr>,
    sandbox_listen: Option<SocketAddr>,
    sandbox_origin: Option<String>,
    #[serde(default)]
    allowed_hosts: Vec<String>,
    #[serde(default)]
    frame_ancestors: Vec<String>,
    header_timeout: Option<u64>,
    auth_token: Option<String>,
    trusted_user_header: Option<String>,
    #[serde(default)]
    trusted_proxies: Vec<String>,
    operator: Option<String>,
    system_prompt: Option<String>,
    max_steps: Option<usize>,
    max_streams: Option<usize>,
    max_streams_per_user: Option<usize>,
    #[serde(default)]
    allowed_origins: Vec<String>,
    prefix: Option<String>,
    db: Option<String>,
    db_max_connections: Option<usize>,
    db_synchronous: Option<Synchronous>,
    redis: Option<String>,
    redis_prefix: Option<String>,
    engine: Option<crate::cli::EngineKind>,
    personas_dir: Option<PathBuf>,
    commands_dir: Option<PathBuf>,
    upload: Option<bool>,
    log: Option<String>,
    log_format: Option<LogFormat>,
    #[serde(default)]
    upstream: FileUpstream,
    #[serde(default)]
    demo: FileDemo,
    #[serde(default)]
    tools: FileTools,
    /// `[[models]]`: facts about models (context window, reasoning, price) over the built-in
    /// table.
    #[serde(default)]
    models: Vec<ModelSpec>,
    /// `[[providers]]`: named upstreams (see `providers.rs`).
    #[serde(default)]
    providers: Vec<FileProvider>,
    /// `[[mcp.servers]]`, read by [`McpConfigFile`].
    #[allow(dead_code)]
    mcp: Option<toml::Value>,
    /// `[user_mcp]`: users' own MCP servers (see `user_mcp_settings.rs`).
    #[serde(default)]
    user_mcp: crate::user_mcp_settings::FileUserMcp,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileUpstream {
    base_url: Option<String>,
    completions_url: Option<String>,
    api_key: Option<String>,
    #[serde(default)]
    models: Vec<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDemo {
    model: Option<bool>,
    mcp: Option<bool>,
}

/// Where the LLM is. `Debug` shows neither the key nor header values.
#[derive(Clone, Default, PartialEq)]
pub struct Upstream {
    /// Base URL (`…/v1`).
    pub base_url: Option<String>,
    /// Full completions URL (wins over the base URL).
    pub completions_url: Option<String>,
    /// Bearer token.
    pub api_key: Option<String>,
    /// Extra headers, in order.
    pub headers: Vec<(String, String)>,
    /// Configured models (empty: ask `/models`).
    pub models: Vec<String>,
}

/// Every setting of the app, resolved. `Debug` shows no secret ([`Upstream`]'s and
/// `McpServerConfig`'s are redacted).
#[derive(Debug)]
pub struct Settings {
    pub listen: SocketAddr,
    /// The sandbox proxy's own listener (proxy mode) and the origin browsers reach it at.
    pub sandbox: Option<(SocketAddr, String)>,
    pub prefix: String,
    /// The `OPENAI_BASE_URL` shorthand (joins `providers` as `openai`, see `providers.rs`).
    pub upstream: Upstream,
    /// `[[providers]]`, in file order.
    pub providers: Vec<ProviderSettings>,
    /// The SQLite file or `memory:` (`None` with PostgreSQL or the default file).
    pub db: Option<String>,
    /// `--db postgres://…` (see `db_settings.rs`).
    pub postgres: Option<PostgresDb>,
    /// The history file's `synchronous` mode (FULL unless said).
    pub db_synchronous: Synchronous,
    /// The Redis shared with other instances (`Debug` without its password).
    pub redis: Option<RedisSettings>,
    /// What instances share runs and events through (`--engine`, checked against `redis`
    /// and `postgres`).
    pub engine: crate::cli::EngineKind,
    pub personas_dir: Option<PathBuf>,
    pub commands_dir: Option<PathBuf>,
    pub upload: bool,
    /// Host names served besides the loopback names (file's, then the flags').
    pub allowed_hosts: Vec<String>,
    /// Origins that may frame the chat page (file's, then the flags').
    pub frame_ancestors: Vec<String>,
    /// How long a client may take to send a request head.
    pub header_timeout: std::time::Duration,
    /// Who may use the app.
    pub access: Access,
    /// The principal who sees MCP server states.
    pub operator: Option<String>,
    /// The system prompt when the persona has none (`None`: the library's default).
    pub system_prompt: Option<String>,
    /// Model calls per request of the server-side tool loop (`None`: the library's default).
    pub max_steps: Option<usize>,
    /// Concurrent chat streams in all, as configured (`None`: the default; both are bounded by
    /// the open-files limit at start, see `descriptors`).
    pub max_streams: Option<usize>,
    /// Concurrent chat streams of one user (`None`: the library's default).
    pub max_streams_per_user: Option<usize>,
    /// Origins of pages allowed to call the API besides the app's own.
    pub allowed_origins: Vec<String>,
    /// Run the demo model when no upstream is configured.
    pub demo_model: bool,
    /// The demo MCP server: `Some(on)` when said, `None` = only when no servers are configured.
    pub demo_mcp: Option<bool>,
    pub mcp_servers: Vec<McpServerConfig>,
    /// The operator's approval policy (`[tools.approval]`; default: ask for every call).
    pub approval: ApprovalPolicy,
    /// The model catalog: the built-in table, the providers' status (and facts under their
    /// names), the file's `[[models]]` over them, then the providers' fixed model lists.
    pub catalog: Catalog,
    pub log: String,
    pub log_format: LogFormat,
    /// Users' own MCP servers (`[user_mcp]`), when enabled.
    pub user_mcp: Option<crate::user_mcp_settings::UserMcpSettings>,
    /// `[user_mcp] key_file` as given, enabled or not: with `--redis` the app derives the
    /// signing secret every instance shares from it.
    pub key_file: Option<PathBuf>,
}

/// Where the shared Redis is and the prefix of its keys.
pub struct RedisSettings {
    pub url: String,
    pub prefix: String,
}

impl std::fmt::Debug for RedisSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSettings")
            .field("url", &redact_url(&self.url))
            .field("prefix", &self.prefix)
            .finish()
    }
}

/// How the app tells who is asking (see `auth.rs`).
#[derive(Clone, PartialEq)]
pub enum Access {
    /// A token when one is given, else one made up when listening beyond loopback.
    Token(Option<String>),
    /// The principal from this header, sent by a proxy at one of these addresses.
    TrustedHeader {
        header: http::HeaderName,
        proxies: Vec<ipnet::IpNet>,
    },
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Token(t) => f
                .debug_tuple("Token")
                .field(&t.as_ref().map(|_| Redacted))
                .finish(),
            Self::TrustedHeader { header, proxies } => f
                .debug_struct("TrustedHeader")
                .field("header", header)
                .field("proxies", proxies)
                .finish(),
        }
    }
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = |u: &Option<String>| u.as_deref().map(redact_url);
        f.debug_struct("Upstream")
            .field("base_url", &url(&self.base_url))
            .field("completions_url", &url(&self.completions_url))
            .field("api_key", &self.api_key.as_ref().map(|_| Redacted))
            .field("headers", &redacted_headers(&self.headers))
            .field("models", &self.models)
            .finish()
    }
}

impl Settings {
    /// Reads `args.config` (if any) and merges.
    pub fn load(args: Args) -> Result<Self, String> {
        let Some(path) = args.config.clone() else {
            return Self::merge(args, FileSettings::default(), Vec::new());
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let at = |e: String| format!("{}: {e}", path.display());
        let servers = McpConfigFile::from_toml_str(&text)
            .map_err(|e| at(e.to_string()))?
            .servers;
        let mut file = parse(&text).map_err(at)?;
        let dir = path.parent().unwrap_or(Path::new(""));
        for p in [&mut file.personas_dir, &mut file.commands_dir]
            .into_iter()
            .flatten()
        {
            *p = dir.join(&*p);
        }
        if let Some(key) = file.user_mcp.key_file.as_mut() {
            *key = dir.join(&*key);
        }
        if let Some(db) = file
            .db
            .as_mut()
            .filter(|d| *d != "memory:" && !crate::db_settings::is_postgres(d))
        {
            *db = dir.join(&*db).to_string_lossy().into_owned();
        }
        Self::merge(args, file, servers).map_err(at)
    }

    fn merge(
        args: Args,
        file: FileSettings,
        mcp_servers: Vec<McpServerConfig>,
    ) -> Result<Self, String> {
        let access = access(
            args.auth_token.or(file.auth_token),
            args.trusted_user_header.or(file.trusted_user_header),
            if args.trusted_proxies.is_empty() {
                file.trusted_proxies
            } else {
                args.trusted_proxies
            },
        )?;
        let allowed_origins = file
            .allowed_origins
            .into_iter()
            .chain(args.allowed_origins)
            .map(|o| o.trim().trim_end_matches('/').to_owned())
            .filter(|o| !o.is_empty())
            .collect();
        let mut headers: Vec<(String, String)> = file.upstream.headers.into_iter().collect();
        for (name, value) in args.headers {
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
            headers.push((name, value));
        }
        let approval = approval_policy(file.tools.approval)?;
        let key_file = file.user_mcp.key_file.clone();
        let user_mcp = crate::user_mcp_settings::resolve(file.user_mcp)?;
        let (db, postgres) = crate::db_settings::resolve(
            args.db.or(file.db),
            args.db_max_connections.or(file.db_max_connections),
        )?;
        let redis_set = args
            .redis
            .as_deref()
            .or(file.redis.as_deref())
            .is_some_and(|u| !u.trim().is_empty());
        let engine = engine(args.engine.or(file.engine), redis_set, postgres.is_some())?;
        if postgres.is_some() && engine != EngineKind::InProcess && key_file.is_none() {
            // A per-machine key would sign each instance's approval ids differently: an
            // approval asked on one instance and answered through another would fail.
            return Err(
                "[user_mcp] needs key_file with a shared engine and a PostgreSQL db: every \
                        instance must sign with the same key"
                    .into(),
            );
        }
        if postgres.is_some() && user_mcp.as_ref().is_some_and(|u| u.key_file.is_none()) {
            return Err(
                "[user_mcp] needs key_file with a PostgreSQL db: every instance \
                        sharing the database must seal with the same key"
                    .into(),
            );
        }
        let base_url = args.openai_base_url.or(file.upstream.base_url);
        let completions_url = args.completions_url.or(file.upstream.completions_url);
        let providers = crate::providers::resolve(file.providers)?;
        let shorthand = base_url.is_some() || completions_url.is_some();
        let mut catalog = crate::providers::register(Catalog::builtin(), &providers, shorthand);
        for spec in file.models {
            let id = spec.id.clone();
            catalog = catalog
                .with_model(spec)
                .map_err(|e| format!("models: {id:?}: {e}"))?;
        }
        crate::providers::list_fixed_models(&mut catalog, &providers);
        let models = if args.models.is_empty() {
            file.upstream.models
        } else {
            args.models
        };
        Ok(Self {
            listen: args
                .listen
                .or(file.listen)
                .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8080))),
            sandbox: sandbox(
                args.sandbox_listen.or(file.sandbox_listen),
                args.sandbox_origin.or(file.sandbox_origin),
            ),
            prefix: args
                .prefix
                .or(file.prefix)
                .unwrap_or_else(|| "/chat".into()),
            upstream: Upstream {
                base_url,
                completions_url,
                api_key: args.openai_api_key.or(file.upstream.api_key),
                headers,
                models: models
                    .iter()
                    .map(|m| m.trim().to_owned())
                    .filter(|m| !m.is_empty())
                    .collect(),
            },
            providers,
            db,
            postgres,
            db_synchronous: args
                .db_synchronous
                .or(file.db_synchronous)
                .unwrap_or_default(),
            redis: args
                .redis
                .or(file.redis)
                .map(|url| url.trim().to_owned())
                .filter(|url| !url.is_empty())
                .map(|url| RedisSettings {
                    url,
                    prefix: args
                        .redis_prefix
                        .or(file.redis_prefix)
                        .unwrap_or_else(|| lmchatkit::live::DEFAULT_PREFIX.into()),
                }),
            engine,
            personas_dir: args.personas_dir.or(file.personas_dir),
            commands_dir: args.commands_dir.or(file.commands_dir),
            upload: args.upload.or(file.upload).unwrap_or(true),
            header_timeout: std::time::Duration::from_secs(
                args.header_timeout
                    .or(file.header_timeout)
                    .unwrap_or(10)
                    .max(1),
            ),
            allowed_hosts: file
                .allowed_hosts
                .into_iter()
                .chain(args.allowed_hosts)
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
                .collect(),
            frame_ancestors: file
                .frame_ancestors
                .into_iter()
                .chain(args.frame_ancestors)
                .map(|o| o.trim().to_owned())
                .filter(|o| !o.is_empty())
                .collect(),
            demo_model: args
                .no_demo
                .map(|no| !no)
                .or(file.demo.model)
                .unwrap_or(true),
            demo_mcp: args.no_demo_mcp.map(|no| !no).or(file.demo.mcp),
            mcp_servers,
            approval,
            catalog,
            log: args.log.or(file.log).unwrap_or_else(|| "info".into()),
            log_format: args.log_format.or(file.log_format).unwrap_or_default(),
            access,
            operator: args
                .operator
                .or(file.operator)
                .filter(|o| !o.trim().is_empty()),
            system_prompt: args
                .system_prompt
                .or(file.system_prompt)
                .filter(|p| !p.trim().is_empty()),
            max_steps: args.max_steps.or(file.max_steps),
            max_streams: args.max_streams.or(file.max_streams),
            max_streams_per_user: args.max_streams_per_user.or(file.max_streams_per_user),
            allowed_origins,
            user_mcp,
            key_file,
        })
    }

    /// Whether the demo MCP server runs.
    pub fn demo_mcp_on(&self) -> bool {
        self.demo_mcp.unwrap_or(self.mcp_servers.is_empty())
    }
}

/// The token or the trusted header (not both), with the proxy addresses checked.
fn access(
    token: Option<String>,
    header: Option<String>,
    proxies: Vec<String>,
) -> Result<Access, String> {
    let token = token.filter(|t| !t.trim().is_empty());
    let Some(header) = header.filter(|h| !h.trim().is_empty()) else {
        if !proxies.is_empty() {
            return Err("--trusted-proxy needs --trusted-user-header".into());
        }
        return Ok(Access::Token(token));
    };
    if token.is_some() {
        return Err(
            "--auth-token and --trusted-user-header exclude each other: behind an \
             authenticating proxy the proxy decides who is asking"
                .into(),
        );
    }
    let header = http::HeaderName::from_bytes(header.trim().as_bytes())
        .map_err(|_| format!("--trusted-user-header: invalid header name {header:?}"))?;
    let proxies = if proxies.is_empty() {
        vec!["127.0.0.1".to_owned(), "::1".to_owned()]
    } else {
        proxies
    };
    Ok(Access::TrustedHeader {
        header,
        proxies: crate::auth::parse_proxies(&proxies)?,
    })
}

/// The sandbox listener and its origin: as given, else `http://localhost:PORT` (browsers open
/// the chat on 127.0.0.1, so `localhost` is a different host name with its own cookies).
fn sandbox(listen: Option<SocketAddr>, origin: Option<String>) -> Option<(SocketAddr, String)> {
    let listen = listen?;
    let origin = origin.unwrap_or_else(|| format!("http://localhost:{}", listen.port()));
    Some((listen, origin.trim_end_matches('/').to_owned()))
}

/// Parses the file's own settings, expanding `${VAR}` outside `[mcp]` and checking headers.
fn parse(text: &str) -> Result<FileSettings, String> {
    let mut root: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    for (key, value) in root.iter_mut().filter(|(k, _)| *k != "mcp") {
        let expanded = if key == "providers" {
            crate::providers::expand_entries(value, expand)
        } else {
            expand(value)
        };
        expanded.map_err(|e| format!("{key}: {e}"))?;
    }
    let file: FileSettings = root.try_into().map_err(|e| e.to_string())?;
    for (name, value) in &file.upstream.headers {
        check_header(name, value).map_err(|e| format!("upstream.headers: {e}"))?;
    }
    Ok(file)
}

fn expand(value: &mut toml::Value) -> Result<(), String> {
    match value {
        toml::Value::String(s) => *s = expand_env(s).map_err(|e| e.to_string())?,
        toml::Value::Array(items) => items.iter_mut().try_for_each(expand)?,
        toml::Value::Table(t) => t.iter_mut().try_for_each(|(_, v)| expand(v))?,
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;

/// The engine the instances share: as said, else Redis when a URL is given, else in-process;
/// refused when what it needs is missing.
fn engine(said: Option<EngineKind>, redis: bool, postgres: bool) -> Result<EngineKind, String> {
    match said {
        None if redis => Ok(EngineKind::Redis),
        None => Ok(EngineKind::InProcess),
        Some(EngineKind::Redis) if !redis => Err("engine = redis needs a --redis URL".into()),
        Some(EngineKind::Postgres) if !postgres => {
            Err("engine = postgres needs a PostgreSQL db (--db postgres://…)".into())
        }
        Some(EngineKind::Postgres | EngineKind::InProcess) if redis => {
            Err("--redis is given, but the engine is not redis: drop one of them".into())
        }
        Some(kind) => Ok(kind),
    }
}
