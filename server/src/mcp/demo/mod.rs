//! The built-in demo MCP server: an rmcp server that runs in-process (over a
//! `tokio::io::duplex` pipe), so a first run with nothing configured can try tools, prompts,
//! resources, skills and an MCP App view. The `lmchatkit` binary adds it by default. Feature
//! `demo-mcp`, off by default so a library build does not compile an rmcp server; `app` turns
//! it on.
//!
//! | kind | name | what |
//! |---|---|---|
//! | tool | `roll_dice {sides?}` | a random roll (default d6; 2–1000 sides) |
//! | tool | `current_time` | the server's time (UTC, RFC 3339) |
//! | tool, MCP App | `show_clock {title?}` | the time, shown in the view [`DEMO_VIEW_URI`] |
//! | tool, app-only | `clock_now` | what the view's button calls (`visibility: ["app"]`) |
//! | prompt | `explain {topic, audience?}` | a user message asking for an explanation |
//! | resource | `demo://lmchatkit/about.txt` | plain text |
//! | resource | `skill://dice-games/SKILL.md` | a skill (listed in the system prompt's skill index) |
//! | resource | [`DEMO_VIEW_URI`] | the view: one self-contained HTML file, `text/html;profile=mcp-app` |
//!
//! The view (`view.html` next to this file) speaks the MCP Apps protocol by hand; its elements
//! `#tool-input`, `#tool-result` and `#call-result` have stable ids for browser tests.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::*;
use rmcp::service::RequestContext;
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler, ServiceExt, prompt, prompt_handler,
    prompt_router, schemars, tool, tool_handler, tool_router,
};

use super::{MCP_APP_MIME, McpServerConfig};

/// The demo server's name in the hub: its tools are `demo__roll_dice` and so on.
pub const DEMO_SERVER_NAME: &str = "demo";
/// The `ui://` resource of the demo MCP App view.
pub const DEMO_VIEW_URI: &str = "ui://lmchatkit-demo/clock.html";
/// The demo tool whose result is shown in the view (un-namespaced).
pub const DEMO_APP_TOOL: &str = "show_clock";
/// The app-only tool the view calls (un-namespaced).
pub const DEMO_APP_ONLY_TOOL: &str = "clock_now";

const ABOUT_URI: &str = "demo://lmchatkit/about.txt";
const SKILL_URI: &str = "skill://dice-games/SKILL.md";
const VIEW_HTML: &str = include_str!("view.html");
const SKILL_TEXT: &str = include_str!("SKILL.md");
const ABOUT_TEXT: &str = "This is lmchatkit's built-in demo MCP server. It runs inside the app, \
needs nothing installed, and shows tools (roll_dice, current_time), a prompt (explain), \
resources, a skill and an MCP App view (show_clock). Start lmchatkit with --no-demo-mcp to \
switch it off.";

/// The demo server as an in-process MCP server named [`DEMO_SERVER_NAME`], for
/// [`McpHub::new`](super::McpHub::new). Each (re)connect starts a fresh server task on a new
/// pipe, so it needs a Tokio runtime when the hub connects.
///
/// ```
/// use lmchatkit::mcp::{McpHub, demo_server_config};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let hub = McpHub::new(vec![demo_server_config()]);
/// let tools = hub.list_tools(&lmchatkit::Scope::default()).await.unwrap();
/// assert!(tools.iter().any(|t| t.name == "demo__roll_dice"));
/// hub.shutdown().await;
/// # });
/// ```
pub fn demo_server_config() -> McpServerConfig {
    McpServerConfig::in_process(DEMO_SERVER_NAME, || {
        let (client, server) = tokio::io::duplex(1 << 20);
        tokio::spawn(async move {
            match DemoServer.serve(server).await {
                Ok(running) => {
                    let _ = running.waiting().await;
                }
                Err(e) => tracing::warn!(error = %e, "demo MCP server: handshake failed"),
            }
        });
        client
    })
}

/// Arguments of `roll_dice`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct DiceArgs {
    /// Number of faces (2–1000, default 6).
    #[serde(default)]
    sides: Option<u32>,
}

/// Arguments of `show_clock`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct ClockArgs {
    /// A heading for the clock view.
    #[serde(default)]
    title: Option<String>,
}

/// Arguments of the `explain` prompt.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct ExplainArgs {
    /// What to explain.
    topic: String,
    /// Who it is for (default: a curious beginner).
    #[serde(default)]
    audience: Option<String>,
}

fn view_meta(visibility: &[&str]) -> MetaObject {
    MetaObject(rmcp::object!({"ui": {"resourceUri": DEMO_VIEW_URI, "visibility": visibility}}))
}

