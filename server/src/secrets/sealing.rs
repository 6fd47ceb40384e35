//! Credentials at rest: [`Keyring::seal`] encrypts a secret (a user's MCP headers or tokens)
//! under the server's key, [`Keyring::open`] decrypts it for the one request that needs it.
//!
//! Decisions:
//! - **Cipher**: XChaCha20-Poly1305 (the RustCrypto `chacha20poly1305` crate), a 256-bit key
//!   and a fresh random 192-bit nonce per seal, large enough that random nonces never repeat in
//!   practice.
//! - **Sealed form**: `lmck1.<key id>.<base64url(nonce ‖ ciphertext ‖ tag)>`, a plain string
//!   that fits a TEXT column. The key id says which key opens it, so keys rotate: a keyring
//!   seals with its current key and opens with any key it holds.
//! - **Bound to its place**: the caller passes associated data naming where the secret
//!   belongs (e.g. the principal and the server's slug); a sealed value copied to another row
//!   or another user does not open.
//! - **Key file**: [`Keyring::load_or_create`] reads `<id> <base64 key>` lines (the first is
//!   current) and, when the file is missing, writes a new random key with permissions 0600
//!   (created that way, never widened). A key file that others can read is refused. The new
//!   file appears whole (written beside it, then linked into place), so instances sharing a
//!   data directory that start at once all end up with the one key that won.
//! - **Nothing prints a key**: `Debug` of keys and keyrings shows ids only.

use std::fmt;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

/// The prefix of every sealed value (the format's version).
pub const SEALED_PREFIX: &str = "lmck1";

const NONCE_LEN: usize = 24;

/// Why a key or a sealed value was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// A key id must be 1–32 of `A-Z a-z 0-9 _ -`.
    #[error("invalid key id {0:?}: use 1 to 32 letters, digits, '_' or '-'")]
    BadKeyId(String),
    /// A key is 32 bytes, base64-encoded.
    #[error("key {0:?} is not 32 bytes of base64")]
    BadKey(String),
    /// Not a value [`Keyring::seal`] wrote.
    #[error("not a sealed value")]
    Malformed,
    /// No key with this id in the keyring.
    #[error("no key {0:?} to open this value (was the key file replaced?)")]
    UnknownKey(String),
    /// The value was altered, sealed for another place, or sealed under another key with the
    /// same id.
    #[error("the sealed value does not open with key {0:?} here")]
    Forged(String),
    /// The key file could not be read or written, or is readable by others.
    #[error("key file {path}: {reason}")]
    KeyFile {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
}

/// One 256-bit key and its id.
#[derive(Clone)]
pub struct SealingKey {
    id: String,
    key: [u8; 32],
}

impl fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealingKey")
            .field("id", &self.id)
            .field("key", &super::Redacted)
            .finish()
    }
}

impl SealingKey {
    /// A new random key named `id`.
    pub fn generate(id: impl Into<String>) -> Result<Self, SealError> {
        let id = check_id(id.into())?;
        Ok(Self {
            id,
            key: rand::random(),
        })
    }

    /// The key named `id` whose 32 bytes are `b64` (standard base64).
    pub fn from_base64(id: impl Into<String>, b64: &str) -> Result<Self, SealError> {
        let id = check_id(id.into())?;
        let bytes = STANDARD
            .decode(b64.trim())
            .map_err(|_| SealError::BadKey(id.clone()))?;
        let key: [u8; 32] = bytes
            .try_into()
            .map_err(|_| SealError::BadKey(id.clone()))?;
        Ok(Self { id, key })
    }

    /// The key's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(&self.key.into())
    }
}

fn check_id(id: String) -> Result<String, SealError> {
    let ok = (1..=32).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(id)
    } else {
        Err(SealError::BadKeyId(id))
    }
}

/// The current key and the older ones still able to open what they sealed.
///
/// ```
/// use lmchatkit::secrets::sealing::{Keyring, SealingKey};
///
/// let old = Keyring::new(SealingKey::generate("k1")?);
/// let sealed = old.seal(b"Bearer s3cret", b"alice/github");
/// assert!(sealed.starts_with("lmck1.k1."));
/// assert!(!sealed.contains("s3cret"));
/// assert_eq!(old.open(&sealed, b"alice/github")?, b"Bearer s3cret");
/// assert!(old.open(&sealed, b"bob/github").is_err(), "bound to its place");
///
/// // Rotation: a new current key, the old one kept for what it sealed.
/// let rotated = Keyring::new(SealingKey::generate("k2")?).with_older(old.current().clone());
/// assert_eq!(rotated.open(&sealed, b"alice/github")?, b"Bearer s3cret");
/// assert!(rotated.seal(b"x", b"").starts_with("lmck1.k2."));
/// assert!(!format!("{rotated:?}").contains(&format!("{:?}", b"Bearer")));
/// # Ok::<(), lmchatkit::secrets::sealing::SealError>(())
/// ```
#[derive(Clone)]
pub struct Keyring {
    current: SealingKey,
    older: Vec<SealingKey>,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let older: Vec<&str> = self.older.iter().map(|k| k.id.as_str()).collect();
        f.debug_struct("Keyring")
            .field("current", &self.current.id)
            .field("older", &older)
            .finish()
    }
}

