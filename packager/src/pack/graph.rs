//! The graph stage: the facts of the planner examples added when asked
//! (`--add-example-facts`), then the graph's sections built
//! ([`crate::graph::build_with`]), which start the [`Bundle`].

use anyhow::{bail, Result};
use kgbox_qa::planner::train::Example;

use super::bundle::Bundle;
use super::options::PackOptions;
use super::progress::phase_bar;
use crate::graph::{build_with, BuildOptions, BuiltKg};
use crate::input::{InputError, RawKg};

/// Builds the graph read into `raw`, whose warnings and notes the bundle
/// takes over.
pub(super) fn graph(opts: &PackOptions, mut raw: RawKg, examples: &[Example]) -> Result<Bundle> {
    let mut warnings = std::mem::take(&mut raw.warnings);
    let mut notes = std::mem::take(&mut raw.notes);
    if opts.example_facts {
        notes.push(add_example_facts(&mut raw, examples, opts.scale.sort_run)?);
    }
    let mut built = build(raw, opts)?;
    warnings.append(&mut built.warnings);
    Ok(Bundle {
        sections: built.sections,
        derived_in: built.derived_in,
        stats: built.stats,
        models: Vec::new(),
        warnings,
        notes,
    })
}

/// Adds the facts of the one-hop `examples` to a graph in memory; the
/// operator's note on what was added.
fn add_example_facts(raw: &mut RawKg, examples: &[Example], sort_run: usize) -> Result<String> {
    if raw.large.is_some() {
        bail!(
            "--add-example-facts needs the graph in memory, and this one has more than \
             --sort-run {sort_run} triples; raise --sort-run or leave the facts out"
        );
    }
    // Not the examples held out to fit the fusion: those must not find
    // their own answers stated.
    let added = crate::example_facts::add(raw, examples, |q| !crate::train::held_out(q))
        .map_err(InputError::Spill)?;
    Ok(format!(
        "example facts: {} facts added from {} one-hop examples with answers",
        added.facts, added.examples
    ))
}

/// The graph's sections, with a bar of the build's phases.
fn build(raw: RawKg, opts: &PackOptions) -> Result<BuiltKg> {
    let bar = phase_bar(opts.progress);
    let built = build_with(
        raw,
        &BuildOptions {
            sort_run: opts.scale.sort_run,
            spill_dir: opts.scale.spill_dir.clone(),
            progress: bar.clone(),
            in_edges: opts.scale.in_edges,
        },
    )?;
    bar.finish_and_clear();
    Ok(built)
}
