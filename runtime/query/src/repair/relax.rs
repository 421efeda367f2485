//! Relaxation (QChase): a query with no answers loses or loosens one
//! constraint per beam step until some candidate has answers.

use std::collections::{BTreeMap, HashSet};

use kgbox_bundle::Kg;

use super::profile::{node_kind, KindCounts};
use super::{
    child, original, relation_text, replace_at, RepairError, RepairKind, RepairOptions,
    RepairReport, Search, Stop,
};
use crate::ast::{Query, RelationRef};
use crate::exec::ExecOptions;

/// A candidate of the beam.
#[derive(Debug, Clone)]
struct State {
    query: Query,
    text: String,
    edits: Vec<String>,
    /// Product of the edits' type fits (1 for a dropped operand).
    fit: f32,
    /// Edges that support the replaced relations, summed.
    support: usize,
    answers: usize,
}

impl State {
    /// Fit in hundredths, so that fits within 0.01 tie.
    fn fit_key(&self) -> i64 {
        (self.fit * 100.0).round() as i64
    }
}

/// One relaxation edit of a query.
struct Edit {
    query: Query,
    text: String,
    fit: f32,
    support: usize,
}

/// Relaxes `query`: see the module documentation of [`crate::repair`].
pub fn relax(
    kg: &Kg<'_>,
    query: &Query,
    exec: &ExecOptions,
    opts: &RepairOptions,
) -> Result<RepairReport, RepairError> {
    let mut search = Search::new(kg, query, exec, opts);
    let before = original(&mut search, query, 0)?;
    let before = before.map_or(0, |a| a.total);
    if before > 0 || search.exhausted {
        return Ok(search.report(RepairKind::Relax, query, before, None));
    }
    let mut seen: HashSet<String> = HashSet::from([query.to_string()]);
    let mut beam = vec![State {
        query: query.clone(),
        text: query.to_string(),
        edits: Vec::new(),
        fit: 1.0,
        support: 0,
        answers: 0,
    }];
    for _ in 0..opts.max_edits {
        let mut children = Vec::new();
        let stopped = expand(&mut search, &beam, opts, &mut seen, &mut children).is_err();
        let best = children.iter().filter(|c| c.answers > 0).min_by(|a, b| {
            b.fit_key()
                .cmp(&a.fit_key())
                .then(a.answers.cmp(&b.answers))
                .then(b.support.cmp(&a.support))
                .then(a.text.cmp(&b.text))
        });
        if let Some(b) = best {
            let best = (&b.query, b.edits.as_slice(), b.answers);
            return Ok(search.report(RepairKind::Relax, query, 0, Some(best)));
        }
        if stopped {
            break;
        }
        children.sort_by(|a, b| {
            b.fit_key()
                .cmp(&a.fit_key())
                .then(b.support.cmp(&a.support))
                .then(a.text.cmp(&b.text))
        });
        children.truncate(opts.beam.max(1));
        beam = children;
        if beam.is_empty() {
            break;
        }
    }
    Ok(search.report(RepairKind::Relax, query, 0, None))
}

/// Evaluates every one-edit relaxation of the beam's states into `out`.
fn expand(
    search: &mut Search<'_, '_>,
    beam: &[State],
    opts: &RepairOptions,
    seen: &mut HashSet<String>,
    out: &mut Vec<State>,
) -> Result<(), Stop> {
    for state in beam {
        let mut edits = Vec::new();
        edits_at(
            search,
            &state.query,
            &state.query,
            &mut Vec::new(),
            opts,
            &mut edits,
        )?;
        for e in edits {
            let text = e.query.to_string();
            if !seen.insert(text.clone()) {
                continue;
            }
            let Some(answers) = search.candidate(&e.query, 0)? else {
                continue;
            };
            let mut done = state.edits.clone();
            done.push(e.text);
            out.push(State {
                query: e.query,
                text,
                edits: done,
                fit: state.fit * e.fit,
                support: state.support + e.support,
                answers: answers.total,
            });
        }
    }
    Ok(())
}

/// The one-edit relaxations at `node` (at `path` in `root`) and below it;
/// nothing under a `NOT` (relaxing there would tighten the query).
fn edits_at(
    search: &mut Search<'_, '_>,
    root: &Query,
    node: &Query,
    path: &mut Vec<usize>,
    opts: &RepairOptions,
    out: &mut Vec<Edit>,
) -> Result<(), Stop> {
    match node {
        Query::Entity { .. } | Query::Not { .. } => return Ok(()),
        Query::Or { .. } => {}
        Query::And { operands, span } => {
            for (i, op) in operands.iter().enumerate() {
                let rest: Vec<Query> = operands
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, q)| q.clone())
                    .collect();
                if !rest.iter().any(|q| !matches!(q, Query::Not { .. })) {
                    continue;
                }
                let relaxed = match <[Query; 1]>::try_from(rest) {
                    Ok([one]) => one,
                    Err(rest) => Query::And {
                        operands: rest,
                        span: *span,
                    },
                };
                if let Some(query) = replace_at(root, path, &relaxed) {
                    let what = if matches!(op, Query::Not { .. }) {
                        "NOT operand"
                    } else {
                        "AND operand"
                    };
                    out.push(Edit {
                        query,
                        text: format!("dropped {what} {}: {op}", i + 1),
                        fit: 1.0,
                        support: 0,
                    });
                }
            }
        }
        Query::Project { input, relation } => {
            replacements(search, root, node, input, relation, path, opts, out)?;
        }
    }
    let mut i = 0;
    while let Some(c) = child(node, i) {
        path.push(i);
        let r = edits_at(search, root, c, path, opts, out);
        path.pop();
        r?;
        i += 1;
    }
    Ok(())
}

