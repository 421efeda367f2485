//! The symbolic executor: evaluates a [`Plan`] bottom-up over fuzzy sets,
//! then ranks the root's members and explains the top ones with provenance
//! ([`crate::proofs`]).
//!
//! Semantics (see `docs/query-language.md`): an anchor is a singleton with
//! membership 1; a projection gives each reached entity the maximum
//! membership of its sources; `AND` is the product t-norm, `OR` the
//! probabilistic sum, `NOT` (inside `AND`) multiplies by `1 - x`. With
//! `exclude_anchors`, a projection never returns the anchor entities of its
//! own input, so multi-hop paths never pass through their start again;
//! without it, it returns them at [`ANCHOR_WEIGHT`] times their membership,
//! so an answer reached only through the start ranks below one reached
//! otherwise.
//!
//! Neural and hybrid execution (see [`Executor`]): a [`Projector`] (the
//! ULTRA entity model over a SEPPR subgraph, in `kgbox-neural`) replaces or
//! complements each projection; the fuzzy logic around it is the same.
//!
//! High-degree guard (after KGFR's pruning of hub nodes): inside an `AND`,
//! an operand `q -> r` whose expansion would touch more than `fanout_limit`
//! edges is not expanded. The other operands are evaluated first, and the
//! hub operand is then *probed* for each of their candidates: a candidate
//! `t` gets the best membership among its own `r`-neighbours (read from the
//! reverse adjacency, usually a handful) that are in `q`. Memory is bounded by
//! the dense representation (one `f32` per entity), and every edge visit
//! counts against `max_edge_visits`, so an abusive query ends with an error
//! instead of running away.

use std::time::Instant;

use kgbox_bundle::kg::Csr;
use kgbox_bundle::Kg;

use crate::fusion::Fusion;
use crate::fuzzy::FuzzySet;
use crate::plan::{Node, Plan};
use crate::proofs::{prove, ProofSource};

/// How projections are computed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Executor {
    /// Follow the KG's edges only.
    #[default]
    Symbolic,
    /// The neural projector's scores only.
    Neural,
    /// Both, over the whole plan, fused per entity by the projector's
    /// [`Fusion`] (calibrated at pack time when the bundle has one; by
    /// default what the KG states first, each group by the neural score).
    Hybrid,
    /// The plan rendered as SPARQL and run on an external graph store
    /// (the runtime's `sparql_store` backend): the symbolic executor's
    /// answers, computed elsewhere. [`execute_with`] refuses it.
    #[serde(rename = "sparql_store")]
    SparqlStore,
}

impl Executor {
    /// The executors that run in process, over the bundle's graph.
    pub const ALL: [Executor; 3] = [Executor::Symbolic, Executor::Neural, Executor::Hybrid];

    pub fn name(self) -> &'static str {
        match self {
            Executor::Symbolic => "symbolic",
            Executor::Neural => "neural",
            Executor::Hybrid => "hybrid",
            Executor::SparqlStore => "sparql_store",
        }
    }
}

impl std::str::FromStr for Executor {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Executor::ALL
            .into_iter()
            .chain([Executor::SparqlStore])
            .find(|e| e.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown executor {s:?} (expected symbolic, neural, hybrid or sparql_store)"
                )
            })
    }
}

impl std::fmt::Display for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A learned relation projection: `x -> relation` as a fuzzy set of scores
/// in `[0, 1]`.
pub trait Projector: Sync {
    fn project(&self, x: &FuzzySet, relation: u32, inverse: bool) -> Result<FuzzySet, String>;

    /// How `hybrid` fuses this projector's answers with the graph's.
    fn fusion(&self) -> Fusion {
        Fusion::default()
    }
}

/// Membership factor of a projection's own anchors when they are not
/// excluded (`exclude_anchors: false`).
pub const ANCHOR_WEIGHT: f32 = 0.5;

