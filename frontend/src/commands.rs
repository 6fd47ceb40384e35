//! The `/` and `@` menus' logic: which entries match a draft, how a `/command args` line splits,
//! how MCP prompt arguments parse (quotes honoured), and how a file command expands. Pure, so it
//! is unit-tested natively.

use std::collections::BTreeMap;

use lmchatkit_protocol::{ChatRequest, Message, Params, Prompt, Resource, Role, SlashCommand};

/// The built-in commands, in menu order, with their descriptions.
pub const BUILTINS: [(&str, &str); 3] = [
    ("compact", "Summarise the conversation to save context"),
    ("list-prompts", "List the MCP prompts"),
    ("list-resources", "List the MCP resources"),
];

/// What a `/` menu entry runs.
#[derive(Debug, Clone, PartialEq)]
pub enum SlashKind {
    /// One of [`BUILTINS`].
    Builtin,
    /// A file command (expanded in the browser).
    File(SlashCommand),
    /// An MCP prompt (resolved by the server).
    Prompt(Prompt),
}

/// One row of the `/` menu.
#[derive(Debug, Clone, PartialEq)]
pub struct SlashItem {
    /// Name without the `/`.
    pub name: String,
    /// One-line description.
    pub description: String,
    /// Argument hint (`a* b`, `*` = required).
    pub hint: String,
    /// What it runs.
    pub kind: SlashKind,
}

impl SlashItem {
    /// Whether selecting the entry should wait for arguments (insert `/name `) rather than send.
    pub fn takes_arguments(&self) -> bool {
        match &self.kind {
            SlashKind::Builtin => false,
            SlashKind::File(c) => c.body.contains("$ARGUMENTS"),
            SlashKind::Prompt(p) => !p.arguments.is_empty(),
        }
    }
}

