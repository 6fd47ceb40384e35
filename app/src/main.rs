//! The standalone `lmchatkit` app: the chat service on its own hyper server, configured by
//! flags, environment variables and a TOML file (`settings.rs`), with built-in defaults
//! (`defaults.rs`, the demo model and the demo MCP server) so a first run needs nothing.
//!
//! Decisions: the demo model runs only without an upstream (neither the `OPENAI_BASE_URL`
//! shorthand nor `[[providers]]`, see `providers.rs`; with providers but none configured, the
//! menu shows their models disabled rather than the demo) and the demo MCP server only without
//! `[[mcp.servers]]` (so a configured model never sees toy tools), each unless switched
//! explicitly (`--no-demo`, `--no-demo-mcp[=false]`, `[demo]` in the file). A configured
//! server named `demo` wins over the built-in one. The history file is synced in full on every
//! save (`--db-synchronous full`), so a reply the app saved survives a power loss; `normal` is
//! the faster opt-out. `--db postgres://…` keeps the history, approvals and users' MCP
//! servers in PostgreSQL instead (`db_settings.rs`), for several instances sharing them.
//! With a shared engine (`--redis URL`, or `--engine postgres` with a PostgreSQL `--db`) the
//! app connects to it before anything else and exits with status 2 (naming the URL without its
//! password) when it cannot, like a bad flag: an instance that silently ran alone would split
//! runs between instances. Its runs, events (`EventBroadcaster::over_engine`) and view tokens
//! then go through the engine, and its signing secret (approval ids) is
//! derived from the key file (`[user_mcp] key_file`, default `user-mcp.key` next to the
//! history file, made 0600 on first run), so every instance given the same file verifies what
//! any of them signed; copy the file to every instance. With `[user_mcp]` on, the key file is
//! read anyway and the secret comes from it too. A `[[mcp.servers]]` entry with `oauth = true`
//! is signed in to by the operator at `{prefix}/mcp/operator`; the grant is sealed by the same
//! key file's key and kept in `operator-mcp.json` beside it (see `operator_oauth`).
//!
//! The app allocates with mimalloc (built without transparent huge pages), not the system's
//! allocator: with glibc's, `malloc`/`free` and their chunk merging took about a sixth of the
//! relay's CPU under load; with mimalloc the relay pinned to one core streams 12–21% more short
//! replies a second and 37% more events of long ones, with 2% more memory at 10,000 open
//! streams (with huge pages it was 43% more). The library leaves the allocator to the program
//! that links it.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod approval_settings;
mod auth;
mod cli;
mod db_settings;
mod defaults;
mod descriptors;
mod providers;
mod serve;
mod settings;
mod user_mcp_settings;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use lmchatkit::llm::DemoModel;
use lmchatkit::llm::demo::DEMO_PROVIDER;
use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::logs::LogFilter;
use lmchatkit::mcp::{DEMO_SERVER_NAME, FileGrantStore, OperatorOAuth, demo_server_config};
use lmchatkit::protocol::Model;
use lmchatkit::secrets::sealing::Keyring;
use lmchatkit::store::{
    HistoryStore, MemoryStore, PostgresOptions, PostgresStore, SqliteOptions, SqliteStore,
    Synchronous,
};
use lmchatkit::user_mcp::{MemoryUserMcpStore, UserMcp, UserMcpStore};
use lmchatkit::{ApprovalStore, ChatService, Config, EventBroadcaster, Host, McpHub, StandardHost};
use tokio::net::TcpListener;

use auth::{Gate, GateLayer, Token};
use cli::{EngineKind, LogFormat};
use settings::{Access, Settings};

