//! `kgbox rollback`.

use anyhow::Result;
use kgbox::{install, Config};

/// `kgbox rollback`.
#[derive(Debug, clap::Args)]
pub struct RollbackArgs {
    /// The bundle installed beside the default one (`install --beside`) to
    /// roll back, by name; default: the default bundle.
    #[arg(long, value_name = "NAME")]
    pub beside: Option<String>,
}

/// Makes the previous slot active again.
pub fn run(cfg: &Config, args: &RollbackArgs) -> Result<()> {
    let own;
    let cfg = match &args.beside {
        Some(name) => {
            own = super::status::beside_config(cfg, name)?;
            &own
        }
        None => cfg,
    };
    let (from, to) = install::rollback(&cfg.data_dir)?;
    println!(
        "rolled back from {} {} (slot {}) to {} {} (slot {})",
        from.name, from.version, from.slot, to.name, to.version, to.slot
    );
    Ok(())
}
