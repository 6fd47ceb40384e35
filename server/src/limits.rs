//! What one client can make the service hold: request bodies, the opaque JSON inside them, and
//! open chat streams.
//!
//! Decisions:
//! - **Bodies** are capped (16 MiB by default, 413) and must arrive within the body timeout
//!   (30 s, 408), so a client trickling a body cannot hold a request open.
//! - **Opaque JSON** — values the service passes on without reading them: `model_context`, a
//!   tool call's `arguments`, a result's `structured_content` and `info` — is measured before
//!   the body is parsed into typed values. Parsed into `serde_json::Value`, such a value costs up
//!   to ~30× its size (an array of small numbers: 32 bytes per element and more), so four
//!   concurrent 15 MiB bodies once took the process from 21 to 1,168 MiB. Each `model_context`
//!   may have 64 KiB, each `arguments` 1 MiB, and all opaque values of one body 8 MiB and
//!   500,000 JSON values together (history carries many results; the count bounds the tree at
//!   ~30 MiB whatever the values' shape); beyond, 413 naming the field, before any tree is
//!   built. The scan borrows from the body and allocates nothing per value.
//! - **Chat streams** are counted per principal (4 by default) and in total (256): one more
//!   is 429 with `Retry-After`. A place is held while the reply runs and while its response
//!   is open, and freed when both are over (the reply ended and its client read it or left).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::error::Failure;

/// Default JSON body limit (16 MiB).
pub const DEFAULT_BODY_LIMIT: usize = 16 << 20;
/// Default `model_context` cap (64 KiB).
pub const DEFAULT_MAX_MODEL_CONTEXT_BYTES: usize = 64 << 10;
/// Default cap of one tool call's `arguments` (1 MiB).
pub const DEFAULT_MAX_ARGUMENTS_BYTES: usize = crate::llm::MAX_TOOL_ARGUMENTS_BYTES;
/// Default cap of all opaque values of one body (8 MiB).
pub const DEFAULT_MAX_OPAQUE_BYTES: usize = 8 << 20;
/// The most JSON values (each number, string, array, object…) all opaque values of one body
/// may hold together.
pub const MAX_OPAQUE_VALUES: usize = 500_000;
/// Default time a request body may take to arrive (30 s).
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Default cap of concurrent chat streams per principal.
pub const DEFAULT_STREAMS_PER_PRINCIPAL: usize = 4;
/// Default cap of concurrent chat streams in total.
pub const DEFAULT_STREAMS_TOTAL: usize = 256;

/// The caps on what a JSON body may carry (settings; copied into each request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BodyLimits {
    pub(crate) body_bytes: usize,
    pub(crate) timeout: Duration,
    pub(crate) model_context_bytes: usize,
    pub(crate) arguments_bytes: usize,
    pub(crate) opaque_bytes: usize,
}

impl Default for BodyLimits {
    fn default() -> Self {
        Self {
            body_bytes: DEFAULT_BODY_LIMIT,
            timeout: DEFAULT_BODY_TIMEOUT,
            model_context_bytes: DEFAULT_MAX_MODEL_CONTEXT_BYTES,
            arguments_bytes: DEFAULT_MAX_ARGUMENTS_BYTES,
            opaque_bytes: DEFAULT_MAX_OPAQUE_BYTES,
        }
    }
}

/// Which fields hold opaque values, and their own cap.
fn opaque_cap(key: &str, limits: &BodyLimits) -> Option<usize> {
    match key {
        "model_context" => Some(limits.model_context_bytes),
        "arguments" => Some(limits.arguments_bytes),
        "structured_content" | "info" => Some(limits.opaque_bytes),
        _ => None,
    }
}

