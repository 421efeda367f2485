//! A graph from a handful of named triples, laid out in memory as the
//! packager lays out a bundle's KG sections: for unit tests and small tools
//! that need a [`Kg`] without packing a bundle.

use std::collections::HashMap;

use crate::image::AlignedBytes;
use crate::kg::{encode, Kg};
use crate::sections as s;
use crate::Result;

pub struct TinyGraph {
    sections: HashMap<&'static str, AlignedBytes>,
}

/// Offsets, relations and other ends of one direction's CSR; `edges` are
/// `(node, relation, other)`.
fn csr(n: usize, mut edges: Vec<(u32, u32, u32)>) -> [Vec<u8>; 3] {
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
    [
        encode::u64s(&offsets),
        encode::u32s(&rels),
        encode::u32s(&others),
    ]
}

impl TinyGraph {
    /// Entities and relations get ids in sorted-name order, as in a bundle;
    /// there are no aliases.
    pub fn from_triples(triples: &[(&str, &str, &str)]) -> Result<TinyGraph> {
        let mut names: Vec<&str> = triples.iter().flat_map(|t| [t.0, t.2]).collect();
        names.sort_unstable();
        names.dedup();
        let mut rels: Vec<&str> = triples.iter().map(|t| t.1).collect();
        rels.sort_unstable();
        rels.dedup();
        // Every name is in its sorted list, so the searches cannot fail.
        let id = |list: &[&str], x: &str| list.binary_search(&x).unwrap_or(0) as u32;
        let ids: Vec<(u32, u32, u32)> = triples
            .iter()
            .map(|t| (id(&names, t.0), id(&rels, t.1), id(&names, t.2)))
            .collect();
        let n = names.len();
        let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
        let (o, b) = encode::string_table(&names);
        out.extend([(s::ENTITY_OFFSETS, o), (s::ENTITY_NAMES, b)]);
        let (o, b) = encode::string_table(&rels);
        out.extend([(s::RELATION_OFFSETS, o), (s::RELATION_NAMES, b)]);
        let (o, b) = encode::string_table::<&str>(&[]);
        out.extend([
            (s::ALIAS_OWNERS, encode::u64s(&vec![0u64; n + 1])),
            (s::ALIAS_OFFSETS, o),
            (s::ALIAS_NAMES, b),
        ]);
        let [o, r, t] = csr(n, ids.clone());
        out.extend([
            (s::OUT_OFFSETS, o),
            (s::OUT_RELATIONS, r),
            (s::OUT_TARGETS, t),
        ]);
        let [o, r, t] = csr(n, ids.iter().map(|&(h, r, t)| (t, r, h)).collect());
        out.extend([(s::IN_OFFSETS, o), (s::IN_RELATIONS, r), (s::IN_SOURCES, t)]);
        let (index, postings) = encode::lexical_index::<&str, &str>(&names, &[])
            .map_err(|e| crate::BundleError::bad_section(s::INDEX_FST, e.to_string()))?;
        out.extend([(s::INDEX_FST, index), (s::INDEX_POSTINGS, postings)]);
        Ok(TinyGraph {
            sections: out
                .into_iter()
                .map(|(k, v)| (k, AlignedBytes::from_slice(&v)))
                .collect(),
        })
    }

    /// Adds or replaces a section (e.g. source IRIs, or damaged bytes).
    pub fn set_section(&mut self, name: &'static str, raw: &[u8]) {
        self.sections.insert(name, AlignedBytes::from_slice(raw));
    }

    /// Gives relations the words people say for them, `(relation,
    /// alias)`, as the packager's `--relation-aliases` does; pairs of an
    /// unknown relation are left out.
    pub fn set_relation_aliases(&mut self, aliases: &[(&str, &str)]) -> Result<()> {
        let kg = self.kg()?;
        let lists: Vec<String> = (0..kg.relation_count() as u32)
            .map(|r| {
                let name = kg.relation_name(r).unwrap_or("");
                let mine: Vec<&str> = aliases
                    .iter()
                    .filter(|(rel, _)| *rel == name)
                    .map(|(_, a)| *a)
                    .collect();
                mine.join("\n")
            })
            .collect();
        let (o, b) = encode::string_table(&lists);
        self.set_section(s::RELATION_ALIAS_OFFSETS, &o);
        self.set_section(s::RELATION_ALIAS_TEXT, &b);
        Ok(())
    }

    /// Every section, sorted by name (to write a bundle of this graph).
    pub fn sections(&self) -> Vec<(&'static str, &[u8])> {
        let mut all: Vec<(&'static str, &[u8])> =
            self.sections.iter().map(|(k, v)| (*k, &v[..])).collect();
        all.sort_unstable_by_key(|(k, _)| *k);
        all
    }

    pub fn kg(&self) -> Result<Kg<'_>> {
        Kg::from_sections(|n| self.sections.get(n).map(|b| &b[..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_read_back_in_both_directions() {
        let g = TinyGraph::from_triples(&[("a", "r", "b"), ("c", "r", "b"), ("a", "s", "c")])
            .expect("graph");
        let kg = g.kg().expect("kg");
        let id = |n: &str| kg.entity_id(n).expect("entity");
        let r = kg.relation_id("r").expect("relation");
        assert_eq!(kg.out.neighbours(id("a"), r), [id("b")]);
        assert_eq!(kg.inc.neighbours(id("b"), r), [id("a"), id("c")]);
        assert_eq!(kg.triple_count(), 3);
    }

    #[test]
    fn relation_aliases_read_back_per_relation() {
        let mut g = TinyGraph::from_triples(&[("a", "r", "b"), ("a", "s", "c")]).expect("graph");
        let rel = |g: &TinyGraph, n: &str| g.kg().expect("kg").relation_id(n).expect("relation");
        let (r, q) = (rel(&g, "r"), rel(&g, "s"));
        assert_eq!(g.kg().expect("kg").relation_aliases(r).count(), 0);
        g.set_relation_aliases(&[("s", "sees"), ("r", "rides"), ("s", "spots"), ("x", "no")])
            .expect("aliases");
        let kg = g.kg().expect("kg");
        assert_eq!(kg.relation_aliases(r).collect::<Vec<_>>(), ["rides"]);
        assert_eq!(
            kg.relation_aliases(q).collect::<Vec<_>>(),
            ["sees", "spots"]
        );
        assert_eq!(kg.relation_aliases(99).count(), 0);
        // A table of another length than the relations' is refused, and so
        // is one of its two sections without the other.
        let (o, b) = encode::string_table(&["one"]);
        g.set_section(s::RELATION_ALIAS_OFFSETS, &o);
        g.set_section(s::RELATION_ALIAS_TEXT, &b);
        assert!(g.kg().is_err());
        let mut half = TinyGraph::from_triples(&[("a", "r", "b")]).expect("graph");
        half.set_section(s::RELATION_ALIAS_TEXT, b"rides");
        assert!(matches!(
            half.kg(),
            Err(crate::BundleError::MissingSection(name)) if name == s::RELATION_ALIAS_OFFSETS
        ));
    }
}
