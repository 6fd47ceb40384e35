//! The fixture of the MCP Apps browser tests (`tests/tests/browser/ui_apps.rs`): the mock upstream and
//! an MCP hub with the rmcp test server twice (`test`, whose probe view speaks MCP Apps by hand,
//! and `other`) plus the npm `server-basic-vanillajs` example when installed, behind the real
//! service — in default mode, or in proxy mode with the chat on `127.0.0.1` and the sandbox on
//! `localhost` (a different host name, as cookies require).

use lmchatkit::llm::openai::{OpenAiBackend, OpenAiConfig};
use lmchatkit::store::MemoryStore;
use lmchatkit::{ChatService, Config, McpHub, McpServerConfig, StandardHost};
use tokio::net::TcpListener;

use crate::browser::app::{Env, bundle_built};
use crate::browser::launch;
use crate::mcp_server::{duplex_connector, npm_bin};
use crate::mock_upstream::MockUpstream;
use crate::serve::{Served, serve, serve_on};

/// A running app: the chat (with its browser) and, in proxy mode, the sandbox server.
pub struct AppsEnv {
    /// Mock upstream, chat server and browser.
    pub env: Env,
    /// The sandbox origin's server (proxy mode).
    pub sandbox: Option<Served>,
    /// Whether the npm basic-vanillajs server is in the hub.
    pub basic: bool,
}

/// The hub: `test` and `other` in-process, `basic` over stdio when installed.
fn hub() -> (McpHub, bool) {
    let mut servers = vec![
        McpServerConfig::in_process("test", duplex_connector()),
        McpServerConfig::in_process("other", duplex_connector()),
    ];
    let basic = npm_bin("mcp-server-basic-vanillajs");
    if let Some(bin) = &basic {
        servers.push(McpServerConfig::stdio(
            "basic",
            bin.to_string_lossy(),
            ["--stdio"],
        ));
    }
    // A turn (and the page's tool list) waits for the npm server's first listing as long as a
    // loaded machine needs: at the default 2 s, CI once approved `basic__get-time` in a turn
    // that went on without the server's tools, and no view came.
    let hub = McpHub::new(servers).with_listing_wait(std::time::Duration::from_secs(30));
    (hub, basic.is_some())
}

/// Starts everything; `proxy` serves views through the sandbox proxy on `localhost`.
pub async fn setup_apps(proxy: bool) -> Option<AppsEnv> {
    let mock = MockUpstream::start().await;
    let backend = OpenAiBackend::new(OpenAiConfig::new(mock.base_url()).with_api_key("sk-test"));
    let (hub, basic) = hub();
    let status = hub.clone();
    let mut builder = Config::builder(StandardHost::new(backend).with_mcp(hub))
        .history(MemoryStore::new())
        .events(true)
        .mcp_status(move || status.status());
    let sandbox_listener = match proxy {
        true => {
            let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            builder = builder.sandbox_origin(format!(
                "http://localhost:{}",
                l.local_addr().unwrap().port()
            ));
            Some(l)
        }
        false => None,
    };
    let svc = ChatService::new(builder.build().unwrap());
    let events = svc.events().cloned().unwrap_or_default();
    let sandbox = sandbox_listener.map(|l| serve_on(l, svc.sandbox_only()));
    let server = serve(svc).await;
    if !bundle_built(&server.url("/chat/assets/lmchatkit.js")).await {
        return None;
    }
    let browser = launch().await?;
    browser.client.goto(&server.url("/chat")).await.unwrap();
    Some(AppsEnv {
        env: Env {
            mock,
            server,
            browser,
            events,
        },
        sandbox,
        basic,
    })
}
