//! One feature row per candidate answer. The same code computes the rows
//! the training script learns from (`kgbox eval qa --export-features`) and
//! the rows the served reranker scores, so training and serving agree.

use std::collections::HashSet;

use kgbox_bundle::Kg;

use super::measures::Measures;
use super::subgraph::{Distances, Subgraph, SubgraphLimits};

/// The feature set's name, recorded in `rerank.meta`; a new column or a
/// changed definition gets a new name.
pub const FEATURE_SET: &str = "kgbox-rerank-1";

/// The columns, in order.
pub const FEATURE_NAMES: [&str; 18] = [
    "exec_score",
    "exec_rank",
    "reciprocal_rank",
    "score_ratio",
    "candidates_log",
    "reached",
    "distance_mean",
    "path_count_log",
    "nodes",
    "edges",
    "density",
    "cycles",
    "bridges",
    "katz",
    "pagerank",
    "degree_log",
    "text_similarity",
    "is_question_entity",
];

pub const WIDTH: usize = FEATURE_NAMES.len();

/// A candidate as the executor ranked it.
#[derive(Debug, Clone, Copy)]
pub struct Candidate {
    pub entity: u32,
    pub score: f32,
}

/// Feature rows for `candidates` (best first, as ranked by the executor).
/// `question_entities` are the linked entities, the topic first; `text`
/// gives the similarity of the question to a candidate's name, when the
/// bundle can tell it.
pub fn featurize(
    kg: &Kg<'_>,
    question_entities: &[u32],
    candidates: &[Candidate],
    total_candidates: usize,
    text: Option<&dyn Fn(u32) -> Option<f32>>,
    limits: &SubgraphLimits,
) -> Vec<[f32; WIDTH]> {
    let targets: HashSet<u32> = candidates.iter().map(|c| c.entity).collect();
    let mut sources: Vec<u32> = Vec::new();
    for &e in question_entities {
        if !sources.contains(&e) {
            sources.push(e);
        }
    }
    let searches: Vec<Distances> = sources
        .iter()
        .map(|&s| Distances::search(kg, s, &targets, limits))
        .collect();
    let top = candidates.first().map(|c| c.score).unwrap_or(0.0);
    candidates
        .iter()
        .enumerate()
        .map(|(rank, c)| {
            let g = Subgraph::of(kg, &searches, c.entity, limits);
            let m = Measures::of(&g);
            let reached = !g.distances.is_empty();
            let distance_mean = if reached {
                g.distances.iter().map(|&d| f32::from(d)).sum::<f32>() / g.distances.len() as f32
            } else {
                f32::from(limits.max_depth) + 1.0
            };
            let degree = kg.out.degree(c.entity) + kg.inc.degree(c.entity);
            [
                c.score,
                rank as f32,
                1.0 / (rank as f32 + 1.0),
                if top > 0.0 { c.score / top } else { 0.0 },
                (total_candidates as f32).ln_1p(),
                f32::from(u8::from(reached)),
                distance_mean,
                (g.path_count as f32).ln_1p(),
                m.nodes,
                m.edges,
                m.density,
                m.cycles,
                m.bridges,
                m.katz,
                m.pagerank,
                (degree as f32).ln_1p(),
                text.and_then(|f| f(c.entity)).unwrap_or(0.0),
                f32::from(u8::from(sources.contains(&c.entity))),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rerank::test_graph::graph;

    fn col(name: &str) -> usize {
        FEATURE_NAMES
            .iter()
            .position(|n| *n == name)
            .unwrap_or(usize::MAX)
    }

    #[test]
    fn rows_describe_each_candidate() {
        // Film f1 by director d; f1 and f2 both star a; the question is about f1.
        graph(
            &[
                ("f1", "directed_by", "d"),
                ("f1", "starred", "a"),
                ("f2", "starred", "a"),
                ("f2", "directed_by", "d"),
                ("f3", "directed_by", "x"),
            ],
            |kg| {
                let id = |n: &str| kg.entity_id(n).unwrap_or(u32::MAX);
                let cands = [
                    Candidate {
                        entity: id("d"),
                        score: 0.9,
                    },
                    Candidate {
                        entity: id("x"),
                        score: 0.3,
                    },
                ];
                let sim = |e: u32| Some(if e == id("d") { 0.5 } else { 0.1 });
                let rows = featurize(
                    kg,
                    &[id("f1")],
                    &cands,
                    2,
                    Some(&sim),
                    &SubgraphLimits::default(),
                );
                assert_eq!(rows.len(), 2);
                let (d, x) = (&rows[0], &rows[1]);
                assert_eq!(d[col("exec_rank")], 0.0);
                assert_eq!(x[col("exec_rank")], 1.0);
                assert!((x[col("score_ratio")] - 0.3 / 0.9).abs() < 1e-6);
                assert_eq!(d[col("reached")], 1.0);
                assert_eq!(d[col("distance_mean")], 1.0);
                assert_eq!(d[col("edges")], 1.0);
                assert_eq!(d[col("bridges")], 1.0);
                // x is not connected to f1.
                assert_eq!(x[col("reached")], 0.0);
                assert_eq!(x[col("distance_mean")], 4.0);
                assert_eq!(d[col("text_similarity")], 0.5);
                assert_eq!(d[col("is_question_entity")], 0.0);
                assert!((d[col("degree_log")] - 2f32.ln_1p()).abs() < 1e-6);
            },
        );
    }
}
