//! `kgbox-pack build`: inputs → graph → signed bundle, written atomically.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kgbox_bundle::normalize::NORMALIZER_ID;
use kgbox_bundle::writer::WriteReport;
use kgbox_bundle::{BundleWriter, KgStats, Manifest, SecretKey};

use crate::embed::{self, EmbedOptions};
use crate::graph;
use crate::input::{self, Format, RawKg};
use crate::section::{in_memory, SectionData};

/// The `compatible` string bundles carry unless told otherwise; a device
/// installs only bundles whose string equals its own.
pub const DEFAULT_COMPATIBLE: &str = "kgbox-generic";
/// Oldest runtime that reads what this packager writes.
pub const MIN_RUNTIME: &str = "0.1.0";

pub struct PackOptions {
    pub triples: PathBuf,
    pub format: Option<Format>,
    /// RDF: the predicates whose literals name entities, best first
    /// (`--label-predicate`); empty: known and detected ones.
    pub label_predicates: Vec<String>,
    pub aliases: Option<PathBuf>,
    pub relations: Option<PathBuf>,
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
    pub planner: Option<crate::planner::PlannerOptions>,
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
    pub in_edges: graph::InEdges,
}

/// Sections larger than this (16 MiB: the CSR of a graph of about 4M
/// triples) are compressed at `large_level`: level 19 runs at a few MB/s,
/// which for a 100M-triple graph's CSR would take most of an hour, while
/// the ids in it gain about a tenth in size.
pub const LARGE_SECTION: u64 = 16 << 20;

impl Default for ScaleOptions {
    fn default() -> ScaleOptions {
        ScaleOptions {
            sort_run: crate::input::DEFAULT_LIMIT,
            spill_dir: None,
            large_level: 6,
            in_edges: graph::InEdges::default(),
        }
    }
}

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

