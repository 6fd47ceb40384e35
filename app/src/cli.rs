//! The command line. Every setting is optional here, so the merge in `settings.rs` can tell
//! "not given" from a value and apply flag > environment > file > default.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::builder::{BoolishValueParser, PossibleValuesParser, TypedValueParser};
use clap::{ArgAction, Parser, ValueEnum};
use lmchatkit::store::Synchronous;
use serde::Deserialize;

/// A chat UI for any OpenAI-compatible LLM endpoint and MCP servers.
///
/// Each setting comes from its flag, else its environment variable, else the --config file,
/// else the default. With nothing configured, a built-in demo model and a built-in demo MCP
/// server run, so the first start works offline.
// No `Debug`: it holds the API key and header values.
#[derive(Default, Parser)]
#[command(name = "lmchatkit", version, about, long_about)]
pub struct Args {
    /// TOML file with any of the settings below and `[[mcp.servers]]` (see the README;
    /// `${VAR}` expands from the environment, relative paths are relative to the file).
    #[arg(long, env = "LMCHATKIT_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long, env = "LMCHATKIT_LISTEN", value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Second address to listen on, serving only the MCP Apps sandbox proxy (proxy mode; see the
    /// README's security section) [default: none: views run in default mode].
    #[arg(long, env = "LMCHATKIT_SANDBOX_LISTEN", value_name = "ADDR")]
    pub sandbox_listen: Option<SocketAddr>,
    /// The origin browsers reach --sandbox-listen at; its host name must differ from the chat's
    /// and be a DNS name: each MCP server's views run on a subdomain of it (v-HASH.NAME)
    /// [default: http://localhost:PORT when the chat is opened on 127.0.0.1].
    #[arg(long, env = "LMCHATKIT_SANDBOX_ORIGIN", value_name = "URL")]
    pub sandbox_origin: Option<String>,
    /// Also serve requests naming this host, e.g. `chat.example.com` (any port) or
    /// `chat.example.com:8443` (repeatable or comma-separated; added to the file's
    /// `allowed_hosts`). `localhost`, `127.0.0.1` and `[::1]` are always served; any other
    /// `Host` gets 403, which stops DNS-rebinding pages.
    #[arg(
        long = "allowed-host",
        env = "LMCHATKIT_ALLOWED_HOSTS",
        value_delimiter = ',',
        value_name = "HOST"
    )]
    pub allowed_hosts: Vec<String>,
    /// Let pages of this origin frame the chat, e.g. `https://portal.example.com` or
    /// `https://*.example.com` (repeatable or comma-separated; added to the file's
    /// `frame_ancestors`) [default: none: only the chat's own origin may frame it].
    #[arg(
        long = "frame-ancestor",
        env = "LMCHATKIT_FRAME_ANCESTORS",
        value_delimiter = ',',
        value_name = "ORIGIN"
    )]
    pub frame_ancestors: Vec<String>,
    /// Require this token: the printed URL carries it once and it becomes a cookie; scripts
    /// send `Authorization: Bearer <token>` [default: none on loopback; made up when listening
    /// on any other address].
    #[arg(
        long,
        env = "LMCHATKIT_AUTH_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub auth_token: Option<String>,
    /// Behind an authenticating proxy: take the user from this request header (e.g.
    /// `X-Forwarded-User`), so each person has their own history. Honoured only from
    /// --trusted-proxy addresses; requests from anywhere else are refused. Excludes
    /// --auth-token.
    #[arg(long, env = "LMCHATKIT_TRUSTED_USER_HEADER", value_name = "NAME")]
    pub trusted_user_header: Option<String>,
    /// Addresses or ranges of the authenticating proxy (repeatable or comma-separated)
    /// [default: 127.0.0.1 and ::1].
    #[arg(
        long = "trusted-proxy",
        env = "LMCHATKIT_TRUSTED_PROXIES",
        value_delimiter = ',',
        value_name = "ADDR"
    )]
    pub trusted_proxies: Vec<String>,
    /// The user who runs the app: only they see MCP server states in /api/config [default:
    /// everyone, as in a single-user app].
    #[arg(long, env = "LMCHATKIT_OPERATOR", value_name = "USER")]
    pub operator: Option<String>,
    /// The system prompt of every turn whose persona has none [default: "You are a helpful
    /// assistant."].
    #[arg(long, env = "LMCHATKIT_SYSTEM_PROMPT", value_name = "TEXT")]
    pub system_prompt: Option<String>,
    /// At most this many model calls per request where the server runs the tools (AI SDK apps)
    /// [default: 10].
    #[arg(long, env = "LMCHATKIT_MAX_STEPS", value_name = "N")]
    pub max_steps: Option<usize>,
    /// At most this many chat replies stream at once; one more is answered 429 with
    /// Retry-After. Never more than the open-files limit carries (two per stream) [default:
    /// 10000, or what the limit carries].
    #[arg(long, env = "LMCHATKIT_MAX_STREAMS", value_name = "N")]
    pub max_streams: Option<usize>,
    /// At most this many replies stream at once for one user [default: 4].
    #[arg(long, env = "LMCHATKIT_MAX_STREAMS_PER_USER", value_name = "N")]
    pub max_streams_per_user: Option<usize>,
    /// Also accept requests sent by pages of this origin, e.g. `http://127.0.0.1:8081` for
    /// `trunk serve` (repeatable or comma-separated).
    #[arg(
        long = "allowed-origin",
        env = "LMCHATKIT_ALLOWED_ORIGINS",
        value_delimiter = ',',
        value_name = "ORIGIN"
    )]
    pub allowed_origins: Vec<String>,
    /// Seconds a client may take to send a request's head (request line and headers) before
    /// its connection is closed, so slow or stalled clients cannot hold connections open
    /// [default: 10].
    #[arg(long, env = "LMCHATKIT_HEADER_TIMEOUT", value_name = "SECS")]
    pub header_timeout: Option<u64>,
    /// URL prefix the chat is served under [default: /chat].
    #[arg(long, env = "LMCHATKIT_PREFIX", value_name = "PATH")]
    pub prefix: Option<String>,
    /// OpenAI-compatible base URL (normally ending in /v1); /chat/completions and /models are
    /// appended. Without an upstream the demo model runs.
    #[arg(long, env = "OPENAI_BASE_URL", value_name = "URL")]
    pub openai_base_url: Option<String>,
    /// Full chat-completions URL; overrides the base URL's /chat/completions (then list the
    /// models with --model, as there is no /models to ask).
    #[arg(long, env = "OPENAI_COMPLETIONS_URL", value_name = "URL")]
    pub completions_url: Option<String>,
    /// Bearer token for the upstream.
    #[arg(
        long,
        env = "OPENAI_API_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub openai_api_key: Option<String>,
    /// Extra header for every upstream request, as 'Name: value' (repeatable; replaces a header
    /// of the same name from the file's [upstream.headers]).
    #[arg(long = "header", value_name = "NAME: VALUE", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// Offer these models instead of asking the upstream's /models (repeatable or
    /// comma-separated).
    #[arg(
        long = "model",
        env = "LMCHATKIT_MODELS",
        value_delimiter = ',',
        value_name = "ID"
    )]
    pub models: Vec<String>,
    /// History database: a SQLite file, `memory:` for none, or a PostgreSQL URL
    /// (`postgres://user:password@host:5432/db`, shared by several instances) [default:
    /// history.db in the platform data directory].
    #[arg(long, env = "LMCHATKIT_DB", value_name = "PATH|URL")]
    pub db: Option<String>,
    /// With a PostgreSQL --db: the most connections the app opens [default: 10].
    #[arg(long, env = "LMCHATKIT_DB_MAX_CONNECTIONS", value_name = "N")]
    pub db_max_connections: Option<usize>,
    /// How hard a save of the history file waits for the disk: `full` syncs every save, so an
    /// acknowledged save survives a power loss; `normal` is faster, and a power loss (not a
    /// crash of the app) can undo the last saves [default: full].
    #[arg(long, env = "LMCHATKIT_DB_SYNCHRONOUS", value_name = "MODE",
          value_parser = synchronous_parser())]
    pub db_synchronous: Option<Synchronous>,
    /// Redis shared by several instances of the app (runs, stops and events cross instances
    /// through it), e.g. redis://:PASSWORD@10.0.0.5:6379/0 [default: none, in-process].
    #[arg(
        long,
        env = "LMCHATKIT_REDIS_URL",
        value_name = "URL",
        hide_env_values = true
    )]
    pub redis: Option<String>,
    /// Prefix of every Redis key and channel, so deployments can share one Redis
    /// [default: lmchatkit:].
    #[arg(long, env = "LMCHATKIT_REDIS_PREFIX", value_name = "PREFIX")]
    pub redis_prefix: Option<String>,
    /// What several instances share runs, stops, events and view tokens through:
    /// `in-process` (one instance), `redis` (the --redis URL) or `postgres` (the --db
    /// PostgreSQL database, for deployments without Redis) [default: redis when --redis is
    /// given, else in-process].
    #[arg(long, env = "LMCHATKIT_ENGINE", value_name = "ENGINE")]
    pub engine: Option<EngineKind>,
    /// Directory of persona .toml files, reloaded on change [default: the shipped examples,
    /// built in].
    #[arg(long, env = "LMCHATKIT_PERSONAS_DIR", value_name = "DIR")]
    pub personas_dir: Option<PathBuf>,
    /// Directory of slash-command .md files, reloaded on change [default: the shipped
    /// examples, built in].
    #[arg(long, env = "LMCHATKIT_COMMANDS_DIR", value_name = "DIR")]
    pub commands_dir: Option<PathBuf>,
    /// Allow file uploads (attachments) [default: true].
    #[arg(long, env = "LMCHATKIT_UPLOAD", value_name = "BOOL", action = ArgAction::Set,
          value_parser = BoolishValueParser::new())]
    pub upload: Option<bool>,
    /// Without an upstream, answer "no model is configured" instead of running the built-in
    /// demo model.
    #[arg(long, env = "LMCHATKIT_NO_DEMO", value_name = "BOOL", num_args = 0..=1,
          require_equals = true, default_missing_value = "true",
          value_parser = BoolishValueParser::new())]
    pub no_demo: Option<bool>,
    /// Do not start the built-in demo MCP server. By default it runs when no [[mcp.servers]]
    /// are configured; --no-demo-mcp=false starts it beside them.
    #[arg(long, env = "LMCHATKIT_NO_DEMO_MCP", value_name = "BOOL", num_args = 0..=1,
          require_equals = true, default_missing_value = "true",
          value_parser = BoolishValueParser::new())]
    pub no_demo_mcp: Option<bool>,
    /// Log filter, e.g. `info` or `lmchatkit=debug,info` [default: info].
    #[arg(long, env = "LMCHATKIT_LOG", value_name = "FILTER")]
    pub log: Option<String>,
    /// Log format on stderr [default: text].
    #[arg(long, env = "LMCHATKIT_LOG_FORMAT", value_enum, value_name = "FORMAT")]
    pub log_format: Option<LogFormat>,
}

