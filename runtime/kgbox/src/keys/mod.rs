//! API keys: who may read which bundle, and who may administer the device.
//!
//! A key is `kgb_<id>_<secret>`: a public id of 12 hex digits (named in
//! logs, metrics and `kgbox keys list`) and 256 random bits. The device keeps
//! only the SHA-256 of the secret, in `DATA_DIR/keys.json` (written whole,
//! synced and renamed into place, mode 0600), and compares hashes in
//! constant time. [`Keyring`] is the server's view of that file: it notices
//! a change (`kgbox keys add` or `revoke` while serving) at the next request.

mod file;
mod scope;
mod token;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use subtle::ConstantTimeEq;

pub use file::{add, list, revoke, KeyFile, KeyRecord, KEYS_FILE};
pub use scope::{Rate, Scope};
pub use token::{NewKey, Token};

/// Why a key file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a kgbox key file: {message}")]
    Format { path: PathBuf, message: String },
    #[error("{0}")]
    Invalid(String),
}

/// Why a request's key was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not of the form `kgb_<id>_<secret>`.
    Malformed,
    /// No key has this id, or the secret is not the key's.
    Unknown,
    /// The key was revoked.
    Revoked,
}

/// The keys of `DATA_DIR/keys.json` as last read, reread when the file
/// changes.
pub struct Keyring {
    path: PathBuf,
    cache: Mutex<Cached>,
}

struct Cached {
    stamp: Option<Stamp>,
    keys: Arc<Vec<KeyRecord>>,
    /// The file as it was when it could not be read, and why: not read
    /// again (nor logged again) until it changes.
    bad: Option<Stamp>,
}

/// What tells that the file changed: modification time, length and inode
/// (every write renames a new file into place).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp(Option<SystemTime>, u64, u64);

impl Keyring {
    /// The keyring of `data_dir` (the file may not exist yet: no keys).
    pub fn open(data_dir: &Path) -> Result<Keyring, KeyError> {
        let ring = Keyring {
            path: data_dir.join(KEYS_FILE),
            cache: Mutex::new(Cached {
                stamp: None,
                keys: Arc::new(Vec::new()),
                bad: None,
            }),
        };
        ring.refresh()?;
        Ok(ring)
    }

    /// The keys, reread first if the file changed. A file that cannot be
    /// read any more keeps the last keys read (and is logged).
    pub fn keys(&self) -> Arc<Vec<KeyRecord>> {
        if let Err(e) = self.refresh() {
            tracing::error!(error = %e, "the key file cannot be read; the keys read before stay in force");
        }
        match self.cache.lock() {
            Ok(c) => c.keys.clone(),
            Err(poisoned) => poisoned.into_inner().keys.clone(),
        }
    }

    /// Whether any key that is not revoked exists.
    pub fn any_active(&self) -> bool {
        self.keys().iter().any(|k| k.revoked.is_none())
    }

    fn refresh(&self) -> Result<(), KeyError> {
        let stamp = match std::fs::metadata(&self.path) {
            Ok(m) => Some(Stamp(m.modified().ok(), m.len(), m.ino())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(KeyError::Io {
                    path: self.path.clone(),
                    source,
                })
            }
        };
        let mut cache = match self.cache.lock() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        if cache.stamp == stamp && stamp.is_some() {
            return Ok(());
        }
        if stamp.is_some() && stamp == cache.bad {
            // Logged when it was found: the keys read before stay.
            return Ok(());
        }
        let keys = match stamp {
            None => Vec::new(),
            Some(s) => match KeyFile::read(&self.path) {
                Ok(f) => f.keys,
                Err(e) => {
                    cache.bad = Some(s);
                    return Err(e);
                }
            },
        };
        cache.bad = None;
        cache.stamp = stamp;
        cache.keys = Arc::new(keys);
        Ok(())
    }

    /// The key `presented` is, or why it is refused. The time taken does
    /// not depend on how much of the secret is right, nor on whether the id
    /// exists.
    pub fn check(&self, presented: &str) -> Result<KeyRecord, (Refusal, Option<String>)> {
        let Some(token) = Token::parse(presented) else {
            return Err((Refusal::Malformed, None));
        };
        let keys = self.keys();
        let hash = token.secret_hash();
        let found = keys.iter().find(|k| k.id == token.id);
        // Compared whether or not the id exists, against a hash no secret has.
        let stored = found.map(|k| k.hash.as_str()).unwrap_or(NO_KEY);
        let stored = hex::decode(stored).unwrap_or_default();
        let same = bool::from(stored.as_slice().ct_eq(hash.as_slice()));
        match found {
            Some(k) if same && k.revoked.is_none() => Ok(k.clone()),
            Some(k) if same => Err((Refusal::Revoked, Some(k.id.clone()))),
            _ => Err((Refusal::Unknown, Some(token.id))),
        }
    }
}

/// A SHA-256 that stands for "no such key" (not the hash of any secret
/// anyone knows).
const NO_KEY: &str = "0000000000000000000000000000000000000000000000000000000000000000";

#[cfg(test)]
mod tests;