/// The hint for a prompt's arguments: `a* b`.
pub fn argument_hint(prompt: &Prompt) -> String {
    prompt
        .arguments
        .iter()
        .map(|a| {
            if a.required {
                format!("{}*", a.name)
            } else {
                a.name.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `/` menu for `draft`: open while it starts with `/` and has no whitespace yet; built-ins,
/// then file commands, then MCP prompts, each filtered by case-insensitive prefix.
pub fn slash_matches(draft: &str, commands: &[SlashCommand], prompts: &[Prompt]) -> Vec<SlashItem> {
    let Some(q) = draft.strip_prefix('/') else {
        return Vec::new();
    };
    if q.chars().any(char::is_whitespace) {
        return Vec::new();
    }
    let q = crate::text::lower(q);
    let mut out: Vec<SlashItem> = BUILTINS
        .iter()
        .map(|(n, d)| SlashItem {
            name: (*n).into(),
            description: (*d).into(),
            hint: String::new(),
            kind: SlashKind::Builtin,
        })
        .collect();
    out.extend(commands.iter().map(|c| SlashItem {
        name: c.name.clone(),
        description: c.description.clone().unwrap_or_default(),
        hint: c.argument_hint.clone().unwrap_or_default(),
        kind: SlashKind::File(c.clone()),
    }));
    out.extend(prompts.iter().map(|p| SlashItem {
        name: p.name.clone(),
        description: p.description.clone().unwrap_or_default(),
        hint: argument_hint(p),
        kind: SlashKind::Prompt(p.clone()),
    }));
    out.retain(|i| crate::text::lower(&i.name).starts_with(&q));
    out
}

/// Splits `/name rest` (the rest may span lines). `None` when `text` is not a command line.
pub fn parse_slash(text: &str) -> Option<(String, String)> {
    let rest = text.trim_start().strip_prefix('/')?;
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(rest.len());
    if end == 0 {
        return None;
    }
    let (name, args) = rest.split_at(end);
    if !args.is_empty() && !args.starts_with(char::is_whitespace) {
        return None;
    }
    Some((name.to_owned(), args.trim().to_owned()))
}

/// Splits on whitespace honouring `"…"` and `'…'` quotes (also inside `key="a b"`).
pub fn split_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in s.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                started = true;
            }
            None if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            None => {
                cur.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(cur);
    }
    out
}

/// Parses MCP prompt arguments: with exactly one required argument and no `=` in the first word,
/// the whole remainder is that argument; otherwise `key=value` words (quotes honoured).
pub fn parse_prompt_args(args: &str, prompt: &Prompt) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let words = split_words(args);
    let required: Vec<_> = prompt.arguments.iter().filter(|a| a.required).collect();
    if required.len() == 1 && words.first().is_some_and(|w| !w.contains('=')) {
        out.insert(required[0].name.clone(), args.trim().to_owned());
        return out;
    }
    for w in words {
        if let Some((k, v)) = w.split_once('=')
            && !k.is_empty()
        {
            out.insert(k.to_owned(), v.to_owned());
        }
    }
    out
}

/// Expands a file command's body: `$ARGUMENTS` is replaced by `args`; a body without the
/// placeholder gets the arguments appended as a paragraph.
pub fn expand_command(cmd: &SlashCommand, args: &str) -> String {
    if cmd.body.contains("$ARGUMENTS") {
        cmd.body.replace("$ARGUMENTS", args)
    } else if args.is_empty() {
        cmd.body.clone()
    } else {
        format!("{}\n\n{}", cmd.body.trim_end(), args)
    }
}

/// The request `/compact` sends: one user message asking for a summary of `messages` (user and
/// assistant text only), offering the model no tools. `None` when there is nothing to compact
/// (fewer than two messages).
pub fn compact_request(
    model: String,
    persona_id: String,
    params: Params,
    messages: &[Message],
) -> Option<ChatRequest> {
    if messages.len() < 2 {
        return None;
    }
    let mut transcript = String::new();
    for m in messages {
        let who = match m.role {
            Role::User => "User",
            Role::Assistant => "Assistant",
            _ => continue,
        };
        let text = m.content.joined_text("\n");
        transcript.push_str(&format!("[{who}]: {text}\n\n"));
    }
    let prompt = format!(
        "Summarise the conversation below in 200-500 words. Keep decisions, code, file paths, URLs \
         and open questions; drop pleasantries.\n\n{transcript}"
    );
    Some(
        ChatRequest::new(model, vec![Message::user(prompt)])
            .with_persona(persona_id)
            .with_params(Some(params))
            .without_tools(),
    )
}

/// The `@` query at the end of `draft` (`@[\w:/.{}-]*`), without the `@`.
pub fn at_query(draft: &str) -> Option<&str> {
    let at = draft.rfind('@')?;
    let q = &draft[at + 1..];
    let ok = q
        .chars()
        .all(|c| c.is_alphanumeric() || "_:/.{}-".contains(c));
    let boundary = at == 0 || draft[..at].ends_with(char::is_whitespace);
    (ok && boundary).then_some(q)
}

/// The `@scheme://…` resource references in `text`, in order, each once — the rule the service
/// expands them by: `@` at the start or after whitespace or an opening bracket, then a URI with
/// a scheme, up to whitespace or the next `@`, trailing sentence punctuation trimmed.
pub fn resource_refs(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for (at, _) in text.match_indices('@') {
        let boundary = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace() || "([{".contains(c));
        let rest = &text[at + 1..];
        let end = rest
            .find(|c: char| c.is_whitespace() || c == '@')
            .unwrap_or(rest.len());
        let uri =
            rest[..end].trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\'']);
        let scheme_ok = uri.split_once("://").is_some_and(|(scheme, tail)| {
            !tail.is_empty()
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
        });
        if boundary && scheme_ok && !out.contains(&uri) {
            out.push(uri);
        }
    }
    out
}

/// `text` without the reference `@uri` (and one space after it).
pub fn remove_ref(text: &str, uri: &str) -> String {
    let needle = format!("@{uri}");
    let with_space = format!("{needle} ");
    if text.contains(&with_space) {
        text.replacen(&with_space, "", 1)
    } else {
        text.replacen(&needle, "", 1)
    }
}

/// What selecting a resource inserts: the URI, or a template's URI up to its first `{`.
pub fn resource_insert(r: &Resource) -> String {
    if r.template {
        r.uri.split('{').next().unwrap_or("").to_owned()
    } else {
        r.uri.clone()
    }
}

