//! The standalone `lmchatkit` app: the chat service on its own hyper server, configured by
//! flags and environment variables.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use lmchatkit::history::{HistoryStore, MemoryStore, SqliteStore};
use lmchatkit::llm::DemoModel;
use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::protocol::{Event, Model};
use lmchatkit::{
    ChatService, CompleteRequest, Config, EventBroadcaster, EventStream, Host, HostError,
    McpConfigFile, McpHub, RequestContext, StandardHost, async_trait,
};
use tokio::net::TcpListener;

/// A chat UI for any OpenAI-compatible LLM endpoint.
#[derive(Debug, Parser)]
#[command(name = "lmchatkit", version, about)]
struct Args {
    /// Address to listen on.
    #[arg(long, env = "LMCHATKIT_LISTEN", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// URL prefix the chat is served under.
    #[arg(long, env = "LMCHATKIT_PREFIX", default_value = "/chat")]
    prefix: String,
    /// OpenAI-compatible base URL (normally ending in /v1); /chat/completions and /models are appended.
    #[arg(long, env = "OPENAI_BASE_URL")]
    openai_base_url: Option<String>,
    /// Full chat-completions URL, overriding the base URL's /chat/completions.
    #[arg(long, env = "OPENAI_COMPLETIONS_URL")]
    completions_url: Option<String>,
    /// Bearer token for the upstream.
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    openai_api_key: Option<String>,
    /// Offer these models instead of asking the upstream's /models (repeatable).
    #[arg(long = "model", env = "LMCHATKIT_MODELS", value_delimiter = ',')]
    models: Vec<String>,
    /// History database: a SQLite file path, or `memory:` for no persistence.
    #[arg(long, env = "LMCHATKIT_DB")]
    db: Option<String>,
    /// Directory of persona .toml files.
    #[arg(long, env = "LMCHATKIT_PERSONAS_DIR")]
    personas_dir: Option<PathBuf>,
    /// Directory of slash-command .md files.
    #[arg(long, env = "LMCHATKIT_COMMANDS_DIR")]
    commands_dir: Option<PathBuf>,
    /// Allow file uploads (attachments).
    #[arg(long, env = "LMCHATKIT_UPLOAD", default_value_t = true, action = clap::ArgAction::Set)]
    upload: bool,
    /// A TOML file with `[[mcp.servers]]` entries (`${VAR}` expands from the environment).
    #[arg(long, env = "LMCHATKIT_CONFIG")]
    config: Option<PathBuf>,
    /// Without an upstream, do not offer the built-in demo model.
    #[arg(long, env = "LMCHATKIT_NO_DEMO")]
    no_demo: bool,
    /// Log filter (e.g. info, lmchatkit=debug).
    #[arg(long, env = "LMCHATKIT_LOG", default_value = "info")]
    log: String,
}

/// Stands in when no upstream is configured: no models, and a clear error if asked anyway.
struct NoUpstream;

#[async_trait]
impl Host for NoUpstream {
    async fn models(&self, _: &RequestContext) -> Result<Vec<Model>, HostError> {
        Ok(Vec::new())
    }
    fn complete(&self, _: &RequestContext, _: CompleteRequest) -> EventStream {
        Box::pin(futures_util::stream::once(async {
            Event::error(
                "No model is configured. Start lmchatkit with OPENAI_BASE_URL pointing at an OpenAI-compatible endpoint.",
            )
        }))
    }
}

fn default_db() -> PathBuf {
    directories::ProjectDirs::from("", "", "lmchatkit")
        .map(|d| d.data_dir().join("history.db"))
        .unwrap_or_else(|| PathBuf::from("lmchatkit-history.db"))
}

fn history(db: Option<&str>) -> Result<Arc<dyn HistoryStore>, Box<dyn std::error::Error>> {
    if db == Some("memory:") {
        return Ok(Arc::new(MemoryStore::new()));
    }
    let path = db.map(PathBuf::from).unwrap_or_else(default_db);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    tracing::info!(path = %path.display(), "history");
    Ok(Arc::new(SqliteStore::open(&path)?))
}

