//! `kgbox rollback`.

use anyhow::Result;
use kgbox::{install, Config};

/// Makes the previous slot active again.
pub fn run(cfg: &Config) -> Result<()> {
    let (from, to) = install::rollback(&cfg.data_dir)?;
    println!(
        "rolled back from {} {} (slot {}) to {} {} (slot {})",
        from.name, from.version, from.slot, to.name, to.version, to.slot
    );
    Ok(())
}
