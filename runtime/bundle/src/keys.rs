//! ed25519 keys in a one-line text form, and the set of keys a device trusts.
//!
//! ```text
//! kgbox-ed25519-public <base64 of 32 bytes> [comment]
//! kgbox-ed25519-secret <base64 of 32 bytes> [comment]
//! ```

use std::fmt;
use std::path::Path;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use sha2::{Digest, Sha256};

use crate::error::{BundleError, Result};

/// Prepended to the signed bytes so a signature cannot be replayed for another purpose.
pub const SIGNING_DOMAIN: &[u8] = b"kgbox-bundle-v1\0";
/// The domain of a delta update's signature (`docs/bundle-format.md`,
/// section 13): a delta's signature is never valid for a bundle, nor the reverse.
pub const DELTA_SIGNING_DOMAIN: &[u8] = b"kgbox-delta-v1\0\0";

pub const PUBLIC_TAG: &str = "kgbox-ed25519-public";
pub const SECRET_TAG: &str = "kgbox-ed25519-secret";

/// First 8 bytes of sha256(public key); names a key in headers and messages.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct KeyId(pub [u8; 8]);

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyId({self})")
    }
}

/// A public (verifying) key.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    key: VerifyingKey,
    pub comment: String,
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self.key_id())
    }
}

impl PublicKey {
    pub fn key_id(&self) -> KeyId {
        let d = Sha256::digest(self.key.as_bytes());
        let mut id = [0u8; 8];
        id.copy_from_slice(&d[..8]);
        KeyId(id)
    }

    pub fn parse(text: &str) -> Result<PublicKey> {
        let (bytes, comment) = parse_line(text, PUBLIC_TAG)?;
        let key = VerifyingKey::from_bytes(&bytes)
            .map_err(|e| BundleError::Key(format!("not a valid ed25519 public key: {e}")))?;
        Ok(PublicKey { key, comment })
    }

    /// Reads a public key file; the error names the file.
    pub fn read(path: &Path) -> Result<PublicKey> {
        read_key_file(path, "public", PublicKey::parse)
    }

    pub fn to_text(&self) -> String {
        key_line(PUBLIC_TAG, self.key.as_bytes(), &self.comment)
    }

    fn verify(&self, message: &[u8], sig: &[u8]) -> bool {
        let Ok(sig) = Signature::from_slice(sig) else {
            return false;
        };
        self.key.verify_strict(message, &sig).is_ok() && self.key.verify(message, &sig).is_ok()
    }
}

/// A secret (signing) key.
pub struct SecretKey {
    key: SigningKey,
    pub comment: String,
}

impl SecretKey {
    pub fn from_seed(seed: [u8; 32], comment: &str) -> SecretKey {
        SecretKey {
            key: SigningKey::from_bytes(&seed),
            comment: comment.to_string(),
        }
    }

    pub fn parse(text: &str) -> Result<SecretKey> {
        let (bytes, comment) = parse_line(text, SECRET_TAG)?;
        Ok(SecretKey {
            key: SigningKey::from_bytes(&bytes),
            comment,
        })
    }

    /// Reads a secret key file; the error names the file.
    pub fn read(path: &Path) -> Result<SecretKey> {
        read_key_file(path, "secret", SecretKey::parse)
    }

    pub fn to_text(&self) -> String {
        key_line(SECRET_TAG, &self.key.to_bytes(), &self.comment)
    }

    pub fn public(&self) -> PublicKey {
        PublicKey {
            key: self.key.verifying_key(),
            comment: self.comment.clone(),
        }
    }

    /// Signs `SIGNING_DOMAIN || message`.
    pub fn sign_bundle(&self, message: &[u8]) -> [u8; 64] {
        self.sign_in(SIGNING_DOMAIN, message)
    }

    /// Signs `DELTA_SIGNING_DOMAIN || message` (a delta update's header,
    /// info, new prefix and instruction table).
    pub fn sign_delta(&self, message: &[u8]) -> [u8; 64] {
        self.sign_in(DELTA_SIGNING_DOMAIN, message)
    }