/// The LLM host, and whether it is the demo model.
fn host(args: &Args) -> (Arc<dyn Host>, bool) {
    let cfg = match (&args.completions_url, &args.openai_base_url) {
        (Some(url), _) => OpenAiConfig::completions_url(url.clone()),
        (None, Some(base)) => OpenAiConfig::new(base.clone()),
        (None, None) if args.no_demo => {
            tracing::warn!("no upstream configured (set OPENAI_BASE_URL); the UI will say so");
            return (Arc::new(NoUpstream), false);
        }
        (None, None) => {
            tracing::warn!("no upstream configured (set OPENAI_BASE_URL): running the demo model");
            return (Arc::new(DemoModel::new()), true);
        }
    };
    let mut cfg = match &args.openai_api_key {
        Some(key) => cfg.with_api_key(key.clone()),
        None => cfg,
    };
    if !args.models.is_empty() {
        cfg = cfg.with_models(args.models.iter().map(|m| Model::new(m.trim())).collect());
    }
    (Arc::new(OpenAiBackend::new(cfg)), false)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::new(&args.log))
        .init();

    let events = EventBroadcaster::new();
    let (llm, demo) = host(&args);
    let hub = mcp_hub(args.config.as_deref(), &events)?;
    let host: Arc<dyn Host> = match &hub {
        Some(hub) => Arc::new(StandardHost::from_arc(llm).with_mcp(hub.clone())),
        None => llm,
    };
    let mut builder = Config::builder_arc(host)
        .event_broadcaster(events)
        .demo(demo)
        .prefix(args.prefix.clone())
        .history_arc(history(args.db.as_deref())?)
        .file_upload(args.upload)
        .title("lmchatkit");
    if let Some(dir) = &args.personas_dir {
        builder = builder.personas_dir(dir);
    }
    if let Some(dir) = &args.commands_dir {
        builder = builder.commands_dir(dir);
    }
    if let Some(hub) = &hub {
        let status = hub.clone();
        builder = builder.mcp_status(move || status.status());
        // Connect in the background; the first request that needs a server waits for it.
        let starting = hub.clone();
        tokio::spawn(async move { starting.start().await });
    }
    let config = builder.build()?;
    let svc = ChatService::new(config);

    let listener = TcpListener::bind(args.listen).await?;
    let addr = listener.local_addr()?;
    println!(
        "lmchatkit is listening: open http://{addr}{}",
        svc.config().prefix()
    );
    serve(listener, svc).await;
    if let Some(hub) = hub {
        hub.shutdown().await; // stops the stdio MCP servers
    }
    Ok(())
}

/// The MCP hub for the servers in the config file, if it names any.
fn mcp_hub(
    path: Option<&std::path::Path>,
    events: &EventBroadcaster,
) -> Result<Option<McpHub>, Box<dyn std::error::Error>> {
    let Some(path) = path else { return Ok(None) };
    let file = McpConfigFile::from_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if file.servers.is_empty() {
        return Ok(None);
    }
    tracing::info!(servers = file.servers.len(), "MCP servers configured");
    Ok(Some(McpHub::new(file.servers).with_events(events.clone())))
}

/// Accepts connections until SIGINT/SIGTERM, then lets open ones finish for up to 10 s.
async fn serve(listener: TcpListener, svc: ChatService) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            conn = listener.accept() => {
                let Ok((stream, _)) = conn else { continue };
                // Without it, Nagle + delayed ACK hold small SSE frames for ~40 ms.
                let _ = stream.set_nodelay(true);
                let svc = TowerToHyperService::new(svc.clone());
                let conn = auto::Builder::new(TokioExecutor::new()).serve_connection_with_upgrades(TokioIo::new(stream), svc).into_owned();
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                });
            }
            _ = &mut shutdown => break,
        }
    }
    tracing::info!("shutting down; waiting up to 10 s for open streams");
    let _ = tokio::time::timeout(Duration::from_secs(10), graceful.shutdown()).await;
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! { _ = ctrl_c => {}, _ = term.recv() => {} }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
