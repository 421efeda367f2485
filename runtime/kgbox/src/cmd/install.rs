//! `kgbox install`.

use std::path::Path;

use anyhow::Result;
use kgbox::install::{install, InstallOptions};
use kgbox::Config;

pub fn run(cfg: &Config, bundle: &Path, allow_downgrade: bool) -> Result<()> {
    let report = install(bundle, cfg, &InstallOptions { allow_downgrade })?;
    let r = &report.record;
    println!(
        "installed {} {} into slot {} ({} bytes image) in {:.0} ms; it is now active",
        r.name,
        r.version,
        r.slot,
        r.image_bytes,
        report.elapsed.as_secs_f64() * 1e3
    );
    if let Some(prev) = report.replaced {
        println!("previous: {prev} (kgbox rollback returns to it)");
    }
    Ok(())
}