fn created_unix() -> Result<u64> {
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

fn check_name(name: &str) -> Result<()> {
    if !kgbox_bundle::manifest::valid_name(name) {
        bail!("bundle name {name:?} must be 1 to 128 characters of A-Z a-z 0-9 - _ .");
    }
    Ok(())
}

/// A progress bar on stderr (hidden when `enabled` is false) drawn with
/// `template`.
fn bar_with(enabled: bool, template: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        None,
        if enabled {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// The reading bar: bytes of the input file, rate and ETA.
fn progress_bar(enabled: bool) -> ProgressBar {
    bar_with(
        enabled,
        "{spinner} {msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
    )
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
    check_name(&opts.name)?;
    if opts.compatible.is_empty() || opts.compatible.chars().any(char::is_whitespace) {
        bail!("--compatible must be a non-empty string without spaces");
    }
    let created_unix = match opts.created_unix {
        Some(t) => t,
        None => created_unix()?,
    };
    let bar = progress_bar(opts.progress);
    let t0 = Instant::now();
    let mut raw = RawKg::with_spill(opts.scale.sort_run, opts.scale.spill_dir.clone());
    bar.set_message("reading triples");
    let read = input::ReadOptions {
        label_predicates: opts.label_predicates.clone(),
    };
    input::read_triples_with(&opts.triples, opts.format, &read, &mut raw, &bar)?;
    if raw.triple_count() == 0 {
        return Err(input::InputError::Empty {
            file: opts.triples.clone(),
        }
        .into());
    }
    if let Some(path) = &opts.aliases {
        bar.set_message("reading aliases");
        input::read_aliases(path, &mut raw, &bar)?;
    }
    if let Some(path) = &opts.relations {
        input::read_relation_descriptions(path, &mut raw, &bar)?;
    }
    bar.finish_and_clear();
    let read_time = t0.elapsed();
    let mut warnings = std::mem::take(&mut raw.warnings);

    let t1 = Instant::now();
    let examples = match opts.planner.as_ref().and_then(|p| p.examples.as_deref()) {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the planner examples {}", path.display()))?;
            kgbox_qa::planner::train::parse_examples(&text)
                .with_context(|| format!("in {}", path.display()))?
        }
        None => Vec::new(),
    };
    let mut notes = std::mem::take(&mut raw.notes);
    if let Some(large) = &raw.large {
        notes.push(format!(
            "read to disk: {} triples (past --sort-run {} triples or 8 bytes of names per \
             triple); the set of seen names \
             filled {} times",
            large.count,
            opts.scale.sort_run,
            large.windows()
        ));
    }
    if opts.example_facts {
        if raw.large.is_some() {
            bail!(
                "--add-example-facts needs the graph in memory, and this one has more than \
                 --sort-run {} triples; raise --sort-run or leave the facts out",
                opts.scale.sort_run
            );
        }
        // Not the examples held out to fit the fusion: those must not find
        // their own answers stated.
        let added = crate::example_facts::add(&mut raw, &examples, |q| !crate::train::held_out(q))
            .map_err(input::InputError::Spill)?;
        notes.push(format!(
            "example facts: {} facts added from {} one-hop examples with answers",
            added.facts, added.examples
        ));
    }
    let build_bar = phase_bar(opts.progress);
    let mut built = graph::build_with(
        raw,
        &graph::BuildOptions {
            sort_run: opts.scale.sort_run,
            spill_dir: opts.scale.spill_dir.clone(),
            progress: build_bar.clone(),
            in_edges: opts.scale.in_edges,
        },
    )?;
    build_bar.finish_and_clear();
    warnings.append(&mut built.warnings);
    let mut models = Vec::new();
    if let Some(embed_opts) = embed {
        let names = entity_names(&built.sections)?;
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let embedded = embed::embed(&names, embed_opts, opts.progress)?;
        built.sections.extend(in_memory(embedded.sections));
        models.push(embedded.model);
    }
    let mut ultra_opts = opts.ultra.clone();
    let mut training = None;
    if let Some(train_opts) = &opts.train {
        let trained = crate::train::train(&built.sections, &examples, train_opts, &mut notes)?;
        let mut u = crate::ultra::UltraOptions::from_prefix(&trained.prefix);
        u.checkpoint = trained
            .record
            .get("init")
            .and_then(|v| v.as_str())
            .map_or_else(
                || "ultra".to_string(),
                |s| s.trim_end_matches(".pth").to_string(),
            )
            + "+trained";
        ultra_opts = Some(u);
        training = Some(trained.record);
    }
    if let Some(ultra_opts) = &ultra_opts {
        let mut ultra = crate::ultra::sections(&built.sections, ultra_opts)?;
        ultra.model.training = match training {
            Some(t) => Some(t),
            None => crate::ultra::training_record(ultra_opts)?,
        };
        built.sections.extend(in_memory(ultra.sections));
        models.push(ultra.model);
        if let Some(fitted) = crate::fusion::fit(&built.sections, &examples)? {
            notes.push(fitted.report());
            crate::ultra::set_fusion(&mut built.sections, fitted.fusion)?;
        }
    }
    if let Some(planner_opts) = &opts.planner {
        let planner =
            crate::planner::sections(&built.sections, planner_opts, &examples, opts.progress)?;
        built.sections.extend(in_memory(planner.sections));
        models.extend(planner.model);
        notes.extend(planner.report);
    }
    if let Some(prefix) = &opts.reranker {
        let r = crate::reranker::sections(prefix)?;
        built.sections.extend(in_memory(r.sections));
        models.push(r.model);
        notes.push(r.note);
    }
    if !opts.probes.is_empty() {
        let outcomes = crate::probes::check(&built.sections, &opts.probes)?;
        let failed: Vec<String> = outcomes
            .iter()
            .filter(|o| !o.passed)
            .map(|o| o.describe())
            .collect();
        if !failed.is_empty() && !opts.allow_failing_probes {
            anyhow::bail!(
                "{} of {} probe queries fail on this graph, so every device would roll the bundle back: {}",
                failed.len(),
                outcomes.len(),
                failed.join("; ")
            );
        }
        for f in &failed {
            warnings.push(format!("probe fails (kept by --allow-failing-probes): {f}"));
        }
        notes.push(format!(
            "probes: {} health-check queries stored in the manifest",
            outcomes.len()
        ));
    }
    let build_time = t1.elapsed();

    let t2 = Instant::now();
    let manifest = Manifest {
        name: opts.name.clone(),
        version: opts.version.clone(),
        compatible: opts.compatible.clone(),
        created: humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(created_unix))
            .to_string(),
        created_unix,
        min_runtime: semver::Version::parse(MIN_RUNTIME)?,
        generator: format!("kgbox-pack {}", env!("CARGO_PKG_VERSION")),
        normalizer: NORMALIZER_ID.to_string(),
        stats: built.stats.clone(),
        models,
        probes: opts.probes.clone(),
    };
    let mut writer = BundleWriter::new(manifest)
        .level(opts.level)
        .large_level(opts.scale.large_level, LARGE_SECTION)
        .spill_dir(opts.scale.spill_dir.clone());
    for (name, data) in built.sections {
        let required = kgbox_bundle::sections::KG_REQUIRED.contains(&name);
        let raw = data
            .into_raw()
            .with_context(|| format!("reading back the spilled section {name}"))?;
        if built.derived_in && kgbox_bundle::derive::DERIVABLE.contains(&name) {
            writer.add_derived(name, required, raw)?;
        } else {
            writer.add_raw(name, required, raw)?;
        }
    }
    let write_bar = phase_bar(opts.progress);
    write_bar.set_message("compressing the sections (zstd, all cores) and signing");
    write_bar.enable_steady_tick(Duration::from_millis(200));
    let write = write_atomically(out, |file| Ok(writer.write(key, file)?));
    write_bar.finish_and_clear();
    let write = write?;
    Ok(PackReport {
        stats: built.stats,
        write,
        warnings,
        notes,
        read_time,
        build_time,
        write_time: t2.elapsed(),
    })
}

/// The progress bar of the graph build's phases (hidden when `enabled` is
/// false): a message per phase, a bar with a rate and ETA where the phase
/// has a known length.
fn phase_bar(enabled: bool) -> ProgressBar {
    bar_with(
        enabled,
        "{spinner} {msg} [{bar:30}] {human_pos}/{human_len} ({per_sec}, {eta})",
    )
}

/// The entity names of built sections, in id order.
fn entity_names(sections: &[(&'static str, SectionData)]) -> Result<Vec<String>> {
    let aligned = graph::Aligned::new(sections)?;
    let get = |name: &str| {
        aligned
            .get(name)
            .with_context(|| format!("no section {name}"))
    };
    let offsets: Vec<usize> = get(kgbox_bundle::sections::ENTITY_OFFSETS)?
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default()) as usize)
        .collect();
    let bytes = get(kgbox_bundle::sections::ENTITY_NAMES)?;
    offsets
        .windows(2)
        .map(|w| {
            let b = bytes
                .get(w[0]..w[1])
                .context("entity offsets out of range")?;
            Ok(String::from_utf8(b.to_vec())?)
        })
        .collect()
}

/// Writes through `OUT.partial`, fsyncs, then renames over `out`.
pub fn write_atomically<T>(
    out: &Path,
    f: impl FnOnce(&mut BufWriter<File>) -> Result<T>,
) -> Result<T> {
    let mut tmp = out.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = PathBuf::from(tmp);
    let file = File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let mut w = BufWriter::new(file);
    let result = f(&mut w).and_then(|v| {
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(v)
    });
    match result {
        Ok(v) => {
            std::fs::rename(&tmp, out)
                .with_context(|| format!("cannot move {} to {}", tmp.display(), out.display()))?;
            let dir = match out.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
            Ok(v)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e.context(format!("writing {}", out.display())))
        }
    }
}
