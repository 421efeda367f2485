//! The `sparql_store` executor: a bound plan rendered as SPARQL
//! (`kgbox_query::render`), sent to an existing graph store over the
//! SPARQL 1.1 Protocol ([`client`]), the solutions mapped back to entity
//! ids (`kgbox_query::translate::iri`) and turned into the symbolic
//! executor's answers ([`derive`](mod@derive)): same members, scores,
//! order and provenance, `edge_visits` 0 (the store's work is not visible
//! here).
//!
//! The store holds the bundle's graph as `kgbox-pack export` writes it (the
//! IRIs the renderer uses). A query is one or two requests:
//! - anchors excluded (the default): `SELECT DISTINCT ?x` for the answers
//!   (every member scores 1, ranked by id); then, when paths are asked
//!   for, every variable of the top answers' derivations (`VALUES ?x`),
//!   from which the paths are read as the executor finds them;
//! - anchors kept: every variable of every derivation, from which the
//!   scores (anchors at `ANCHOR_WEIGHT`) and paths are computed. A NOT is
//!   refused then: the executor keeps answers a partly-member NOT operand
//!   only weakens, which `MINUS` cannot express.
//!
//! Answers the bundle cannot name (the store holds more than the export)
//! are left out and logged once.

pub mod client;
pub mod derive;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use kgbox_bundle::Kg;
use kgbox_query::exec::Answer;
use kgbox_query::plan::{Node, Plan};
use kgbox_query::render::{sparql_pattern, RenderOptions, SparqlPattern, ANSWER_VAR};
use kgbox_query::translate::iri;
use kgbox_query::{
    Answers, ExecError, ExecOptions, ParseLimits, QueryError, RemoteFailure, Timings,
};
use oxrdf::Term;

use crate::config::SparqlStoreConfig;
use client::Client;
use derive::{Derivations, Rows};

/// The store a bundle's `sparql_store` queries go to, or why there is none.
pub struct SparqlStore {
    bundle: String,
    client: Result<Client, String>,
    /// Answers the bundle cannot name were seen (logged once).
    warned_unknown: AtomicBool,
}

impl SparqlStore {
    /// The store configured for the bundle named `bundle` (the manifest's
    /// name): `[sparql_store.bundles.NAME]`, else `[sparql_store]`.
    pub fn for_bundle(cfg: &SparqlStoreConfig, bundle: &str) -> SparqlStore {
        let client = match cfg.for_bundle(bundle) {
            Ok(Some(settings)) => Client::new(settings)
                .map_err(|e| format!("the SPARQL store of bundle {bundle:?} cannot be used: {e}")),
            Ok(None) => Err(format!(
                "no SPARQL store is configured for bundle {bundle:?} (sparql_store.endpoint)"
            )),
            Err(e) => Err(format!(
                "the SPARQL store of bundle {bundle:?} cannot be used: {e}"
            )),
        };
        SparqlStore {
            bundle: bundle.to_string(),
            client,
            warned_unknown: AtomicBool::new(false),
        }
    }

    /// The endpoint, when a store is configured and usable.
    pub fn endpoint(&self) -> Option<&str> {
        self.client.as_ref().ok().map(Client::endpoint)
    }

    /// Why no store can be used (`None` when one can).
    pub fn unavailable(&self) -> Option<&str> {
        self.client.as_ref().err().map(String::as_str)
    }

    fn client(&self) -> Result<&Client, ExecError> {
        self.client.as_ref().map_err(|e| ExecError::Remote {
            failure: RemoteFailure::NotConfigured,
            message: e.clone(),
        })
    }
}

/// Parses `text`, binds it to `kg` and runs it on `store` (see the module
/// docs); `opts.executor` is not looked at.
pub fn run_query(
    store: Option<&SparqlStore>,
    kg: &Kg<'_>,
    text: &str,
    limits: &ParseLimits,
    opts: &ExecOptions,
) -> Result<(Answers, Timings), QueryError> {
    let t0 = Instant::now();
    let query = kgbox_query::parse_with(text, limits).map_err(QueryError::Invalid)?;
    let t1 = Instant::now();
    let plan = kgbox_query::bind::bind(kg, &query, text).map_err(QueryError::Invalid)?;
    let t2 = Instant::now();
    let store = store.ok_or_else(|| ExecError::Remote {
        failure: RemoteFailure::NotConfigured,
        message: "no SPARQL store is configured here (sparql_store.endpoint)".into(),
    })?;
    let answers = execute(store, kg, &plan, opts)?;
    let t3 = Instant::now();
    Ok((
        answers,
        Timings {
            parse: t1 - t0,
            bind: t2 - t1,
            execute: t3 - t2,
        },
    ))
}

/// Runs a bound plan on `store`: the symbolic executor's [`Answers`].
pub fn execute(
    store: &SparqlStore,
    kg: &Kg<'_>,
    plan: &Plan,
    opts: &ExecOptions,
) -> Result<Answers, ExecError> {
    let client = store.client()?;
    let render = RenderOptions {
        exclude_anchors: opts.exclude_anchors,
        ..RenderOptions::default()
    };
    let pattern = sparql_pattern(kg, plan, &render)
        .map_err(|e| ExecError::BadPlan(format!("cannot render the plan as SPARQL: {e}")))?;
    let run = Run {
        store,
        client,
        kg,
        plan,
        render: &render,
        pattern: &pattern,
        deadline: opts.deadline,
    };
    if opts.exclude_anchors {
        run.anchors_excluded(opts)
    } else {
        run.anchors_kept(opts)
    }
}

struct Run<'a, 'k> {
    store: &'a SparqlStore,
    client: &'a Client,
    kg: &'a Kg<'k>,
    plan: &'a Plan,
    render: &'a RenderOptions,
    pattern: &'a SparqlPattern,
    deadline: Option<Instant>,
}

