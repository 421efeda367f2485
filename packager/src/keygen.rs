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
    write_file(&secret_path, secret.to_text().as_bytes(), 0o600, force)?;
    write_file(
        &public_path,
        secret.public().to_text().as_bytes(),
        0o644,
        force,
    )?;
    Ok((secret_path, public_path))
}

fn write_file(path: &Path, bytes: &[u8], mode: u32, force: bool) -> Result<()> {
    if force {
        let _ = std::fs::remove_file(path);
    }
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