fn main() -> ExitCode {
    match lmchatkit::runtime::builder().build() {
        Ok(rt) => rt.block_on(start()),
        Err(e) => {
            eprintln!("lmchatkit: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn start() -> ExitCode {
    let settings = match Settings::load(cli::Args::parse()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("lmchatkit: {e}");
            return ExitCode::from(2);
        }
    };
    init_logging(&settings);
    let engine = match shared_engine(&settings).await {
        Ok(engine) => engine,
        // The error names the URL without its password.
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("lmchatkit: {e}");
            return ExitCode::from(2);
        }
    };
    match run(settings, engine).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("lmchatkit: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Connects to the engine the instances share, if any (`--engine`, `--redis`).
async fn shared_engine(
    s: &Settings,
) -> Result<Option<lmchatkit::live::SharedEngine>, lmchatkit::live::EngineError> {
    match (s.engine, &s.redis, &s.postgres) {
        (EngineKind::Redis, Some(r), _) => {
            let redis = lmchatkit::live::Redis::connect(&r.url).await?;
            Ok(Some(redis.with_prefix(r.prefix.clone()).into()))
        }
        (EngineKind::Postgres, _, Some(pg)) => {
            let options = PostgresOptions::default().with_max_connections(pg.max_connections);
            let engine = lmchatkit::live::Postgres::connect(&pg.url, options).await?;
            Ok(Some(engine.into()))
        }
        _ => Ok(None),
    }
}

fn init_logging(s: &Settings) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = LogFilter::parse(&s.log).unwrap_or_else(|e| {
        eprintln!(
            "lmchatkit: invalid log filter {:?} ({e}); using info",
            s.log
        );
        LogFilter::default()
    });
    // Every line loses URL queries and user info, whichever crate logged it (rmcp logs the
    // URL of a failed connection whole).
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(|| lmchatkit::secrets::RedactingWriter::new(std::io::stderr()));
    let registry = tracing_subscriber::registry().with(filter.into_layer());
    match s.log_format {
        LogFormat::Text => registry.with(logs).init(),
        LogFormat::Json => registry.with(logs.json()).init(),
    }
}

async fn run(
    s: Settings,
    engine: Option<lmchatkit::live::SharedEngine>,
) -> Result<(), Box<dyn std::error::Error>> {
    // Through a shared engine, a save through any instance reaches the tabs on every other.
    let events = match &engine {
        Some(engine) => EventBroadcaster::over_engine(engine.clone()),
        None => EventBroadcaster::new(),
    };
    let shared = engine.is_some();
    let (llm, demo) = host(&s)?;
    let operator_oauth = operator_oauth(&s)?;
    let hub = mcp_hub(&s, &events).map(|hub| match &operator_oauth {
        Some(oauth) => hub.with_oauth(oauth.clone()),
        None => hub,
    });
    let host: Arc<dyn Host> = match &hub {
        Some(hub) => Arc::new(StandardHost::from_arc(llm).with_mcp(hub.clone())),
        None => llm,
    };
    let mut builder = Config::builder_arc(host.clone())
        .event_broadcaster(events)
        .demo(demo)
        .prefix(s.prefix.clone())
        .file_upload(s.upload)
        .approval_policy(s.approval.clone())
        .model_catalog(catalog(&s, demo))
        .title("lmchatkit");
    if let Some(engine) = engine {
        tracing::info!(engine = ?engine, "runs, events and view tokens are shared through the engine");
        builder = builder.shared_engine(engine);
    }
    let (history, approvals, user_servers) = match &s.postgres {
        Some(pg) => postgres(pg).await?,
        None => history(s.db.as_deref(), s.db_synchronous)?,
    };
    builder = builder.history_arc(history);
    if let Some(store) = approvals {
        builder = builder.approval_store(store);
    }
    if let Some(um) = &s.user_mcp {
        let db = s.db.as_deref().filter(|d| *d != "memory:");
        let path = um.key_path(&db.map(PathBuf::from).unwrap_or_else(default_db));
        let keyring = Keyring::load_or_create(&path)
            .map_err(|e| format!("user_mcp key file {}: {e}", path.display()))?;
        let policy = um.policy();
        tracing::info!(key_file = %path.display(), %policy, "users may add their own MCP servers");
        if !matches!(s.access, Access::TrustedHeader { .. }) {
            tracing::warn!(
                "[user_mcp] is on, but without --trusted-user-header every request is the \
                 anonymous user, who has no MCP servers of their own (401)"
            );
        }
        // The same key file every instance reads: approval ids verify on any of them.
        builder = builder.signing_secret(keyring.derive(SIGNING_LABEL));
        let user_mcp = UserMcp::new_arc(user_servers, keyring, policy)
            .with_presets(um.presets.iter().cloned())
            .map_err(|e| e.to_string())?;
        builder = builder.user_mcp(user_mcp);
    }
    if shared && s.user_mcp.is_none() {
        // The same key file on every instance: approval ids verify on any of them.
        let (path, keyring) = key_file(&s)?;
        tracing::info!(key_file = %path.display(), "signing keys come from the key file (give every instance the same one)");
        builder = builder.signing_secret(keyring.derive(SIGNING_LABEL));
    }
    if let Some(oauth) = &operator_oauth {
        builder = builder.mcp_oauth(oauth.clone());
    }
    for name in &s.allowed_hosts {
        builder = builder.allowed_host(name.clone());
    }
    for origin in &s.frame_ancestors {
        builder = builder.frame_ancestor(origin.clone());
    }
    for origin in &s.allowed_origins {
        builder = builder.allowed_origin(origin.clone());
    }
    if let Some(operator) = &s.operator {
        builder = builder.operator(operator.clone());
    }
    if let Some(prompt) = &s.system_prompt {
        builder = builder.system_prompt(prompt.clone());
    }
    if let Some(n) = s.max_steps {
        builder = builder.max_steps(n);
    }
    let files = descriptors::raise_limit();
    let (streams, lowered) = descriptors::stream_cap(s.max_streams, files);
    if let Some(warning) = lowered {
        tracing::warn!("{warning}");
    }
    let per_user = s
        .max_streams_per_user
        .unwrap_or(lmchatkit::limits::DEFAULT_STREAMS_PER_PRINCIPAL)
        .max(1);
    tracing::info!(open_files = ?files, streams, per_user, "concurrent chat streams");
    builder = builder.max_streams(per_user, streams);
    if matches!(s.access, Access::TrustedHeader { .. }) {
        builder = builder.require_principal(true);
    }
    if !s.listen.ip().is_loopback() && s.allowed_hosts.is_empty() {
        tracing::warn!(
            listen = %s.listen,
            "only localhost, 127.0.0.1 and [::1] are served: add the names others use to reach \
             this machine with --allowed-host"
        );
    }
    builder = match &s.personas_dir {
        Some(dir) => builder.personas_dir(dir),
        None => builder.personas(defaults::personas()),
    };
    builder = match &s.commands_dir {
        Some(dir) => builder.commands_dir(dir),
        None => builder.commands(defaults::commands()),
    };
    if let Some(hub) = &hub {
        let status = hub.clone();
        builder = builder.mcp_status(move || status.status());
    }
    // In the background (the first request that needs a server waits for it).
    tokio::spawn(startup_check(host.clone(), hub.clone()));
    if let Some((_, origin)) = &s.sandbox {
        builder = builder.sandbox_origin(origin.clone());
    }
    let svc = ChatService::new(builder.build()?);
    let stop = serve::stop_on_signal();
    if let Some((addr, origin)) = &s.sandbox {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot listen on {addr} (sandbox): {e}"))?;
        tracing::info!(%origin, %addr, "MCP App views run in proxy mode on the sandbox origin");
        // The sandbox page only: nothing there to protect, and views load it without cookies.
        tokio::spawn(serve::serve(
            listener,
            svc.sandbox_only(),
            GateLayer::new(Gate::Open),
            stop.clone(),
            s.header_timeout,
        ));
    }

    let listener = TcpListener::bind(s.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", s.listen))?;
    let mut addr = listener.local_addr()?;
    if addr.ip().is_unspecified() {
        // 0.0.0.0 / [::] listen everywhere, but a browser cannot open them.
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let prefix = svc.config().prefix().to_owned();
    let gate = gate(&s, addr.port(), &prefix);
    let query = match &gate {
        Gate::Token(token) => format!("?{}={}", auth::TOKEN_PARAM, token.value()),
        _ => String::new(),
    };
    println!("lmchatkit is listening: open http://{addr}{prefix}{query}");
    serve::serve(listener, svc, GateLayer::new(gate), stop, s.header_timeout).await;
    if let Some(hub) = hub {
        hub.shutdown().await; // stops the stdio MCP servers
    }
    Ok(())
}

/// Who may use the app: see `auth.rs`.
fn gate(s: &Settings, port: u16, prefix: &str) -> Gate {
    match &s.access {
        Access::TrustedHeader { header, proxies } => Gate::Proxy {
            header: header.clone(),
            from: proxies.clone().into(),
        },
        Access::Token(Some(token)) => {
            Gate::Token(Arc::new(Token::new(token.clone(), port, prefix)))
        }
        Access::Token(None) if s.listen.ip().is_loopback() => Gate::Open,
        Access::Token(None) => {
            tracing::info!("listening beyond loopback: a token is required (see the printed URL)");
            Gate::Token(Arc::new(Token::new(Token::generate(), port, prefix)))
        }
    }
}

/// The label the service's signing secret is derived under from the app's key file.
const SIGNING_LABEL: &str = "lmchatkit/signing-secret";

fn default_db() -> PathBuf {
    directories::ProjectDirs::from("", "", "lmchatkit")
        .map(|d| d.data_dir().join("history.db"))
        .unwrap_or_else(|| PathBuf::from("lmchatkit-history.db"))
}

/// The history store, the approval store (`None`: the service's memory default) and the
/// store of users' own MCP servers.
type Stores = (
    Arc<dyn HistoryStore>,
    Option<Arc<dyn ApprovalStore>>,
    Arc<dyn UserMcpStore>,
);

/// The history store: in memory for `memory:`, else the SQLite file (default: the platform data
/// directory) with the given `synchronous` mode, which then keeps the "always allow" lists and
/// users' own MCP servers too
/// (`None`: the service's memory default).
fn history(
    db: Option<&str>,
    synchronous: Synchronous,
) -> Result<Stores, Box<dyn std::error::Error>> {
    if db == Some("memory:") {
        return Ok((
            Arc::new(MemoryStore::new()),
            None,
            Arc::new(MemoryUserMcpStore::default()),
        ));
    }
    let path = db.map(PathBuf::from).unwrap_or_else(default_db);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    tracing::info!(path = %path.display(), %synchronous, "history");
    let options = SqliteOptions::default().with_synchronous(synchronous);
    let store = SqliteStore::open_with(&path, options)
        .map_err(|e| format!("history {}: {e}", path.display()))?;
    let store = Arc::new(store);
    Ok((store.clone(), Some(store.clone()), store))
}

/// The PostgreSQL store (migrated at connect), which keeps the "always allow" lists and users'
/// own MCP servers too. Errors never show the URL's password.
async fn postgres(pg: &db_settings::PostgresDb) -> Result<Stores, Box<dyn std::error::Error>> {
    let options = PostgresOptions::default().with_max_connections(pg.max_connections);
    // The error says "history store: PostgreSQL …" already.
    let store = PostgresStore::connect(&pg.url, options).await?;
    let store = Arc::new(store);
    Ok((store.clone(), Some(store.clone()), store))
}

/// Connects the MCP servers and lists the models once (the providers' probe), then logs every
/// set-up problem with its likely fix: the list `/api/config` shows the operator
/// ([`Host::setup_problems`]).
async fn startup_check(host: Arc<dyn Host>, hub: Option<McpHub>) {
    let connect = async {
        if let Some(hub) = &hub {
            hub.start().await;
        }
    };
    let cx = lmchatkit::RequestContext::default();
    let (_, listed) = tokio::join!(connect, host.models(&cx));
    let problems = host.setup_problems();
    for p in &problems {
        tracing::warn!(subject = %p.subject, fix = %p.fix, "set-up problem: {}", p.problem);
    }
    match (problems.is_empty(), listed) {
        (true, Ok(models)) => {
            tracing::info!(models = models.len(), "set-up check passed");
        }
        (true, Err(e)) => tracing::warn!(error = %e, "listing the models failed"),
        (false, _) => {}
    }
}

/// The LLM host, and whether it is the demo model: a `Providers` over `[[providers]]` (the
/// shorthand joining as `openai`) when the file has any; else the shorthand's single backend
/// with bare model ids, as before providers existed; else the demo model (or the stand-in).
fn host(s: &Settings) -> Result<(Arc<dyn Host>, bool), Box<dyn std::error::Error>> {
    let shorthand = shorthand(s).map(|b| Arc::new(b) as Arc<dyn Host>);
    if !s.providers.is_empty() {
        let host = providers::host(&s.providers, shorthand)?;
        if host.is_empty() {
            tracing::warn!(
                "no provider is configured: every model is shown disabled with the reason"
            );
        }
        return Ok((Arc::new(host), false));
    }
    match shorthand {
        Some(backend) => Ok((backend, false)),
        None if !s.demo_model => {
            tracing::warn!("no upstream configured (set OPENAI_BASE_URL); the UI will say so");
            Ok((Arc::new(defaults::NoUpstream), false))
        }
        None => {
            tracing::warn!("no upstream configured (set OPENAI_BASE_URL): running the demo model");
            Ok((Arc::new(DemoModel::new()), true))
        }
    }
}

/// The `OPENAI_BASE_URL` shorthand's backend (flags, environment and `[upstream]`), if set.
fn shorthand(s: &Settings) -> Option<OpenAiBackend> {
    let up = &s.upstream;
    let cfg = match (&up.completions_url, &up.base_url) {
        (Some(url), _) => OpenAiConfig::completions_url(url.clone()),
        (None, Some(base)) => OpenAiConfig::new(base.clone()),
        (None, None) => return None,
    };
    let mut cfg = match &up.api_key {
        Some(key) => cfg.with_api_key(key.clone()),
        None => cfg,
    };
    for (name, value) in &up.headers {
        cfg = cfg.with_header(name.clone(), value.clone());
    }
    if !up.models.is_empty() {
        cfg = cfg.with_models(up.models.iter().map(Model::new).collect());
    }
    Some(OpenAiBackend::new(cfg))
}

/// The settings' catalog, with the demo model described as provider `demo` at price 0 when it
/// runs (so its replies show a $0 cost).
fn catalog(s: &Settings, demo: bool) -> lmchatkit::models::Catalog {
    if !demo {
        return s.catalog.clone();
    }
    s.catalog
        .clone()
        .with_provider(DEMO_PROVIDER, true, None)
        .with_entry(DemoModel::catalog_entry())
}

/// The key file (`[user_mcp] key_file`, default `user-mcp.key` next to the history file) and
/// its keyring, created on first use.
fn key_file(s: &Settings) -> Result<(PathBuf, Keyring), String> {
    let db =
        s.db.as_deref()
            .filter(|d| *d != "memory:" && !d.contains("://"));
    let path = s.key_file.clone().unwrap_or_else(|| {
        let db = db.map(PathBuf::from).unwrap_or_else(default_db);
        db.parent().unwrap_or(Path::new("")).join("user-mcp.key")
    });
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("key file {}: {e}", path.display()))?;
    }
    let keyring =
        Keyring::load_or_create(&path).map_err(|e| format!("key file {}: {e}", path.display()))?;
    Ok((path, keyring))
}

/// The operator's sign-ins, when a configured server has `oauth = true`: sealed by the key
/// file's key, kept in `operator-mcp.json` beside it (instances sharing the directory share
/// the sign-in).
fn operator_oauth(s: &Settings) -> Result<Option<OperatorOAuth>, String> {
    let oauth: Vec<&str> = s
        .mcp_servers
        .iter()
        .filter(|c| c.uses_oauth())
        .map(|c| c.name.as_str())
        .collect();
    if oauth.is_empty() {
        return Ok(None);
    }
    let (path, keyring) = key_file(s)?;
    let grants = path
        .parent()
        .unwrap_or(Path::new(""))
        .join("operator-mcp.json");
    if matches!(s.access, Access::TrustedHeader { .. }) && s.operator.is_none() {
        tracing::warn!(
            "MCP servers sign in with OAuth, but no --operator is named: with \
             --trusted-user-header only the operator may sign the service in to them"
        );
    }
    tracing::info!(
        servers = ?oauth,
        grants = %grants.display(),
        "the operator signs the service in to these MCP servers at {}{}",
        s.prefix,
        lmchatkit::mcp::OPERATOR_PAGE_PATH
    );
    Ok(Some(OperatorOAuth::new(
        keyring,
        FileGrantStore::new(grants),
    )))
}

/// The MCP hub: the configured servers, plus the demo server when it is on.
fn mcp_hub(s: &Settings, events: &EventBroadcaster) -> Option<McpHub> {
    let mut servers = s.mcp_servers.clone();
    if s.demo_mcp_on() {
        if servers.iter().any(|c| c.name == DEMO_SERVER_NAME) {
            tracing::warn!(
                "an MCP server is named {DEMO_SERVER_NAME:?}: the demo server stays off"
            );
        } else {
            servers.push(demo_server_config());
        }
    }
    if servers.is_empty() {
        return None;
    }
    tracing::info!(servers = servers.len(), "MCP servers configured");
    Some(McpHub::new(servers).with_events(events.clone()))
}