impl Keyring {
    /// A keyring sealing with `current`.
    pub fn new(current: SealingKey) -> Self {
        Self {
            current,
            older: Vec::new(),
        }
    }

    /// The same keyring, also opening what `key` sealed.
    pub fn with_older(mut self, key: SealingKey) -> Self {
        self.older.push(key);
        self
    }

    /// The key new values are sealed with.
    pub fn current(&self) -> &SealingKey {
        &self.current
    }

    /// 32 bytes derived from the current key for `label` (HMAC-SHA256 of the label under the
    /// key): every process reading the same key file derives the same bytes, which reveal
    /// nothing of the key and differ per label. The app derives the service's signing secret
    /// ([`ConfigBuilder::signing_secret`](crate::ConfigBuilder::signing_secret)) this way.
    /// Rotating the current key changes them.
    ///
    /// ```
    /// use lmchatkit::secrets::sealing::{Keyring, SealingKey};
    /// let ring = Keyring::new(SealingKey::generate("k1")?);
    /// assert_eq!(ring.derive("signing"), ring.clone().derive("signing"));
    /// assert_ne!(ring.derive("signing"), ring.derive("other"));
    /// # Ok::<(), lmchatkit::secrets::sealing::SealError>(())
    /// ```
    pub fn derive(&self, label: &str) -> [u8; 32] {
        use hmac::{KeyInit, Mac};
        // HMAC takes a key of any length: `new_from_slice` never fails for it.
        let mut mac = <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(&self.current.key)
            .unwrap_or_else(|_| <hmac::Hmac<sha2::Sha256> as KeyInit>::new(&[0u8; 64].into()));
        mac.update(b"lmchatkit/keyring-derive/v1\0");
        mac.update(label.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// Seals `secret` for the place `aad` names.
    pub fn seal(&self, secret: &[u8], aad: &[u8]) -> String {
        let nonce: [u8; NONCE_LEN] = rand::random();
        let payload = Payload { msg: secret, aad };
        // Encryption into a Vec fails only when the buffer cannot grow.
        let ct = self
            .current
            .cipher()
            .encrypt(XNonce::from_slice(&nonce), payload)
            .unwrap_or_default();
        let mut body = nonce.to_vec();
        body.extend_from_slice(&ct);
        format!(
            "{SEALED_PREFIX}.{}.{}",
            self.current.id,
            URL_SAFE_NO_PAD.encode(body)
        )
    }

    /// Opens what [`seal`](Self::seal) sealed for `aad`.
    pub fn open(&self, sealed: &str, aad: &[u8]) -> Result<Vec<u8>, SealError> {
        let mut parts = sealed.splitn(3, '.');
        let (Some(SEALED_PREFIX), Some(id), Some(body)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return Err(SealError::Malformed);
        };
        let key = std::iter::once(&self.current)
            .chain(&self.older)
            .find(|k| k.id == id)
            .ok_or_else(|| SealError::UnknownKey(id.to_owned()))?;
        let body = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| SealError::Malformed)?;
        if body.len() < NONCE_LEN + 16 {
            return Err(SealError::Malformed);
        }
        let (nonce, ct) = body.split_at(NONCE_LEN);
        key.cipher()
            .decrypt(XNonce::from_slice(nonce), Payload { msg: ct, aad })
            .map_err(|_| SealError::Forged(id.to_owned()))
    }

    /// The keyring in `path` (`<id> <base64 key>` per line, the first current; `#` comments);
    /// when the file does not exist, a new key `k1` is generated and written there with
    /// permissions 0600. A file that the group or others may read is refused (on Unix).
    pub fn load_or_create(path: &Path) -> Result<Self, SealError> {
        let err = |reason: String| SealError::KeyFile {
            path: path.display().to_string(),
            reason,
        };
        match std::fs::read_to_string(path) {
            Ok(text) => {
                check_private(path).map_err(err)?;
                Self::parse(&text)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = SealingKey::generate("k1")?;
                let line = format!("{} {}\n", key.id, STANDARD.encode(key.key));
                match write_private(path, line.as_bytes()) {
                    Ok(()) => Ok(Self::new(key)),
                    // Another process (an instance sharing the data directory) wrote it
                    // first, whole: its key is the one.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
                        check_private(path).map_err(err)?;
                        Self::parse(&text)
                    }
                    Err(e) => Err(err(e.to_string())),
                }
            }
            Err(e) => Err(err(e.to_string())),
        }
    }

    /// Parses the key file's text (see [`load_or_create`](Self::load_or_create)).
    pub fn parse(text: &str) -> Result<Self, SealError> {
        let mut keys = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| match l.split_once(char::is_whitespace) {
                Some((id, b64)) => SealingKey::from_base64(id, b64),
                None => Err(SealError::BadKey(l.chars().take(8).collect())),
            });
        let current = keys.next().ok_or_else(|| SealError::KeyFile {
            path: "(text)".into(),
            reason: "no key in it".into(),
        })??;
        let mut ring = Self::new(current);
        for k in keys {
            ring.older.push(k?);
        }
        Ok(ring)
    }
}

