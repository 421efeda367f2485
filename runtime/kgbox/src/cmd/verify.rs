//! `kgbox verify`.

use std::path::PathBuf;

use anyhow::Result;
use kgbox::Config;

/// `kgbox verify BUNDLE`.
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
    Ok(())
}
