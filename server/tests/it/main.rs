//! The library's integration tests, one binary: routes through a real `ChatService`, the stores
//! against SQLite and the machine's PostgreSQL, several instances on the machine's Redis and
//! PostgreSQL, the demo MCP App view in node. One binary links the library once (there were
//! twenty-one, each linking it); `cargo test -p lmchatkit --test it MODULE::` runs one module.

#[macro_use]
mod shared_engines;
mod support;

mod access;
mod aisdk;
mod app_rpc;
mod app_view;
mod approvals;
mod assets;
mod bad_input;
mod chat;
mod conversations;
mod demo_view;
mod engine_overload;
mod fanout;
mod history_conformance;
mod history_postgres;
mod hosts;
mod limits;
mod models;
mod mount_examples;
mod paths_of_0_1;
mod routes;
mod runs;
mod runs_shared;
mod user_mcp;
