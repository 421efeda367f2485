//! The write stage: the manifest, then the sections compressed, signed and
//! written atomically to the bundle's path.

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use anyhow::{Context, Result};
use kgbox_bundle::normalize::NORMALIZER_ID;
use kgbox_bundle::writer::WriteReport;
use kgbox_bundle::{BundleWriter, KgStats, Manifest, ModelInfo, SecretKey};

use super::atomic::write_atomically;
use super::options::{PackOptions, LARGE_SECTION};
use super::progress::phase_bar;
use crate::section::Sections;

/// Oldest runtime that reads what this packager writes.
pub const MIN_RUNTIME: &str = "0.1.0";

/// The manifest of a bundle of the graph described by `stats` and of
/// `models`, created at `created_unix`.
pub(super) fn manifest(
    opts: &PackOptions,
    created_unix: u64,
    stats: KgStats,
    models: Vec<ModelInfo>,
) -> Result<Manifest> {
    Ok(Manifest {
        name: opts.name.clone(),
        version: opts.version.clone(),
        compatible: opts.compatible.clone(),
        created: humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(created_unix))
            .to_string(),
        created_unix,
        min_runtime: semver::Version::parse(MIN_RUNTIME)?,
        generator: format!("kgbox-pack {}", env!("CARGO_PKG_VERSION")),
        normalizer: NORMALIZER_ID.to_string(),
        stats,
        models,
        probes: opts.probes.clone(),
    })
}

/// Writes `manifest` and `sections` (the in-edges left to the device when
/// `derived_in`) to `out`, signed with `key`.
pub(super) fn bundle(
    opts: &PackOptions,
    manifest: Manifest,
    sections: Sections,
    derived_in: bool,
    key: &SecretKey,
    out: &Path,
) -> Result<WriteReport> {
    let mut writer = BundleWriter::new(manifest)
        .level(opts.level)
        .large_level(opts.scale.large_level, LARGE_SECTION)
        .spill_dir(opts.scale.spill_dir.clone());
    for (name, data) in sections {
        let required = kgbox_bundle::sections::KG_REQUIRED.contains(&name);
        let raw = data
            .into_raw()
            .with_context(|| format!("reading back the spilled section {name}"))?;
        if derived_in && kgbox_bundle::derive::DERIVABLE.contains(&name) {
            writer.add_derived(name, required, raw)?;
        } else {
            writer.add_raw(name, required, raw)?;
        }
    }
    let bar = phase_bar(opts.progress);
    bar.set_message("compressing the sections (zstd, all cores) and signing");
    bar.enable_steady_tick(Duration::from_millis(200));
    let write = write_atomically(out, |file| Ok(writer.write(key, file)?));
    bar.finish_and_clear();
    write
}
