//! What `scripts/setup-test.sh` installs (the npm MCP servers, the AI SDK client) is optional for
//! `cargo test` alone, which never downloads anything: a test whose tool is missing skips with a
//! note. Under `LMCHATKIT_EXPECT_MCP=1` (set by `scripts/test.sh` once setup-test.sh has run, as
//! in CI) a missing tool is a broken setup, so the test fails instead of passing silently.

use std::path::Path;

/// Whether `path` (installed by `scripts/setup-test.sh`) exists. When it does not, prints a
/// `SKIPPED:` note on stderr and returns `false` — or panics when `LMCHATKIT_EXPECT_MCP` is set.
pub fn installed(path: &Path) -> bool {
    if path.exists() {
        return true;
    }
    assert!(
        std::env::var_os("LMCHATKIT_EXPECT_MCP").is_none(),
        "setup-test.sh did not install {} (LMCHATKIT_EXPECT_MCP is set)",
        path.display()
    );
    eprintln!(
        "SKIPPED: {} not found; run ./scripts/setup-test.sh (the README test command does)",
        path.display()
    );
    false
}
