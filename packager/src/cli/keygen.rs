//! `kgbox-pack keygen`: a new signing key pair, and where it went.

use std::path::Path;

use anyhow::Result;

/// Writes `out/name.key` and `out/name.pub` and says which is which.
pub fn run(out: &Path, name: &str, force: bool) -> Result<()> {
    let (secret, public) = kgbox_pack::keygen::keygen(out, name, force)?;
    println!("secret key: {} (keep it private)", secret.display());
    println!(
        "public key: {} (add to the devices' trusted keys)",
        public.display()
    );
    Ok(())
}
