//! `kgbox verify`.

use std::path::Path;

use anyhow::Result;
use kgbox::config::parse_key_ref;
use kgbox::Config;
use kgbox_bundle::TrustedKeys;

pub fn run(cfg: &Config, bundle: &Path, trust: &[String]) -> Result<()> {
    let keys = if trust.is_empty() {
        cfg.trusted_keys()?
    } else {
        TrustedKeys::new(
            trust
                .iter()
                .map(|k| parse_key_ref(k))
                .collect::<Result<_, _>>()?,
        )
    };
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
