//! `kgbox install`.

use std::path::PathBuf;

use anyhow::Result;
use kgbox::install::{install, InstallOptions};
use kgbox::Config;

/// `kgbox install BUNDLE` (a bundle, or a delta update made against the
/// active bundle by `kgbox-pack delta`).
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    pub bundle: PathBuf,
    /// Accept a version lower than the active one.
    #[arg(long)]
    pub allow_downgrade: bool,
}

pub fn run(cfg: &Config, args: &InstallArgs) -> Result<()> {
    let options = InstallOptions {
        allow_downgrade: args.allow_downgrade,
    };
    let report = install(&args.bundle, cfg, &options)?;
    let r = &report.record;
    println!(
        "installed {} {} into slot {} ({} bytes image) in {:.0} ms; it is now active",
        r.name,
        r.version,
        r.slot,
        r.image_bytes,
        report.elapsed.as_secs_f64() * 1e3
    );
    if let Some(n) = report.delta_bytes {
        println!("from a delta update of {n} bytes, applied to the active bundle");
    }
    if let Some(prev) = report.replaced {
        println!("previous: {prev} (kgbox rollback returns to it)");
    }
    Ok(())
}