/// The time now: RFC 3339 (UTC, seconds) and Unix milliseconds.
fn now() -> (String, i64) {
    let t = chrono::Utc::now();
    (
        t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        t.timestamp_millis(),
    )
}

/// A result whose text is `text(iso)` and whose structured content carries the time.
fn time_result(text: impl FnOnce(&str) -> String) -> CallToolResult {
    let (iso, unix_ms) = now();
    let mut r = CallToolResult::success(vec![ContentBlock::text(text(&iso))]);
    r.structured_content = Some(serde_json::json!({"iso": iso, "unix_ms": unix_ms}));
    r
}

#[derive(Clone, Copy)]
struct DemoServer;

#[tool_router]
impl DemoServer {
    #[tool(
        description = "Roll a die with the given number of sides (default 6) and return the result"
    )]
    async fn roll_dice(
        &self,
        Parameters(DiceArgs { sides }): Parameters<DiceArgs>,
    ) -> Result<CallToolResult, McpError> {
        let sides = sides.unwrap_or(6);
        if !(2..=1000).contains(&sides) {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "sides must be between 2 and 1000, not {sides}"
            ))]));
        }
        let roll = rand::random_range(1..=sides);
        let mut r = CallToolResult::success(vec![ContentBlock::text(format!(
            "You rolled a {roll} on a d{sides}."
        ))]);
        r.structured_content = Some(serde_json::json!({"roll": roll, "sides": sides}));
        Ok(r)
    }

    #[tool(description = "The current date and time on the server, in UTC (RFC 3339)")]
    async fn current_time(&self) -> Result<CallToolResult, McpError> {
        Ok(time_result(|iso| format!("It is {iso} (UTC).")))
    }

    #[tool(
        description = "Show a live clock to the user in an interactive view (an MCP App)",
        meta = view_meta(&["model", "app"])
    )]
    async fn show_clock(
        &self,
        Parameters(ClockArgs { title }): Parameters<ClockArgs>,
    ) -> Result<CallToolResult, McpError> {
        let title = title.unwrap_or_else(|| "Demo clock".into());
        let mut r =
            time_result(|iso| format!("{title}: it is {iso} (UTC); the clock view shows it live."));
        if let Some(Some(sc)) = r.structured_content.as_mut().map(|v| v.as_object_mut()) {
            sc.insert("title".into(), title.into());
        }
        Ok(r)
    }

    #[tool(
        description = "The server's time, for the clock view's button",
        meta = view_meta(&["app"])
    )]
    async fn clock_now(&self) -> Result<CallToolResult, McpError> {
        Ok(time_result(|iso| format!("Server time: {iso}")))
    }
}

#[prompt_router]
impl DemoServer {
    /// Asks the model to explain a topic for an audience.
    #[prompt(name = "explain")]
    async fn explain(
        &self,
        Parameters(a): Parameters<ExplainArgs>,
    ) -> Result<Vec<PromptMessage>, McpError> {
        let audience = a.audience.unwrap_or_else(|| "a curious beginner".into());
        Ok(vec![PromptMessage::new_text(
            Role::User,
            format!(
                "Explain {} to {audience} in three short paragraphs, with one example.",
                a.topic
            ),
        )])
    }
}

#[tool_handler]
#[prompt_handler]
impl ServerHandler for DemoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new(
            "lmchatkit-demo",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions("A demo server built into lmchatkit: dice, the time and a clock view.")
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(ABOUT_URI, "about")
                .with_description("What the demo server is")
                .with_mime_type("text/plain"),
            Resource::new(SKILL_URI, "dice-games")
                .with_description("How to run a quick dice game with the roll_dice tool")
                .with_mime_type("text/markdown"),
            Resource::new(DEMO_VIEW_URI, "clock_view")
                .with_description("The clock view of the show_clock tool")
                .with_mime_type(MCP_APP_MIME)
                .with_meta(MetaObject(rmcp::object!({"ui": {"prefersBorder": true}}))),
        ]))
    }

    async fn read_resource(
        &self,
        r: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = r.uri.as_str();
        let contents = match uri {
            ABOUT_URI => ResourceContents::text(ABOUT_TEXT, uri).with_mime_type("text/plain"),
            SKILL_URI => ResourceContents::text(SKILL_TEXT, uri).with_mime_type("text/markdown"),
            // No `csp`: the view needs no network, so the default (inline only) CSP applies.
            DEMO_VIEW_URI => ResourceContents::text(VIEW_HTML, uri)
                .with_mime_type(MCP_APP_MIME)
                .with_meta(MetaObject(rmcp::object!({"ui": {"prefersBorder": true}}))),
            _ => {
                return Err(McpError::resource_not_found(
                    format!("no resource {uri}"),
                    None,
                ));
            }
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

#[cfg(test)]
mod tests;
