//! The bundle's graph as an RDF dataset for `spareval`, Oxigraph's SPARQL
//! 1.1 evaluator: every SPARQL query the translator to the DSL cannot
//! express (variable predicates, OPTIONAL, aggregates, CONSTRUCT, ...) is
//! evaluated over the memory-mapped graph itself.
//!
//! A bundle packed from RDF keeps its statements as given
//! (`kgbox_bundle::kg::statements`): then those are the dataset, exactly
//! as the file said (datatypes, languages, blank nodes, label triples,
//! named graphs), each pattern a binary search in one of its four orders.
//!
//! Otherwise (TSV input, or `--no-rdf-statements`) the dataset is the
//! question-answering graph, its terms as `/sparql` writes them
//! ([`iri::entity_term`], [`iri::relation_iri`]): source IRIs where the
//! bundle has them, kgbox's namespaces otherwise, and literal value nodes
//! as plain literals. Display names are kgbox's own: no `rdfs:label`
//! triples are made up. It is the default graph; there are no named
//! graphs. Patterns are answered from the adjacency lists: out-edges when
//! the subject is known, in-edges when the object is, a scan otherwise.
//!
//! No query runs past its deadline. The iterators check it as they go
//! ([`DatasetError::Deadline`]), and so does every copy of a term
//! ([`Bound`]): joins, products and aggregates that pull nothing from the
//! graph copy terms for every row they make, so [`within_deadline`] stops
//! them too (spareval checks its own cancellation only at the dataset).

use std::cell::Cell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::time::Instant;

use kgbox_bundle::kg::statements::{Pattern, Statements, DEFAULT_GRAPH};
use kgbox_bundle::Kg;
use oxrdf::{Literal, NamedNode, Term};
use spareval::{
    InternalQuad, QueryEvaluationError, QueryEvaluator, QueryResults, QueryableDataset,
};
use spargebra::Query;

use crate::translate::iri::{self, EntityTerm, Namespaces};

/// Evaluates a parsed query over the graph (all of SPARQL 1.1 Query; the
/// results are lazy and stop at the dataset's deadline).
pub fn evaluate<'a>(
    dataset: KgDataset<'a>,
    query: &Query,
) -> Result<QueryResults<'a>, QueryEvaluationError> {
    QueryEvaluator::new().prepare(query).execute(dataset)
}

thread_local! {
    /// The deadline of the evaluation running on this thread.
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    /// Copies of terms made on this thread (the clock is read every 1024).
    static COPIES: Cell<u32> = const { Cell::new(0) };
}

/// The unwinding payload of an evaluation stopped at its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PastDeadline;

/// Runs `f` (an evaluation and the reading of its results, on this thread)
/// until `deadline`: past it, the next copy of a term unwinds out of
/// spareval (without the panic hook) and this returns `Err(PastDeadline)`.
pub fn within_deadline<T>(deadline: Instant, f: impl FnOnce() -> T) -> Result<T, PastDeadline> {
    let previous = DEADLINE.replace(Some(deadline));
    let outcome = catch_unwind(AssertUnwindSafe(f));
    DEADLINE.set(previous);
    match outcome {
        Ok(value) => Ok(value),
        Err(payload) if payload.is::<PastDeadline>() => Err(PastDeadline),
        Err(payload) => resume_unwind(payload),
    }
}

/// An RDF term as the evaluator holds it: copying one reads the clock now
/// and then, so that no loop inside spareval outlives the deadline.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Bound(pub Term);

impl Clone for Bound {
    fn clone(&self) -> Bound {
        let n = COPIES.get().wrapping_add(1);
        COPIES.set(n);
        if n.is_multiple_of(1024) && DEADLINE.get().is_some_and(|d| Instant::now() > d) {
            resume_unwind(Box::new(PastDeadline));
        }
        Bound(self.0.clone())
    }
}

/// Why the dataset stopped an evaluation.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("the query ran past its deadline")]
    Deadline,
}

/// The bundle graph, read by `spareval` (cheap to copy).
#[derive(Clone, Copy)]
pub struct KgDataset<'a> {
    kg: &'a Kg<'a>,
    ns: Namespaces<'a>,
    deadline: Option<Instant>,
}

