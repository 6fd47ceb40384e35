//! A clap CLI whose commands are chat tools, beside an MCP hub (feature `clap-tools`).
//!
//! The CLI is `notes` (`notes.rs` beside this file): `add`, `list`, `remove`, `wait`. One binary, three
//! ways to run it:
//!
//! - `clap_tools add "buy milk" --tag home`, `clap_tools list`: the command line itself.
//! - `clap_tools serve-chat`: the chat, where the model calls them as `cli__add`, `cli__list`, …
//!   (in this process, no MCP in between), beside the built-in demo MCP server's tools. `list`
//!   and `wait` only read, so the approval policy runs them without asking; `add` and `remove`
//!   ask. The model is `$OPENAI_BASE_URL` (OpenAI-compatible) when set, else the demo model.
//! - `clap_tools mcp`: the same tools as an MCP server on stdio, for any MCP client.
//!
//! Run: `cargo run -p lmchatkit --example clap_tools -- serve-chat`, then open the URL.

use clap::Parser;
use lmchatkit::llm::DemoModel;
use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::mcp::{McpHub, demo_server_config};
use lmchatkit::protocol::ToolDecision;
use lmchatkit::{ApprovalPolicy, ChatService, Config, StandardHost};
mod notes;

use notes::{Cmd, Notes, Store};

#[tokio::main]
async fn main() {
    let cli = Notes::parse();
    let store = Store::from_env();
    match cli.cmd {
        Cmd::ServeChat => serve_chat(store).await,
        Cmd::Mcp => {
            if let Err(e) = notes::in_process(store).serve_stdio().await {
                eprintln!("notes mcp: {e}");
                std::process::exit(1);
            }
        }
        cmd => match notes::run(cmd, &store).await {
            Ok(out) if !out.is_error => println!("{}", out.text),
            Ok(out) => {
                eprintln!("{}", out.text);
                std::process::exit(1);
            }
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        },
    }
}

async fn serve_chat(store: Store) {
    let tools = notes::in_process(store);
    let hub = McpHub::new(vec![demo_server_config()]);
    let host = match std::env::var("OPENAI_BASE_URL") {
        Ok(url) => StandardHost::new(OpenAiBackend::new(OpenAiConfig::new(url))),
        Err(_) => StandardHost::new(DemoModel::new()),
    }
    .with_mcp(hub)
    .with_toolset(tools.clone());
    // Ask by default; the CLI's read-only commands run without asking.
    let policy = ApprovalPolicy::new(ToolDecision::Ask).with_check(tools.approval_check());
    let config = Config::builder(host)
        .prefix("/chat")
        .approval_policy(policy)
        .build()
        .expect("valid config");
    if let Err(e) = serve(ChatService::new(config), "/chat").await {
        eprintln!("serve-chat: {e}");
        std::process::exit(1);
    }
}

/// Serves `svc` on `$ADDR` (default: a free port on loopback) and prints its URL, one hyper
/// connection task per accepted connection, as in the `hyper` example.
async fn serve(svc: ChatService, prefix: &str) -> Result<(), Box<dyn std::error::Error>> {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto;
    use hyper_util::service::TowerToHyperService;

    let addr = std::env::var("ADDR").unwrap_or_else(|_| "127.0.0.1:0".into());
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("listening on http://{}{prefix}", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?; // small SSE frames must not wait for Nagle
        let svc = TowerToHyperService::new(svc.clone());
        tokio::spawn(async move {
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}
