//! Turns a [`RawKg`] into the KG sections of a bundle: sorted entity and
//! relation tables, forward and reverse CSR grouped by relation, aliases and
//! the lexical `fst` index.

use kgbox_bundle::kg::{encode, MAX_ENTITIES};
use kgbox_bundle::sections as s;
use kgbox_bundle::KgStats;

use crate::input::RawKg;

/// Sections ready for the writer, and the statistics for the manifest.
pub struct BuiltKg {
    pub sections: Vec<(&'static str, Vec<u8>)>,
    pub stats: KgStats,
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
}

/// Ids in sorted-name order: returns (sorted names, old id → new id).
fn sort_ids(names: Vec<String>) -> (Vec<String>, Vec<u32>) {
    let mut order: Vec<u32> = (0..names.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| names[a as usize].cmp(&names[b as usize]));
    let mut remap = vec![0u32; names.len()];
    for (new, &old) in order.iter().enumerate() {
        remap[old as usize] = new as u32;
    }
    let mut names: Vec<Option<String>> = names.into_iter().map(Some).collect();
    let sorted = order
        .iter()
        .map(|&old| names[old as usize].take().unwrap_or_default())
        .collect();
    (sorted, remap)
}

/// CSR over `triples` already sorted by (node, relation, other).
fn csr(nodes: usize, triples: &[[u32; 3]], node: usize, other: usize) -> [Vec<u8>; 3] {
    let mut offsets = vec![0u64; nodes + 1];
    for t in triples {
        offsets[t[node] as usize + 1] += 1;
    }
    for i in 0..nodes {
        offsets[i + 1] += offsets[i];
    }
    let rels: Vec<u32> = triples.iter().map(|t| t[1]).collect();
    let others: Vec<u32> = triples.iter().map(|t| t[other]).collect();
    [
        encode::u64s(&offsets),
        encode::u32s(&rels),
        encode::u32s(&others),
    ]
}

pub fn build(raw: RawKg) -> Result<BuiltKg, BuildError> {
    let n = raw.entities.len();
    if n > MAX_ENTITIES {
        return Err(BuildError::TooManyEntities(n));
    }
    if raw.relations.len() > u32::MAX as usize {
        return Err(BuildError::TooManyRelations(raw.relations.len()));
    }
    let (entities, emap) = sort_ids(raw.entities.names);
    let (relations, rmap) = sort_ids(raw.relations.names);

    let mut triples: Vec<[u32; 3]> = raw
        .triples
        .iter()
        .map(|t| {
            [
                emap[t[0] as usize],
                rmap[t[1] as usize],
                emap[t[2] as usize],
            ]
        })
        .collect();
    triples.sort_unstable();
    let before = triples.len();
    triples.dedup();
    let duplicates_removed = (before - triples.len()) as u64;

    let mut sections = Vec::new();
    let (o, b) = encode::string_table(&entities);
    sections.push((s::ENTITY_OFFSETS, o));
    sections.push((s::ENTITY_NAMES, b));
    let (o, b) = encode::string_table(&relations);
    sections.push((s::RELATION_OFFSETS, o));
    sections.push((s::RELATION_NAMES, b));
    if !raw.relation_descriptions.is_empty() {
        let mut desc = vec![String::new(); relations.len()];
        for (old, text) in raw.relation_descriptions {
            desc[rmap[old as usize] as usize] = text;
        }
        let (o, b) = encode::string_table(&desc);
        sections.push((s::RELATION_DESC_OFFSETS, o));
        sections.push((s::RELATION_DESC_TEXT, b));
    }

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
            sections.extend([
                (names[0], e.offsets),
                (names[1], e.text),
                (names[2], e.sorted),
            ]);
        }
    }

    // Forward: sorted by (head, relation, tail) already.
    let [o, r, t] = csr(n, &triples, 0, 2);
    sections.push((s::OUT_OFFSETS, o));
    sections.push((s::OUT_RELATIONS, r));
    sections.push((s::OUT_TARGETS, t));
    let mut reverse = triples.clone();
    reverse.sort_unstable_by_key(|t| (t[2], t[1], t[0]));
    let [o, r, src] = csr(n, &reverse, 2, 0);
    sections.push((s::IN_OFFSETS, o));
    sections.push((s::IN_RELATIONS, r));
    sections.push((s::IN_SOURCES, src));
    let triple_count = triples.len() as u64;
    drop((triples, reverse));

    // Aliases: per entity, sorted, without duplicates or the entity's own name.
    let mut aliases: Vec<(u32, String)> = raw
        .aliases
        .into_iter()
        .map(|(e, a)| (emap[e as usize], a))
        .filter(|(e, a)| entities[*e as usize] != *a)
        .collect();
    aliases.sort_unstable();
    aliases.dedup();
    let mut owners = vec![0u64; n + 1];
    for (e, _) in &aliases {
        owners[*e as usize + 1] += 1;
    }
    for i in 0..n {
        owners[i + 1] += owners[i];
    }
    let alias_names: Vec<&str> = aliases.iter().map(|(_, a)| a.as_str()).collect();
    let (o, b) = encode::string_table(&alias_names);
    sections.push((s::ALIAS_OWNERS, encode::u64s(&owners)));
    sections.push((s::ALIAS_OFFSETS, o));
    sections.push((s::ALIAS_NAMES, b));

    // Lexical index: normalized key → postings (a name wins over an alias of the same entity).
    let (index, postings) = encode::lexical_index(&entities, &aliases)?;
    sections.push((s::INDEX_FST, index));
    sections.push((s::INDEX_POSTINGS, postings));

    Ok(BuiltKg {
        sections,
        stats: KgStats {
            entities: n as u64,
            relations: relations.len() as u64,
            triples: triple_count,
            aliases: aliases.len() as u64,
            duplicates_removed,
        },
    })
}

/// Built sections, each copied to aligned memory so that the runtime's
/// zero-copy views (`Kg`, the model loaders) can read them before the bundle
/// is written: what the packager's later stages (training, the neural model,
/// the fusion, the planner, the probes) read the graph from.
pub struct Aligned(std::collections::HashMap<&'static str, kgbox_bundle::image::AlignedBytes>);

impl Aligned {
    pub fn new(built: &[(&'static str, Vec<u8>)]) -> Aligned {
        Aligned(
            built
                .iter()
                .map(|(name, data)| (*name, kgbox_bundle::image::AlignedBytes::from_slice(data)))
                .collect(),
        )
    }

    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.0.get(name).map(|a| &a[..])
    }

    /// The graph, read back as a device reads it.
    pub fn kg(&self) -> anyhow::Result<kgbox_bundle::Kg<'_>> {
        use anyhow::Context;
        kgbox_bundle::Kg::from_sections(|name| self.get(name))
            .context("the built graph cannot be read back")
    }
}
