//! A graph pattern as SPARQL and openCypher both read it (triple patterns,
//! fixed values, exclusions, `EXISTS`/`UNION`/`NOT EXISTS` sub-patterns),
//! and its DSL form: the fuzzy-set query whose answers are one variable's
//! bindings.
//!
//! The pattern must be a tree around the root variable: the root is the
//! answer, every edge leads away from it, and every other variable leads
//! on to a fixed entity. Fixed entities are leaves (two mentions of one
//! entity do not join). A term that names nothing in the bundle
//! ([`Term::Nothing`]) matches nothing, as an unknown IRI does in SPARQL:
//! it empties its conjunction, drops out of a union and makes a `NOT`
//! always true.

use std::collections::BTreeSet;

use crate::ast::{EntityRef, Query, RelationRef, Span};

use super::TranslateError;

/// Longest walk from the answer variable, in edges and sub-patterns: the
/// translation recurses once per step.
const MAX_PATTERN_DEPTH: usize = 64;

/// One end of a pattern edge, or a fixed value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Term {
    Var(String),
    Entity(EntityRef),
    /// A constant the bundle does not have.
    Nothing,
}

/// `subject -relation-> object`; `relation` is `None` when the bundle has no
/// such relation.
#[derive(Debug, Clone)]
pub(crate) struct Edge {
    pub subject: Term,
    pub relation: Option<String>,
    pub object: Term,
}

/// Sub-patterns joined to one variable: the union of `branches`, kept
/// (`EXISTS`, `UNION`, a group) or removed (`NOT EXISTS`, `MINUS`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Sub {
    pub branches: Vec<Group>,
    pub negated: bool,
}

/// A conjunctive pattern.
#[derive(Debug, Clone, Default)]
pub(crate) struct Group {
    pub edges: Vec<Edge>,
    /// `var` is one of these values (`VALUES`, `FILTER(?v = ...)`, `IN`).
    pub values: Vec<(String, Vec<Term>)>,
    /// `var` is not this value (`FILTER(?v != ...)`, `x.name <> '...'`).
    pub excluded: Vec<(String, Term)>,
    pub subs: Vec<Sub>,
}

/// The query's form before empty parts are dropped.
enum Ir {
    Entity(EntityRef),
    Nothing,
    Project(Box<Ir>, String),
    And(Vec<Ir>),
    Or(Vec<Ir>),
    Not(Box<Ir>),
}

impl Group {
    /// Every variable the group mentions, its sub-patterns' included.
    pub(crate) fn vars(&self) -> BTreeSet<String> {
        let mut out = self.own_vars();
        for s in &self.subs {
            for b in &s.branches {
                out.extend(b.vars());
            }
        }
        out
    }

    /// The variables of the group's own edges and values.
    fn own_vars(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for e in &self.edges {
            for t in [&e.subject, &e.object] {
                if let Term::Var(v) = t {
                    out.insert(v.clone());
                }
            }
        }
        for (v, _) in &self.values {
            out.insert(v.clone());
        }
        for (v, _) in &self.excluded {
            out.insert(v.clone());
        }
        out
    }

    /// The DSL query whose answers are `root`'s bindings; `None` when the
    /// pattern can match nothing in this bundle.
    pub(crate) fn to_query(&self, root: &str) -> Result<Option<Query>, TranslateError> {
        if !self.vars().contains(root) {
            return Err(TranslateError::Shape(format!(
                "does not use the answer variable {root}"
            )));
        }
        let mut used = vec![false; self.edges.len()];
        let mut subs_used = vec![false; self.subs.len()];
        let ir = self.var_ir(root, None, &BTreeSet::new(), 0, &mut used, &mut subs_used)?;
        if used.iter().any(|u| !u) || subs_used.iter().any(|u| !u) {
            return Err(TranslateError::Shape(
                "has parts not connected to the answer variable".into(),
            ));
        }
        Ok(lower(ir))
    }

    /// The pattern as a condition with no variable at all (`ASK { a r b }`):
    /// one edge between two fixed entities.
    pub(crate) fn ground_query(&self) -> Result<Option<Query>, TranslateError> {
        match self.edges.as_slice() {
            [e] if self.subs.is_empty() && self.values.is_empty() => {
                let leaf = |t: &Term| match t {
                    Term::Entity(r) => Ir::Entity(r.clone()),
                    _ => Ir::Nothing,
                };
                let relation = match &e.relation {
                    Some(r) => r.clone(),
                    None => return Ok(None),
                };
                Ok(lower(Ir::And(vec![
                    leaf(&e.object),
                    Ir::Project(Box::new(leaf(&e.subject)), relation),
                ])))
            }
            _ => Err(TranslateError::Shape(
                "has no variable and more than one triple".into(),
            )),
        }
    }