    fn sign_in(&self, domain: &[u8], message: &[u8]) -> [u8; 64] {
        let mut m = Vec::with_capacity(domain.len() + message.len());
        m.extend_from_slice(domain);
        m.extend_from_slice(message);
        self.key.sign(&m).to_bytes()
    }
}

fn read_key_file<K>(path: &Path, kind: &str, parse: fn(&str) -> Result<K>) -> Result<K> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| BundleError::io(format!("reading {kind} key {}", path.display()), e))?;
    parse(&text).map_err(|e| BundleError::Key(format!("{}: {e}", path.display())))
}

fn key_line(tag: &str, bytes: &[u8], comment: &str) -> String {
    let mut s = format!("{tag} {}", B64.encode(bytes));
    if !comment.is_empty() {
        s.push(' ');
        s.push_str(comment);
    }
    s.push('\n');
    s
}

fn parse_line(text: &str, tag: &str) -> Result<([u8; 32], String)> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .ok_or_else(|| BundleError::Key("empty key".into()))?;
    let mut parts = line.split_whitespace();
    let found_tag = parts.next().unwrap_or_default();
    if found_tag != tag {
        let hint = if found_tag == SECRET_TAG || found_tag == PUBLIC_TAG {
            format!(" (this is a `{found_tag}` key)")
        } else {
            String::new()
        };
        return Err(BundleError::Key(format!(
            "expected a line starting with `{tag}`{hint}"
        )));
    }
    let b64 = parts
        .next()
        .ok_or_else(|| BundleError::Key("missing key material after the tag".into()))?;
    let raw = B64
        .decode(b64.trim())
        .map_err(|e| BundleError::Key(format!("key material is not base64: {e}")))?;
    let bytes: [u8; 32] = raw
        .try_into()
        .map_err(|v: Vec<u8>| BundleError::Key(format!("key is {} bytes, expected 32", v.len())))?;
    Ok((bytes, parts.collect::<Vec<_>>().join(" ")))
}

/// Why a signature was refused: no trusted key has its id, or it is bad.
enum BadSig {
    Untrusted(BundleError),
    Bad(String),
}

/// The public keys whose bundles this device installs.
#[derive(Debug, Clone, Default)]
pub struct TrustedKeys {
    keys: Vec<PublicKey>,
}

impl TrustedKeys {
    pub fn new(keys: Vec<PublicKey>) -> TrustedKeys {
        TrustedKeys { keys }
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn keys(&self) -> &[PublicKey] {
        &self.keys
    }

    /// Checks a bundle's signature over `signed` (its header, table and
    /// manifest) by the key `key_id`; returns the key that made it.
    pub fn verify_bundle(
        &self,
        key_id: KeyId,
        signed: &[u8],
        signature: &[u8],
    ) -> Result<&PublicKey> {
        self.verify_in(SIGNING_DOMAIN, key_id, signed, signature)
            .map_err(|e| match e {
                BadSig::Untrusted(e) => e,
                BadSig::Bad(key_id) => BundleError::BadSignature { key_id },
            })
    }

    /// Checks a delta update's signature over `signed` by the key `key_id`.
    pub fn verify_delta(
        &self,
        key_id: KeyId,
        signed: &[u8],
        signature: &[u8],
    ) -> Result<&PublicKey> {
        self.verify_in(DELTA_SIGNING_DOMAIN, key_id, signed, signature)
            .map_err(|e| match e {
                BadSig::Untrusted(e) => e,
                BadSig::Bad(key_id) => BundleError::DeltaBadSignature { key_id },
            })
    }

    /// The key that made a valid signature, else why not.
    fn verify_in(
        &self,
        domain: &[u8],
        key_id: KeyId,
        signed: &[u8],
        signature: &[u8],
    ) -> Result<&PublicKey, BadSig> {
        let key = self
            .keys
            .iter()
            .find(|k| k.key_id() == key_id)
            .ok_or_else(|| {
                BadSig::Untrusted(BundleError::UntrustedKey {
                    key_id: key_id.to_string(),
                })
            })?;
        let mut m = Vec::with_capacity(domain.len() + signed.len());
        m.extend_from_slice(domain);
        m.extend_from_slice(signed);
        if key.verify(&m, signature) {
            Ok(key)
        } else {
            Err(BadSig::Bad(key_id.to_string()))
        }
    }
}
