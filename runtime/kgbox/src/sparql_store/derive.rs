//! The symbolic executor's scores and provenance, read from a store's
//! solutions.
//!
//! A solution of the rendered pattern with every variable selected is one
//! derivation: a binding of each node outside a NOT to an entity (see
//! `kgbox_query::render::SparqlPattern`). The pattern joins its parts only
//! through the variables they share (a projection's input variable is its
//! own), so the solutions of a node's subtree for an entity that reaches an
//! answer are all of that entity's derivations: scores and proofs computed
//! from them are those `kgbox_query::exec` computes from its fuzzy sets.
//! This module does that computation the same way (same fuzzy logic, same
//! order of sources and operands), over rows of entity ids; the proofs
//! come from the executor's own walk, `kgbox_query::proofs`.

use std::collections::HashMap;

use kgbox_query::exec::Triple;
use kgbox_query::plan::{Node, Plan};
use kgbox_query::proofs::{prove, ProofSource};
use kgbox_query::ANCHOR_WEIGHT;

/// Solutions as entity ids, one column per selected variable.
#[derive(Debug, Clone, Default)]
pub struct Rows {
    /// Column of each plan node (`None`: not selected, e.g. inside a NOT).
    pub node_col: Vec<Option<usize>>,
    pub rows: Vec<Vec<Option<u32>>>,
}

/// Scores and proofs over the derivations in [`Rows`].
pub struct Derivations<'p> {
    plan: &'p Plan,
    /// Per projection node: each entity's sources, sorted, deduplicated.
    sources: Vec<HashMap<u32, Vec<u32>>>,
    /// Per node: memberships, when computed ([`Derivations::score`]).
    scores: Option<Vec<HashMap<u32, f32>>>,
}

impl<'p> Derivations<'p> {
    /// Indexes `rows` for `plan`. With `scored`, memberships are computed
    /// for every node (the rows must then hold every derivation of every
    /// answer, and the plan no NOT); without, every member scores 1 (the
    /// case of `exclude_anchors` with all derivations of some answers).
    pub fn new(plan: &'p Plan, rows: &Rows, scored: bool, exclude_anchors: bool) -> Self {
        let mut sources: Vec<HashMap<u32, Vec<u32>>> = vec![HashMap::new(); plan.nodes.len()];
        for (node, n) in plan.nodes.iter().enumerate() {
            let Node::Project { input, .. } = n else {
                continue;
            };
            let cols = (col(rows, node), col(rows, *input));
            let (Some(out), Some(inp)) = cols else {
                continue;
            };
            let map = &mut sources[node];
            for row in &rows.rows {
                if let (Some(Some(t)), Some(Some(s))) = (row.get(out), row.get(inp)) {
                    map.entry(*t).or_default().push(*s);
                }
            }
            for v in map.values_mut() {
                v.sort_unstable();
                v.dedup();
            }
        }
        let mut d = Derivations {
            plan,
            sources,
            scores: None,
        };
        if scored {
            d.scores = Some(d.memberships(exclude_anchors));
        }
        d
    }

    /// The root's members with their scores, in id order (empty unless
    /// built `scored`).
    pub fn root_scores(&self) -> Vec<(u32, f32)> {
        let mut v: Vec<(u32, f32)> = match &self.scores {
            Some(s) => s
                .get(self.plan.root())
                .map(|m| {
                    m.iter()
                        .map(|(&e, &w)| (e, w))
                        .filter(|p| p.1 > 0.0)
                        .collect()
                })
                .unwrap_or_default(),
            None => Vec::new(),
        };
        v.sort_unstable_by_key(|p| p.0);
        v
    }

    /// Entity `e`'s membership at `node`.
    fn score(&self, node: usize, e: u32) -> f32 {
        match &self.scores {
            Some(s) => s.get(node).and_then(|m| m.get(&e)).copied().unwrap_or(0.0),
            None => 1.0,
        }
    }

    /// Every node's memberships, bottom-up, with the executor's fuzzy
    /// logic: a projection keeps each target's best source, anchors of its
    /// input removed or scaled; AND multiplies, OR is the probabilistic sum.
    fn memberships(&self, exclude_anchors: bool) -> Vec<HashMap<u32, f32>> {
        let mut m: Vec<HashMap<u32, f32>> = Vec::with_capacity(self.plan.nodes.len());
        for (node, n) in self.plan.nodes.iter().enumerate() {
            let set = match n {
                Node::Anchor { entity } => HashMap::from([(*entity, 1.0)]),
                Node::Project { input, .. } => {
                    let x = m.get(*input);
                    let mut out: HashMap<u32, f32> = HashMap::new();
                    for (&t, sources) in &self.sources[node] {
                        let best = sources
                            .iter()
                            .map(|s| x.and_then(|x| x.get(s)).copied().unwrap_or(0.0))
                            .fold(0.0f32, f32::max);
                        if best > 0.0 {
                            out.insert(t, best);
                        }
                    }
                    for a in self.plan.anchors(*input) {
                        if exclude_anchors {
                            out.remove(&a);
                        } else if let Some(w) = out.get_mut(&a) {
                            *w *= ANCHOR_WEIGHT;
                        }
                    }
                    out
                }
                Node::And(ops) => {
                    let positive: Vec<&HashMap<u32, f32>> = ops
                        .iter()
                        .filter(|&&op| !matches!(self.plan.nodes.get(op), Some(Node::Not(_))))
                        .filter_map(|&op| m.get(op))
                        .collect();
                    let mut out = HashMap::new();
                    if let Some((first, rest)) = positive.split_first() {
                        for (&e, &w) in first.iter() {
                            let w = rest
                                .iter()
                                .fold(w, |acc, s| acc * s.get(&e).copied().unwrap_or(0.0));
                            if w > 0.0 {
                                out.insert(e, w);
                            }
                        }
                    }
                    out
                }
                Node::Or(ops) => {
                    let mut out: HashMap<u32, f32> = HashMap::new();
                    for s in ops.iter().filter_map(|&op| m.get(op)) {
                        for (&e, &w) in s {
                            out.entry(e)
                                .and_modify(|acc| *acc = *acc + w - *acc * w)
                                .or_insert(w);
                        }
                    }
                    out
                }
                Node::Not(_) => HashMap::new(),
            };
            m.push(set);
        }
        m
    }