    /// The IR of `var`'s bindings, reached over edge `via` (`None`: `var`
    /// is this group's root). `outer` holds the variables the enclosing
    /// groups see; `depth` counts the steps from the answer variable.
    fn var_ir(
        &self,
        var: &str,
        via: Option<usize>,
        outer: &BTreeSet<String>,
        depth: usize,
        used: &mut [bool],
        subs_used: &mut [bool],
    ) -> Result<Ir, TranslateError> {
        if depth > MAX_PATTERN_DEPTH {
            return Err(TranslateError::Shape(format!(
                "reaches further than {MAX_PATTERN_DEPTH} steps from the answer variable"
            )));
        }
        let mut positive = Vec::new();
        let mut negative = Vec::new();
        for (v, set) in &self.values {
            if v == var {
                positive.push(Ir::Or(set.iter().map(leaf).collect()));
            }
        }
        for (i, e) in self.edges.iter().enumerate() {
            let is = |t: &Term| matches!(t, Term::Var(v) if v == var);
            if Some(i) == via || !(is(&e.subject) || is(&e.object)) {
                continue;
            }
            if is(&e.subject) && is(&e.object) {
                return Err(TranslateError::Shape(format!("has a self-loop on {var}")));
            }
            if used[i] {
                return Err(TranslateError::Shape(
                    "has a cycle (only tree-shaped patterns have a DSL form)".into(),
                ));
            }
            used[i] = true;
            let (other, inverse) = if is(&e.object) {
                (&e.subject, false)
            } else {
                (&e.object, true)
            };
            let input = match other {
                Term::Var(u) => self.var_ir(u, Some(i), outer, depth + 1, used, subs_used)?,
                t => leaf(t),
            };
            positive.push(match &e.relation {
                None => Ir::Nothing,
                Some(r) if inverse => Ir::Project(Box::new(input), format!("{r}_inv")),
                Some(r) => Ir::Project(Box::new(input), r.clone()),
            });
        }
        for (v, t) in &self.excluded {
            if v == var {
                negative.push(leaf(t));
            }
        }
        let own = self.own_vars();
        let sub_vars: Vec<BTreeSet<String>> = self
            .subs
            .iter()
            .map(|s| s.branches.iter().flat_map(Group::vars).collect())
            .collect();
        for (i, sub) in self.subs.iter().enumerate() {
            if subs_used[i] {
                continue;
            }
            // What the sub-pattern shares: the variables it has in common
            // with the group, the other sub-patterns and the enclosing ones.
            let mut visible: BTreeSet<String> = own.union(outer).cloned().collect();
            for (j, vars) in sub_vars.iter().enumerate() {
                if j != i {
                    visible.extend(vars.iter().cloned());
                }
            }
            if via.is_none() {
                visible.insert(var.to_string());
            }
            let shared: BTreeSet<&String> = sub_vars
                .get(i)
                .map(|vars| vars.intersection(&visible).collect())
                .unwrap_or_default();
            // A sub-pattern hangs on the one variable it shares with the
            // group; one that shares nothing hangs on the root.
            let here = match shared.len() {
                0 => via.is_none(),
                1 => shared.iter().any(|v| v.as_str() == var),
                _ => {
                    return Err(TranslateError::Shape(format!(
                        "joins a sub-pattern (UNION, EXISTS, NOT EXISTS or MINUS) on {} variables; it must share exactly one",
                        shared.len()
                    )))
                }
            };
            if !here {
                continue;
            }
            subs_used[i] = true;
            let inner_outer: BTreeSet<String> = visible.into_iter().collect();
            let mut branches = Vec::new();
            for b in &sub.branches {
                if !b.vars().contains(var) {
                    return Err(TranslateError::Shape(format!(
                        "has a UNION or EXISTS branch that does not use {var}"
                    )));
                }
                let mut bu = vec![false; b.edges.len()];
                let mut bs = vec![false; b.subs.len()];
                branches.push(b.var_ir(var, None, &inner_outer, depth + 1, &mut bu, &mut bs)?);
                if bu.iter().any(|u| !u) || bs.iter().any(|u| !u) {
                    return Err(TranslateError::Shape(
                        "has a sub-pattern with parts not connected to its shared variable".into(),
                    ));
                }
            }
            if sub.negated {
                negative.push(Ir::Or(branches));
            } else {
                positive.push(Ir::Or(branches));
            }
        }
        if positive.is_empty() {
            return Err(TranslateError::Shape(format!(
                "leaves variable {var} unconstrained: every variable must lead to a named entity"
            )));
        }
        positive.extend(negative.into_iter().map(|n| Ir::Not(Box::new(n))));
        Ok(if positive.len() == 1 {
            positive.remove(0)
        } else {
            Ir::And(positive)
        })
    }
}

fn leaf(t: &Term) -> Ir {
    match t {
        Term::Entity(r) => Ir::Entity(r.clone()),
        Term::Var(_) | Term::Nothing => Ir::Nothing,
    }
}

/// The DSL query of `ir`, with the parts that match nothing dropped:
/// `None` when the whole matches nothing.
fn lower(ir: Ir) -> Option<Query> {
    let z = Span::default();
    match ir {
        Ir::Entity(entity) => Some(Query::Entity { entity, span: z }),
        Ir::Nothing => None,
        Ir::Project(input, name) => Some(Query::Project {
            input: Box::new(lower(*input)?),
            relation: RelationRef { name, span: z },
        }),
        Ir::Or(ops) => {
            let mut operands: Vec<Query> = ops.into_iter().filter_map(lower).collect();
            match operands.len() {
                0 => None,
                1 => operands.pop(),
                _ => Some(Query::Or { operands, span: z }),
            }
        }
        Ir::Not(inner) => lower(*inner).map(|operand| Query::Not {
            operand: Box::new(operand),
            span: z,
        }),
        Ir::And(ops) => {
            let mut operands = Vec::new();
            for op in ops {
                match op {
                    // NOT of nothing is always true: it drops out.
                    Ir::Not(inner) => {
                        if let Some(q) = lower(*inner) {
                            operands.push(Query::Not {
                                operand: Box::new(q),
                                span: z,
                            });
                        }
                    }
                    other => operands.push(lower(other)?),
                }
            }
            match operands.len() {
                0 => None,
                1 => operands.pop(),
                _ => Some(Query::And { operands, span: z }),
            }
        }
    }
}