/// Knobs of one execution.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// Answers to return.
    pub top_k: usize,
    /// Provenance paths per answer (0: none).
    pub max_paths: usize,
    /// Projections never return the anchors of their own input (otherwise
    /// they return them at [`ANCHOR_WEIGHT`] times their membership).
    pub exclude_anchors: bool,
    /// Inside `AND`, operands expanding to more edges than this are probed.
    pub fanout_limit: usize,
    /// Edge visits allowed per query.
    pub max_edge_visits: u64,
    /// Abandon the query after this instant.
    pub deadline: Option<Instant>,
    /// How projections are computed; anything but `Symbolic` needs a [`Projector`].
    pub executor: Executor,
    /// Entities never returned, whatever their membership: removed from the
    /// root's set before it is counted and ranked. Query repair fills it
    /// with the question's topic ([`crate::repair::RepairReport::excluded`]),
    /// so that a repaired query cannot answer with what it was asked about.
    pub exclude: Vec<u32>,
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            top_k: 10,
            max_paths: 3,
            exclude_anchors: true,
            fanout_limit: 10_000,
            max_edge_visits: 20_000_000,
            deadline: None,
            executor: Executor::Symbolic,
            exclude: Vec::new(),
        }
    }
}

pub use crate::proofs::Triple;

#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub entity: u32,
    pub score: f32,
    /// Each path is the list of triples that supports the answer from its anchors.
    pub paths: Vec<Vec<Triple>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Answers {
    pub answers: Vec<Answer>,
    /// Entities with membership > 0 at the root.
    pub total: usize,
    pub edge_visits: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    #[error("the query touched more than {limit} edges; narrow it (or raise the limit)")]
    Budget { limit: u64 },
    #[error("the query ran past its deadline")]
    Timeout,
    #[error("invalid plan: {0}")]
    BadPlan(String),
    #[error("the {0} executor needs a bundle with a neural query model")]
    NoModel(Executor),
    #[error("the neural projection failed: {0}")]
    Neural(String),
    #[error(
        "the {0} executor does not run in process: the runtime sends its queries to the store"
    )]
    NotInProcess(Executor),
    /// An executor that runs elsewhere (`sparql_store`) failed; the message
    /// names the endpoint.
    #[error("{message}")]
    Remote {
        failure: RemoteFailure,
        message: String,
    },
}

/// How a query sent to an external store failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteFailure {
    /// No reply within the store's timeout.
    Timeout,
    /// The store could not be reached (connection refused, DNS, reset).
    Unavailable,
    /// The store answered with an error status or results that do not parse.
    BadReply,
    /// The results are larger than the configured bound.
    TooLarge,
    /// The query needs something the store's semantics cannot give.
    Unsupported,
    /// No store is configured for the bundle.
    NotConfigured,
}

struct Run<'k, 'a> {
    kg: &'k Kg<'a>,
    plan: &'k Plan,
    opts: &'k ExecOptions,
    projector: Option<&'k dyn Projector>,
    /// `Symbolic` or `Neural`: how this run computes projections.
    mode: Executor,
    n: usize,
    visits: u64,
    sets: Vec<Option<FuzzySet>>,
}

/// Evaluates `plan` and returns the top answers with provenance.
pub fn execute(kg: &Kg<'_>, plan: &Plan, opts: &ExecOptions) -> Result<Answers, ExecError> {
    execute_with(kg, plan, opts, None)
}

/// [`execute`] with a neural projector for the `neural` and `hybrid` executors.
pub fn execute_with(
    kg: &Kg<'_>,
    plan: &Plan,
    opts: &ExecOptions,
    projector: Option<&dyn Projector>,
) -> Result<Answers, ExecError> {
    if plan.nodes.is_empty() {
        return Err(ExecError::BadPlan("empty plan".into()));
    }
    if opts.executor == Executor::SparqlStore {
        return Err(ExecError::NotInProcess(opts.executor));
    }
    if opts.executor != Executor::Symbolic && projector.is_none() {
        return Err(ExecError::NoModel(opts.executor));
    }
    let root = plan.root();
    let run_with = |mode: Executor, visits: u64| {
        let mut run = Run {
            kg,
            plan,
            opts,
            projector,
            mode,
            n: kg.entity_count(),
            visits,
            sets: vec![None; plan.nodes.len()],
        };
        run.eval(root, None).map(|set| (run, set))
    };
    let (mut run, set) = match (opts.executor, projector) {
        (Executor::Hybrid, Some(p)) => {
            // Provenance comes from the symbolic run: paths the graph states.
            let (mut stated_run, stated) = run_with(Executor::Symbolic, 0)?;
            let (scored_run, scored) = run_with(Executor::Neural, stated_run.visits)?;
            stated_run.visits = scored_run.visits;
            let fused = p.fusion().fuse(&stated, &scored, kg.entity_count());
            (stated_run, fused)
        }
        (mode, _) => run_with(mode, 0)?,
    };
    let mut set = set;
    if !opts.exclude.is_empty() {
        let mut exclude = opts.exclude.clone();
        exclude.sort_unstable();
        exclude.dedup();
        set.remove_all(&exclude);
    }
    let total = set.len();
    let mut ranked: Vec<(u32, f32)> = set.iter().collect();
    let k = opts.top_k.min(ranked.len());
    let by_score = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if k > 0 && k < ranked.len() {
        ranked.select_nth_unstable_by(k - 1, by_score);
    }
    ranked.truncate(k);
    ranked.sort_unstable_by(by_score);
    run.sets[root] = Some(set);
    let answers = ranked
        .into_iter()
        .map(|(entity, score)| Answer {
            entity,
            score,
            paths: if opts.max_paths > 0 {
                prove(&run, root, entity, opts.max_paths)
            } else {
                Vec::new()
            },
        })
        .collect();
    Ok(Answers {
        answers,
        total,
        edge_visits: run.visits,
    })
}

