//! The zero-shot planner (KGFR-style): with no examples, match the question
//! against the descriptions of the relations the topic entity has, by
//! sentence-embedding similarity, and follow the best one (one hop).
//!
//! The packager embeds one text per relation (its description, or its name
//! with `_` read as spaces) into `planner.relvecs`: `f32` little-endian,
//! `[relation][dim]`, unit length.

use kgbox_bundle::Kg;

/// The relation vectors of a bundle.
#[derive(Debug, Clone)]
pub struct RelationVectors {
    pub dim: usize,
    vecs: Vec<f32>,
}

/// The text embedded for relation `r`.
#[cfg(feature = "train")]
pub fn relation_text(kg: &Kg<'_>, r: u32) -> String {
    match kg.relation_gloss(r) {
        Some(d) if !d.trim().is_empty() => d.to_string(),
        _ => kg
            .relation_name(r)
            .unwrap_or("")
            .replace(['_', '.', '/', ':', '-'], " "),
    }
}

impl RelationVectors {
    #[cfg(feature = "train")]
    pub fn new(dim: usize, vecs: Vec<f32>) -> RelationVectors {
        RelationVectors { dim, vecs }
    }

    /// Parses the section for a graph of `relations` relations.
    pub fn from_section(bytes: &[u8], relations: usize) -> Result<RelationVectors, String> {
        if relations == 0 || !bytes.len().is_multiple_of(4 * relations) {
            return Err(format!(
                "planner.relvecs holds {} bytes, not a multiple of 4 x {relations} relations",
                bytes.len()
            ));
        }
        let vecs: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(RelationVectors {
            dim: vecs.len() / relations,
            vecs,
        })
    }

    #[cfg(feature = "train")]
    pub fn to_section(&self) -> Vec<u8> {
        self.vecs.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn vector(&self, r: u32) -> Option<&[f32]> {
        let start = r as usize * self.dim;
        self.vecs.get(start..start + self.dim)
    }

    /// The best one-hop query from `entity` for a question embedded as
    /// `question`: (DSL, cosine). Relations the entity has no edge of are
    /// not considered; an inverse edge is followed with `_inv`.
    pub fn plan(
        &self,
        kg: &Kg<'_>,
        entity: u32,
        name: &str,
        question: &[f32],
    ) -> Option<(String, f32)> {
        let (out_rels, _) = kg.out.edges(entity);
        let (in_rels, _) = kg.inc.edges(entity);
        let mut best: Option<(u32, bool, f32)> = None;
        for (rels, inverse) in [(out_rels, false), (in_rels, true)] {
            let mut prev = None;
            for &r in rels {
                if prev == Some(r) {
                    continue;
                }
                prev = Some(r);
                let Some(v) = self.vector(r) else { continue };
                let cos: f32 = v.iter().zip(question).map(|(a, b)| a * b).sum();
                if best.is_none_or(|(_, _, c)| cos > c) {
                    best = Some((r, inverse, cos));
                }
            }
        }
        let (r, inverse, cos) = best?;
        let rel = kg.relation_name(r)?;
        let entity = kgbox_query::Query::Entity {
            entity: kgbox_query::ast::EntityRef::Name(name.to_string()),
            span: Default::default(),
        };
        let suffix = if inverse { "_inv" } else { "" };
        Some((format!("{entity} -> {rel}{suffix}"), cos))
    }
}
