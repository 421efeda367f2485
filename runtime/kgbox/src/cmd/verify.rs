//! `kgbox verify`.

use std::path::PathBuf;

use anyhow::Result;
use kgbox::Config;

/// `kgbox verify BUNDLE` (or a delta update: it is applied to the active
/// bundle into a temporary file, as `install` would).
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    pub bundle: PathBuf,
    /// Trusted public key (file or inline); repeatable. Default: the config's keys.
    #[arg(long)]
    pub trust: Vec<String>,
}

pub fn run(cfg: &Config, args: &VerifyArgs) -> Result<()> {
    let keys = super::trusted_keys(cfg, &args.trust)?;
    let v = kgbox::install::verify(&args.bundle, &keys, cfg)?;
    println!(
        "OK: {} {} ({} bytes), signed by trusted key {}, compatible `{}`, {} entities, {} triples",
        v.manifest.name,
        v.manifest.version,
        v.bytes,
        v.key_id,
        v.manifest.compatible,
        v.manifest.stats.entities,
        v.manifest.stats.triples
    );
    if let Some(base) = v.delta_base {
        println!("a delta update: it rebuilds that bundle from the active {base}");
    }
    Ok(())
}
