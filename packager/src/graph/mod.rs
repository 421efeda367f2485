//! Turns a [`RawKg`] into the KG sections of a bundle: sorted entity and
//! relation tables, forward and reverse CSR grouped by relation, aliases and
//! the lexical `fst` index.

use std::path::{Path, PathBuf};

use indicatif::ProgressBar;
use kgbox_bundle::kg::{encode, MAX_ENTITIES};
use kgbox_bundle::sections as s;
use kgbox_bundle::KgStats;
use rayon::slice::ParallelSliceMut;

use crate::input::{Interner, RawKg};
use crate::section::{in_memory, SectionData, SectionOut, Sections};

mod aliases;
mod aligned;
mod csr;
mod index;
mod large;
mod sort;

pub use aligned::Aligned;

/// Sections ready for the writer, and the statistics for the manifest.
pub struct BuiltKg {
    pub sections: Sections,
    pub stats: KgStats,
    /// The in-edge sections are for the device to derive (see
    /// [`InEdges`]); in a build on disk only their digests were kept.
    pub derived_in: bool,
    /// Input problems found while building (aliases of unknown entities in
    /// a graph read to disk).
    pub warnings: Vec<String>,
}

/// Whether a bundle carries the in-edges (the reverse CSR) or leaves them
/// to the device, which derives them from the out-edges at install
/// (`kgbox_bundle::derive`): half the graph's bytes in the bundle, for
/// seconds at install per 100M triples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum InEdges {
    /// Derive for graphs of more than [`DERIVE_FROM`] triples.
    #[default]
    Auto,
    /// Always carry them.
    Ship,
    /// Always leave them to the device.
    Derive,
}

/// Triples from which `auto` leaves the in-edges to the device: each
/// in-edge array is then over 16 MiB.
pub const DERIVE_FROM: u64 = 4 << 20;

impl InEdges {
    pub fn derive(self, triples: u64) -> bool {
        match self {
            InEdges::Auto => triples > DERIVE_FROM,
            InEdges::Ship => false,
            InEdges::Derive => true,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("the graph has {0} entities; a bundle holds at most {MAX_ENTITIES}")]
    TooManyEntities(usize),
    #[error("the graph has {0} relations; a bundle holds at most 4294967295")]
    TooManyRelations(usize),
    #[error("building the entity index failed: {0}")]
    Index(#[from] fst::Error),
    #[error("building the source IRI sections failed: {0}")]
    Iris(#[from] kgbox_bundle::BundleError),
    #[error("spilling the build to the temporary directory failed (see --spill-dir)")]
    Spill(#[from] std::io::Error),
    #[error(
        "the entity names `{0}` and `{1}` have the same 64-bit hash, which a graph read to \
         disk keys names by; rename one of them"
    )]
    HashCollision(String, String),
}

/// How much a build may hold in memory, and where the rest goes.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Triples per sorted run (12 bytes each); beyond one run the sort
    /// spills to `spill_dir`.
    pub sort_run: usize,
    /// Where spilled runs and, for a graph larger than one run, the
    /// sections themselves are written (the system's temporary directory
    /// when `None`).
    pub spill_dir: Option<PathBuf>,
    /// Phase messages go here (hidden by default).
    pub progress: ProgressBar,
    pub in_edges: InEdges,
}

impl Default for BuildOptions {
    fn default() -> BuildOptions {
        BuildOptions {
            sort_run: crate::input::DEFAULT_LIMIT,
            spill_dir: None,
            progress: ProgressBar::hidden(),
            in_edges: InEdges::default(),
        }
    }
}

/// Ids in sorted-name order: (old id of each new id, old id → new id).
fn sort_ids(names: &Interner) -> (Vec<u32>, Vec<u32>) {
    let mut order: Vec<u32> = (0..names.len() as u32).collect();
    order.par_sort_unstable_by(|&a, &b| names.name(a).cmp(names.name(b)));
    let mut remap = vec![0u32; names.len()];
    for (new, &old) in order.iter().enumerate() {
        remap[old as usize] = new as u32;
    }
    (order, remap)
}

/// A string table (offsets, bytes) of `count` strings given by `at`.
fn string_table<'a>(
    count: usize,
    at: impl Fn(usize) -> &'a str,
    spill: Option<&Path>,
) -> std::io::Result<(SectionData, SectionData)> {
    let (mut offsets, mut bytes) = (SectionOut::new(spill)?, SectionOut::new(spill)?);
    encode::string_table_into(count, at, &mut offsets, &mut bytes)?;
    Ok((offsets.finish()?, bytes.finish()?))
}

/// [`build_with`] with the default options: a graph of up to 32 Mi triples
/// is built in memory.
pub fn build(raw: RawKg) -> Result<BuiltKg, BuildError> {
    build_with(raw, &BuildOptions::default())
}

