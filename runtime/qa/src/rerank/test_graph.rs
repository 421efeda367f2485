//! A graph from a few named triples, for unit tests.

use std::collections::HashMap;

use kgbox_bundle::kg::encode;
use kgbox_bundle::sections as s;
use kgbox_bundle::{AlignedBytes, Kg};

fn csr(n: usize, mut edges: Vec<(u32, u32, u32)>) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    edges.sort_unstable();
    let mut offsets = vec![0u64; n + 1];
    for &(node, _, _) in &edges {
        offsets[node as usize + 1] += 1;
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    let rels: Vec<u32> = edges.iter().map(|e| e.1).collect();
    let others: Vec<u32> = edges.iter().map(|e| e.2).collect();
    (
        encode::u64s(&offsets),
        encode::u32s(&rels),
        encode::u32s(&others),
    )
}

/// Calls `f` with the graph of `triples` (head, relation, tail names).
#[allow(clippy::expect_used)]
pub fn graph<T>(triples: &[(&str, &str, &str)], f: impl FnOnce(&Kg<'_>) -> T) -> T {
    let mut names: Vec<&str> = triples.iter().flat_map(|t| [t.0, t.2]).collect();
    names.sort_unstable();
    names.dedup();
    let mut rels: Vec<&str> = triples.iter().map(|t| t.1).collect();
    rels.sort_unstable();
    rels.dedup();
    let id = |list: &[&str], x: &str| list.binary_search(&x).map(|i| i as u32).expect("known");
    let ids: Vec<(u32, u32, u32)> = triples
        .iter()
        .map(|t| (id(&names, t.0), id(&rels, t.1), id(&names, t.2)))
        .collect();
    let n = names.len();
    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
    let (o, b) = encode::string_table(&names);
    out.push((s::ENTITY_OFFSETS, o));
    out.push((s::ENTITY_NAMES, b));
    let (o, b) = encode::string_table(&rels);
    out.push((s::RELATION_OFFSETS, o));
    out.push((s::RELATION_NAMES, b));
    let (o, b) = encode::string_table::<&str>(&[]);
    out.push((s::ALIAS_OWNERS, encode::u64s(&vec![0u64; n + 1])));
    out.push((s::ALIAS_OFFSETS, o));
    out.push((s::ALIAS_NAMES, b));
    let (o, r, t) = csr(n, ids.iter().map(|&(h, r, t)| (h, r, t)).collect());
    out.push((s::OUT_OFFSETS, o));
    out.push((s::OUT_RELATIONS, r));
    out.push((s::OUT_TARGETS, t));
    let (o, r, t) = csr(n, ids.iter().map(|&(h, r, t)| (t, r, h)).collect());
    out.push((s::IN_OFFSETS, o));
    out.push((s::IN_RELATIONS, r));
    out.push((s::IN_SOURCES, t));
    let (index, postings) =
        encode::lexical_index::<&str, &str>(&names, &[]).expect("lexical index");
    out.push((s::INDEX_FST, index));
    out.push((s::INDEX_POSTINGS, postings));
    let sections: HashMap<&str, AlignedBytes> = out
        .into_iter()
        .map(|(k, v)| (k, AlignedBytes::from_slice(&v)))
        .collect();
    let kg = Kg::from_sections(|n| sections.get(n).map(|b| &b[..])).expect("graph");
    f(&kg)
}
