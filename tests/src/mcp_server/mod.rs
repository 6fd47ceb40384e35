//! An MCP server built with rmcp for the hub's tests, covering what a chat host meets:
//!
//! | tool | what |
//! |---|---|
//! | `add {a, b}` | plain tool, text result |
//! | `show_app` | `_meta.ui` (`ui://test/app.html`, model + app), structured content |
//! | `legacy_app` | only the deprecated flat `_meta["ui/resourceUri"]` |
//! | `app_refresh` | app-only (`visibility: ["app"]`) |
//! | `model_only` | model-only (`visibility: ["model"]`) |
//! | `fail` | an MCP tool error (`isError: true`) |
//! | `slow {ms}` | sleeps, for timeouts; counts cancelled calls in [`SLOW_CANCELLED`] |
//! | `big {bytes}` | a long text, for the result cap |
//! | `picture` | image + audio + embedded blob content |
//! | `poke {what}` | emits `tools` / `prompts` / `resources` `list_changed` on demand |
//! | `die` | exits the process mid-call (stdio crash tests) |
//!
//! Prompts: `greet {name, style?}` (two messages). Resources: `test://static/hello.txt`,
//! `ui://test/app.html` (MCP App HTML, listing `prefersBorder`, content CSP),
//! `skill://testing/SKILL.md` (on a second page of `resources/list`); template `test://item/{id}`.
//!
//! It speaks both lifecycles: `initialize` (list_changed through the peer) and 2026-07-28
//! (list_changed on `subscriptions/listen` streams). Run it [`serve_stdio`], [`serve_http`]
//! on loopback, or in-process with [`duplex_connector`].

use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::*;
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler, prompt, prompt_router, schemars, tool,
    tool_handler, tool_router,
};
use tokio::sync::broadcast;

/// Calls of `slow` in this process that the client cancelled (`notifications/cancelled`)
/// before they finished.
pub static SLOW_CANCELLED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The MCP App view's URI.
pub const UI_URI: &str = "ui://test/app.html";
/// The MCP App MIME type.
pub const APP_MIME: &str = "text/html;profile=mcp-app";
/// The view's HTML: a probe that speaks MCP Apps by hand and writes what it can reach and what
/// it was sent into its page (the browser tests read it).
pub const APP_HTML: &str = include_str!("app.html");
/// The skill resource.
pub const SKILL_URI: &str = "skill://testing/SKILL.md";

fn ui_meta(vis: &[&str]) -> MetaObject {
    MetaObject(rmcp::object!({"ui": {"resourceUri": UI_URI, "visibility": vis}}))
}

fn vis_meta(vis: &[&str]) -> MetaObject {
    MetaObject(rmcp::object!({"ui": {"visibility": vis}}))
}

fn legacy_meta() -> MetaObject {
    MetaObject(rmcp::object!({"ui/resourceUri": UI_URI}))
}

#[derive(Clone, Copy, Debug)]
enum Change {
    Tools,
    Prompts,
    Resources,
}

/// Arguments of `add`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct AddArgs {
    /// First addend.
    pub a: i64,
    /// Second addend.
    pub b: i64,
}

/// Arguments of `slow`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct SlowArgs {
    /// How long to sleep, in milliseconds.
    pub ms: u64,
}

/// Arguments of `big`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct BigArgs {
    /// Length of the text, in bytes.
    pub bytes: usize,
}

/// Arguments of `poke`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct PokeArgs {
    /// `tools` (default), `prompts` or `resources`.
    #[serde(default)]
    pub what: Option<String>,
}

/// Arguments of the `greet` prompt.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct GreetArgs {
    /// Who to greet.
    pub name: String,
    /// How (optional).
    #[serde(default)]
    pub style: Option<String>,
}

/// The test server. Clones share state (one list_changed channel), so the per-request
/// handlers of a stateless HTTP server all see the same subscribers.
#[derive(Clone)]
pub struct TestServer {
    changes: broadcast::Sender<Change>,
}

impl Default for TestServer {
    fn default() -> Self {
        Self::new()
    }
}

#[tool_router]
impl TestServer {
    /// A fresh server.
    pub fn new() -> Self {
        Self {
            changes: broadcast::channel(16).0,
        }
    }

