//! The tool result of a call of a user's own MCP tool that was not run because its server now
//! describes it differently from what the user accepted (or no longer lists it). The server
//! writes it ([`stale_tool_text`]); the UI recognises it ([`stale_tool_server`]) to flag the
//! call and offer to review that server, without mirroring the wording.
//!
//! The text starts with [`STALE_TOOL_MARKER`], the server's slug and `]`, then tells the model
//! what happened. Only an error result is read this way by the UI; any text can start with the
//! marker (a tool may return it), so the flag is advice to review, never a permission.

/// Starts every stale-tool result; the server's slug and `]` follow.
pub const STALE_TOOL_MARKER: &str = "[stale tool: ";

/// The result the model (and the user) read for a call of `tool` (the name the model called,
/// `{slug}__{name}`) of the user's server `slug`, which was not run because it is stale.
///
/// ```
/// use lmchatkit_protocol::{stale_tool_server, stale_tool_text};
/// let t = stale_tool_text("docs__search", "docs");
/// assert!(t.contains("was not run") && t.contains("review"));
/// assert_eq!(stale_tool_server(&t), Some("docs"));
/// ```
pub fn stale_tool_text(tool: &str, slug: &str) -> String {
    format!(
        "{STALE_TOOL_MARKER}{slug}] The tool {tool} was not run: the MCP server \"{slug}\" now \
         describes it differently from what the user accepted (or no longer lists it). Tell the \
         user to review the server (refresh it and accept the tool again) before using it."
    )
}

/// The slug of the server a stale-tool result names, if `text` is one (a slug is 1 to 32 of
/// `a-z 0-9 _ -`).
///
/// ```
/// use lmchatkit_protocol::stale_tool_server;
/// assert_eq!(stale_tool_server("[stale tool: my-docs] ..."), Some("my-docs"));
/// assert_eq!(stale_tool_server("[error] something else"), None);
/// assert_eq!(stale_tool_server("[stale tool: Not A Slug] ..."), None);
/// ```
pub fn stale_tool_server(text: &str) -> Option<&str> {
    let (slug, _) = text.strip_prefix(STALE_TOOL_MARKER)?.split_once(']')?;
    let ok = (1..=32).contains(&slug.len())
        && slug
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-');
    ok.then_some(slug)
}
