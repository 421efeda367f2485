//! `DATA_DIR/keys.json`: the keys' ids, names, scopes, rates and secret
//! hashes. Every change rewrites the whole file under a lock
//! (`keys.json.lock`): written beside it, synced, renamed over it, the
//! directory synced, so a power cut leaves the old file or the new one.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{KeyError, NewKey, Rate, Scope};

/// The key file's name in the data directory.
pub const KEYS_FILE: &str = "keys.json";
const VERSION: u32 = 1;

/// The whole file.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyFile {
    pub version: u32,
    pub keys: Vec<KeyRecord>,
}

/// One key, as the device keeps it (never its secret).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyRecord {
    /// The public id: 12 hex digits.
    pub id: String,
    /// Who or what it is for.
    pub name: String,
    /// SHA-256 of the secret, hex.
    pub hash: String,
    pub scopes: Vec<Scope>,
    /// Its own request rate; none: `http.key_rate_limit` (if set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// When it was made (RFC 3339, UTC).
    pub created: String,
    /// When it was revoked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked: Option<String>,
}

impl KeyRecord {
    /// Whether this key may read `bundle`.
    pub fn reads(&self, bundle: &str) -> bool {
        self.scopes.iter().any(|s| s.reads(bundle))
    }

    /// Whether it may read every bundle (`read`, `admin`).
    pub fn reads_all(&self) -> bool {
        self.scopes
            .iter()
            .any(|s| matches!(s, Scope::Admin | Scope::Read(None)))
    }

    pub fn is_admin(&self) -> bool {
        self.scopes.contains(&Scope::Admin)
    }
}

impl KeyFile {
    pub fn read(path: &Path) -> Result<KeyFile, KeyError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(KeyFile {
                    version: VERSION,
                    keys: Vec::new(),
                })
            }
            Err(source) => {
                return Err(KeyError::Io {
                    path: path.into(),
                    source,
                })
            }
        };
        let format = |message: String| KeyError::Format {
            path: path.into(),
            message,
        };
        let file: KeyFile = serde_json::from_str(&text).map_err(|e| format(e.to_string()))?;
        if file.version != VERSION {
            return Err(format(format!(
                "version {} (this kgbox reads version {VERSION})",
                file.version
            )));
        }
        Ok(file)
    }

    fn write(&self, path: &Path) -> Result<(), KeyError> {
        let io = |source| KeyError::Io {
            path: path.into(),
            source,
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut tmp = tempfile::Builder::new()
            .prefix(".keys-")
            .tempfile_in(dir)
            .map_err(io)?;
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| KeyError::Invalid(format!("cannot write the key file: {e}")))?;
        tmp.write_all(text.as_bytes()).map_err(io)?;
        tmp.write_all(b"\n").map_err(io)?;
        tmp.as_file().sync_all().map_err(io)?;
        // tempfile makes it 0600: only the device's user reads the hashes.
        tmp.persist(path).map_err(|e| io(e.error))?;
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io)
    }
}

/// Runs `change` on the key file of `data_dir` under its lock and writes
/// the result.
fn update<T>(
    data_dir: &Path,
    change: impl FnOnce(&mut KeyFile) -> Result<T, KeyError>,
) -> Result<T, KeyError> {
    std::fs::create_dir_all(data_dir).map_err(|source| KeyError::Io {
        path: data_dir.into(),
        source,
    })?;
    let lock_path: PathBuf = data_dir.join(format!("{KEYS_FILE}.lock"));
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .and_then(|f| f.lock().map(|()| f))
        .map_err(|source| KeyError::Io {
            path: lock_path.clone(),
            source,
        })?;
    let path = data_dir.join(KEYS_FILE);
    let mut file = KeyFile::read(&path)?;
    let out = change(&mut file)?;
    file.version = VERSION;
    file.write(&path)?;
    drop(lock);
    Ok(out)
}

fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Makes a key; returns its text (shown once, never stored) and record.
pub fn add(
    data_dir: &Path,
    name: &str,
    scopes: Vec<Scope>,
    rate: Option<Rate>,
) -> Result<(String, KeyRecord), KeyError> {
    let name = name.trim();
    if name.is_empty() || name.len() > 200 || name.chars().any(char::is_control) {
        return Err(KeyError::Invalid(
            "a key's name must be 1 to 200 printable characters".into(),
        ));
    }
    if scopes.is_empty() {
        return Err(KeyError::Invalid(
            "a key needs at least one scope: read, read:BUNDLE or admin".into(),
        ));
    }
    update(data_dir, |file| {
        if file
            .keys
            .iter()
            .any(|k| k.name == name && k.revoked.is_none())
        {
            return Err(KeyError::Invalid(format!(
                "a key named {name:?} exists: revoke it first, or choose another name"
            )));
        }
        let new = NewKey::generate()?;
        let record = KeyRecord {
            id: new.id,
            name: name.to_string(),
            hash: new.hash,
            scopes,
            rate,
            created: now(),
            revoked: None,
        };
        file.keys.push(record.clone());
        Ok((new.text, record))
    })
}

/// Every key, revoked ones included.
pub fn list(data_dir: &Path) -> Result<Vec<KeyRecord>, KeyError> {
    Ok(KeyFile::read(&data_dir.join(KEYS_FILE))?.keys)
}

/// Revokes the key with this id or (active) name; returns it.
pub fn revoke(data_dir: &Path, which: &str) -> Result<KeyRecord, KeyError> {
    update(data_dir, |file| {
        // An id first; a name only when it names one active key.
        let by_id = file.keys.iter().position(|k| k.id == which);
        let by_name: Vec<usize> = (0..file.keys.len())
            .filter(|&i| file.keys[i].name == which && file.keys[i].revoked.is_none())
            .collect();
        let at = match (by_id, by_name.as_slice()) {
            (Some(i), _) => i,
            (None, [i]) => *i,
            (None, []) => {
                return Err(KeyError::Invalid(format!(
                    "no key has the id or name {which:?}"
                )))
            }
            (None, _) => {
                return Err(KeyError::Invalid(format!(
                    "{} active keys are named {which:?}: revoke one by its id (kgbox keys list)",
                    by_name.len()
                )))
            }
        };
        let key = &mut file.keys[at];
        if key.revoked.is_none() {
            key.revoked = Some(now());
        }
        Ok(key.clone())
    })
}
