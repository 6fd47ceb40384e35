//! End-to-end tests, one binary: real servers on loopback, the mock upstreams, real MCP servers from
//! npm and PyPI, the real `ai` client, the app binary and the mount examples. The browser tests
//! are the other binary (`tests/browser/`). `cargo test -p lmchatkit-tests --test it MODULE::`
//! runs one module.

mod oauth_demo;
mod oauth_server;

mod aisdk_driver;
mod aisdk_e2e;
mod aisdk_mcp;
mod bench_smoke;
mod book;
mod chat_e2e;
mod clap_tools;
mod instances;
mod layers;
mod mcp_cache_icons;
mod mcp_e2e;
mod mcp_elicitation;
mod mcp_everything;
mod mcp_hub;
mod mcp_sse;
mod mcp_tasks;
mod mcp_transports;
mod operator_mcp_oauth;
mod providers;
mod tls;
mod user_mcp;
mod user_mcp_oauth;
mod user_mcp_oauth_local;
