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
//!
//! Decisions:
//! - **Where the key comes from.** With a signing secret configured
//!   ([`ConfigBuilder::signing_secret`](crate::ConfigBuilder::signing_secret); the app derives
//!   one from its key file), the key is derived from it under the label [`LABEL`]
//!   (HKDF-Expand with SHA-256, RFC 5869 §2.3, the secret as the pseudorandom key): every
//!   instance given the same secret signs and verifies the same ids, so a run waiting on
//!   instance A takes the approval POSTed through instance B. The label keeps this key apart
//!   from anything else derived from the same secret. With none, the key is random per process
//!   (the library default): ids then verify only on the instance that made them, and not after
//!   a restart.

use hmac::{Hmac, Mac};

use crate::secrets::signing::{self, hkdf_expand};
use serde_json::Value;
use sha2::Sha256;

/// The label the approval-id key is derived under from a shared signing secret.
pub(crate) const LABEL: &[u8] = b"lmchatkit/approval-ids/v1";

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
        // One SHA-256 block: HMAC uses a key of that size as it is.
        let k: [u8; 64] = rand::random();
        Self(k)
    }

    /// The key derived from `secret` (shared by every instance given the same secret):
    /// HKDF-Expand(PRK = `secret`, info = [`LABEL`], 64 bytes).
    pub(crate) fn derive(secret: &[u8]) -> Self {
        Self(hkdf_expand(secret, LABEL))
    }

    fn mac(&self, s: &Subject<'_>) -> Hmac<Sha256> {
        signing::mac(
            &self.0,
            &[s.principal, s.thread, s.call_id, s.tool],
            s.input,
        )
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
    fn keys_derived_from_one_secret_agree_and_from_another_do_not() {
        let secret = [9u8; 32];
        let input = json!({"city": "Paris"});
        let id = ApprovalKey::derive(&secret).sign(&subject("t1", "weather", &input));
        assert!(ApprovalKey::derive(&secret).verify(&id, &subject("t1", "weather", &input)));
        assert!(!ApprovalKey::derive(&[8u8; 32]).verify(&id, &subject("t1", "weather", &input)));
        assert!(!ApprovalKey::random().verify(&id, &subject("t1", "weather", &input)));
        // Not the secret itself: a key derived under a label.
        assert_ne!(&ApprovalKey::derive(&secret).0[..32], &secret[..]);
    }

    /// RFC 5869 test case 1 (its PRK and info, 42 bytes of its OKM).
    #[test]
    fn the_derivation_is_hkdf_expand() {
        let prk = hex::decode("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5")
            .unwrap();
        let info = hex::decode("f0f1f2f3f4f5f6f7f8f9").unwrap();
        let okm = hex::decode(
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865",
        )
        .unwrap();
        assert_eq!(&hkdf_expand(&prk, &info)[..42], &okm[..]);
    }

    #[test]
    fn debug_never_prints_the_key() {
        assert_eq!(
            format!("{:?}", ApprovalKey([7; 64])),
            "ApprovalKey(<redacted>)"
        );
    }
}
