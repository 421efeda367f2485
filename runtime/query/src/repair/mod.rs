//! Query repair, after UniQGen's Chase & Backchase: when a query returns
//! nothing, **relax** it (QChase: drop or loosen one constraint at a time,
//! beam search, until it has answers); when it returns too many, **tighten**
//! it (QBackchase: add back the best-supported constraint until the answers
//! fit). Candidates are evaluated with the symbolic executor ([`crate::exec`])
//! under one edge budget and one deadline for the whole search.
//!
//! Semantics, scoring and limits are specified in `docs/query-language.md`
//! ("Query repair"). In short:
//!
//! - relaxation edits are monotone where the language allows it (dropping an
//!   `AND` operand, a `NOT` operand included, only enlarges the answer set),
//!   and otherwise type-preserving: a projection's relation is replaced by a
//!   relation that actually leaves the projection's source set and reaches
//!   entities of the kind the original relation reaches ("type fit");
//! - a relation is never replaced by one of another kind: entity-valued by
//!   literal-valued or the other way round, on either end ([`profile`]
//!   says what a literal is), nor by the inverse of the hop before it (the
//!   way back); the original relation reversed is kept (a common slip);
//! - a candidate never answers with the query's topic: unless the caller's
//!   policy keeps anchors (`exclude_anchors` off), the anchors and the
//!   entities named like them next to them ([`topic`]) are excluded from
//!   every candidate's answers, so a repair whose only answers are the
//!   topic finds nothing, and the report's `excluded` tells the caller to
//!   exclude them from the repaired query's run too;
//! - nothing inside a `NOT` is relaxed (that would tighten the query);
//! - relaxed candidates are ranked by fewer edits, then a higher type fit,
//!   then fewer answers (the least relaxation), then more supporting edges;
//! - tightening adds `AND(q, e -> r)` constraints, from entities the caller
//!   supplies first, else from entities the answers share, and keeps the
//!   least restrictive one that brings the answers under the threshold.

#[cfg(test)]
mod kind_tests;
mod profile;
mod relax;
#[cfg(test)]
mod tests;
mod tighten;

use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use kgbox_bundle::normalize::normalize;
use kgbox_bundle::Kg;
use serde::Serialize;

use crate::ast::{EntityRef, Query, RelationRef, Span};
use crate::bind::INVERSE_SUFFIX;
use crate::diag::Diagnostic;
use crate::exec::{execute, Answers, ExecError, ExecOptions, Executor};
use crate::parse::{parse_with, ParseLimits};

pub use relax::{relax, REVERSE_FIT};
pub use tighten::tighten;

/// Knobs of one repair.
#[derive(Debug, Clone)]
pub struct RepairOptions {
    /// Candidates kept per beam step.
    pub beam: usize,
    /// Edits (beam steps) at most.
    pub max_edits: usize,
    /// Candidate queries evaluated at most, over the whole search.
    pub max_candidates: usize,
    /// Relax: replacement relations tried per projection at most.
    pub max_alternatives: usize,
    /// Relax: smallest type fit of a replacement relation.
    pub min_fit: f32,
    /// Relax: source entities scanned for a projection's neighbourhood.
    pub max_sources: usize,
    /// Tighten when the query has more than `max_answers` answers.
    pub tighten: bool,
    /// The answer count a tightened query must not exceed.
    pub max_answers: usize,
    /// Tighten: answers scanned for constraints they share.
    pub max_scan: usize,
    /// Tighten: also try constraints the answers share (not only ones from
    /// the caller's entities).
    pub tighten_shared: bool,
    /// Tighten: answers a shared constraint must keep at least.
    pub min_shared: usize,
    /// Edge visits for the whole search (the executor's budget applies too).
    pub max_edge_visits: u64,
    /// Wall time for the whole search (the executor's deadline applies too).
    pub time_limit: Duration,
}

impl Default for RepairOptions {
    fn default() -> Self {
        RepairOptions {
            beam: 4,
            max_edits: 2,
            max_candidates: 100,
            max_alternatives: 5,
            min_fit: 0.5,
            max_sources: 256,
            tighten: false,
            max_answers: 50,
            max_scan: 2000,
            tighten_shared: true,
            min_shared: 2,
            max_edge_visits: 2_000_000,
            time_limit: Duration::from_millis(500),
        }
    }
}

