//! `kgbox mark-good` and `kgbox mark-bad`: an update framework's (RAUC,
//! Mender, SWUpdate) or an operator's verdict on the active bundle.

use anyhow::Result;
use kgbox::{install, Config};

/// `kgbox mark-bad`.
#[derive(Debug, clap::Args)]
pub struct MarkBadArgs {
    /// Why (recorded in the slot's state, shown by `status`).
    #[arg(long, default_value = "marked bad by the operator")]
    pub reason: String,
}

/// Marks the active bundle good: its trial is over.
pub fn mark_good(cfg: &Config) -> Result<()> {
    let rec = install::mark_good(&cfg.data_dir)?;
    println!(
        "marked {} {} (slot {}) good",
        rec.name, rec.version, rec.slot
    );
    Ok(())
}

/// Marks the active bundle bad; the previous slot becomes active when it
/// holds a bundle that is not bad.
pub fn mark_bad(cfg: &Config, args: &MarkBadArgs) -> Result<()> {
    let (bad, now) = install::mark_bad(&cfg.data_dir, &args.reason)?;
    match now {
        Some(now) => println!(
            "marked {} {} (slot {}) bad; {} {} (slot {}) is active again (restart serve, or it switches at its next start)",
            bad.name, bad.version, bad.slot, now.name, now.version, now.slot
        ),
        None => println!(
            "marked {} {} (slot {}) bad; no other slot holds a usable bundle: serve falls back to the demo (or refuses to start with demo = false) until another is installed",
            bad.name, bad.version, bad.slot
        ),
    }
    Ok(())
}
