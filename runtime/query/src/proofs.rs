//! Provenance: which triples prove that an entity is in the answer set of a
//! plan node.
//!
//! One walk serves every executor that can say, for a projection, which
//! sources reach an entity and how strongly, and, for a node, whether an
//! entity is a member: the in-process executor ([`crate::exec`], from its
//! fuzzy sets over the bundle's graph) and the runtime's `sparql_store`
//! executor (from a store's solutions). Both implement [`ProofSource`] and
//! call [`prove`], so their paths come in the same order.
//!
//! The walk, from `node` down:
//! - an anchor proves itself with the empty path;
//! - a projection tries its sources strongest first (ties by id), each path
//!   of the source at the input followed by the triple to the entity;
//! - `AND` joins one path of each positive operand (`NOT` operands give
//!   none), a triple shared by two operands kept once;
//! - `OR` concatenates the paths of the operands the entity is a member of;
//! - anything else proves nothing.
//!
//! At most `limit` paths come back at any level.

use crate::plan::{Node, Plan};

/// One supporting triple: (head, relation, tail) ids.
pub type Triple = [u32; 3];

/// What [`prove`] reads from an evaluated plan.
pub trait ProofSource {
    /// The plan the walk follows.
    fn plan(&self) -> &Plan;

    /// The sources of `entity` at the projection `node` (`input -> relation`,
    /// followed from tail to head with `inverse`), each with its membership
    /// at `input`. Any order; sources with membership 0 are skipped.
    fn scored_sources(
        &self,
        node: usize,
        input: usize,
        relation: u32,
        inverse: bool,
        entity: u32,
    ) -> Vec<(u32, f32)>;

    /// Whether `entity` is a member of `node` (asked of an `OR`'s operands).
    fn member(&self, node: usize, entity: u32) -> bool;
}

/// Up to `limit` sets of triples that support `entity` at `node`, in the
/// order described in the [module documentation](self).
pub fn prove<S: ProofSource + ?Sized>(
    src: &S,
    node: usize,
    entity: u32,
    limit: usize,
) -> Vec<Vec<Triple>> {
    if limit == 0 {
        return Vec::new();
    }
    let plan = src.plan();
    match plan.nodes.get(node) {
        Some(Node::Anchor { entity: a }) if *a == entity => vec![Vec::new()],
        Some(Node::Project {
            input,
            relation,
            inverse,
        }) => {
            let mut sources = src.scored_sources(node, *input, *relation, *inverse, entity);
            sources.retain(|p| p.1 > 0.0);
            // Strongest sources first.
            sources.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            let mut out = Vec::new();
            for (s, _) in sources {
                let triple = if *inverse {
                    [entity, *relation, s]
                } else {
                    [s, *relation, entity]
                };
                for mut p in prove(src, *input, s, limit - out.len()) {
                    p.push(triple);
                    out.push(p);
                    if out.len() >= limit {
                        return out;
                    }
                }
            }
            out
        }
        Some(Node::And(ops)) => {
            let mut combined: Vec<Vec<Triple>> = vec![Vec::new()];
            for &op in ops {
                if matches!(plan.nodes.get(op), Some(Node::Not(_))) {
                    continue;
                }
                let part = prove(src, op, entity, limit);
                if part.is_empty() {
                    return Vec::new();
                }
                let mut next = Vec::new();
                'outer: for c in &combined {
                    for p in &part {
                        let mut joined = c.clone();
                        joined.extend(p.iter().filter(|t| !c.contains(t)));
                        next.push(joined);
                        if next.len() >= limit {
                            break 'outer;
                        }
                    }
                }
                combined = next;
            }
            combined
        }
        Some(Node::Or(ops)) => {
            let mut out = Vec::new();
            for &op in ops {
                if src.member(op, entity) {
                    out.extend(prove(src, op, entity, limit - out.len()));
                    if out.len() >= limit {
                        break;
                    }
                }
            }
            out
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sources as a list of `(node, target, source, score)`.
    struct Fixed {
        plan: Plan,
        edges: Vec<(usize, u32, u32, f32)>,
    }

    impl ProofSource for Fixed {
        fn plan(&self) -> &Plan {
            &self.plan
        }

        fn scored_sources(
            &self,
            node: usize,
            _: usize,
            _: u32,
            _: bool,
            e: u32,
        ) -> Vec<(u32, f32)> {
            self.edges
                .iter()
                .filter(|x| x.0 == node && x.1 == e)
                .map(|x| (x.2, x.3))
                .collect()
        }

        fn member(&self, node: usize, e: u32) -> bool {
            !prove(self, node, e, 1).is_empty()
        }
    }

    fn project(input: usize, relation: u32, inverse: bool) -> Node {
        Node::Project {
            input,
            relation,
            inverse,
        }
    }

    #[test]
    fn strongest_sources_first_and_shared_triples_once() {
        // 0: #1; 1: #1 -> r0, reaching 2 and 3; 2: node 1 -> r1 inverse,
        // reaching 9 from 3 (0.5), 2 (0.25) and 4 (0: skipped); 3: AND(2, 2).
        let plan = Plan {
            nodes: vec![
                Node::Anchor { entity: 1 },
                project(0, 0, false),
                project(1, 1, true),
                Node::And(vec![2, 2]),
            ],
        };
        let src = Fixed {
            plan,
            edges: vec![
                (1, 2, 1, 1.0),
                (1, 3, 1, 1.0),
                (2, 9, 3, 0.5),
                (2, 9, 2, 0.25),
                (2, 9, 4, 0.0),
            ],
        };
        let via3 = vec![[1, 0, 3], [9, 1, 3]];
        let via2 = vec![[1, 0, 2], [9, 1, 2]];
        assert_eq!(prove(&src, 2, 9, 5), vec![via3.clone(), via2.clone()]);
        assert_eq!(prove(&src, 2, 9, 1), vec![via3.clone()]);
        assert!(prove(&src, 2, 9, 0).is_empty());
        // A triple both operands of the AND give is kept once.
        let mixed = [via3.clone(), via2.clone()].concat();
        assert_eq!(prove(&src, 3, 9, 2), vec![via3.clone(), mixed]);
        assert_eq!(prove(&src, 3, 9, 4).len(), 4);
    }
}