/// The engine several instances share (`--engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EngineKind {
    /// This process alone.
    InProcess,
    /// The `--redis` URL.
    Redis,
    /// The `--db` PostgreSQL database.
    Postgres,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// `full` | `normal` (listed in `--help`) → the store's mode.
fn synchronous_parser() -> impl TypedValueParser<Value = Synchronous> {
    PossibleValuesParser::new(Synchronous::ALL.map(Synchronous::as_str))
        .try_map(|s| s.parse::<Synchronous>())
}

/// `Name: value` → a checked header pair.
pub fn parse_header(s: &str) -> Result<(String, String), String> {
    let (name, value) = s
        .split_once(':')
        .ok_or_else(|| format!("expected 'Name: value', got {s:?}"))?;
    check_header(name.trim(), value.trim())
}

/// The pair if `name` and `value` are valid in HTTP, else why not.
pub fn check_header(name: &str, value: &str) -> Result<(String, String), String> {
    http::HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("invalid header name {name:?}"))?;
    http::HeaderValue::from_str(value).map_err(|_| format!("invalid value for header {name}"))?;
    Ok((name.to_owned(), value.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_parsed_and_checked() {
        assert_eq!(
            parse_header("X-Team:  blue "),
            Ok(("X-Team".into(), "blue".into()))
        );
        assert!(parse_header("no colon").is_err());
        assert!(parse_header("bad name: x").is_err());
        assert!(parse_header("X-Line: a\nb").is_err());
    }

    #[test]
    fn optional_booleans_tell_absent_from_false() {
        let a = Args::try_parse_from(["lmchatkit", "--no-demo-mcp", "--upload", "no"]).unwrap();
        assert_eq!((a.no_demo_mcp, a.upload), (Some(true), Some(false)));
        let a = Args::try_parse_from(["lmchatkit", "--no-demo-mcp=false"]).unwrap();
        assert_eq!(a.no_demo_mcp, Some(false));
        let a = Args::try_parse_from(["lmchatkit", "--log-format", "json"]).unwrap();
        assert_eq!(a.log_format, Some(LogFormat::Json));
    }

    #[test]
    fn the_cli_is_well_formed() {
        use clap::CommandFactory;
        Args::command().debug_assert();
    }
}