/// A relation leaving a source set, with its support and type fit.
#[derive(Debug, Default)]
struct Group {
    support: usize,
    sample: Vec<u32>,
}

/// Targets sampled per relation to measure the type fit.
const FIT_SAMPLE: usize = 64;

/// Type fit given at least to the original relation in the other direction.
pub const REVERSE_FIT: f32 = 0.5;

/// Replacements of the relation of `node = input -> relation`: relations
/// that leave `input`'s answers (either direction, other than `relation`),
/// with a type fit of at least `opts.min_fit`, best first. Never one of
/// another kind than `relation` ([`super::profile::ValueKind`]: its
/// targets, or `input`'s answers against what `relation` leaves from),
/// except `relation` itself reversed, and never the inverse of `input`'s
/// own last hop (that only goes back where it came from).
#[allow(clippy::too_many_arguments)]
fn replacements(
    search: &mut Search<'_, '_>,
    root: &Query,
    node: &Query,
    input: &Query,
    relation: &RelationRef,
    path: &[usize],
    opts: &RepairOptions,
    out: &mut Vec<Edit>,
) -> Result<(), Stop> {
    let kg = search.kg;
    let Ok(orig) = crate::bind::resolve_relation(kg, relation, &relation.name) else {
        return Ok(());
    };
    let Some(sources) = search.sources(input, opts.max_sources)? else {
        return Ok(());
    };
    let back = match input {
        Query::Project { relation: hop, .. } => crate::bind::resolve_relation(kg, hop, &hop.name)
            .ok()
            .map(|(r, inverse)| (r, !inverse)),
        _ => None,
    };
    let mut source_kinds = KindCounts::default();
    for a in sources.answers.iter().take(FIT_SAMPLE) {
        source_kinds.add(node_kind(search, a.entity)?);
    }
    let mut groups: BTreeMap<(u32, bool), Group> = BTreeMap::new();
    for a in &sources.answers {
        for (csr, inverse) in [(kg.out, false), (kg.inc, true)] {
            let (rels, others) = csr.edges(a.entity);
            search.charge(rels.len())?;
            for (&r, &t) in rels.iter().zip(others) {
                if (r, inverse) == orig || Some((r, inverse)) == back {
                    continue;
                }
                let g = groups.entry((r, inverse)).or_default();
                g.support += 1;
                if g.sample.len() < FIT_SAMPLE {
                    g.sample.push(t);
                }
            }
        }
    }
    if groups.is_empty() {
        return Ok(());
    }
    let profile = search.profile(orig.0, orig.1)?;
    // What the original relation leaves from: what its inverse reaches.
    let domain = search.profile(orig.0, !orig.1)?.kind();
    let other_end = source_kinds.kind().conflicts(domain);
    let mut alts: Vec<(f32, usize, u32, bool)> = Vec::new();
    for ((r, inverse), g) in groups {
        if r != orig.0 {
            let mut targets = KindCounts::default();
            for &t in &g.sample {
                targets.add(node_kind(search, t)?);
            }
            if other_end || targets.kind().conflicts(profile.kind()) {
                continue;
            }
        }
        let mut sum = 0.0f32;
        for &t in &g.sample {
            sum += profile.fit(search, t)?;
        }
        let mut fit = sum / g.sample.len().max(1) as f32;
        if r == orig.0 {
            // The same relation the other way round: a common slip.
            fit = fit.max(REVERSE_FIT);
        }
        if fit >= opts.min_fit && fit > 0.0 {
            alts.push((fit, g.support, r, inverse));
        }
    }
    alts.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    for (fit, support, r, inverse) in alts.into_iter().take(opts.max_alternatives) {
        let Some(name) = relation_text(kg, r, inverse) else {
            continue;
        };
        let replaced = Query::Project {
            input: Box::new(input.clone()),
            relation: RelationRef {
                name: name.clone(),
                span: relation.span,
            },
        };
        if let Some(query) = replace_at(root, path, &replaced) {
            out.push(Edit {
                query,
                text: format!(
                    "replaced relation {} by {name} in {node} (type fit {fit:.2}, support {support})",
                    relation.name
                ),
                fit,
                support,
            });
        }
    }
    Ok(())
}