/// Whether a caller repairs queries: `auto` relaxes a query with no answers
/// (and tightens one with too many when asked), `off` never repairs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RepairMode {
    #[default]
    Auto,
    Off,
}

impl std::str::FromStr for RepairMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(RepairMode::Auto),
            "off" => Ok(RepairMode::Off),
            _ => Err(format!("unknown repair mode {s:?} (expected auto or off)")),
        }
    }
}

/// Which repair ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RepairKind {
    Relax,
    Tighten,
}

impl std::fmt::Display for RepairKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RepairKind::Relax => "relax",
            RepairKind::Tighten => "tighten",
        })
    }
}

/// What a repair did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepairReport {
    pub kind: RepairKind,
    /// The query as given, in canonical form.
    pub original: String,
    /// The repaired query in canonical form; `None` when no candidate qualified.
    pub repaired: Option<String>,
    /// The edits from `original` to `repaired`, in order, human readable.
    pub edits: Vec<String>,
    /// Answers of the original and of the repaired query (symbolic executor).
    pub answers_before: usize,
    pub answers_after: usize,
    /// Candidate queries evaluated.
    pub candidates: usize,
    pub edge_visits: u64,
    /// The search stopped at a limit (edge budget, deadline or candidates).
    pub exhausted: bool,
    pub ms: f64,
    /// Entities excluded from every candidate's answers: the query's topic
    /// ([`topic`]; empty when the caller keeps anchors). The repaired query
    /// is to be run with them excluded too ([`ExecOptions::exclude`]).
    #[serde(skip)]
    pub excluded: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RepairError {
    /// The query does not parse or names something the bundle lacks.
    #[error("{0}")]
    Invalid(Diagnostic),
    #[error(transparent)]
    Exec(#[from] ExecError),
}

/// Relaxes `query` when it has no answers (`total == 0`), tightens it when
/// `opts.tighten` and it has more than `opts.max_answers`; `None` otherwise.
/// `total` is the answer count the caller's executor found; `with` are
/// entities a tightening may constrain the answers by (the question's other
/// entities).
pub fn repair(
    kg: &Kg<'_>,
    query: &Query,
    total: usize,
    with: &[u32],
    exec: &ExecOptions,
    opts: &RepairOptions,
) -> Result<Option<RepairReport>, RepairError> {
    if total == 0 {
        relax(kg, query, exec, opts).map(Some)
    } else if opts.tighten && total > opts.max_answers {
        tighten(kg, query, with, exec, opts).map(Some)
    } else {
        Ok(None)
    }
}

/// [`repair`] of DSL text.
pub fn repair_text(
    kg: &Kg<'_>,
    text: &str,
    total: usize,
    with: &[u32],
    limits: &ParseLimits,
    exec: &ExecOptions,
    opts: &RepairOptions,
) -> Result<Option<RepairReport>, RepairError> {
    let query = parse_with(text, limits).map_err(RepairError::Invalid)?;
    repair(kg, &query, total, with, exec, opts)
}

/// The search hit a limit.
#[derive(Debug)]
pub(crate) struct Stop;

/// Evaluates candidates under one budget and deadline.
pub(crate) struct Search<'k, 'a> {
    pub kg: &'k Kg<'a>,
    exec: ExecOptions,
    budget: u64,
    pub visits: u64,
    pub candidates: usize,
    max_candidates: usize,
    pub exhausted: bool,
    started: Instant,
    /// What a candidate's text must parse within: no size limit (the
    /// original passed the caller's), a depth bound for the recursion.
    check: ParseLimits,
    /// Range profiles by (relation, inverse), computed once per search.
    profiles: HashMap<(u32, bool), Rc<profile::Profile>>,
}

impl<'k, 'a> Search<'k, 'a> {
    /// A search that repairs `query`.
    pub fn new(
        kg: &'k Kg<'a>,
        query: &Query,
        exec: &ExecOptions,
        opts: &RepairOptions,
    ) -> Search<'k, 'a> {
        let started = Instant::now();
        let mut exec = exec.clone();
        exec.executor = Executor::Symbolic;
        exec.max_paths = 0;
        let own = started.checked_add(opts.time_limit);
        exec.deadline = match (exec.deadline, own) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if exec.exclude_anchors {
            exec.exclude.extend(topic(kg, query));
            exec.exclude.sort_unstable();
            exec.exclude.dedup();
        }
        Search {
            kg,
            budget: exec.max_edge_visits.min(opts.max_edge_visits),
            exec,
            visits: 0,
            candidates: 0,
            max_candidates: opts.max_candidates,
            exhausted: false,
            started,
            check: ParseLimits {
                max_len: usize::MAX,
                max_nodes: usize::MAX,
                // Tightening adds one level; the default is the parser's.
                max_depth: (query.depth() + 2).max(ParseLimits::default().max_depth),
            },
            profiles: HashMap::new(),
        }
    }

    fn stop(&mut self) -> Stop {
        self.exhausted = true;
        Stop
    }

    /// Counts `edges` visits against the budget and checks the deadline.
    pub fn charge(&mut self, edges: usize) -> Result<(), Stop> {
        self.visits = self.visits.saturating_add(edges as u64);
        let late = self.exec.deadline.is_some_and(|d| Instant::now() > d);
        if self.visits > self.budget || late {
            return Err(self.stop());
        }
        Ok(())
    }

    /// Binds and runs `q` with the symbolic executor, returning its `top_k`
    /// best answers (never the topic); `Ok(None)` when `q` is not a valid
    /// query of this graph.
    pub fn run(&mut self, q: &Query, top_k: usize) -> Result<Option<Answers>, Stop> {
        self.run_with(q, top_k, true)
    }

    /// [`Search::run`] of a part of the query, whose answers are the
    /// sources of a projection: the topic among them (the anchor itself,
    /// first of all) is kept.
    pub fn sources(&mut self, q: &Query, top_k: usize) -> Result<Option<Answers>, Stop> {
        self.run_with(q, top_k, false)
    }

    fn run_with(
        &mut self,
        q: &Query,
        top_k: usize,
        exclude: bool,
    ) -> Result<Option<Answers>, Stop> {
        let text = q.to_string();
        // Candidates are built as trees: check that their text is valid DSL.
        if parse_with(&text, &self.check).is_err() {
            return Ok(None);
        }
        let Ok(plan) = crate::bind::bind(self.kg, q, &text) else {
            return Ok(None);
        };
        let mut o = self.exec.clone();
        o.top_k = top_k;
        if !exclude {
            o.exclude.clear();
        }
        o.max_edge_visits = self.budget.saturating_sub(self.visits);
        match execute(self.kg, &plan, &o) {
            Ok(a) => {
                self.visits = self.visits.saturating_add(a.edge_visits);
                Ok(Some(a))
            }
            Err(ExecError::Budget { .. } | ExecError::Timeout) => {
                self.visits = self.visits.max(self.budget);
                Err(self.stop())
            }
            Err(_) => Ok(None),
        }
    }

    /// [`Search::run`] of a new candidate, counted against `max_candidates`.
    pub fn candidate(&mut self, q: &Query, top_k: usize) -> Result<Option<Answers>, Stop> {
        if self.candidates >= self.max_candidates {
            return Err(self.stop());
        }
        self.candidates += 1;
        self.run(q, top_k)
    }

    /// The range profile of `relation` (see [`profile`]).
    pub fn profile(&mut self, relation: u32, inverse: bool) -> Result<Rc<profile::Profile>, Stop> {
        if let Some(p) = self.profiles.get(&(relation, inverse)) {
            return Ok(p.clone());
        }
        let p = Rc::new(profile::range_profile(self, relation, inverse)?);
        self.profiles.insert((relation, inverse), p.clone());
        Ok(p)
    }

    pub fn ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1e3
    }

    /// A report with the search's counters.
    pub fn report(
        &self,
        kind: RepairKind,
        original: &Query,
        before: usize,
        best: Option<(&Query, &[String], usize)>,
    ) -> RepairReport {
        RepairReport {
            kind,
            original: original.to_string(),
            repaired: best.map(|b| b.0.to_string()),
            edits: best.map(|b| b.1.to_vec()).unwrap_or_default(),
            answers_before: before,
            answers_after: best.map_or(before, |b| b.2),
            candidates: self.candidates,
            edge_visits: self.visits,
            exhausted: self.exhausted,
            ms: self.ms(),
            excluded: self.exec.exclude.clone(),
        }
    }
}

