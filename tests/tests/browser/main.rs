//! The browser tests, one binary: the UI in headless Chromium (Debian's, through chromedriver)
//! against a real server on loopback. Without a browser they fail when `LMCHATKIT_EXPECT_BROWSER`
//! is set (as `scripts/test.sh` sets it) and are skipped otherwise.

mod ui_a11y;
mod ui_app_binary;
mod ui_apps;
mod ui_bench;
mod ui_chat;
mod ui_code;
mod ui_contract;
mod ui_features;
mod ui_input;
mod ui_models;
mod ui_policy;
mod ui_runs;
mod ui_servers;
mod ui_sidebar;
