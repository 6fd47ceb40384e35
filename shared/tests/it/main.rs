//! The protocol crate's integration tests, one binary: the golden wire shapes (chat, AI SDK UI
//! Message Stream, users' MCP servers) and the UIMessage ⇄ Message conversion's properties.
//! `cargo test -p lmchatkit-protocol --test it MODULE::` runs one module.

mod golden;
mod golden_ui_stream;
mod golden_user_mcp;
mod ui_convert;
