//! `kgbox-pack keygen`: a new ed25519 key pair.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use kgbox_bundle::SecretKey;

/// Writes `DIR/NAME.key` (mode 0600) and `DIR/NAME.pub`. Refuses to
/// overwrite an existing key unless `force` is set.
pub fn keygen(dir: &Path, name: &str, force: bool) -> Result<(PathBuf, PathBuf)> {
    if name.is_empty()
        || name.starts_with('.')
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        anyhow::bail!(
            "key name {name:?} must be letters, digits, `-`, `_` or `.` (and not start with `.`)"
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| anyhow::anyhow!("no system randomness: {e}"))?;
    let secret = SecretKey::from_seed(seed, name);
    let secret_path = dir.join(format!("{name}.key"));
    let public_path = dir.join(format!("{name}.pub"));
    for p in [&secret_path, &public_path] {
        if p.exists() && !force {
            anyhow::bail!(
                "{} already exists; refusing to overwrite a key (use --force to replace it)",
                p.display()
            );
        }
    }
    // Both files are written under temporary names first, so a failure
    // (or --force) never leaves a secret and a public key that do not match.
    let tmp_secret = dir.join(format!(".{name}.key.new"));
    let tmp_public = dir.join(format!(".{name}.pub.new"));
    let written = write_file(&tmp_secret, secret.to_text().as_bytes(), 0o600)
        .and_then(|_| write_file(&tmp_public, secret.public().to_text().as_bytes(), 0o644))
        .and_then(|_| {
            std::fs::rename(&tmp_secret, &secret_path)
                .and_then(|_| std::fs::rename(&tmp_public, &public_path))
                .with_context(|| format!("cannot move the new keys into {}", dir.display()))
        });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp_secret);
        let _ = std::fs::remove_file(&tmp_public);
        return Err(e);
    }
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok((secret_path, public_path))
}

fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let _ = std::fs::remove_file(path);
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .with_context(|| format!("cannot write {}", path.display()))
}