impl Run<'_, '_> {
    fn anchors_excluded(&self, opts: &ExecOptions) -> Result<Answers, ExecError> {
        let text = format!(
            "SELECT DISTINCT {ANSWER_VAR} WHERE {{ {}}} LIMIT {}",
            self.pattern.body,
            self.limit()
        );
        let var = &ANSWER_VAR[1..];
        let reply = self.client.select(&text, &[var], self.deadline)?;
        let mut terms: HashMap<u32, Term> = HashMap::new();
        let mut unknown = 0usize;
        for term in reply.into_iter().filter_map(|mut r| r.pop().flatten()) {
            match self.entity(&term) {
                Some(id) => {
                    terms.insert(id, term);
                }
                None => unknown += 1,
            }
        }
        self.note_unknown(unknown);
        let total = terms.len();
        let mut ids: Vec<u32> = terms.keys().copied().collect();
        ids.sort_unstable();
        ids.truncate(opts.top_k);
        let derivations = if opts.max_paths > 0 && !ids.is_empty() {
            let values: Vec<String> = ids
                .iter()
                .filter_map(|id| terms.get(id).map(ToString::to_string))
                .collect();
            let head = format!("VALUES {ANSWER_VAR} {{ {} }} ", values.join(" "));
            match self.derivations(&head) {
                Ok(rows) => Some(rows),
                // The answers stand; only their provenance is too large.
                Err(ExecError::Remote {
                    failure: RemoteFailure::TooLarge,
                    message,
                }) => {
                    tracing::warn!(%message, "answers from the SPARQL store without paths");
                    None
                }
                Err(e) => return Err(e),
            }
        } else {
            None
        };
        let index = derivations
            .as_ref()
            .map(|rows| Derivations::new(self.plan, rows, false, true));
        let answers = ids
            .into_iter()
            .map(|entity| Answer {
                entity,
                score: 1.0,
                paths: index
                    .as_ref()
                    .map(|d| d.proofs(self.plan.root(), entity, opts.max_paths))
                    .unwrap_or_default(),
            })
            .collect();
        Ok(Answers {
            answers,
            total,
            edge_visits: 0,
        })
    }

    fn anchors_kept(&self, opts: &ExecOptions) -> Result<Answers, ExecError> {
        if self.plan.nodes.iter().any(|n| matches!(n, Node::Not(_))) {
            return Err(ExecError::Remote {
                failure: RemoteFailure::Unsupported,
                message: "the sparql_store executor cannot keep anchors in a query with NOT: SPARQL's MINUS removes the answers that the executor only weakens (leave include_anchors off)".into(),
            });
        }
        let rows = self.derivations("")?;
        let d = Derivations::new(self.plan, &rows, true, false);
        let members = d.root_scores();
        let total = members.len();
        let mut ranked = members;
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(opts.top_k);
        let answers = ranked
            .into_iter()
            .map(|(entity, score)| Answer {
                entity,
                score,
                paths: d.proofs(self.plan.root(), entity, opts.max_paths),
            })
            .collect();
        Ok(Answers {
            answers,
            total,
            edge_visits: 0,
        })
    }

    /// Every variable of the pattern's derivations (after `head`, e.g. a
    /// `VALUES` of answers), as entity ids; rows naming an entity the
    /// bundle lacks are left out.
    fn derivations(&self, head: &str) -> Result<Rows, ExecError> {
        let mut vars: Vec<&str> = Vec::new();
        let mut node_col = Vec::with_capacity(self.pattern.vars.len());
        for v in &self.pattern.vars {
            node_col.push(v.as_deref().map(|v| {
                let name = v.trim_start_matches('?');
                match vars.iter().position(|&w| w == name) {
                    Some(i) => i,
                    None => {
                        vars.push(name);
                        vars.len() - 1
                    }
                }
            }));
        }
        let select: Vec<String> = vars.iter().map(|v| format!("?{v}")).collect();
        let text = format!(
            "SELECT DISTINCT {} WHERE {{ {head}{}}} LIMIT {}",
            select.join(" "),
            self.pattern.body,
            self.limit()
        );
        let reply = self.client.select(&text, &vars, self.deadline)?;
        let mut unknown = 0usize;
        let mut rows = Vec::with_capacity(reply.len());
        'rows: for r in reply {
            let mut ids = Vec::with_capacity(r.len());
            for term in r {
                match term {
                    None => ids.push(None),
                    Some(t) => match self.entity(&t) {
                        Some(id) => ids.push(Some(id)),
                        None => {
                            unknown += 1;
                            continue 'rows;
                        }
                    },
                }
            }
            rows.push(ids);
        }
        self.note_unknown(unknown);
        Ok(Rows { node_col, rows })
    }

    /// The `LIMIT` that tells "too many" apart: one past `max_rows`.
    fn limit(&self) -> usize {
        self.client.max_rows().saturating_add(1)
    }

    /// The bundle's entity for a term of the store's reply.
    fn entity(&self, term: &Term) -> Option<u32> {
        match term {
            Term::NamedNode(n) => iri::entity_by_iri(self.kg, n.as_str(), self.render.namespaces()),
            Term::Literal(l) => iri::entity_by_literal(self.kg, l.value()),
            _ => None,
        }
    }

    fn note_unknown(&self, count: usize) {
        if count > 0 && !self.store.warned_unknown.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                bundle = %self.store.bundle,
                endpoint = self.client.endpoint(),
                count,
                "the SPARQL store answered with entities this bundle does not have: they are left out (is the store loaded with this bundle's `kgbox-pack export`?)"
            );
        }
    }
}
