//! The skill index: `skill://` resources listed in the system prompt so the model knows which
//! skills exist and fetches one with the virtual `lmchatkit__get_skill` tool (which the service
//! injects whenever such resources exist).

use lmchatkit_protocol::{Resource, SKILL_TOOL_NAME};

/// The sentence that introduces the index.
pub const SKILL_INDEX_HEADER: &str =
    "Call the lmchatkit__get_skill tool with the skill URI to retrieve detailed instructions:";

/// The skill index for these resources (only `skill://` ones, templates excluded), or `None`
/// when there are none.
///
/// ```
/// use lmchatkit::protocol::Resource;
/// let mut r = Resource::new("skill://golang/SKILL.md");
/// r.name = Some("golang".into());
/// r.description = Some("Writing Go".into());
/// let text = lmchatkit::mcp::skill_index(&[r, Resource::new("file:///x")]).unwrap();
/// assert!(text.starts_with("Call the lmchatkit__get_skill tool"));
/// assert!(text.contains("- skill://golang/SKILL.md (golang): Writing Go"));
/// assert!(!text.contains("file:///x"));
/// ```
pub fn skill_index(resources: &[Resource]) -> Option<String> {
    let lines: Vec<String> = resources
        .iter()
        .filter(|r| !r.template && r.uri.starts_with("skill://"))
        .map(|r| {
            let mut line = format!("- {}", r.uri);
            if let Some(n) = r.name.as_deref().filter(|n| !n.is_empty()) {
                line.push_str(&format!(" ({n})"));
            }
            if let Some(d) = r.description.as_deref().filter(|d| !d.is_empty()) {
                line.push_str(&format!(": {}", d.replace('\n', " ")));
            }
            line
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    debug_assert!(SKILL_INDEX_HEADER.contains(SKILL_TOOL_NAME));
    Some(format!("{SKILL_INDEX_HEADER}\n{}", lines.join("\n")))
}

/// Appends the skill index to `current` (separated by a blank line) when there are skills.
pub fn append_skill_index(current: String, resources: &[Resource]) -> String {
    match skill_index(resources) {
        None => current,
        Some(index) if current.trim().is_empty() => index,
        Some(index) => format!("{}\n\n{index}", current.trim_end()),
    }
}