    /// Up to `limit` sets of triples that support `entity` at `node`, in
    /// the order `kgbox_query::exec` finds them (the same walk,
    /// [`kgbox_query::proofs::prove`]).
    pub fn proofs(&self, node: usize, entity: u32, limit: usize) -> Vec<Vec<Triple>> {
        prove(self, node, entity, limit)
    }
}

/// Provenance from the derivations: each entity's sources as the solutions
/// bind them, scored by their membership at the projection's input.
impl ProofSource for Derivations<'_> {
    fn plan(&self) -> &Plan {
        self.plan
    }

    fn scored_sources(
        &self,
        node: usize,
        input: usize,
        _relation: u32,
        _inverse: bool,
        entity: u32,
    ) -> Vec<(u32, f32)> {
        self.sources
            .get(node)
            .and_then(|m| m.get(&entity))
            .map(|s| s.iter().map(|&s| (s, self.score(input, s))).collect())
            .unwrap_or_default()
    }

    /// Whether `e` is a member of `node` (for an OR's operands).
    fn member(&self, node: usize, e: u32) -> bool {
        match self.plan.nodes.get(node) {
            Some(Node::Anchor { entity }) => *entity == e,
            Some(Node::Project { .. }) => self.sources[node].contains_key(&e),
            Some(Node::And(ops)) => ops
                .iter()
                .filter(|&&op| !matches!(self.plan.nodes.get(op), Some(Node::Not(_))))
                .all(|&op| self.member(op, e)),
            Some(Node::Or(ops)) => ops.iter().any(|&op| self.member(op, e)),
            Some(Node::Not(_)) | None => false,
        }
    }
}

fn col(rows: &Rows, node: usize) -> Option<usize> {
    rows.node_col.get(node).copied().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `#1 -> r(7) -> r_inv`: `?x` in column 0, `?v1` (P1) 1, `?v2` (the anchor) 2.
    fn chain() -> (Plan, Vec<Option<usize>>) {
        let plan = Plan {
            nodes: vec![
                Node::Anchor { entity: 1 },
                Node::Project {
                    input: 0,
                    relation: 7,
                    inverse: false,
                },
                Node::Project {
                    input: 1,
                    relation: 7,
                    inverse: true,
                },
            ],
        };
        (plan, vec![Some(2), Some(1), Some(0)])
    }

    #[test]
    fn scores_and_paths_follow_the_executor() {
        let (plan, node_col) = chain();
        // 1 -r-> 2 <-r- {1, 3, 4}; 1 -r-> 5 <-r- 3.
        let rows = Rows {
            node_col,
            rows: [(1, 2), (3, 2), (4, 2), (3, 5), (1, 5)]
                .iter()
                .map(|&(x, v1)| vec![Some(x), Some(v1), Some(1)])
                .collect(),
        };
        let kept = Derivations::new(&plan, &rows, true, false);
        // The anchor comes back at half weight.
        assert_eq!(kept.root_scores(), vec![(1, 0.5), (3, 1.0), (4, 1.0)]);
        // Sources by id: 3 through 2, then through 5.
        assert_eq!(
            kept.proofs(2, 3, 5),
            vec![vec![[1, 7, 2], [3, 7, 2]], vec![[1, 7, 5], [3, 7, 5]]]
        );
        assert_eq!(kept.proofs(2, 3, 1).len(), 1);
        assert!(kept.proofs(2, 9, 3).is_empty());
        let excluded = Derivations::new(&plan, &rows, false, true);
        assert_eq!(excluded.proofs(2, 4, 3), vec![vec![[1, 7, 2], [4, 7, 2]]]);
    }

    #[test]
    fn or_operands_give_paths_only_for_their_members() {
        // OR(#1, #2 -> r): `?x` for all, `?v1` the projection's input.
        let plan = Plan {
            nodes: vec![
                Node::Anchor { entity: 1 },
                Node::Anchor { entity: 2 },
                Node::Project {
                    input: 1,
                    relation: 0,
                    inverse: false,
                },
                Node::Or(vec![0, 2]),
            ],
        };
        let rows = Rows {
            node_col: vec![Some(0), Some(1), Some(0), Some(0)],
            rows: vec![vec![Some(1), None], vec![Some(3), Some(2)]],
        };
        let d = Derivations::new(&plan, &rows, true, true);
        assert_eq!(d.root_scores(), vec![(1, 1.0), (3, 1.0)]);
        assert_eq!(d.proofs(3, 1, 3), vec![Vec::<Triple>::new()]);
        assert_eq!(d.proofs(3, 3, 3), vec![vec![[2, 0, 3]]]);
    }
}
