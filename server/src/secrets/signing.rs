//! Keys that sign what the service hands to a client and must get back unchanged (approval
//! ids, the tickets of requests for the user's input): HMAC-SHA256 under a key derived from the
//! configured signing secret, or a random one per process.

use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha2::Sha256;

/// HKDF-Expand (RFC 5869 §2.3) with HMAC-SHA256: 64 bytes of key from `prk` for `info`.
pub(crate) fn hkdf_expand(prk: &[u8], info: &[u8]) -> [u8; 64] {
    let block = |prev: &[u8], counter: u8| -> [u8; 32] {
        // HMAC takes a key of any length: `new_from_slice` never fails for it.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(prk)
            .unwrap_or_else(|_| <Hmac<Sha256> as KeyInit>::new(&[0u8; 64].into()));
        mac.update(prev);
        mac.update(info);
        mac.update(&[counter]);
        mac.finalize().into_bytes().into()
    };
    let t1 = block(&[], 1);
    let t2 = block(&t1, 2);
    let mut okm = [0u8; 64];
    okm[..32].copy_from_slice(&t1);
    okm[32..].copy_from_slice(&t2);
    okm
}

/// JSON with object keys sorted at every level (a client that re-orders keys sends the same
/// value).
pub(crate) fn canonical(v: &Value) -> String {
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

/// An HMAC over length-prefixed strings, then one canonical JSON value.
pub(crate) fn mac(key: &[u8; 64], parts: &[&str], value: &Value) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new(&(*key).into());
    for part in parts {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part.as_bytes());
    }
    mac.update(canonical(value).as_bytes());
    mac
}
