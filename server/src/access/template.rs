//! Matching a URI against an MCP resource template (RFC 6570 level 1, as MCP servers use
//! them): the literal text must match in order, each `{var}` stands for at least one character.
//! Level 1 is enough to tell which listed template offers a URI; reserved (`{+var}`) and
//! multi-segment forms match any text, as the server decides what it accepts.

/// True when `uri` is an expansion of `template`.
///
/// A `{var}` matches one or more characters other than `/`, `?` and `#`; `{+var}`, `{#var}`
/// and `{/var}` match any text. A template without variables must equal the URI.
pub(crate) fn matches_template(template: &str, uri: &str) -> bool {
    let Some((literals, vars)) = split(template) else {
        return false;
    };
    matches_from(&literals, &vars, uri)
}

/// Literal pieces and the variable kinds between them (`literals.len() == vars.len() + 1`).
fn split(template: &str) -> Option<(Vec<&str>, Vec<bool>)> {
    let mut literals = Vec::new();
    let mut vars = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}')? + open;
        literals.push(&rest[..open]);
        let expr = &rest[open + 1..close];
        vars.push(expr.starts_with(['+', '#', '/']));
        rest = &rest[close + 1..];
    }
    literals.push(rest);
    Some((literals, vars))
}

/// Backtracking match: `vars[i]` is true when variable `i` may span `/`.
fn matches_from(literals: &[&str], vars: &[bool], uri: &str) -> bool {
    let Some(rest) = uri.strip_prefix(literals[0]) else {
        return false;
    };
    let Some((&wide, vars)) = vars.split_first() else {
        return rest.is_empty();
    };
    let literals = &literals[1..];
    // The variable takes 1..n characters, then the next literal must follow.
    let stop = rest
        .char_indices()
        .find(|(_, c)| !wide && matches!(c, '/' | '?' | '#'))
        .map_or(rest.len(), |(i, _)| i);
    (1..=stop)
        .filter(|&i| rest.is_char_boundary(i))
        .any(|i| matches_from(literals, vars, &rest[i..]))
}

#[cfg(test)]
mod tests {
    use super::matches_template;

    #[test]
    fn a_variable_matches_one_path_segment() {
        assert!(matches_template(
            "demo://resource/dynamic/text/{id}",
            "demo://resource/dynamic/text/1"
        ));
        assert!(!matches_template(
            "demo://resource/dynamic/text/{id}",
            "demo://resource/dynamic/text/"
        ));
        assert!(!matches_template(
            "demo://resource/dynamic/text/{id}",
            "demo://resource/dynamic/text/1/x"
        ));
        assert!(!matches_template(
            "demo://resource/dynamic/text/{id}",
            "demo://resource/static/1"
        ));
    }

    #[test]
    fn literals_between_variables_must_match_in_order() {
        assert!(matches_template(
            "file:///{dir}/{name}.txt",
            "file:///a/b.txt"
        ));
        assert!(!matches_template(
            "file:///{dir}/{name}.txt",
            "file:///a/b.md"
        ));
        assert!(matches_template("x://{a}-{b}", "x://1-2-3"));
    }

    #[test]
    fn reserved_expansion_spans_slashes() {
        assert!(matches_template("file://{+path}", "file:///etc/hosts"));
        assert!(!matches_template("file://{path}", "file:///etc/hosts"));
    }

    #[test]
    fn a_template_without_variables_must_equal_the_uri() {
        assert!(matches_template("a://b", "a://b"));
        assert!(!matches_template("a://b", "a://bc"));
        assert!(!matches_template("a://{unclosed", "a://x"));
    }
}