/// Refuses (413) a JSON body whose opaque values are over their caps, without building them.
/// Malformed JSON passes: the typed parse that follows reports it.
pub(crate) fn check_opaque(body: &[u8], limits: &BodyLimits) -> Result<(), Failure> {
    // A body within the smallest cap cannot hold anything over a cap (a value takes at least
    // two bytes with its separator): most requests skip the scan.
    let smallest = limits
        .model_context_bytes
        .min(limits.arguments_bytes)
        .min(limits.opaque_bytes)
        .min(2 * MAX_OPAQUE_VALUES);
    if body.len() <= smallest {
        return Ok(());
    }
    let mut scan = Scan {
        limits,
        total: 0,
        values: 0,
        over: None,
    };
    let mut de = serde_json::Deserializer::from_slice(body);
    let _ = (&mut scan).deserialize(&mut de);
    match scan.over {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The scalar methods of a visitor, each running `$on` with the visitor as `$me`.
macro_rules! scalars {
    (|$me:ident| $on:expr) => {
        #[allow(clippy::no_effect)] // `$on` is `()` for the scan
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            let $me = self;
            $on;
            Ok(())
        }
        #[allow(clippy::no_effect)] // `$on` is `()` for the scan
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            let $me = self;
            $on;
            Ok(())
        }
        #[allow(clippy::no_effect)] // `$on` is `()` for the scan
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            let $me = self;
            $on;
            Ok(())
        }
        #[allow(clippy::no_effect)] // `$on` is `()` for the scan
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            let $me = self;
            $on;
            Ok(())
        }
        #[allow(clippy::no_effect)] // `$on` is `()` for the scan
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            let $me = self;
            $on;
            Ok(())
        }
        #[allow(clippy::no_effect)] // `$on` is `()` for the scan
        fn visit_unit<E>(self) -> Result<(), E> {
            let $me = self;
            $on;
            Ok(())
        }
    };
}

struct Scan<'l> {
    limits: &'l BodyLimits,
    /// Bytes of opaque values so far.
    total: usize,
    /// JSON values inside opaque values so far.
    values: usize,
    over: Option<Failure>,
}

impl Scan<'_> {
    fn refuse<E: de::Error>(&mut self, what: String) -> E {
        self.over = Some(Failure::TooLarge(what));
        E::custom("over a limit")
    }
}

impl<'de> DeserializeSeed<'de> for &mut Scan<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for &mut Scan<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match opaque_cap(key.as_str(), self.limits) {
                Some(cap) => {
                    let raw: &RawValue = map.next_value()?;
                    let len = raw.get().len();
                    self.total += len;
                    if len > cap {
                        let key = key.as_str().to_owned();
                        return Err(self
                            .refuse(format!("{key} is {len} bytes; at most {cap} are accepted")));
                    }
                    if self.total > self.limits.opaque_bytes {
                        let cap = self.limits.opaque_bytes;
                        return Err(self.refuse(format!(
                            "the request's arguments, contexts and structured results \
                             exceed {cap} bytes together"
                        )));
                    }
                    self.values += count_values(raw.get());
                    if self.values > MAX_OPAQUE_VALUES {
                        return Err(self.refuse(format!(
                            "the request's arguments, contexts and structured results \
                             hold more than {MAX_OPAQUE_VALUES} JSON values together"
                        )));
                    }
                }
                None => map.next_value_seed(&mut *self)?,
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(&mut *self)?.is_some() {}
        Ok(())
    }

    scalars!(|_scan| ());
}

/// How many JSON values `json` (already checked valid) holds, counting without building them.
fn count_values(json: &str) -> usize {
    struct Count(usize);
    impl<'de> DeserializeSeed<'de> for &mut Count {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
            de.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for &mut Count {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("JSON")
        }
        #[allow(clippy::no_effect)] // `$on` is `()` for the scan
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            self.0 += 1;
            while map.next_key::<de::IgnoredAny>()?.is_some() {
                map.next_value_seed(&mut *self)?;
            }
            Ok(())
        }
        #[allow(clippy::no_effect)] // `$on` is `()` for the scan
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            self.0 += 1;
            while seq.next_element_seed(&mut *self)?.is_some() {}
            Ok(())
        }
        scalars!(|count| count.0 += 1);
    }
    let mut count = Count(0);
    let mut de = serde_json::Deserializer::from_str(json);
    let _ = (&mut count).deserialize(&mut de);
    count.0
}

/// An object key, borrowed unless it has escapes.
struct Key<'de>(std::borrow::Cow<'de, str>);

impl Key<'_> {
    fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            #[allow(clippy::no_effect)] // `$on` is `()` for the scan
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(s.into()))
            }
            #[allow(clippy::no_effect)] // `$on` is `()` for the scan
            fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(s.to_owned().into()))
            }
        }
        de.deserialize_str(V)
    }
}

/// Caps on concurrent chat streams (settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StreamCaps {
    pub(crate) per_principal: usize,
    pub(crate) total: usize,
}

impl Default for StreamCaps {
    fn default() -> Self {
        Self {
            per_principal: DEFAULT_STREAMS_PER_PRINCIPAL,
            total: DEFAULT_STREAMS_TOTAL,
        }
    }
}

/// The open chat streams (state): per principal and in total.
#[derive(Debug)]
pub(crate) struct Streams {
    caps: StreamCaps,
    open: Arc<Mutex<Open>>,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    by_principal: HashMap<String, usize>,
}

