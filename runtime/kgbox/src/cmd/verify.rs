//! `kgbox verify`.

use std::path::Path;

use anyhow::Result;
use kgbox::Config;

pub fn run(cfg: &Config, bundle: &Path, trust: &[String]) -> Result<()> {
    let keys = super::trusted_keys(cfg, trust)?;
    let v = kgbox::install::verify(bundle, &keys, cfg)?;
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
