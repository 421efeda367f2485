//! Entity kinds without a schema: an entity's *profile* is the set of
//! (relation, direction) pairs of its edges, and the kind of the entities a
//! relation reaches (its range) is how often each pair occurs among a sample
//! of them. A replacement relation fits when the entities it reaches look
//! like that range; on an incomplete graph this is robust where "has an
//! edge of the original relation" is not (a film missing its cast is still
//! a film: it has a director, a year, a language).
//!
//! A profile also tells what *kind* of value the relation reaches
//! ([`ValueKind`]): entities, or literal values (dates, numbers, strings).
//! A node is a literal ([`node_kind`]) when it has no out-edges and, in a
//! bundle read from RDF (which keeps the source IRIs of its entities),
//! no IRI; in a bundle without IRIs (TSV), when it has no out-edges and
//! all its in-edges are of one relation. Repair never swaps a relation for
//! one of the other kind.

use std::collections::{HashMap, HashSet};

use kgbox_bundle::Kg;

use super::{Search, Stop};

/// Range members sampled per relation.
const MEMBERS: usize = 32;
/// Entities probed at most to find them.
const MAX_PROBES: usize = 20_000;

/// A feature: a relation and whether the edge comes in (`true`) or goes out.
type Feature = (u32, bool);

/// How often each feature occurs among the sampled range members.
#[derive(Debug, Default)]
pub(crate) struct Profile {
    freq: HashMap<Feature, f32>,
    /// The sampled range members by [`NodeKind`].
    kinds: KindCounts,
}

/// What one node is, as far as the graph tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeKind {
    /// Has out-edges, or (RDF) a source IRI.
    Entity,
    /// A literal value: see the module documentation.
    Literal,
    /// A leaf of a bundle without IRIs whose in-edges are of several
    /// relations (a person who directed and wrote, say): no evidence.
    Unknown,
}

/// What a relation reaches (or leaves from), over a sample of nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueKind {
    /// At most [`ENTITY_AT`] of the nodes that tell are literals.
    Entity,
    /// At least [`LITERAL_AT`] of them are.
    Literal,
    /// In between, or no node tells.
    Mixed,
}

/// A sample is literal-valued from this fraction of literals up.
pub(crate) const LITERAL_AT: f32 = 0.9;
/// A sample is entity-valued up to this fraction of literals.
pub(crate) const ENTITY_AT: f32 = 0.1;

impl ValueKind {
    /// Entities against literals: the two kinds a repair never swaps.
    pub fn conflicts(self, other: ValueKind) -> bool {
        matches!(
            (self, other),
            (ValueKind::Entity, ValueKind::Literal) | (ValueKind::Literal, ValueKind::Entity)
        )
    }
}

/// Sampled nodes by kind.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct KindCounts {
    pub entity: usize,
    pub literal: usize,
}

impl KindCounts {
    pub fn add(&mut self, kind: NodeKind) {
        match kind {
            NodeKind::Entity => self.entity += 1,
            NodeKind::Literal => self.literal += 1,
            NodeKind::Unknown => {}
        }
    }

    pub fn kind(&self) -> ValueKind {
        let known = self.entity + self.literal;
        if known == 0 {
            return ValueKind::Mixed;
        }
        let literal = self.literal as f32 / known as f32;
        if literal >= LITERAL_AT {
            ValueKind::Literal
        } else if literal <= ENTITY_AT {
            ValueKind::Entity
        } else {
            ValueKind::Mixed
        }
    }
}

impl Profile {
    /// How much `entity` looks like a range member: the highest member
    /// frequency among its features (1 when it has the relation itself).
    pub fn fit(&self, search: &mut Search<'_, '_>, entity: u32) -> Result<f32, Stop> {
        let feats = features(search, entity)?;
        Ok(feats
            .iter()
            .filter_map(|f| self.freq.get(f))
            .fold(0.0f32, |a, &b| a.max(b)))
    }

    /// What the relation reaches: entities or literal values.
    pub fn kind(&self) -> ValueKind {
        self.kinds.kind()
    }
}

/// The kind of `entity` (see the module documentation).
pub(crate) fn node_kind(search: &mut Search<'_, '_>, entity: u32) -> Result<NodeKind, Stop> {
    let kg = search.kg;
    if kg.out.degree(entity) > 0 {
        return Ok(NodeKind::Entity);
    }
    if kg.has_iris() {
        return Ok(if kg.entity_iri(entity).is_some() {
            NodeKind::Entity
        } else {
            NodeKind::Literal
        });
    }
    let (rels, _) = kg.inc.edges(entity);
    search.charge(rels.len())?;
    Ok(match rels.split_first() {
        Some((first, rest)) if rest.iter().all(|r| r == first) => NodeKind::Literal,
        _ => NodeKind::Unknown,
    })
}

/// The features of `entity`'s edges.
fn features(search: &mut Search<'_, '_>, entity: u32) -> Result<HashSet<Feature>, Stop> {
    let kg = search.kg;
    let mut out = HashSet::new();
    for (csr, incoming) in [(kg.out, false), (kg.inc, true)] {
        let (rels, _) = csr.edges(entity);
        search.charge(rels.len())?;
        out.extend(rels.iter().map(|&r| (r, incoming)));
    }
    Ok(out)
}

/// The profile of what `relation` reaches (with `inverse`, what its inverse
/// reaches): members are found by probing entities in a fixed scattered
/// order, so the sample is spread over the id space.
pub(crate) fn range_profile(
    search: &mut Search<'_, '_>,
    relation: u32,
    inverse: bool,
) -> Result<Profile, Stop> {
    let kg: &Kg<'_> = search.kg;
    let n = kg.entity_count();
    let mut profile = Profile::default();
    if n == 0 {
        return Ok(profile);
    }
    // Entities reached over `relation` have an incoming edge of it.
    let csr = if inverse { kg.out } else { kg.inc };
    let step = coprime_step(n);
    let mut members = Vec::new();
    let mut e = 0usize;
    for _ in 0..n.min(MAX_PROBES) {
        search.charge(1)?;
        if !csr.neighbours(e as u32, relation).is_empty() {
            members.push(e as u32);
            if members.len() >= MEMBERS {
                break;
            }
        }
        e = (e + step) % n;
    }
    let mut counts: HashMap<Feature, usize> = HashMap::new();
    for &m in &members {
        for f in features(search, m)? {
            *counts.entry(f).or_default() += 1;
        }
        let kind = node_kind(search, m)?;
        profile.kinds.add(kind);
    }
    let total = members.len().max(1) as f32;
    profile.freq = counts
        .into_iter()
        .map(|(f, c)| (f, c as f32 / total))
        .collect();
    Ok(profile)
}

/// A step near 0.618·n that is coprime with `n`, so `i·step mod n` visits
/// every id once.
fn coprime_step(n: usize) -> usize {
    let mut s = ((n as f64 * 0.618_033_988_7) as usize).max(1);
    while gcd(s, n) != 1 {
        s += 1;
    }
    s
}

fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_visit_every_id() {
        for n in [1usize, 2, 3, 10, 12, 97, 1000] {
            let s = coprime_step(n);
            let mut seen: HashSet<usize> = HashSet::new();
            let mut e = 0;
            for _ in 0..n {
                seen.insert(e);
                e = (e + s) % n;
            }
            assert_eq!(seen.len(), n, "n={n} step={s}");
        }
    }
}