    #[tool(description = "Add two integers")]
    async fn add(
        &self,
        Parameters(AddArgs { a, b }): Parameters<AddArgs>,
    ) -> Result<CallToolResult, McpError> {
        Ok(CallToolResult::success(vec![ContentBlock::text(
            (a + b).to_string(),
        )]))
    }

    #[tool(description = "Shows the test app", meta = ui_meta(&["model", "app"]))]
    async fn show_app(&self) -> Result<CallToolResult, McpError> {
        let mut r = CallToolResult::success(vec![ContentBlock::text("rendered in app")]);
        r.structured_content = Some(serde_json::json!({"value": 42}));
        Ok(r)
    }

    #[tool(description = "Legacy flat ui/resourceUri", meta = legacy_meta())]
    async fn legacy_app(&self) -> Result<CallToolResult, McpError> {
        Ok(CallToolResult::success(vec![ContentBlock::text("legacy")]))
    }

    #[tool(description = "App-only refresh", meta = vis_meta(&["app"]))]
    async fn app_refresh(&self) -> Result<CallToolResult, McpError> {
        Ok(CallToolResult::success(vec![ContentBlock::text(
            "refreshed",
        )]))
    }

    #[tool(description = "Model-only tool", meta = vis_meta(&["model"]))]
    async fn model_only(&self) -> Result<CallToolResult, McpError> {
        Ok(CallToolResult::success(vec![ContentBlock::text(
            "model only",
        )]))
    }

    #[tool(description = "Always fails")]
    async fn fail(&self) -> Result<CallToolResult, McpError> {
        Ok(CallToolResult::error(vec![ContentBlock::text("it broke")]))
    }

    #[tool(description = "Sleeps ms milliseconds")]
    async fn slow(
        &self,
        Parameters(SlowArgs { ms }): Parameters<SlowArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(ms)) => {
                Ok(CallToolResult::success(vec![ContentBlock::text("done")]))
            }
            _ = ctx.ct.cancelled() => {
                SLOW_CANCELLED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Err(McpError::internal_error("cancelled", None))
            }
        }
    }

    #[tool(description = "Returns a long text")]
    async fn big(
        &self,
        Parameters(BigArgs { bytes }): Parameters<BigArgs>,
    ) -> Result<CallToolResult, McpError> {
        let text: String = (0..bytes)
            .map(|i| if i % 64 == 63 { '\n' } else { 'x' })
            .collect();
        Ok(CallToolResult::success(vec![ContentBlock::text(format!(
            "HEAD{text}TAIL"
        ))]))
    }

    #[tool(description = "Non-text content")]
    async fn picture(&self) -> Result<CallToolResult, McpError> {
        Ok(CallToolResult::success(vec![
            ContentBlock::text("a picture:"),
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
            ContentBlock::Audio(AudioContent::new("AAAA", "audio/wav")),
        ]))
    }

    #[tool(description = "Emits list_changed")]
    async fn poke(
        &self,
        Parameters(PokeArgs { what }): Parameters<PokeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let change = match what.as_deref() {
            Some("prompts") => Change::Prompts,
            Some("resources") => Change::Resources,
            _ => Change::Tools,
        };
        if ctx.peer.peer_info().is_some() {
            // An `initialize` session: notify through the peer.
            let r = match change {
                Change::Tools => ctx.peer.notify_tool_list_changed().await,
                Change::Prompts => ctx.peer.notify_prompt_list_changed().await,
                Change::Resources => ctx.peer.notify_resource_list_changed().await,
            };
            r.map_err(|e| McpError::internal_error(e.to_string(), None))?;
        }
        // 2026-07-28 sessions: every open listen stream.
        let _ = self.changes.send(change);
        Ok(CallToolResult::success(vec![ContentBlock::text("poked")]))
    }

    #[tool(description = "Exits the server process")]
    async fn die(&self) -> Result<CallToolResult, McpError> {
        std::process::exit(3)
    }
}