/// Quads of a pattern, lazily; `None` for one that cannot be written.
type Quads<'a> = Box<dyn Iterator<Item = Option<InternalQuad<Bound>>> + 'a>;

/// How often (in edges) the scans look at the clock.
const CLOCK_EVERY: usize = 4096;

impl<'a> KgDataset<'a> {
    pub fn new(kg: &'a Kg<'a>, ns: Namespaces<'a>, deadline: Option<Instant>) -> KgDataset<'a> {
        KgDataset { kg, ns, deadline }
    }

    /// The entity a term names: an IRI (source or kgbox's namespace), or a
    /// literal value node by its lexical form.
    fn entity(&self, term: &Term) -> Option<u32> {
        match term {
            Term::NamedNode(n) => iri::entity_by_iri(self.kg, n.as_str(), self.ns),
            // Only a node written as that literal (not an IRI node of the
            // same name, as every node of a bundle packed from TSV is).
            Term::Literal(l) => iri::entity_by_literal(self.kg, l.value()).filter(|&id| {
                matches!(iri::entity_term(self.kg, id, self.ns), Some(EntityTerm::Literal(v)) if v == l.value())
            }),
            _ => None,
        }
    }

    fn relation(&self, term: &Term) -> Option<u32> {
        match term {
            Term::NamedNode(n) => iri::relation_by_iri(self.kg, n.as_str(), self.ns),
            _ => None,
        }
    }

    fn entity_term(&self, id: u32) -> Option<Term> {
        Some(match iri::entity_term(self.kg, id, self.ns)? {
            EntityTerm::Iri(i) => match NamedNode::new(i) {
                Ok(n) => n.into(),
                Err(e) => Literal::new_simple_literal(e.to_string()).into(),
            },
            EntityTerm::Literal(v) => Literal::new_simple_literal(v).into(),
        })
    }

    fn relation_term(&self, id: u32) -> Option<Term> {
        NamedNode::new(iri::relation_iri(self.kg, id, self.ns)?)
            .ok()
            .map(Term::from)
    }

    /// The quad for edge `s -r-> o`; `None` when a term cannot be written.
    fn quad(&self, s: u32, r: u32, o: u32) -> Option<InternalQuad<Bound>> {
        Some(InternalQuad {
            subject: Bound(self.entity_term(s)?),
            predicate: Bound(self.relation_term(r)?),
            object: Bound(self.entity_term(o)?),
            graph_name: None,
        })
    }

    /// The question-answering graph's quads for a pattern (only the
    /// default graph; a term the graph lacks matches nothing); `None` for
    /// an edge whose terms cannot be written.
    fn graph_quads(
        self,
        [subject, predicate, object]: [Option<&Bound>; 3],
        graph_name: Option<Option<&Bound>>,
    ) -> Quads<'a> {
        let bound = |t: Option<&Bound>, f: &dyn Fn(&Term) -> Option<u32>| match t {
            None => Some(None),
            Some(t) => f(&t.0).map(Some),
        };
        let resolved = match graph_name {
            Some(None) => bound(subject, &|t| self.entity(t)).and_then(|s| {
                let p = bound(predicate, &|t| self.relation(t))?;
                let o = bound(object, &|t| self.entity(t))?;
                Some((s, p, o))
            }),
            _ => None,
        };
        match resolved {
            Some((s, p, o)) => {
                Box::new(self.edges(s, p, o).map(move |(s, r, o)| self.quad(s, r, o)))
            }
            None => Box::new(std::iter::empty()),
        }
    }

