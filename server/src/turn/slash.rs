//! `/name args` user messages naming an MCP prompt are replaced by the prompt's messages.
//! Multi-line messages work; arguments are `key=value` (quotes honoured: `key="a b"`), or the
//! whole remainder when the prompt has exactly one required argument. Unknown names pass
//! through as text (file commands were expanded by the browser already). Earlier turns reuse
//! their expansion (see [`super::cache`]); the latest user message expands fresh.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use lmchatkit_protocol::{Message, Prompt};
use regex::Regex;

use crate::access::{self, Scope};
use crate::host::{Host, RequestContext};

use super::cache::{Resolved, TurnCache};

static COMMAND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)\A/([A-Za-z0-9_][\w.-]*)(?:\s+(.*))?\z").expect("valid regex")
});

/// Splits `/name rest` into the name and the (trimmed) remainder.
pub(super) fn split(text: &str) -> Option<(&str, &str)> {
    let c = COMMAND.captures(text.trim())?;
    Some((
        c.get(1)?.as_str(),
        c.get(2).map_or("", |m| m.as_str().trim()),
    ))
}

/// The prompt arguments in `rest`.
pub(super) fn parse_args(prompt: &Prompt, rest: &str) -> BTreeMap<String, String> {
    let mut args = BTreeMap::new();
    if rest.is_empty() {
        return args;
    }
    let required: Vec<_> = prompt.arguments.iter().filter(|a| a.required).collect();
    let first = rest.split_whitespace().next().unwrap_or("");
    let looks_keyed = first
        .split_once('=')
        .is_some_and(|(k, _)| !k.is_empty() && prompt.arguments.iter().any(|a| a.name == k));
    if required.len() == 1 && !looks_keyed {
        args.insert(required[0].name.clone(), rest.to_owned());
        return args;
    }
    let tokens =
        shlex::split(rest).unwrap_or_else(|| rest.split_whitespace().map(str::to_owned).collect());
    for t in tokens {
        if let Some((k, v)) = t.split_once('=')
            && !k.is_empty()
        {
            args.insert(k.to_owned(), v.to_owned());
        }
    }
    args
}

pub(super) async fn resolve(
    host: &dyn Host,
    cx: &RequestContext,
    cache: &TurnCache,
    messages: &mut Vec<Message>,
) {
    if !messages
        .iter()
        .any(|m| super::user_text(m).is_some_and(|t| t.trim_start().starts_with('/')))
    {
        return;
    }
    let prompts = match access::list_prompts(host, &Scope::user(cx.clone())).await {
        Ok(p) if !p.is_empty() => p,
        _ => return,
    };
    let latest = super::latest_user(messages);
    let principal = cx.principal();
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.drain(..).enumerate() {
        let found = super::user_text(&m)
            .and_then(split)
            .and_then(|(name, rest)| {
                let p = prompts
                    .iter()
                    .find(|p| p.name == name)
                    .or_else(|| prompts.iter().find(|p| p.name.eq_ignore_ascii_case(name)))?;
                Some((p.clone(), rest.to_owned()))
            });
        let Some((prompt, rest)) = found else {
            out.push(m);
            continue;
        };
        let args = parse_args(&prompt, &rest);
        let key = format!(
            "prompt {} {}",
            prompt.name,
            serde_json::to_string(&args).unwrap_or_default()
        );
        if Some(i) != latest
            && let Some(Resolved::Messages(cached)) = cache.get(principal.id(), &key)
        {
            out.extend(cached);
            continue;
        }
        match access::get_prompt(host, cx, &prompt.name, args).await {
            Ok(r) => {
                let expanded: Vec<Message> = r
                    .messages
                    .into_iter()
                    .map(|pm| Message::new(pm.role, pm.content))
                    .collect();
                cache.put(principal.id(), key, Resolved::Messages(expanded.clone()));
                out.extend(expanded);
            }
            // Failures are not cached: the next turn tries again.
            Err(e) => out.push(Message::assistant(format!(
                "[error: prompt {} failed: {e}]",
                prompt.name
            ))),
        }
    }
    *messages = out;
}
