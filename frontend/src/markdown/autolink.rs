//! Bare `http://` and `https://` URLs in text become links (the GFM autolink extension, for
//! the URLs models write without `<…>`).

use std::ops::Range;

/// The byte ranges of the bare URLs in `text`, in one linear pass.
///
/// A URL starts at the beginning of the text, after whitespace or after one of `*_~(`. Its host
/// is made of letters, digits, `-`, `_` and `.`, with at least one inner `.` (or is
/// `localhost`); the URL runs to the next whitespace or `<`, minus trailing punctuation
/// (`?!.,:;*_~'"` and each `)` without a matching `(`).
pub(crate) fn find(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        let scheme = if starts_with_ignore_case(rest, b"https://") {
            8
        } else if starts_with_ignore_case(rest, b"http://") {
            7
        } else {
            i += 1;
            continue;
        };
        if i > 0
            && !matches!(
                bytes[i - 1],
                b' ' | b'\t' | b'\n' | b'\r' | b'*' | b'_' | b'~' | b'('
            )
        {
            i += scheme;
            continue;
        }
        let host_start = i + scheme;
        let host_len = bytes[host_start..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            .count();
        let host = text[host_start..host_start + host_len].trim_end_matches('.');
        let host_ok = (host.contains('.') || host.eq_ignore_ascii_case("localhost"))
            && !host.starts_with('.');
        if !host_ok {
            i = host_start + host_len;
            continue;
        }
        let end = text[host_start..]
            .find(|c: char| c.is_whitespace() || c == '<')
            .map_or(text.len(), |e| host_start + e);
        let end = i + trimmed_len(&text[i..end]);
        found.push(i..end);
        i = end.max(host_start + host.len());
    }
    found
}

fn starts_with_ignore_case(bytes: &[u8], prefix: &[u8]) -> bool {
    bytes.len() >= prefix.len() && bytes[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// The length of `url` without its trailing punctuation.
fn trimmed_len(url: &str) -> usize {
    let bytes = url.as_bytes();
    let open = bytes.iter().filter(|&&b| b == b'(').count();
    let mut close = bytes.iter().filter(|&&b| b == b')').count();
    let mut len = bytes.len();
    while len > 0 {
        match bytes[len - 1] {
            b'?' | b'!' | b'.' | b',' | b':' | b';' | b'*' | b'_' | b'~' | b'\'' | b'"' => {}
            b')' if open < close => close -= 1,
            _ => break,
        }
        len -= 1;
    }
    len
}
