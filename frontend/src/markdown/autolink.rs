//! Bare `http://` and `https://` URLs in text become links (the GFM autolink extension, for
//! the URLs models write without `<…>`).

use std::ops::Range;

/// The byte ranges of the bare URLs in `text`.
///
/// A URL starts at the beginning of the text, after whitespace or after one of `*_~(`; it runs
/// to the next whitespace or `<`, minus trailing punctuation (`?!.,:;*_~'"` and a `)` without a
/// matching `(`). Its host must be made of letters, digits, `-`, `_` and `.`, with at least one
/// `.` (or be `localhost`).
pub(crate) fn find(text: &str) -> Vec<Range<usize>> {
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(i) = bytes[from..]
        .iter()
        .position(|b| matches!(b, b'h' | b'H'))
        .map(|i| i + from)
    {
        from = i + 1;
        let rest = &bytes[i..];
        let scheme = if starts_with_ignore_case(rest, b"https://") {
            8
        } else if starts_with_ignore_case(rest, b"http://") {
            7
        } else {
            continue;
        };
        if i > 0
            && !matches!(
                bytes[i - 1],
                b' ' | b'\t' | b'\n' | b'\r' | b'*' | b'_' | b'~' | b'('
            )
        {
            continue;
        }
        let end = text[i..]
            .find(|c: char| c.is_whitespace() || c == '<')
            .map_or(text.len(), |e| i + e);
        let end = trim_trailing(&text[i..end]) + i;
        let host_end = text[i + scheme..end]
            .find(['/', '?', '#', ':'])
            .map_or(end, |e| i + scheme + e);
        let host = &text[i + scheme..host_end];
        let host_ok = !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && (host.contains('.') || host.eq_ignore_ascii_case("localhost"))
            && !host.starts_with('.')
            && !host.ends_with('.');
        if host_ok {
            found.push(i..end);
            from = end;
        }
    }
    found
}

fn starts_with_ignore_case(bytes: &[u8], prefix: &[u8]) -> bool {
    bytes.len() >= prefix.len() && bytes[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// The length of `url` without trailing punctuation.
fn trim_trailing(url: &str) -> usize {
    let mut url = url;
    loop {
        let trimmed =
            url.trim_end_matches(['?', '!', '.', ',', ':', ';', '*', '_', '~', '\'', '"']);
        let trimmed = match trimmed.strip_suffix(')') {
            Some(inner) if trimmed.matches('(').count() < trimmed.matches(')').count() => inner,
            _ => trimmed,
        };
        if trimmed.len() == url.len() {
            return url.len();
        }
        url = trimmed;
    }
}