/// Builds the sections. Triples go through an external sort (forward, then
/// reverse), so memory is bounded by `opts.sort_run` plus the names; a
/// graph larger than one run writes its big sections to temporary files,
/// and a graph read to disk (`raw.large`) is built from there in bounded
/// memory (`large.rs`).
pub fn build_with(mut raw: RawKg, opts: &BuildOptions) -> Result<BuiltKg, BuildError> {
    if let Some(disk) = raw.large.take() {
        return large::build(raw, disk, opts);
    }
    let n = raw.entities.len();
    if n > MAX_ENTITIES {
        return Err(BuildError::TooManyEntities(n));
    }
    let total = raw.triples.len();
    let spill_dir = spill_dir(opts, total);
    let spill = spill_dir.as_deref();
    let bar = &opts.progress;
    bar.set_message("sorting names");
    let (entity_order, emap) = sort_ids(&raw.entities);

    let mut sections: Sections = Vec::new();
    let (o, b) = string_table(n, |i| raw.entities.name(entity_order[i]), spill)?;
    sections.push((s::ENTITY_OFFSETS, o));
    sections.push((s::ENTITY_NAMES, b));
    let (rmap, relations) = relation_sections(&mut raw, &mut sections)?;

    // Source IRIs, only for input that had them (RDF).
    if !raw.entity_iris.is_empty() || !raw.relation_iris.is_empty() {
        for (iris, map, names) in [
            (
                &raw.entity_iris,
                &emap,
                [
                    s::ENTITY_IRI_OFFSETS,
                    s::ENTITY_IRI_TEXT,
                    s::ENTITY_IRI_SORTED,
                ],
            ),
            (
                &raw.relation_iris,
                &rmap,
                [
                    s::RELATION_IRI_OFFSETS,
                    s::RELATION_IRI_TEXT,
                    s::RELATION_IRI_SORTED,
                ],
            ),
        ] {
            let mut by_id: Vec<Option<&str>> = vec![None; map.len()];
            for (old, iri) in iris {
                by_id[map[*old as usize] as usize] = Some(iri.as_str());
            }
            let e = encode::iri_table(&by_id)?;
            sections.extend(in_memory(vec![
                (names[0], e.offsets),
                (names[1], e.text),
                (names[2], e.sorted),
            ]));
        }
    }

    // The RDF statements as given, only for RDF input.
    let statements = std::mem::take(&mut raw.statements);
    sections.extend(in_memory(statements.encode()));

    bar.set_message("sorting triples (forward)");
    bar.set_length(total);
    bar.set_position(0);
    raw.triples.spill_rest()?;
    let mut forward = sort::Sorter::new(opts.sort_run, spill_dir.clone());
    let mut failed = None;
    raw.triples.for_each_block(|block| {
        if failed.is_some() {
            return;
        }
        for t in block {
            let mapped = [
                emap[t[0] as usize],
                rmap[t[1] as usize],
                emap[t[2] as usize],
            ];
            if let Err(e) = forward.push(mapped) {
                failed = Some(e);
                return;
            }
        }
        bar.inc(block.len() as u64);
    })?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    raw.triples = Default::default();
    let (kept, derived_in) = csr_sections(forward, n as u64, opts, &spill_dir, &mut sections)?;

    // Aliases: per entity, sorted, without duplicates or the entity's own name.
    bar.set_message("aliases and the entity index");
    let mut aliases: Vec<(u32, String)> = std::mem::take(&mut raw.aliases)
        .into_iter()
        .map(|(e, a)| (emap[e as usize], a))
        .filter(|(e, a)| raw.entities.name(entity_order[*e as usize]) != a)
        .collect();
    drop(emap);
    aliases.par_sort_unstable();
    aliases.dedup();
    let mut alias_out = aliases::AliasSections::new(spill)?;
    for (e, a) in &aliases {
        alias_out.push(*e, a)?;
    }
    let alias_count = alias_out.finish(n as u64, &mut sections)?;

    // Lexical index: normalized key → postings (a name wins over an alias of the same entity).
    let mut keys = encode::IndexKeys::default();
    for (id, &old) in entity_order.iter().enumerate() {
        keys.add(raw.entities.name(old), id as u32);
    }
    for (e, a) in &aliases {
        keys.add(a, e | kgbox_bundle::kg::POSTING_ALIAS);
    }
    drop((aliases, entity_order));
    let (index, postings) = index::build(keys, spill)?;
    sections.push((s::INDEX_FST, index));
    sections.push((s::INDEX_POSTINGS, postings));

    Ok(BuiltKg {
        sections,
        stats: KgStats {
            entities: n as u64,
            relations,
            triples: kept,
            aliases: alias_count,
            duplicates_removed: total - kept,
        },
        derived_in,
        warnings: Vec::new(),
    })
}