    /// The RDF statements' quads for a pattern; `None` for a statement
    /// whose terms do not parse.
    fn statement_quads(
        self,
        st: Statements<'a>,
        terms: [Option<&Bound>; 3],
        graph_name: Option<Option<&Bound>>,
    ) -> Quads<'a> {
        let id = |t: &Bound| st.term_id(&t.0.to_string());
        let [mut subject, mut predicate, mut object] = [None; 3];
        for (slot, term) in [&mut subject, &mut predicate, &mut object]
            .into_iter()
            .zip(terms)
        {
            if let Some(t) = term {
                match id(t) {
                    Some(i) => *slot = Some(i),
                    None => return Box::new(std::iter::empty()),
                }
            }
        }
        let graph = match graph_name {
            None => None,
            Some(None) => Some(DEFAULT_GRAPH),
            Some(Some(g)) => match id(g) {
                Some(g) => Some(g),
                None => return Box::new(std::iter::empty()),
            },
        };
        let pattern = Pattern {
            subject,
            predicate,
            object,
            graph,
        };
        let term = move |i: u32| st.term(i)?.parse::<Term>().ok().map(Bound);
        Box::new(st.matching(pattern).map(move |[s, p, o, g]| {
            Some(InternalQuad {
                subject: term(s)?,
                predicate: term(p)?,
                object: term(o)?,
                graph_name: match g {
                    DEFAULT_GRAPH => None,
                    g => Some(term(g)?),
                },
            })
        }))
    }

    /// Edges `(s, r, o)` matching the bound ids, as a lazy iterator.
    fn edges(
        self,
        s: Option<u32>,
        r: Option<u32>,
        o: Option<u32>,
    ) -> Box<dyn Iterator<Item = (u32, u32, u32)> + 'a> {
        let kg = self.kg;
        let from = move |node: u32, r: Option<u32>| -> Box<dyn Iterator<Item = (u32, u32)> + 'a> {
            match r {
                Some(r) => Box::new(kg.out.neighbours(node, r).iter().map(move |&o| (r, o))),
                None => {
                    let (rels, others) = kg.out.edges(node);
                    Box::new(rels.iter().copied().zip(others.iter().copied()))
                }
            }
        };
        match (s, o) {
            (Some(s), _) => Box::new(
                from(s, r)
                    .filter(move |&(_, x)| o.is_none_or(|o| o == x))
                    .map(move |(r, x)| (s, r, x)),
            ),
            (None, Some(o)) => {
                let incoming: Box<dyn Iterator<Item = (u32, u32)> + 'a> = match r {
                    Some(r) => Box::new(kg.inc.neighbours(o, r).iter().map(move |&x| (r, x))),
                    None => {
                        let (rels, others) = kg.inc.edges(o);
                        Box::new(rels.iter().copied().zip(others.iter().copied()))
                    }
                };
                Box::new(incoming.map(move |(r, x)| (x, r, o)))
            }
            (None, None) => {
                let nodes = u32::try_from(kg.entity_count()).unwrap_or(u32::MAX);
                Box::new((0..nodes).flat_map(move |n| from(n, r).map(move |(r, x)| (n, r, x))))
            }
        }
    }
}

impl<'a> QueryableDataset<'a> for KgDataset<'a> {
    type InternalTerm = Bound;
    type Error = DatasetError;

    fn internal_quads_for_pattern(
        &self,
        subject: Option<&Bound>,
        predicate: Option<&Bound>,
        object: Option<&Bound>,
        graph_name: Option<Option<&Bound>>,
    ) -> impl Iterator<Item = Result<InternalQuad<Bound>, DatasetError>> + use<'a> {
        let this = *self;
        let quads = match this.kg.statements() {
            Some(st) => this.statement_quads(st, [subject, predicate, object], graph_name),
            None => this.graph_quads([subject, predicate, object], graph_name),
        };
        let mut seen = 0usize;
        let mut late = false;
        quads
            .map_while(move |quad| {
                seen += 1;
                if late {
                    return None;
                }
                if (seen == 1 || seen.is_multiple_of(CLOCK_EVERY))
                    && this.deadline.is_some_and(|d| Instant::now() > d)
                {
                    late = true;
                    return Some(Err(DatasetError::Deadline));
                }
                Some(Ok(quad))
            })
            // A quad whose terms cannot be written is left out.
            .filter_map(Result::transpose)
    }

    fn internalize_term(&self, term: Term) -> Result<Bound, DatasetError> {
        Ok(Bound(term))
    }

    fn externalize_term(&self, term: Bound) -> Result<Term, DatasetError> {
        Ok(term.0)
    }
}

#[cfg(test)]
#[path = "dataset_tests.rs"]
mod tests;