#[cfg(unix)]
fn check_private(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|e| e.to_string())?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(format!(
            "readable by others (mode {:o}); chmod 600 it",
            mode & 0o777
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_: &Path) -> Result<(), String> {
    Ok(())
}

/// Writes `bytes` to a new file at `path` (0600), whole or not at all: into a private file
/// beside it first, then linked into place, which fails with `AlreadyExists` when another
/// process got there first (nobody ever reads a half-written key file).
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(
        ".{}.{:016x}.tmp",
        name.unwrap_or_default(),
        rand::random::<u64>()
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let written = options.open(&tmp).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    let linked = written.and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    linked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> Keyring {
        Keyring::new(SealingKey::generate("k1").unwrap())
    }

    #[test]
    fn a_sealed_value_opens_only_with_its_key_and_place_and_unaltered() {
        let r = ring();
        let sealed = r.seal(b"token-123", b"alice/s1");
        assert_eq!(r.open(&sealed, b"alice/s1").unwrap(), b"token-123");
        // Each seal differs (fresh nonce).
        assert_ne!(sealed, r.seal(b"token-123", b"alice/s1"));
        assert!(matches!(
            r.open(&sealed, b"alice/s2"),
            Err(SealError::Forged(_))
        ));
        let other = Keyring::new(SealingKey::generate("k1").unwrap());
        assert!(matches!(
            other.open(&sealed, b"alice/s1"),
            Err(SealError::Forged(_))
        ));
        let mut flipped = sealed.clone().into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(flipped).unwrap();
        assert!(r.open(&flipped, b"alice/s1").is_err());
        for bad in [
            "",
            "lmck1",
            "lmck1.k1",
            "lmck1.k1.!!",
            "lmck0.k1.AAAA",
            "lmck1.k1.AAAA",
        ] {
            assert!(r.open(bad, b"").is_err(), "{bad}");
        }
        assert!(matches!(
            r.open(&sealed.replace(".k1.", ".k9."), b"alice/s1"),
            Err(SealError::UnknownKey(id)) if id == "k9"
        ));
    }

    #[test]
    fn key_ids_and_keys_are_checked() {
        assert!(SealingKey::generate("").is_err());
        assert!(SealingKey::generate("a.b").is_err());
        assert!(SealingKey::generate("x".repeat(33)).is_err());
        assert!(SealingKey::from_base64("k", "c2hvcnQ=").is_err());
        let k = SealingKey::generate("k-2_b").unwrap();
        assert!(!format!("{k:?}").contains(&STANDARD.encode(k.key)));
        assert!(format!("{k:?}").contains("<redacted>"));
    }

    #[test]
    fn the_key_file_is_created_private_then_read_back_and_others_reading_it_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.key");
        let first = Keyring::load_or_create(&path).unwrap();
        let sealed = first.seal(b"s", b"p");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = Keyring::load_or_create(&path).unwrap();
        assert_eq!(again.open(&sealed, b"p").unwrap(), b"s");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let err = Keyring::load_or_create(&path).unwrap_err().to_string();
            assert!(err.contains("readable by others"), "{err}");
        }
    }

    #[test]
    fn derived_bytes_follow_the_current_key_and_the_label() {
        let r = ring();
        let again = Keyring::parse(&format!("k1 {}\n", STANDARD.encode(r.current.key))).unwrap();
        assert_eq!(r.derive("signing"), again.derive("signing"));
        assert_ne!(r.derive("signing"), r.derive("signing2"));
        assert_ne!(r.derive("signing"), ring().derive("signing"));
        assert_ne!(&r.derive("signing")[..], &r.current.key[..]);
    }

    /// Two instances sharing a data directory start at once on the first run: both end up
    /// with the one key written, neither fails.
    #[test]
    fn instances_creating_the_key_file_at_once_share_one_key() {
        for _ in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("secret.key");
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let (path, barrier) = (path.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        Keyring::load_or_create(&path)
                    })
                })
                .collect();
            let rings: Vec<Keyring> = threads
                .into_iter()
                .map(|t| t.join().unwrap().unwrap())
                .collect();
            for r in &rings {
                assert_eq!(r.current.key, rings[0].current.key);
            }
        }
    }

    #[test]
    fn a_key_file_lists_the_current_key_first_and_older_ones_after() {
        let old = SealingKey::generate("old").unwrap();
        let sealed = Keyring::new(old.clone()).seal(b"v", b"");
        let text = format!(
            "# rotated 2026-12-01\nnew {}\nold {}\n",
            STANDARD.encode([7u8; 32]),
            STANDARD.encode(old.key)
        );
        let ring = Keyring::parse(&text).unwrap();
        assert_eq!(ring.current().id(), "new");
        assert_eq!(ring.open(&sealed, b"").unwrap(), b"v");
        assert!(Keyring::parse("# nothing\n").is_err());
        assert!(Keyring::parse("k1 not-base64\n").is_err());
    }
}
