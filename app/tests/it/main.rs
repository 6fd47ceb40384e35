//! The app's integration tests, one binary: each starts the built `lmchatkit` as its own process
//! (its CLI, settings, auth gate, durability, limits, PostgreSQL, providers, set-up problems,
//! users' MCP servers) or runs `scripts/dev.sh`. `cargo test -p lmchatkit-app --test it MODULE::`
//! runs one module.

mod support;

mod binary;
mod binary_auth;
mod binary_config;
mod binary_durability;
mod binary_limits;
mod binary_postgres;
mod binary_providers;
mod binary_setup_problems;
mod binary_user_mcp;
mod dev_flow;
