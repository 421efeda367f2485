//! `/sparql` beyond the translator: queries the DSL cannot express
//! (variable predicates, OPTIONAL, aggregates, several columns, CONSTRUCT,
//! DESCRIBE, ...) are evaluated by `spareval` over the bundle's graph
//! ([`kgbox_query::dataset`]).
//!
//! Bounded like every request: the request deadline stops the evaluation
//! (408 `timeout`: the dataset's clock for what reads the graph,
//! [`within_deadline`] for loops that only combine rows), and a reply holds at
//! most `query.max_sparql_rows` rows or triples (422 `result_too_large`).

use std::time::Instant;

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use kgbox_bundle::Kg;
use kgbox_query::dataset::{within_deadline, KgDataset, PastDeadline};
use kgbox_query::render::RenderOptions;
use oxrdfio::{RdfFormat, RdfSerializer};
use sparesults::{QueryResultsFormat, QueryResultsSerializer};
use spareval::{QueryEvaluationError, QueryEvaluator, QueryResults};
use spargebra::Query;

use super::ApiError;

/// What the evaluation is allowed.
pub(super) struct Bounds {
    pub deadline: Instant,
    pub max_rows: usize,
}

fn timeout() -> ApiError {
    ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "timeout",
        "the SPARQL query ran past the request deadline (http.request_timeout_ms)",
    )
}

fn too_large(max: usize) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "result_too_large",
        format!(
            "the reply would hold more than {max} rows or triples (query.max_sparql_rows): \
             add a LIMIT or narrow the pattern"
        ),
    )
}

fn failed(e: QueryEvaluationError) -> ApiError {
    let text = e.to_string();
    if text.contains("deadline") || text.contains("cancel") {
        return timeout();
    }
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "sparql_evaluation",
        format!("the query cannot be evaluated: {text}"),
    )
}

fn internal(e: std::io::Error) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string())
}

/// The items of every `Accept` header, in order (parameters kept).
pub(super) fn accept_items(headers: &HeaderMap) -> Vec<&str> {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .collect()
}

/// A 200 with `body` as `media`, naming the charset once (sparesults' CSV
/// and TSV media types carry theirs already).
pub(super) fn reply(body: Vec<u8>, media: &str) -> Response {
    let content_type = if media.contains("charset") {
        media.to_string()
    } else {
        format!("{media}; charset=utf-8")
    };
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// The graph syntax for CONSTRUCT and DESCRIBE: the first of `Accept`
/// that is Turtle or N-Triples (`format=ttl|nt` wins), else Turtle.
pub(super) fn graph_format(format: Option<&str>, headers: &HeaderMap) -> RdfFormat {
    let named = |m: &str| match m.trim().to_ascii_lowercase().as_str() {
        "ttl" | "turtle" => Some(RdfFormat::Turtle),
        "nt" | "ntriples" | "n-triples" => Some(RdfFormat::NTriples),
        other => RdfFormat::from_media_type(other.split(';').next().unwrap_or(""))
            .filter(|f| matches!(f, RdfFormat::Turtle | RdfFormat::NTriples)),
    };
    if let Some(f) = format.and_then(named) {
        return f;
    }
    accept_items(headers)
        .into_iter()
        .find_map(named)
        .unwrap_or(RdfFormat::Turtle)
}

/// The reply's syntax: `results` for SELECT and ASK, `graph` for
/// CONSTRUCT and DESCRIBE.
pub(super) struct Formats {
    pub results: QueryResultsFormat,
    pub graph: RdfFormat,
}

/// Evaluates `query` over `kg` within `bounds`.
pub(super) fn answer(
    kg: &Kg<'_>,
    query: &Query,
    formats: Formats,
    bounds: &Bounds,
) -> Result<Response, ApiError> {
    if Instant::now() >= bounds.deadline {
        return Err(timeout());
    }
    within_deadline(bounds.deadline, || evaluate(kg, query, formats, bounds))
        .unwrap_or_else(|PastDeadline| Err(timeout()))
}

fn evaluate(
    kg: &Kg<'_>,
    query: &Query,
    Formats { results, graph }: Formats,
    bounds: &Bounds,
) -> Result<Response, ApiError> {
    let opts = RenderOptions::default();
    let dataset = KgDataset::new(kg, opts.namespaces(), Some(bounds.deadline));
    let evaluator = QueryEvaluator::new();
    let outcome = evaluator.prepare(query).execute(dataset).map_err(failed)?;
    let late = || Instant::now() >= bounds.deadline;
    let (body, content_type) = match outcome {
        QueryResults::Boolean(b) => (
            QueryResultsSerializer::from_format(results)
                .serialize_boolean_to_writer(Vec::new(), b)
                .map_err(internal)?,
            results.media_type().to_string(),
        ),
        QueryResults::Solutions(rows) => {
            let mut out = QueryResultsSerializer::from_format(results)
                .serialize_solutions_to_writer(Vec::new(), rows.variables().to_vec())
                .map_err(internal)?;
            for (n, row) in rows.enumerate() {
                if n >= bounds.max_rows {
                    return Err(too_large(bounds.max_rows));
                }
                if late() {
                    return Err(timeout());
                }
                let row = row.map_err(failed)?;
                out.serialize(&row).map_err(internal)?;
            }
            (
                out.finish().map_err(internal)?,
                results.media_type().to_string(),
            )
        }
        QueryResults::Graph(triples) => {
            let mut out = RdfSerializer::from_format(graph).for_writer(Vec::new());
            for (n, t) in triples.enumerate() {
                if n >= bounds.max_rows {
                    return Err(too_large(bounds.max_rows));
                }
                if late() {
                    return Err(timeout());
                }
                out.serialize_triple(&t.map_err(failed)?)
                    .map_err(internal)?;
            }
            (
                out.finish().map_err(internal)?,
                graph.media_type().to_string(),
            )
        }
    };
    Ok(reply(body, &content_type))
}