/// Where the build spills: nowhere for a graph of one sorted run.
fn spill_dir(opts: &BuildOptions, triples: u64) -> Option<PathBuf> {
    if triples <= opts.sort_run as u64 {
        return None;
    }
    Some(opts.spill_dir.clone().unwrap_or_else(std::env::temp_dir))
}

/// The relation names (and descriptions) in sorted-name order; returns the
/// old id → new id map and the count.
fn relation_sections(
    raw: &mut RawKg,
    sections: &mut Sections,
) -> Result<(Vec<u32>, u64), BuildError> {
    if raw.relations.len() > u32::MAX as usize {
        return Err(BuildError::TooManyRelations(raw.relations.len()));
    }
    let (relation_order, rmap) = sort_ids(&raw.relations);
    let relation_names: Vec<&str> = relation_order
        .iter()
        .map(|&r| raw.relations.name(r))
        .collect();
    let (o, b) = encode::string_table(&relation_names);
    sections.push((s::RELATION_OFFSETS, o.into()));
    sections.push((s::RELATION_NAMES, b.into()));
    if !raw.relation_descriptions.is_empty() {
        let mut desc = vec![String::new(); relation_names.len()];
        for (old, text) in std::mem::take(&mut raw.relation_descriptions) {
            desc[rmap[old as usize] as usize] = text;
        }
        let (o, b) = encode::string_table(&desc);
        sections.push((s::RELATION_DESC_OFFSETS, o.into()));
        sections.push((s::RELATION_DESC_TEXT, b.into()));
    }
    if !raw.relation_aliases.is_empty() {
        let mut lists = vec![String::new(); relation_names.len()];
        for (old, alias) in std::mem::take(&mut raw.relation_aliases) {
            let list = &mut lists[rmap[old as usize] as usize];
            if !list.is_empty() {
                list.push('\n');
            }
            list.push_str(&alias);
        }
        let (o, b) = encode::string_table(&lists);
        sections.push((s::RELATION_ALIAS_OFFSETS, o.into()));
        sections.push((s::RELATION_ALIAS_TEXT, b.into()));
    }
    Ok((rmap, relation_names.len() as u64))
}

/// The forward CSR from the sorted triples, duplicates dropped, and the
/// reverse CSR (or, where the device derives it, its digests); returns the
/// triples kept and whether the in-edges are derived.
fn csr_sections(
    forward: sort::Sorter,
    n: u64,
    opts: &BuildOptions,
    spill_dir: &Option<PathBuf>,
    sections: &mut Sections,
) -> Result<(u64, bool), BuildError> {
    let bar = &opts.progress;
    let spill = spill_dir.as_deref();
    bar.set_message(match forward.runs() {
        0 => "writing the forward CSR".to_string(),
        runs => format!("merging {runs} sorted runs into the forward CSR"),
    });
    bar.set_position(0);
    let mut sorted = forward.finish()?;
    let mut out = csr::CsrWriter::new(n, spill)?;
    let mut reverse = sort::Sorter::new(opts.sort_run, spill_dir.clone());
    let mut previous = None;
    let mut kept = 0u64;
    while let Some(t) = sorted.next()? {
        bar.inc(1);
        if previous == Some(t) {
            continue;
        }
        previous = Some(t);
        kept += 1;
        out.push(t[0], t[1], t[2])?;
        reverse.push([t[2], t[1], t[0]])?;
    }
    drop(sorted);
    let [o, r, t] = out.finish()?;
    sections.push((s::OUT_OFFSETS, o));
    sections.push((s::OUT_RELATIONS, r));
    sections.push((s::OUT_TARGETS, t));
    let derived_in = opts.in_edges.derive(kept);
    bar.set_message(if derived_in {
        "hashing the reverse CSR (the device derives it)"
    } else {
        "writing the reverse CSR"
    });
    bar.set_length(kept);
    bar.set_position(0);
    let mut sorted = reverse.finish()?;
    // A graph built on disk keeps only the digests of what the device
    // derives; one in memory keeps the bytes for the later stages.
    let mut out = match (derived_in, spill) {
        (true, Some(_)) => csr::CsrWriter::digest_only(n),
        _ => csr::CsrWriter::new(n, spill)?,
    };
    while let Some(t) = sorted.next()? {
        bar.inc(1);
        out.push(t[0], t[1], t[2])?;
    }
    drop(sorted);
    let [o, r, src] = out.finish()?;
    sections.push((s::IN_OFFSETS, o));
    sections.push((s::IN_RELATIONS, r));
    sections.push((s::IN_SOURCES, src));
    Ok((kept, derived_in))
}