/// One open stream; dropping it (the stream ended or its client left) frees its place.
#[derive(Debug)]
pub(crate) struct StreamPermit {
    open: Arc<Mutex<Open>>,
    principal: String,
}

/// How long a refused client is asked to wait.
const RETRY_AFTER: Duration = Duration::from_secs(5);

impl Streams {
    pub(crate) fn new(caps: StreamCaps) -> Self {
        Self {
            caps,
            open: Arc::default(),
        }
    }

    /// A place for one more stream of `principal`, or 429.
    pub(crate) fn open(&self, principal: &str) -> Result<StreamPermit, Failure> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let mine = open.by_principal.get(principal).copied().unwrap_or(0);
        let why = if mine >= self.caps.per_principal {
            format!(
                "{mine} replies are streaming for you already (at most {}); wait for one to end",
                self.caps.per_principal
            )
        } else if open.total >= self.caps.total {
            format!(
                "the service streams {} replies already (at most {}); try again shortly",
                open.total, self.caps.total
            )
        } else {
            open.total += 1;
            *open.by_principal.entry(principal.to_owned()).or_default() += 1;
            return Ok(StreamPermit {
                open: self.open.clone(),
                principal: principal.to_owned(),
            });
        };
        Err(Failure::TooMany {
            message: why,
            retry_after: RETRY_AFTER,
        })
    }
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.by_principal.get_mut(&self.principal) {
            *n -= 1;
            if *n == 0 {
                open.by_principal.remove(&self.principal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> BodyLimits {
        BodyLimits {
            model_context_bytes: 10,
            arguments_bytes: 20,
            opaque_bytes: 30,
            ..BodyLimits::default()
        }
    }

    fn refused(body: &str) -> Option<String> {
        check_opaque(body.as_bytes(), &limits())
            .err()
            .map(|e| e.to_string())
    }

    #[test]
    fn opaque_values_within_their_caps_pass() {
        assert_eq!(
            refused(r#"{"model_context":"short","arguments":{"a":1}}"#),
            None
        );
        assert_eq!(
            refused(r#"{"text":"a very long text that is not opaque at all"}"#),
            None
        );
        assert_eq!(refused("not json"), None, "the typed parse reports it");
    }

    #[test]
    fn an_opaque_value_over_its_cap_is_named() {
        let e = refused(r#"{"model_context":{"k":"0123456789"}}"#).unwrap();
        assert!(
            e.contains("model_context") && e.contains("at most 10"),
            "{e}"
        );
        let nested = r#"{"messages":[{"tool_calls":[{"arguments":[1,2,3,4,5,6,7,8,9,10,11]}]}]}"#;
        assert!(refused(nested).unwrap().contains("arguments"));
    }

    #[test]
    fn opaque_values_add_up_to_one_cap() {
        let body = r#"{"a":[{"arguments":"0123456789abcd"},{"arguments":"0123456789abcd"},
            {"structured_content":"0123456789"}]}"#;
        assert!(refused(body).unwrap().contains("together"));
    }

    #[test]
    fn opaque_values_are_counted_whatever_their_bytes() {
        assert_eq!(count_values(r#"{"a":[1,2,{"b":null}],"c":"x"}"#), 7);
        let many = format!(
            "{{\"structured_content\":[{}0]}}",
            "0,".repeat(MAX_OPAQUE_VALUES)
        );
        let roomy = BodyLimits {
            opaque_bytes: 64 << 20,
            ..BodyLimits::default()
        };
        let e = check_opaque(many.as_bytes(), &roomy)
            .unwrap_err()
            .to_string();
        assert!(e.contains("JSON values"), "{e}");
    }

    #[test]
    fn keys_with_escapes_are_recognised() {
        assert!(refused(r#"{"argument\u0073":"01234567890123456789xx"}"#).is_some());
    }

    #[test]
    fn streams_are_capped_per_principal_and_in_total_and_freed_on_drop() {
        let streams = Streams::new(StreamCaps {
            per_principal: 2,
            total: 3,
        });
        let a1 = streams.open("a").unwrap();
        let _a2 = streams.open("a").unwrap();
        let e = streams.open("a").unwrap_err();
        assert_eq!(
            crate::ApiError::from(e).status(),
            http::StatusCode::TOO_MANY_REQUESTS
        );
        let _b1 = streams.open("b").unwrap();
        assert!(streams.open("c").is_err(), "the total is reached");
        drop(a1);
        assert!(streams.open("c").is_ok());
    }
}
