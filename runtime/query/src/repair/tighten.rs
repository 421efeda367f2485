//! Tightening (QBackchase): a query with too many answers gets one more
//! `AND` constraint per beam step, `e -> r` for an entity `e` the caller
//! supplies or that several answers share, until its answers fit.

use std::collections::{HashMap, HashSet};

use kgbox_bundle::Kg;

use super::{
    original, projection, relation_text, RepairError, RepairKind, RepairOptions, RepairReport,
    Search, Stop,
};
use crate::ast::Query;
use crate::exec::ExecOptions;

/// A candidate of the beam.
#[derive(Debug, Clone)]
struct State {
    query: Query,
    text: String,
    edits: Vec<String>,
    /// Constraints from caller-supplied entities.
    supplied: usize,
    /// The answers' ids (the first `max_scan`) and their count.
    answers: Vec<u32>,
    total: usize,
}

/// `e -> r` (`r_inv` with `inverse`), keeping `kept` of a state's answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Constraint {
    entity: u32,
    relation: u32,
    inverse: bool,
}

/// Tightens `query` with constraints from `with` (entities the caller
/// supplies) or shared by its answers: see [`crate::repair`].
pub fn tighten(
    kg: &Kg<'_>,
    query: &Query,
    with: &[u32],
    exec: &ExecOptions,
    opts: &RepairOptions,
) -> Result<RepairReport, RepairError> {
    let mut search = Search::new(kg, query, exec, opts);
    let Some(before) = original(&mut search, query, opts.max_scan)? else {
        return Ok(search.report(RepairKind::Tighten, query, 0, None));
    };
    let total = before.total;
    if total <= opts.max_answers {
        return Ok(search.report(RepairKind::Tighten, query, total, None));
    }
    let text = query.to_string();
    let anchors: HashSet<u32> = crate::bind::bind(kg, query, &text)
        .map(|p| p.anchors(p.root()).into_iter().collect())
        .unwrap_or_default();
    let mut seen: HashSet<String> = HashSet::from([text.clone()]);
    let mut beam = vec![State {
        query: query.clone(),
        text,
        edits: Vec::new(),
        supplied: 0,
        answers: before.answers.iter().map(|a| a.entity).collect(),
        total,
    }];
    // Candidates that reduced the answers, for when none fits.
    let mut reduced: Vec<State> = Vec::new();
    for _ in 0..opts.max_edits {
        let mut children = Vec::new();
        let stopped = expand(
            &mut search,
            &beam,
            with,
            &anchors,
            opts,
            &mut seen,
            &mut children,
        )
        .is_err();
        let best = children
            .iter()
            .filter(|c| c.total <= opts.max_answers)
            .min_by(|a, b| {
                b.supplied
                    .cmp(&a.supplied)
                    .then(b.total.cmp(&a.total))
                    .then(a.text.cmp(&b.text))
            });
        if let Some(b) = best {
            let best = (&b.query, b.edits.as_slice(), b.total);
            return Ok(search.report(RepairKind::Tighten, query, total, Some(best)));
        }
        children.sort_by(|a, b| {
            b.supplied
                .cmp(&a.supplied)
                .then(a.total.cmp(&b.total))
                .then(a.text.cmp(&b.text))
        });
        reduced.extend(children.iter().cloned());
        if stopped {
            break;
        }
        children.truncate(opts.beam.max(1));
        beam = children;
        if beam.is_empty() {
            break;
        }
    }
    // None fits: the one with the fewest answers, caller-supplied first.
    let best = reduced.iter().min_by(|a, b| {
        b.supplied
            .cmp(&a.supplied)
            .then(a.total.cmp(&b.total))
            .then(a.text.cmp(&b.text))
    });
    let best = best.map(|b| (&b.query, b.edits.as_slice(), b.total));
    Ok(search.report(RepairKind::Tighten, query, total, best))
}

