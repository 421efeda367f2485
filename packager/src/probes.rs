//! The bundle's probe queries (its health check on a device): read from
//! `--probe` and `--probes FILE`, and run here against the packed graph so a
//! bundle whose own probes fail is caught before it ships.

use std::path::Path;

use anyhow::{bail, Context, Result};
use kgbox_bundle::Probe;
use kgbox_query::probe::{parse_probes, run_probe, ProbeOutcome};

/// `--probe` texts (`QUERY` or `QUERY<TAB>expected|names`) and a probes file.
pub fn collect(inline: &[String], file: Option<&Path>) -> Result<Vec<Probe>> {
    let mut probes = Vec::new();
    for (i, p) in inline.iter().enumerate() {
        let parsed = parse_probes(p).map_err(|e| anyhow::anyhow!("--probe #{}: {e}", i + 1))?;
        if parsed.is_empty() {
            bail!("--probe #{} is empty", i + 1);
        }
        probes.extend(parsed);
    }
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        probes.extend(parse_probes(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?);
    }
    Ok(probes)
}

/// Runs the probes symbolically over the built sections.
pub fn check(
    built: &[(&'static str, crate::section::SectionData)],
    probes: &[Probe],
) -> Result<Vec<ProbeOutcome>> {
    let aligned = crate::graph::Aligned::new(built)?;
    let kg = aligned.kg()?;
    let limits = kgbox_query::ParseLimits::default();
    let opts = kgbox_query::ExecOptions::default();
    Ok(probes
        .iter()
        .map(|p| run_probe(&kg, p, &limits, &opts, None))
        .collect())
}
