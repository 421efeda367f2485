//! All of SPARQL 1.1 Query over the served bundle, by `spareval` over
//! [`kgbox_query::dataset::KgDataset`] (the bundle's RDF statements as
//! given where it has them, else its question-answering graph), with no
//! transport in it: `/sparql` ([`crate::http::sparql`]) and `kgbox sparql`
//! write what this returns.
//!
//! Bounded: the deadline stops the evaluation (the dataset's clock for what
//! reads the graph, [`within_deadline`] for loops that only combine rows),
//! and a reply holds at most `max_rows` rows or triples.

use std::time::Instant;

use kgbox_bundle::Kg;
use kgbox_query::dataset::{within_deadline, KgDataset};
use kgbox_query::render::RenderOptions;
use oxrdfio::{RdfFormat, RdfSerializer};
use sparesults::{QueryResultsFormat, QueryResultsSerializer};
use spareval::{QueryEvaluationError, QueryEvaluator, QueryResults};
use spargebra::Query;

/// What the evaluation is allowed.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub deadline: Instant,
    pub max_rows: usize,
}

/// The reply's syntax: `results` for SELECT and ASK, `graph` for
/// CONSTRUCT and DESCRIBE.
#[derive(Debug, Clone, Copy)]
pub struct Formats {
    pub results: QueryResultsFormat,
    pub graph: RdfFormat,
}

/// Why a query was not answered.
#[derive(Debug, thiserror::Error)]
pub enum SparqlError {
    #[error("the SPARQL query ran past its deadline")]
    Timeout,
    #[error(
        "the reply would hold more than {0} rows or triples (query.max_sparql_rows): \
         add a LIMIT or narrow the pattern"
    )]
    TooLarge(usize),
    #[error("the query cannot be evaluated: {0}")]
    Evaluation(String),
    #[error("cannot write the results: {0}")]
    Write(#[from] std::io::Error),
}

fn failed(e: QueryEvaluationError) -> SparqlError {
    let text = e.to_string();
    if text.contains("deadline") || text.contains("cancel") {
        return SparqlError::Timeout;
    }
    SparqlError::Evaluation(text)
}

/// The results of `query` over `kg` within `bounds`, written in `formats`:
/// the body and its media type.
pub fn answer(
    kg: &Kg<'_>,
    query: &Query,
    formats: Formats,
    bounds: &Bounds,
) -> Result<(Vec<u8>, &'static str), SparqlError> {
    if Instant::now() >= bounds.deadline {
        return Err(SparqlError::Timeout);
    }
    within_deadline(bounds.deadline, || evaluate(kg, query, formats, bounds))
        .unwrap_or(Err(SparqlError::Timeout))
}

fn evaluate(
    kg: &Kg<'_>,
    query: &Query,
    Formats { results, graph }: Formats,
    bounds: &Bounds,
) -> Result<(Vec<u8>, &'static str), SparqlError> {
    let opts = RenderOptions::default();
    let dataset = KgDataset::new(kg, opts.namespaces(), Some(bounds.deadline));
    let outcome = QueryEvaluator::new()
        .prepare(query)
        .execute(dataset)
        .map_err(failed)?;
    // Every row or triple is counted and the clock read before it is written.
    let next = |n: usize| {
        if n >= bounds.max_rows {
            Err(SparqlError::TooLarge(bounds.max_rows))
        } else if Instant::now() >= bounds.deadline {
            Err(SparqlError::Timeout)
        } else {
            Ok(())
        }
    };
    Ok(match outcome {
        QueryResults::Boolean(b) => (
            QueryResultsSerializer::from_format(results)
                .serialize_boolean_to_writer(Vec::new(), b)?,
            results.media_type(),
        ),
        QueryResults::Solutions(rows) => {
            let mut out = QueryResultsSerializer::from_format(results)
                .serialize_solutions_to_writer(Vec::new(), rows.variables().to_vec())?;
            for (n, row) in rows.enumerate() {
                next(n)?;
                out.serialize(&row.map_err(failed)?)?;
            }
            (out.finish()?, results.media_type())
        }
        QueryResults::Graph(triples) => {
            let mut out = RdfSerializer::from_format(graph).for_writer(Vec::new());
            for (n, t) in triples.enumerate() {
                next(n)?;
                out.serialize_triple(&t.map_err(failed)?)?;
            }
            (out.finish()?, graph.media_type())
        }
    })
}