#[prompt_router]
impl TestServer {
    /// Greets someone.
    #[prompt(name = "greet")]
    async fn greet(
        &self,
        Parameters(a): Parameters<GreetArgs>,
    ) -> Result<Vec<PromptMessage>, McpError> {
        let style = a.style.unwrap_or_else(|| "warmly".into());
        Ok(vec![
            PromptMessage::new_text(Role::User, format!("Greet {} {style}.", a.name)),
            PromptMessage::new_text(Role::Assistant, "Sure."),
        ])
    }
}

/// How long the test server's listings may be cached, for everyone (SEP-2549). rmcp's generated
/// listings say `ttlMs: 0`, which the hub honours by listing again on every use; the hub's
/// cache tests need a server that allows caching, so this one lists by hand with a day.
pub const LISTING_TTL_MS: u64 = 24 * 60 * 60 * 1000;

#[tool_handler]
impl ServerHandler for TestServer {
    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(
            ListToolsResult::with_all_items(Self::tool_router().list_all())
                .with_ttl_ms(LISTING_TTL_MS)
                .with_cache_scope(CacheScope::Public),
        )
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(
            ListPromptsResult::with_all_items(Self::prompt_router().list_all())
                .with_ttl_ms(LISTING_TTL_MS)
                .with_cache_scope(CacheScope::Public),
        )
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let cx = rmcp::handler::server::prompt::PromptContext::new(
            self,
            request.name,
            request.arguments,
            context,
        );
        Self::prompt_router().get_prompt(cx).await
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("lmchatkit-test-server", "0.1.0"))
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let mut rx = self.changes.subscribe();
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                c = rx.recv() => {
                    let sink = context.sink();
                    let _ = match c {
                        Ok(Change::Tools) => sink.notify_tool_list_changed().await,
                        Ok(Change::Prompts) => sink.notify_prompt_list_changed().await,
                        Ok(Change::Resources) => sink.notify_resource_list_changed().await,
                        Err(_) => return Ok(()),
                    };
                }
            }
        }
    }

    /// Two pages (`next_cursor`), so the client must follow the cursor to see the skill.
    async fn list_resources(
        &self,
        page: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        if page.and_then(|p| p.cursor).as_deref() == Some("page2") {
            return Ok(ListResourcesResult::with_all_items(vec![
                Resource::new(SKILL_URI, "testing")
                    .with_description("How to write good tests")
                    .with_mime_type("text/markdown"),
            ])
            .with_ttl_ms(LISTING_TTL_MS)
            .with_cache_scope(CacheScope::Public));
        }
        let mut first = ListResourcesResult::with_all_items(vec![
            Resource::new("test://static/hello.txt", "hello").with_mime_type("text/plain"),
            Resource::new(UI_URI, "test_app")
                .with_mime_type(APP_MIME)
                .with_meta(MetaObject(
                    rmcp::object!({"ui": {"prefersBorder": true, "domain": "listing.example"}}),
                )),
        ])
        .with_ttl_ms(LISTING_TTL_MS)
        .with_cache_scope(CacheScope::Public);
        first.next_cursor = Some("page2".into());
        Ok(first)
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("test://item/{id}", "item").with_mime_type("text/plain"),
        ])
        .with_ttl_ms(LISTING_TTL_MS)
        .with_cache_scope(CacheScope::Public))
    }

    async fn read_resource(
        &self,
        r: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = r.uri.as_str();
        let contents = if uri == UI_URI {
            ResourceContents::text(APP_HTML, UI_URI)
                .with_mime_type(APP_MIME)
                .with_meta(MetaObject(rmcp::object!({"ui": {
                    "csp": {"connectDomains": ["https://api.example.com"]},
                    "prefersBorder": false
                }})))
        } else if uri == "test://static/hello.txt" {
            ResourceContents::text("Hello, resource!", uri)
        } else if uri == SKILL_URI {
            ResourceContents::text("# Testing\nWrite the test first.", uri)
                .with_mime_type("text/markdown")
        } else if let Some(id) = uri.strip_prefix("test://item/") {
            ResourceContents::text(format!("item {id}"), uri)
        } else {
            return Err(McpError::resource_not_found(
                format!("no resource {uri}"),
                None,
            ));
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

mod run;
pub use run::{
    HttpTestServer, SeenHeaders, duplex_connector, free_port, npm_bin, npm_file, python_bin,
    serve_hanging, serve_http, serve_stdio,
};
