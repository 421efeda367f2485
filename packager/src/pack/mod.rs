//! `kgbox-pack build`: inputs → graph → signed bundle, written atomically.
//!
//! [`pack_with`] runs the stages in order, each in its module and each
//! optional one skipped when its option is off: `read` the inputs, build
//! the `graph`, add the `models` (encoder, neural executor, planner,
//! reranker), run the `probes`, then `write` the bundle. The report times
//! reading, building (graph to probes) and writing.
//!
//! In functions: `read::inputs` (`input::read_triples_with`: TSV or RDF,
//! `.gz`/`.zst` decompressed as a stream; aliases, relation descriptions,
//! planner examples) → `graph::graph` (`example_facts::add` when asked,
//! `crate::graph::build_with`) → `models::encoder` (`embed::embed`),
//! `models::train` (`train::train`: `models/ultra/train.py`) or the given
//! `--ultra` model, `models::executor` (`ultra::sections`, `fusion::fit`),
//! `models::planner` (`planner::sections`), `models::reranker` →
//! `probes::check` → `write::manifest` and `write::bundle`
//! (`kgbox_bundle::BundleWriter` through [`write_atomically`]: `OUT.partial`,
//! renamed).

mod atomic;
mod bundle;
mod graph;
mod models;
mod options;
mod probes;
mod progress;
mod read;
mod write;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use kgbox_bundle::writer::WriteReport;
use kgbox_bundle::{KgStats, SecretKey};
use kgbox_qa::planner::train::Example;

pub use atomic::write_atomically;
pub use options::{
    PackOptions, ScaleOptions, DEFAULT_COMPATIBLE, DEFAULT_LARGE_LEVEL, DEFAULT_LEVEL,
    LARGE_SECTION,
};
pub use write::MIN_RUNTIME;

use bundle::Bundle;
use models::Ultra;
use read::Inputs;

use crate::embed::EmbedOptions;
use crate::input::RawKg;

#[derive(Debug)]
pub struct PackReport {
    pub stats: KgStats,
    pub write: WriteReport,
    pub warnings: Vec<String>,
    /// What the optional stages did (planner training), for the operator.
    pub notes: Vec<String>,
    pub read_time: Duration,
    pub build_time: Duration,
    pub write_time: Duration,
}

/// Reads the inputs, builds the graph and writes a signed bundle to `out`
/// (through a temporary file renamed into place, so a failed build leaves no
/// partial bundle behind).
pub fn pack(opts: &PackOptions, key: &SecretKey, out: &Path) -> Result<PackReport> {
    pack_with(opts, None, key, out)
}

/// [`pack`], plus a dense index of the entity names and the encoder that
/// made it when `embed` is given (`kgbox-pack build --embed`).
pub fn pack_with(
    opts: &PackOptions,
    embed: Option<&EmbedOptions>,
    key: &SecretKey,
    out: &Path,
) -> Result<PackReport> {
    opts.check()?;
    let created_unix = opts.created_unix()?;
    let (Inputs { raw, examples }, read_time) = timed(|| read::inputs(opts))?;
    let (bundle, build_time) = timed(|| build(opts, embed, raw, &examples))?;
    let Bundle {
        sections,
        derived_in,
        stats,
        models,
        warnings,
        notes,
    } = bundle;
    let (write, write_time) = timed(|| {
        let manifest = write::manifest(opts, created_unix, stats.clone(), models)?;
        write::bundle(opts, manifest, sections, derived_in, key, out)
    })?;
    Ok(PackReport {
        stats,
        write,
        warnings,
        notes,
        read_time,
        build_time,
        write_time,
    })
}

/// The stages between reading and writing: the graph, then the optional
/// stages whose options are on, in the order their sections are written.
fn build(
    opts: &PackOptions,
    embed: Option<&EmbedOptions>,
    raw: RawKg,
    examples: &[Example],
) -> Result<Bundle> {
    let mut bundle = graph::graph(opts, raw, examples)?;
    if let Some(embed) = embed {
        models::encoder(&mut bundle, embed, opts.progress)?;
    }
    let ultra = match &opts.train {
        Some(train) => Some(models::train(&mut bundle, train, examples)?),
        None => opts.ultra.clone().map(Ultra::given),
    };
    if let Some(ultra) = ultra {
        models::executor(&mut bundle, ultra, examples)?;
    }
    if let Some(planner) = &opts.planner {
        models::planner(&mut bundle, planner, examples, opts.progress)?;
    }
    if let Some(prefix) = &opts.reranker {
        models::reranker(&mut bundle, prefix)?;
    }
    if !opts.probes.is_empty() {
        probes::check(&mut bundle, &opts.probes, opts.allow_failing_probes)?;
    }
    Ok(bundle)
}

/// Runs a stage; its result and how long it took.
fn timed<T>(stage: impl FnOnce() -> Result<T>) -> Result<(T, Duration)> {
    let start = Instant::now();
    let value = stage()?;
    Ok((value, start.elapsed()))
}
