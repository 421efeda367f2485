//! What a pack is asked for: [`PackOptions`] and [`ScaleOptions`], their
//! defaults (those of `kgbox-pack build`), and the checks of the options
//! made before any input is read.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};

use crate::graph::InEdges;
use crate::input::{Format, DEFAULT_LIMIT};
use crate::planner::PlannerOptions;

/// The `compatible` string bundles carry unless told otherwise; a device
/// installs only bundles whose string equals its own.
pub const DEFAULT_COMPATIBLE: &str = "kgbox-generic";
/// The zstd level of the sections (`--level`).
pub const DEFAULT_LEVEL: i32 = 19;
/// The zstd level of the sections over [`LARGE_SECTION`] bytes
/// (`--large-level`).
pub const DEFAULT_LARGE_LEVEL: i32 = 6;
/// Sections larger than this (16 MiB: the CSR of a graph of about 4M
/// triples) are compressed at `large_level`: level 19 runs at a few MB/s,
/// which for a 100M-triple graph's CSR would take most of an hour, while
/// the ids in it gain about a tenth in size.
pub const LARGE_SECTION: u64 = 16 << 20;

#[derive(Debug)]
pub struct PackOptions {
    pub triples: PathBuf,
    pub format: Option<Format>,
    /// RDF: the predicates whose literals name entities, best first
    /// (`--label-predicate`); empty: known and detected ones.
    pub label_predicates: Vec<String>,
    /// RDF: keep the statements as given for `/sparql` (`rdf.*` sections;
    /// off with `--no-rdf-statements`).
    pub rdf_statements: bool,
    /// Pack an input with no triples at all (`--allow-empty`; else an error).
    pub allow_empty: bool,
    pub aliases: Option<PathBuf>,
    pub relations: Option<PathBuf>,
    /// `relation<TAB>alias` lines: the words people say for a relation.
    pub relation_aliases: Option<PathBuf>,
    pub name: String,
    pub version: semver::Version,
    pub compatible: String,
    pub level: i32,
    /// Creation time; `SOURCE_DATE_EPOCH` or now when `None`.
    pub created_unix: Option<u64>,
    pub progress: bool,
    /// Adds the neural query executor (`--ultra`).
    pub ultra: Option<crate::ultra::UltraOptions>,
    /// Adds the facts of one-hop planner examples to the graph
    /// (`--add-example-facts`, see `example_facts.rs`).
    pub example_facts: bool,
    /// Trains the neural query executor on this graph first (`--train-executor`);
    /// its model replaces `ultra`.
    pub train: Option<crate::train::TrainOptions>,
    /// The learned planner's examples and calibration (`None`: no planner
    /// sections, not even the zero-shot relation vectors).
    pub planner: Option<PlannerOptions>,
    /// The answer reranker, `PREFIX.onnx` and `PREFIX.json` from
    /// `models/reranker/train.py` (`--reranker`).
    pub reranker: Option<PathBuf>,
    /// Health-check queries stored in the manifest.
    pub probes: Vec<kgbox_bundle::Probe>,
    /// Write the bundle even when its own probes fail here (to test a
    /// device's rollback).
    pub allow_failing_probes: bool,
    /// Memory and disk for large graphs (`--sort-run`, `--spill-dir`,
    /// `--large-level`).
    pub scale: ScaleOptions,
}

impl Default for PackOptions {
    /// What `kgbox-pack build` does without its optional flags: level 19,
    /// a progress bar, the default planner (for the symbolic executor) and
    /// nothing else added. `build` requires the graph, the name and the
    /// version; here they are empty (a pack fails until `triples` and
    /// `name` are set) and 0.0.0.
    fn default() -> PackOptions {
        PackOptions {
            triples: PathBuf::new(),
            format: None,
            label_predicates: Vec::new(),
            rdf_statements: true,
            allow_empty: false,
            aliases: None,
            relations: None,
            relation_aliases: None,
            name: String::new(),
            version: semver::Version::new(0, 0, 0),
            compatible: DEFAULT_COMPATIBLE.to_string(),
            level: DEFAULT_LEVEL,
            created_unix: None,
            progress: true,
            ultra: None,
            example_facts: false,
            train: None,
            planner: Some(PlannerOptions::default()),
            reranker: None,
            probes: Vec::new(),
            allow_failing_probes: false,
            scale: ScaleOptions::default(),
        }
    }
}

impl PackOptions {
    /// Refuses a name or `compatible` string the manifest cannot carry.
    pub(super) fn check(&self) -> Result<()> {
        if !kgbox_bundle::manifest::valid_name(&self.name) {
            bail!(
                "bundle name {:?} must be 1 to 128 characters of A-Z a-z 0-9 - _ .",
                self.name
            );
        }
        if self.compatible.is_empty() || self.compatible.chars().any(char::is_whitespace) {
            bail!("--compatible must be a non-empty string without spaces");
        }
        Ok(())
    }

    /// The bundle's creation time: `created_unix`, else `SOURCE_DATE_EPOCH`,
    /// else now.
    pub(super) fn created_unix(&self) -> Result<u64> {
        if let Some(t) = self.created_unix {
            return Ok(t);
        }
        if let Ok(v) = std::env::var("SOURCE_DATE_EPOCH") {
            return v
                .trim()
                .parse()
                .with_context(|| format!("SOURCE_DATE_EPOCH={v:?} is not a number of seconds"));
        }
        Ok(SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0))
    }
}

/// How a graph larger than memory is built.
#[derive(Debug, Clone)]
pub struct ScaleOptions {
    /// Triples held in memory while reading and per sorted run (12 bytes
    /// each); a larger graph spills to `spill_dir`.
    pub sort_run: usize,
    /// Temporary files (the system's temporary directory when `None`).
    pub spill_dir: Option<PathBuf>,
    /// zstd level for sections over [`LARGE_SECTION`] bytes.
    pub large_level: i32,
    /// Carry the in-edges, or leave them to the device (`--in-edges`).
    pub in_edges: InEdges,
}

impl Default for ScaleOptions {
    fn default() -> ScaleOptions {
        ScaleOptions {
            sort_run: DEFAULT_LIMIT,
            spill_dir: None,
            large_level: DEFAULT_LARGE_LEVEL,
            in_edges: InEdges::default(),
        }
    }
}