/// Evaluates the best one-constraint tightenings of each state into `out`.
fn expand(
    search: &mut Search<'_, '_>,
    beam: &[State],
    with: &[u32],
    anchors: &HashSet<u32>,
    opts: &RepairOptions,
    seen: &mut HashSet<String>,
    out: &mut Vec<State>,
) -> Result<(), Stop> {
    for state in beam {
        let answers: HashSet<u32> = state.answers.iter().copied().collect();
        let mut cands: Vec<(bool, usize, Constraint)> = Vec::new();
        for (c, kept) in supplied(search, with, anchors, &answers)? {
            cands.push((true, kept, c));
        }
        if opts.tighten_shared {
            for (c, kept) in shared(search, &state.answers, with, anchors)? {
                if kept >= opts.min_shared {
                    cands.push((false, kept, c));
                }
            }
        }
        // Must split: keep some answers, not all of them.
        cands.retain(|(_, kept, _)| *kept > 0 && *kept < state.total);
        // Estimated best first: supplied, then fitting (the most kept), then
        // the fewest kept.
        let fits = |kept: usize| kept <= opts.max_answers;
        cands.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then(fits(b.1).cmp(&fits(a.1)))
                .then(if fits(a.1) {
                    b.1.cmp(&a.1)
                } else {
                    a.1.cmp(&b.1)
                })
                .then(a.2.cmp(&b.2))
        });
        let n_supplied = cands.iter().filter(|c| c.0).count();
        for (is_supplied, _, c) in cands.into_iter().take(n_supplied + opts.beam.max(1)) {
            let Some(name) = relation_text(search.kg, c.relation, c.inverse) else {
                continue;
            };
            let extra = projection(search.kg, c.entity, name);
            let query = and_with(&state.query, extra.clone());
            let text = query.to_string();
            if !seen.insert(text.clone()) {
                continue;
            }
            let Some(found) = search.candidate(&query, opts.max_scan)? else {
                continue;
            };
            if found.total == 0 {
                continue;
            }
            let mut edits = state.edits.clone();
            edits.push(format!(
                "added AND operand {extra} ({}, keeps {} of {} answers)",
                if is_supplied {
                    "a supplied entity"
                } else {
                    "shared by the answers"
                },
                found.total,
                state.total
            ));
            out.push(State {
                query,
                text,
                edits,
                supplied: state.supplied + usize::from(is_supplied),
                answers: found.answers.iter().map(|a| a.entity).collect(),
                total: found.total,
            });
        }
    }
    Ok(())
}

/// `AND(q, extra)`, or `q`'s own AND with `extra` appended.
fn and_with(q: &Query, extra: Query) -> Query {
    match q {
        Query::And { operands, span } => {
            let mut operands = operands.clone();
            operands.push(extra);
            Query::And {
                operands,
                span: *span,
            }
        }
        _ => Query::And {
            operands: vec![q.clone(), extra],
            span: crate::ast::Span::default(),
        },
    }
}

/// Constraints `x -> r` from the supplied entities, with the answers each keeps.
fn supplied(
    search: &mut Search<'_, '_>,
    with: &[u32],
    anchors: &HashSet<u32>,
    answers: &HashSet<u32>,
) -> Result<Vec<(Constraint, usize)>, Stop> {
    let kg = search.kg;
    let mut kept: HashMap<Constraint, usize> = HashMap::new();
    let mut done = HashSet::new();
    for &x in with {
        if anchors.contains(&x) || !done.insert(x) || x as usize >= kg.entity_count() {
            continue;
        }
        // x -r-> t: t in x -> r; h -r-> x: h in x -> r_inv.
        for (csr, inverse) in [(kg.out, false), (kg.inc, true)] {
            let (rels, others) = csr.edges(x);
            search.charge(rels.len())?;
            for (&r, &t) in rels.iter().zip(others) {
                if answers.contains(&t) {
                    let c = Constraint {
                        entity: x,
                        relation: r,
                        inverse,
                    };
                    *kept.entry(c).or_default() += 1;
                }
            }
        }
    }
    Ok(sorted(kept))
}

/// Constraints `y -> r` that at least one of `answers` satisfies, with the
/// number of answers that do.
fn shared(
    search: &mut Search<'_, '_>,
    answers: &[u32],
    with: &[u32],
    anchors: &HashSet<u32>,
) -> Result<Vec<(Constraint, usize)>, Stop> {
    let kg = search.kg;
    let mut kept: HashMap<Constraint, usize> = HashMap::new();
    for &a in answers {
        // a -r-> y: a in y -> r_inv; y -r-> a: a in y -> r.
        for (csr, inverse) in [(kg.out, true), (kg.inc, false)] {
            let (rels, others) = csr.edges(a);
            search.charge(rels.len())?;
            for (&r, &y) in rels.iter().zip(others) {
                if anchors.contains(&y) || with.contains(&y) {
                    continue;
                }
                let c = Constraint {
                    entity: y,
                    relation: r,
                    inverse,
                };
                *kept.entry(c).or_default() += 1;
            }
        }
    }
    Ok(sorted(kept))
}

fn sorted(m: HashMap<Constraint, usize>) -> Vec<(Constraint, usize)> {
    let mut v: Vec<_> = m.into_iter().collect();
    v.sort_unstable();
    v
}
