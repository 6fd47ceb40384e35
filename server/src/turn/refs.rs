//! `@scheme://uri` references in user messages become content parts: images as `image_url`
//! data URLs, PDFs as `file` parts, text as `Resource <uri>:` text parts, failures as a visible
//! `[error: …]` part. Only a URI that a listing offers is read, from the source that lists it
//! (the access layer decides); an unlisted one is an error part and reaches no server. The stored transcript keeps the original `@uri` text. Earlier turns reuse
//! what they resolved (see [`super::cache`]); the latest user message reads fresh.

use std::sync::LazyLock;

use lmchatkit_protocol::{Content, ContentPart, FileData, Message, ResourceResult};
use regex::Regex;

use crate::access;
use crate::host::{Host, RequestContext};

use super::cache::{Resolved, TurnCache};

/// `@` at the start or after whitespace/opening punctuation, then `scheme://rest`.
static REF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s(\[{])@([A-Za-z][A-Za-z0-9+.-]*://[^\s@]+)").expect("valid regex")
});

/// The URIs referenced in `text`, with trailing sentence punctuation trimmed.
pub(super) fn find(text: &str) -> Vec<String> {
    REF.captures_iter(text)
        .map(|c| {
            c[1].trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\''])
                .to_owned()
        })
        .filter(|u| !u.ends_with("://"))
        .collect()
}

pub(super) async fn resolve(
    host: &dyn Host,
    cx: &RequestContext,
    cache: &TurnCache,
    messages: &mut [Message],
) {
    let latest = super::latest_user(messages);
    let principal = cx.principal();
    for (i, m) in messages.iter_mut().enumerate() {
        let Some(text) = super::user_text(m) else {
            continue;
        };
        let uris = find(text);
        if uris.is_empty() {
            continue;
        }
        let mut rest = text.to_owned();
        let mut parts = Vec::new();
        for uri in uris {
            rest = rest.replace(&format!("@{uri}"), "");
            let key = format!("ref {uri}");
            let cached = match cache.get(principal.id(), &key) {
                Some(Resolved::Parts(p)) if Some(i) != latest => Some(p),
                _ => None,
            };
            let read = match cached {
                Some(p) => p,
                None => {
                    let p = match access::read_reference(host, cx, &uri).await {
                        Ok(r) => to_parts(&uri, r),
                        Err(e) => {
                            vec![ContentPart::text(format!(
                                "[error: could not read resource {uri}: {e}]"
                            ))]
                        }
                    };
                    cache.put(principal.id(), key, Resolved::Parts(p.clone()));
                    p
                }
            };
            parts.extend(read);
        }
        let rest = rest.trim();
        if !rest.is_empty() {
            parts.push(ContentPart::text(rest));
        }
        m.content = Content::Parts(parts);
    }
}

fn to_parts(uri: &str, r: ResourceResult) -> Vec<ContentPart> {
    let mime = r.mime_type.unwrap_or_default();
    match (r.text, r.blob) {
        (Some(t), _) if !t.is_empty() => vec![ContentPart::text(format!("Resource {uri}:\n{t}"))],
        (_, Some(b)) if mime.starts_with("image/") => {
            vec![ContentPart::image_url(format!("data:{mime};base64,{b}"))]
        }
        (_, Some(b)) if mime == "application/pdf" => vec![ContentPart::File {
            file: FileData {
                filename: uri.rsplit('/').next().map(str::to_owned),
                file_data: Some(format!("data:{mime};base64,{b}")),
                file_id: None,
            },
        }],
        (_, Some(b)) => vec![ContentPart::text(format!(
            "[resource {uri}: {} content of {} bytes, not shown]",
            if mime.is_empty() { "binary" } else { &mime },
            b.len() / 4 * 3
        ))],
        _ => vec![ContentPart::text(format!("Resource {uri}: (empty)"))],
    }
}
