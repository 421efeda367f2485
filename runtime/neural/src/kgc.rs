//! Link-prediction evaluation (`kgbox eval kgc`): for each test fact
//! `(h, r, t)` a tail query `(h, r, ?)` and a head query `(?, r, t)`, scored
//! over every entity of the full graph. The head query runs as
//! `(t, r + R, ?)` with the representations conditioned on `r`, as ULTRA
//! does. Ranks are *filtered*: other known answers (from the filter facts)
//! are skipped, and ties count against the target.

use std::collections::HashMap;

use crate::model::{ModelQuery, UltraModel};
use crate::subgraph::Subgraph;
use crate::Result;

/// Mean reciprocal rank and Hits@k over all queries.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KgcReport {
    pub queries: usize,
    pub mrr: f64,
    pub mean_rank: f64,
    pub hits_at_1: f64,
    pub hits_at_3: f64,
    pub hits_at_10: f64,
}

/// The filtered rank of `target`: 1 + the entities that are not known
/// answers and score at least as high.
pub fn filtered_rank(scores: &[f32], target: usize, known: &[u32]) -> usize {
    let Some(&pos) = scores.get(target) else {
        return scores.len().max(1);
    };
    if pos.is_nan() {
        return scores.len().max(1);
    }
    let mut rank = 1;
    for (e, &s) in scores.iter().enumerate() {
        if e != target && s >= pos && known.binary_search(&(e as u32)).is_err() {
            rank += 1;
        }
    }
    rank
}

struct Pending {
    anchor: u32,
    condition: usize,
    relation: usize,
    target: u32,
    known: Vec<u32>,
}

/// Evaluates `test` facts `(h, r, t)` (direct relation ids `< relations`) on
/// the full `graph`; `filter` facts are the known answers (usually train,
/// valid and test together). `progress` gets the count of queries done.
pub fn evaluate(
    model: &UltraModel,
    graph: &Subgraph,
    relations: usize,
    test: &[[u32; 3]],
    filter: &[[u32; 3]],
    batch: usize,
    mut progress: impl FnMut(usize),
) -> Result<KgcReport> {
    let mut tails: HashMap<(u32, u32), Vec<u32>> = HashMap::new();
    let mut heads: HashMap<(u32, u32), Vec<u32>> = HashMap::new();
    for &[h, r, t] in filter.iter().chain(test) {
        tails.entry((h, r)).or_default().push(t);
        heads.entry((t, r)).or_default().push(h);
    }
    for v in tails.values_mut().chain(heads.values_mut()) {
        v.sort_unstable();
        v.dedup();
    }
    let mut pending = Vec::with_capacity(test.len() * 2);
    for &[h, r, t] in test {
        let r_us = r as usize;
        pending.push(Pending {
            anchor: h,
            condition: r_us,
            relation: r_us,
            target: t,
            known: tails.get(&(h, r)).cloned().unwrap_or_default(),
        });
        pending.push(Pending {
            anchor: t,
            condition: r_us,
            relation: r_us + relations,
            target: h,
            known: heads.get(&(t, r)).cloned().unwrap_or_default(),
        });
    }
    let n = graph.nodes.len();
    let mut report = KgcReport::default();
    let (mut rr, mut ranks, mut h1, mut h3, mut h10) = (0f64, 0f64, 0usize, 0usize, 0usize);
    for chunk in pending.chunks(batch.max(1)) {
        let starts: Vec<Vec<f32>> = chunk
            .iter()
            .map(|p| {
                let mut v = vec![0f32; n];
                if let Some(slot) = v.get_mut(p.anchor as usize) {
                    *slot = 1.0;
                }
                v
            })
            .collect();
        let queries: Vec<ModelQuery<'_>> = chunk
            .iter()
            .zip(&starts)
            .map(|(p, h_prob)| ModelQuery {
                condition: p.condition,
                relation: p.relation,
                h_prob,
            })
            .collect();
        let logits = model.logits(graph, &queries)?;
        for (p, scores) in chunk.iter().zip(&logits) {
            let rank = filtered_rank(scores, p.target as usize, &p.known);
            rr += 1.0 / rank as f64;
            ranks += rank as f64;
            h1 += usize::from(rank <= 1);
            h3 += usize::from(rank <= 3);
            h10 += usize::from(rank <= 10);
        }
        report.queries += chunk.len();
        progress(report.queries);
    }
    let q = report.queries.max(1) as f64;
    report.mrr = rr / q;
    report.mean_rank = ranks / q;
    report.hits_at_1 = h1 as f64 / q;
    report.hits_at_3 = h3 as f64 / q;
    report.hits_at_10 = h10 as f64 / q;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::filtered_rank;

    #[test]
    fn ties_count_against_the_target_and_known_answers_are_skipped() {
        let scores = [0.5, 0.9, 0.5, 0.1, 0.7];
        // Target 0 (0.5): entities 1, 2 (a tie) and 4 score at least as high.
        assert_eq!(filtered_rank(&scores, 0, &[]), 4);
        // Entity 1 is another known answer: skipped.
        assert_eq!(filtered_rank(&scores, 0, &[0, 1]), 3);
        assert_eq!(filtered_rank(&scores, 1, &[]), 1);
        assert_eq!(filtered_rank(&[f32::NAN, 1.0], 0, &[]), 2);
    }
}
