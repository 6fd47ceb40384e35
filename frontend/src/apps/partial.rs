//! The arguments of a tool call while the model still writes them: [`heal`] reads the JSON text
//! that came so far as the value it is becoming, for `ui/notifications/tool-input-partial`.
//!
//! Decisions:
//! - **Best effort, never wrong in what it shows.** Open strings, arrays and objects are closed;
//!   what cannot be read yet goes: a dangling key (with or without its colon), a half-written
//!   number or literal (`1.`, `tr`), an escape cut in half. So each result holds only what the
//!   model has written, and a longer prefix never loses a field a shorter one had (a string or
//!   number may still grow).
//! - **A small pure function, no crate.** The crates that read partial JSON for LLM tools are
//!   larger than this and bring their own parsers into the wasm; this scans the text once,
//!   notes where it could be cut, and lets `serde_json` (already in the bundle) read the closed
//!   text.

use serde_json::Value;

/// Where a container is in its grammar.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// An object's key (or its end).
    Key,
    /// The colon after a key.
    Colon,
    /// A value (an array's element, an object's value, the top level).
    Value,
    /// A comma or the container's end, after a value.
    After,
}

/// The value `text` (the start of a JSON document) is becoming, or `None` when nothing of it
/// can be read yet.
///
/// ```
/// use lmchatkit_web::apps::partial::heal;
/// use serde_json::json;
/// assert_eq!(heal(r#"{"city": "Os"#), Some(json!({"city": "Os"})));
/// assert_eq!(heal(r#"{"city": "Oslo", "un"#), Some(json!({"city": "Oslo"})));
/// ```
pub fn heal(text: &str) -> Option<Value> {
    let b = text.as_bytes();
    // Closers of the open containers, innermost last, and each one's state.
    let mut closers: Vec<u8> = Vec::new();
    let mut states: Vec<Expect> = Vec::new();
    let mut top = Expect::Value;
    // The last place the text can be cut, with the closers it then needs.
    let mut safe: Option<(usize, Vec<u8>)> = None;
    // Inside a string: whether it is a key, and where an unfinished escape began.
    let mut string: Option<bool> = None;
    let mut escape: Option<usize> = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let state = states.last_mut().unwrap_or(&mut top);
        if let Some(is_key) = string {
            match escape {
                Some(at) => {
                    // `\uXXXX` ends after four hex digits, any other escape after one character.
                    let done = match b.get(at + 1) {
                        Some(b'u') => i >= at + 5,
                        _ => true,
                    };
                    if done {
                        escape = None;
                    }
                }
                None if c == b'\\' => escape = Some(i),
                None if c == b'"' => {
                    string = None;
                    *state = if is_key { Expect::Colon } else { Expect::After };
                    if !is_key {
                        safe = Some((i + 1, closers.clone()));
                    }
                }
                None => {}
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => string = Some(*state == Expect::Key),
            b'{' | b'[' => {
                *state = Expect::After;
                closers.push(if c == b'{' { b'}' } else { b']' });
                states.push(if c == b'{' {
                    Expect::Key
                } else {
                    Expect::Value
                });
                safe = Some((i + 1, closers.clone()));
            }
            b'}' | b']' => {
                closers.pop();
                states.pop();
                safe = Some((i + 1, closers.clone()));
            }
            b':' => *state = Expect::Value,
            b',' => {
                *state = match closers.last() {
                    Some(b'}') => Expect::Key,
                    _ => Expect::Value,
                }
            }
            c if c.is_ascii_whitespace() => {}
            _ => {
                // A number or a literal: it ends at the next delimiter.
                let end = b[i..]
                    .iter()
                    .position(|c| b",]}: \t\r\n\"".contains(c))
                    .map_or(b.len(), |n| i + n);
                *state = Expect::After;
                if end < b.len() {
                    safe = Some((end, closers.clone()));
                }
                i = end;
                continue;
            }
        }
        i += 1;
    }
    let close = |cut: &str, closers: &[u8], quote: bool| {
        let mut s = String::with_capacity(cut.len() + closers.len() + 1);
        s.push_str(cut);
        if quote {
            s.push('"');
        }
        s.extend(closers.iter().rev().map(|&c| c as char));
        serde_json::from_str::<Value>(&s).ok()
    };
    // The whole text, closed: an open value string is closed where its text is whole.
    let whole = match string {
        Some(false) => close(&text[..escape.unwrap_or(b.len())], &closers, true),
        Some(true) => None,
        None => close(text, &closers, false),
    };
    whole.or_else(|| safe.and_then(|(at, closers)| close(&text[..at], &closers, false)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn open_strings_arrays_and_objects_are_closed() {
        assert_eq!(heal("{"), Some(json!({})));
        assert_eq!(heal(r#"{"city": "Os"#), Some(json!({"city": "Os"})));
        assert_eq!(
            heal(r#"{"city": "Oslo", "units": ["me"#),
            Some(json!({"city": "Oslo", "units": ["me"]}))
        );
        assert_eq!(
            heal(r#"{"a": {"b": [1, 2"#),
            Some(json!({"a": {"b": [1, 2]}}))
        );
        assert_eq!(heal(r#"[{"x": [["#), Some(json!([{"x": [[]]}])));
    }

    #[test]
    fn a_dangling_key_and_a_trailing_comma_are_dropped() {
        for text in [r#"{"ci"#, r#"{"city""#, r#"{"city":"#, r#"{"city": "#] {
            assert_eq!(heal(text), Some(json!({})), "{text}");
        }
        assert_eq!(heal(r#"{"a": 1, "#), Some(json!({"a": 1})));
        assert_eq!(heal(r#"{"a": 1, "b"#), Some(json!({"a": 1})));
        assert_eq!(heal(r#"{"a": [1, 2,"#), Some(json!({"a": [1, 2]})));
    }

    #[test]
    fn half_written_numbers_literals_and_escapes_go() {
        assert_eq!(heal(r#"{"a": 12"#), Some(json!({"a": 12})));
        assert_eq!(heal(r#"{"a": true"#), Some(json!({"a": true})));
        assert_eq!(heal(r#"{"a": tr"#), Some(json!({})));
        assert_eq!(heal(r#"{"a": -"#), Some(json!({})));
        assert_eq!(heal(r#"{"a": 1, "b": 1."#), Some(json!({"a": 1})));
        assert_eq!(heal(r#"{"a": "x\"#), Some(json!({"a": "x"})));
        assert_eq!(heal(r#"{"a": "x\u00e"#), Some(json!({"a": "x"})));
        assert_eq!(heal(r#"{"a": "say \"hi"#), Some(json!({"a": "say \"hi"})));
        assert_eq!(heal(r#"{"a": "é\u00e9"#), Some(json!({"a": "éé"})));
    }

    #[test]
    fn nothing_readable_is_none_and_whole_json_is_itself() {
        assert_eq!(heal(""), None);
        assert_eq!(heal("  "), None);
        assert_eq!(heal("tr"), None);
        let whole = json!({"q": "weather in \"Oslo\"", "n": [1.5, null, false], "o": {}});
        assert_eq!(heal(&whole.to_string()), Some(whole.clone()));
        assert_eq!(
            heal(&serde_json::to_string_pretty(&whole).unwrap()),
            Some(whole)
        );
    }

    #[test]
    fn every_prefix_reads_and_keeps_what_a_shorter_one_had() {
        let whole = json!({"city": "Tōkyō", "days": [1, 22, 333], "opts": {"units": "metric",
                           "alerts": true}, "note": "a \"quoted\" \\ word"});
        let text = serde_json::to_string_pretty(&whole).unwrap();
        let mut fields = 0;
        for (at, _) in text.char_indices().skip(1) {
            let healed = heal(&text[..at]);
            let Some(Value::Object(now)) = healed else {
                panic!("{:?} healed to {healed:?}", &text[..at])
            };
            assert!(now.len() >= fields, "{:?} lost a field", &text[..at]);
            fields = now.len();
            // Only what the model wrote: no key it has not finished.
            assert!(
                now.keys().all(|k| whole.get(k).is_some()),
                "{:?} healed to {now:?}",
                &text[..at]
            );
        }
        assert_eq!(heal(&text), Some(whole));
    }
}