impl<'a> Run<'_, 'a> {
    fn charge(&mut self, edges: usize) -> Result<(), ExecError> {
        self.visits += edges as u64;
        if self.visits > self.opts.max_edge_visits {
            return Err(ExecError::Budget {
                limit: self.opts.max_edge_visits,
            });
        }
        if let Some(d) = self.opts.deadline {
            if Instant::now() > d {
                return Err(ExecError::Timeout);
            }
        }
        Ok(())
    }

    /// The adjacency to follow for a projection, and the one to read it back.
    fn csr(&self, inverse: bool) -> (Csr<'a>, Csr<'a>) {
        if inverse {
            (self.kg.inc, self.kg.out)
        } else {
            (self.kg.out, self.kg.inc)
        }
    }

    /// Evaluates `node`; with `within`, only members of that set matter (for probing).
    fn eval(&mut self, node: usize, within: Option<&FuzzySet>) -> Result<FuzzySet, ExecError> {
        let set = match self.plan.nodes.get(node).cloned() {
            None => return Err(ExecError::BadPlan(format!("node {node} out of range"))),
            Some(Node::Anchor { entity }) => FuzzySet::singleton(entity),
            Some(Node::Project {
                input,
                relation,
                inverse,
            }) => {
                // The AND pre-pass may have evaluated the input already.
                let x = match self.sets[input].take() {
                    Some(x) => x,
                    None => self.eval(input, None)?,
                };
                let out = match self.mode {
                    // Probe when there are fewer candidates than edges to expand.
                    Executor::Symbolic => match within {
                        Some(candidates)
                            if candidates.len() < self.expansion(&x, relation, inverse) =>
                        {
                            self.probe(&x, relation, inverse, candidates)?
                        }
                        _ => self.project(&x, relation, inverse)?,
                    },
                    Executor::Neural | Executor::Hybrid | Executor::SparqlStore => {
                        self.neural(&x, relation, inverse)?
                    }
                };
                self.sets[input] = Some(x);
                let mut out = out;
                let anchors = self.plan.anchors(input);
                if self.opts.exclude_anchors {
                    out.remove_all(&anchors);
                } else {
                    out.scale_all(&anchors, ANCHOR_WEIGHT);
                }
                out
            }
            Some(Node::And(ops)) => self.and(&ops, within)?,
            Some(Node::Or(ops)) => {
                let mut acc = FuzzySet::default();
                for op in ops {
                    let s = self.eval(op, within)?;
                    acc = acc.or(&s, self.n);
                    self.sets[op] = Some(s);
                }
                acc
            }
            Some(Node::Not(_)) => {
                return Err(ExecError::BadPlan("NOT outside AND".into()));
            }
        };
        Ok(set)
    }

    fn neural(
        &mut self,
        x: &FuzzySet,
        relation: u32,
        inverse: bool,
    ) -> Result<FuzzySet, ExecError> {
        let projector = self.projector.ok_or(ExecError::NoModel(self.mode))?;
        if let Some(d) = self.opts.deadline {
            if Instant::now() > d {
                return Err(ExecError::Timeout);
            }
        }
        projector
            .project(x, relation, inverse)
            .map_err(ExecError::Neural)
    }

    fn expansion(&self, x: &FuzzySet, relation: u32, inverse: bool) -> usize {
        let (fwd, _) = self.csr(inverse);
        x.iter()
            .map(|(s, _)| fwd.neighbours(s, relation).len())
            .fold(0usize, usize::saturating_add)
    }

    fn project(
        &mut self,
        x: &FuzzySet,
        relation: u32,
        inverse: bool,
    ) -> Result<FuzzySet, ExecError> {
        let (fwd, _) = self.csr(inverse);
        let mut pairs = Vec::new();
        for (s, w) in x.iter() {
            let targets = fwd.neighbours(s, relation);
            self.charge(targets.len())?;
            pairs.extend(targets.iter().map(|&t| (t, w)));
        }
        Ok(FuzzySet::from_pairs(pairs, self.n))
    }

    /// `x -> relation` restricted to `candidates`, read from each candidate's
    /// reverse adjacency instead of expanding `x`.
    fn probe(
        &mut self,
        x: &FuzzySet,
        relation: u32,
        inverse: bool,
        candidates: &FuzzySet,
    ) -> Result<FuzzySet, ExecError> {
        let (_, back) = self.csr(inverse);
        let mut pairs = Vec::new();
        for (t, _) in candidates.iter() {
            let sources = back.neighbours(t, relation);
            self.charge(sources.len())?;
            let best = sources.iter().map(|&s| x.get(s)).fold(0.0f32, f32::max);
            if best > 0.0 {
                pairs.push((t, best));
            }
        }
        Ok(FuzzySet::from_pairs(pairs, self.n))
    }

    fn and(&mut self, ops: &[usize], within: Option<&FuzzySet>) -> Result<FuzzySet, ExecError> {
        // Positive operands: smallest expansion first, hubs (over fanout_limit)
        // last, so they are probed against the candidates of the others.
        let mut cheap: Vec<(usize, usize)> = Vec::new();
        let mut hubs = Vec::new();
        let mut negated = Vec::new();
        for &op in ops {
            match self.plan.nodes.get(op) {
                Some(Node::Not(inner)) => negated.push((op, *inner)),
                Some(Node::Project {
                    input,
                    relation,
                    inverse,
                }) => {
                    let (input, relation, inverse) = (*input, *relation, *inverse);
                    let x = self.eval(input, None)?;
                    let size = self.expansion(&x, relation, inverse);
                    self.sets[input] = Some(x);
                    if size > self.opts.fanout_limit {
                        hubs.push(op);
                    } else {
                        cheap.push((size, op));
                    }
                }
                Some(_) => cheap.push((usize::MAX, op)),
                None => return Err(ExecError::BadPlan(format!("node {op} out of range"))),
            }
        }
        cheap.sort_unstable();
        if cheap.is_empty() && !hubs.is_empty() {
            cheap.push((0, hubs.remove(0)));
        }
        if cheap.is_empty() {
            return Err(ExecError::BadPlan("AND without a positive operand".into()));
        }
        let mut acc: Option<FuzzySet> = within.cloned();
        for op in cheap.into_iter().map(|c| c.1).chain(hubs) {
            let s = self.eval(op, acc.as_ref())?;
            acc = Some(match acc {
                Some(a) => a.and(&s, false, self.n),
                None => s.clone(),
            });
            self.sets[op] = Some(s);
            if acc.as_ref().is_some_and(FuzzySet::is_empty) {
                break;
            }
        }
        let mut acc = acc.unwrap_or_default();
        for (op, inner) in negated {
            let s = self.eval(inner, Some(&acc))?;
            acc = acc.and(&s, true, self.n);
            self.sets[inner] = Some(s);
            self.sets[op] = Some(FuzzySet::default());
        }
        Ok(acc)
    }
}

/// Provenance from the evaluated sets: sources from the graph's reverse
/// adjacency, scored by their membership at the projection's input.
impl ProofSource for Run<'_, '_> {
    fn plan(&self) -> &Plan {
        self.plan
    }

    fn scored_sources(
        &self,
        _node: usize,
        input: usize,
        relation: u32,
        inverse: bool,
        entity: u32,
    ) -> Vec<(u32, f32)> {
        let Some(x) = self.sets.get(input).and_then(Option::as_ref) else {
            return Vec::new();
        };
        let (_, back) = self.csr(inverse);
        back.neighbours(entity, relation)
            .iter()
            .map(|&s| (s, x.get(s)))
            .collect()
    }

    fn member(&self, node: usize, entity: u32) -> bool {
        self.sets
            .get(node)
            .and_then(Option::as_ref)
            .is_some_and(|s| s.get(entity) > 0.0)
    }
}