/// Up to 10 resources matching `q` on the URI (a template's fixed part) or the name.
pub fn resource_matches<'a>(q: &str, resources: &'a [Resource]) -> Vec<&'a Resource> {
    let q = crate::text::lower(q);
    resources
        .iter()
        .filter(|r| {
            crate::text::lower(&resource_insert(r)).contains(&q)
                || r.name
                    .as_deref()
                    .is_some_and(|n| crate::text::lower(n).contains(&q))
        })
        .take(10)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lmchatkit_protocol::PromptArgument;

    #[test]
    fn resource_refs_follow_the_service_rule() {
        assert_eq!(
            resource_refs("see @docs://readme and (@file:///a.txt) or @docs://readme again"),
            vec!["docs://readme", "file:///a.txt"]
        );
        assert!(resource_refs("mail me@example.com or @notauri or @://x or @1x://y").is_empty());
        assert_eq!(resource_refs("@a://b@c://d"), vec!["a://b"]);
        assert_eq!(
            remove_ref("read @docs://readme now", "docs://readme"),
            "read now"
        );
        assert_eq!(remove_ref("read @docs://readme", "docs://readme"), "read ");
    }

    fn prompt(args: &[(&str, bool)]) -> Prompt {
        let mut p: Prompt = serde_json::from_value(serde_json::json!({"name": "review"})).unwrap();
        p.arguments = args
            .iter()
            .map(|(n, r)| {
                let mut a: PromptArgument =
                    serde_json::from_value(serde_json::json!({"name": n})).unwrap();
                a.required = *r;
                a
            })
            .collect();
        p
    }

    #[test]
    fn slash_lines_parse_across_lines() {
        assert_eq!(
            parse_slash("/review a b"),
            Some(("review".into(), "a b".into()))
        );
        assert_eq!(
            parse_slash("/fix\nline two"),
            Some(("fix".into(), "line two".into()))
        );
        assert_eq!(parse_slash("/x-y_z"), Some(("x-y_z".into(), String::new())));
        assert_eq!(parse_slash("hello /x"), None);
        assert_eq!(parse_slash("/ x"), None);
        assert_eq!(parse_slash("/a/b"), None);
    }

    #[test]
    fn prompt_arguments_honour_quotes_and_single_required() {
        let one = prompt(&[("code", true), ("style", false)]);
        assert_eq!(
            parse_prompt_args("fn main() {}", &one)["code"],
            "fn main() {}"
        );
        let two = prompt(&[("a", true), ("b", true)]);
        let got = parse_prompt_args("a=\"x y\" b='z' junk =v", &two);
        assert_eq!(got.len(), 2);
        assert_eq!(got["a"], "x y");
        assert_eq!(got["b"], "z");
        assert_eq!(parse_prompt_args("code=1", &one)["code"], "1");
        assert_eq!(split_words(" 'a b'  c\"d e\" "), vec!["a b", "cd e"]);
    }

    #[test]
    fn compact_asks_for_a_summary_and_offers_no_tools() {
        let msgs = [
            Message::user("alpha"),
            Message::assistant("beta"),
            Message::tool("c1", "t", "not in the summary"),
        ];
        let req = compact_request("m".into(), "p".into(), Params::new(), &msgs).unwrap();
        let text = req.messages[0].content.joined_text("");
        assert!(text.starts_with("Summarise the conversation"), "{text}");
        assert!(
            text.contains("[User]: alpha\n\n[Assistant]: beta\n\n"),
            "{text}"
        );
        assert!(!text.contains("not in the summary"));
        let wire = serde_json::to_value(&req).unwrap();
        assert_eq!(wire["no_tools"], true, "{wire}");
        assert!(compact_request("m".into(), "p".into(), Params::new(), &msgs[..1]).is_none());
    }

    #[test]
    fn menus_filter_and_order() {
        let cmd: SlashCommand = serde_json::from_value(serde_json::json!({"id": "c", "name": "Commit", "body": "Write $ARGUMENTS", "source": "file"})).unwrap();
        let items = slash_matches("/c", std::slice::from_ref(&cmd), &[prompt(&[("x", true)])]);
        assert_eq!(
            items.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(),
            ["compact", "Commit"]
        );
        assert!(items[1].takes_arguments());
        assert!(slash_matches("/c x", std::slice::from_ref(&cmd), &[]).is_empty());
        assert_eq!(
            slash_matches("/re", &[], &[prompt(&[("x", true)])])[0].hint,
            "x*"
        );
        assert_eq!(expand_command(&cmd, "tests"), "Write tests");
        assert_eq!(at_query("see @file:///a"), Some("file:///a"));
        assert_eq!(at_query("mail a@b"), None);
        assert_eq!(at_query("no at"), None);
    }
}
