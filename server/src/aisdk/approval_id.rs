//! Approval ids: what binds a user's "yes" to the one call it answers.
//!
//! The AI SDK keeps the conversation in the client, and the client posts the approval back with
//! the tool part it answers — name, input and all. Nothing stops a page (or a prompt-injected
//! script) from editing that part before the re-post. So the id the server hands out is an
//! HMAC-SHA256, under a key only the service holds, over the principal, the thread, the call
//! id, the tool name and the call's exact input (object keys sorted, so a client that re-orders
//! keys is not refused). A re-post whose part does not hash to its id — another input, another
//! tool, another thread or another user — is refused. Stateless: it needs no store, so it works
//! in browser-history mode and (with a shared key) across instances.

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

/// The key approval ids are signed with.
#[derive(Clone)]
pub(crate) struct ApprovalKey([u8; 64]);

impl std::fmt::Debug for ApprovalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApprovalKey(<redacted>)")
    }
}

/// What an approval answers.
pub(crate) struct Subject<'a> {
    pub principal: &'a str,
    pub thread: &'a str,
    pub call_id: &'a str,
    pub tool: &'a str,
    pub input: &'a Value,
}

impl ApprovalKey {
    /// A fresh random key (ids then live as long as the process).
    pub(crate) fn random() -> Self {
        use rand::RngCore;
        // One SHA-256 block: HMAC uses a key of that size as it is.
        let mut k = [0u8; 64];
        rand::rng().fill_bytes(&mut k);
        Self(k)
    }

    fn mac(&self, s: &Subject<'_>) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new(&self.0.into());
        for part in [s.principal, s.thread, s.call_id, s.tool] {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part.as_bytes());
        }
        mac.update(canonical(s.input).as_bytes());
        mac
    }

    /// The approval id for `s`.
    pub(crate) fn sign(&self, s: &Subject<'_>) -> String {
        format!("ap_{}", hex::encode(self.mac(s).finalize().into_bytes()))
    }

    /// True when `id` is the approval id of `s` (compared in constant time).
    pub(crate) fn verify(&self, id: &str, s: &Subject<'_>) -> bool {
        let Some(tag) = id.strip_prefix("ap_").and_then(|h| hex::decode(h).ok()) else {
            return false;
        };
        self.mac(s).verify_slice(&tag).is_ok()
    }
}

/// JSON with object keys sorted at every level.
fn canonical(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<_> = m.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&m[k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn subject<'a>(thread: &'a str, tool: &'a str, input: &'a Value) -> Subject<'a> {
        Subject {
            principal: "alice",
            thread,
            call_id: "call_1",
            tool,
            input,
        }
    }

    #[test]
    fn an_id_verifies_for_the_call_it_was_made_for_whatever_the_key_order() {
        let key = ApprovalKey::random();
        let input = json!({"city": "Paris", "units": {"a": 1, "b": 2}});
        let id = key.sign(&subject("t1", "weather", &input));
        let reordered: Value =
            serde_json::from_str(r#"{"units": {"b": 2, "a": 1}, "city": "Paris"}"#).unwrap();
        assert!(key.verify(&id, &subject("t1", "weather", &reordered)));
    }

    #[test]
    fn an_id_is_refused_for_another_input_tool_thread_principal_or_key() {
        let key = ApprovalKey::random();
        let input = json!({"city": "Paris"});
        let id = key.sign(&subject("t1", "weather", &input));
        assert!(!key.verify(&id, &subject("t1", "weather", &json!({"city": "Oslo"}))));
        assert!(!key.verify(&id, &subject("t1", "delete_all", &input)));
        assert!(!key.verify(&id, &subject("t2", "weather", &input)));
        let mut bob = subject("t1", "weather", &input);
        bob.principal = "bob";
        assert!(!key.verify(&id, &bob));
        assert!(!ApprovalKey::random().verify(&id, &subject("t1", "weather", &input)));
        assert!(!key.verify("ap_zz", &subject("t1", "weather", &input)));
    }

    #[test]
    fn fields_cannot_slide_into_each_other() {
        let key = ApprovalKey::random();
        let input = json!({});
        let a = Subject {
            principal: "al",
            thread: "ice",
            call_id: "c",
            tool: "t",
            input: &input,
        };
        let b = Subject {
            principal: "alice",
            thread: "",
            ..a
        };
        assert_ne!(key.sign(&a), key.sign(&b));
    }

    #[test]
    fn debug_never_prints_the_key() {
        assert_eq!(
            format!("{:?}", ApprovalKey([7; 64])),
            "ApprovalKey(<redacted>)"
        );
    }
}