/// Entities that share a name with an anchor looked up at most.
const MAX_TWINS: usize = 64;

/// The topic of `query`: its anchor entities, and the entities named like
/// an anchor (the same normalized name or alias) that share an edge with
/// it, such as an RDF resource and the literal value of its name, or the
/// other way round. Sorted; empty when `query` does not bind.
pub fn topic(kg: &Kg<'_>, query: &Query) -> Vec<u32> {
    let Ok(plan) = crate::bind::bind(kg, query, &query.to_string()) else {
        return Vec::new();
    };
    let anchors = plan.anchors(plan.root());
    let mut out = anchors.clone();
    for &a in &anchors {
        let Some(name) = kg.entity_name(a) else {
            continue;
        };
        let key = normalize(name);
        if key.is_empty() {
            continue;
        }
        for p in kg.lookup_normalized(&key).iter().take(MAX_TWINS) {
            if p.entity != a && adjacent(kg, a, p.entity) {
                out.push(p.entity);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether an edge joins `a` and `b`, either way (read from the one with
/// fewer edges).
fn adjacent(kg: &Kg<'_>, a: u32, b: u32) -> bool {
    let degree = |e: u32| kg.out.degree(e) + kg.inc.degree(e);
    let (from, to) = if degree(a) <= degree(b) {
        (a, b)
    } else {
        (b, a)
    };
    [kg.out, kg.inc]
        .iter()
        .any(|csr| csr.edges(from).1.contains(&to))
}

/// Evaluates the original query; an invalid one is an error.
pub(crate) fn original(
    search: &mut Search<'_, '_>,
    query: &Query,
    top_k: usize,
) -> Result<Option<Answers>, RepairError> {
    let text = query.to_string();
    crate::bind::bind(search.kg, query, &text).map_err(RepairError::Invalid)?;
    Ok(search.run(query, top_k).ok().flatten())
}

/// The child of a node at `i`: a projection's input, an operand.
pub(crate) fn child(q: &Query, i: usize) -> Option<&Query> {
    match q {
        Query::Entity { .. } => None,
        Query::Project { input, .. } => (i == 0).then_some(&**input),
        Query::Not { operand, .. } => (i == 0).then_some(&**operand),
        Query::And { operands, .. } | Query::Or { operands, .. } => operands.get(i),
    }
}

/// `q` with the node at `path` replaced by `new`.
pub(crate) fn replace_at(q: &Query, path: &[usize], new: &Query) -> Option<Query> {
    let Some((&i, rest)) = path.split_first() else {
        return Some(new.clone());
    };
    Some(match q {
        Query::Entity { .. } => return None,
        Query::Project { input, relation } if i == 0 => Query::Project {
            input: Box::new(replace_at(input, rest, new)?),
            relation: relation.clone(),
        },
        Query::Not { operand, span } if i == 0 => Query::Not {
            operand: Box::new(replace_at(operand, rest, new)?),
            span: *span,
        },
        Query::And { operands, span } | Query::Or { operands, span } => {
            let mut ops = operands.clone();
            let slot = ops.get_mut(i)?;
            *slot = replace_at(slot, rest, new)?;
            match q {
                Query::And { .. } => Query::And {
                    operands: ops,
                    span: *span,
                },
                _ => Query::Or {
                    operands: ops,
                    span: *span,
                },
            }
        }
        _ => return None,
    })
}

/// How a relation is written: its name, or `name_inv` for the inverse
/// (`None` when the graph has a relation of that name, so `_inv` would not
/// mean the inverse).
pub(crate) fn relation_text(kg: &Kg<'_>, relation: u32, inverse: bool) -> Option<String> {
    let name = kg.relation_name(relation)?;
    if !inverse {
        return Some(name.to_string());
    }
    let inv = format!("{name}{INVERSE_SUFFIX}");
    kg.relation_id(&inv).is_none().then_some(inv)
}

/// `entity -> relation` as a tree: the entity by name when its name binds
/// back to it, else by `#id`.
pub(crate) fn projection(kg: &Kg<'_>, entity: u32, relation: String) -> Query {
    let entity = match kg.entity_name(entity) {
        Some(n) if kg.entity_id(n) == Some(entity) => EntityRef::Name(n.to_string()),
        _ => EntityRef::Id(entity),
    };
    Query::Project {
        input: Box::new(Query::Entity {
            entity,
            span: Span::default(),
        }),
        relation: RelationRef {
            name: relation,
            span: Span::default(),
        },
    }
}
