//! The probe stage: the bundle's health-check queries run on its graph; a
//! failing one stops the pack unless `--allow-failing-probes`, which turns
//! it into a warning.

use anyhow::{bail, Result};
use kgbox_bundle::Probe;

use super::bundle::Bundle;

/// Runs `probes` on the bundle's graph.
pub(super) fn check(bundle: &mut Bundle, probes: &[Probe], allow_failing: bool) -> Result<()> {
    let outcomes = crate::probes::check(&bundle.sections, probes)?;
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.passed)
        .map(|o| o.describe())
        .collect();
    if !failed.is_empty() && !allow_failing {
        bail!(
            "{} of {} probe queries fail on this graph, so every device would roll the bundle back: {}",
            failed.len(),
            outcomes.len(),
            failed.join("; ")
        );
    }
    for f in &failed {
        bundle
            .warnings
            .push(format!("probe fails (kept by --allow-failing-probes): {f}"));
    }
    bundle.notes.push(format!(
        "probes: {} health-check queries stored in the manifest",
        outcomes.len()
    ));
    Ok(())
}
