//! `/sparql` by spareval ([`crate::service::sparql`]): every query of a
//! bundle with its RDF statements, and those the translator cannot express
//! (variable predicates, OPTIONAL, aggregates, several columns, CONSTRUCT,
//! DESCRIBE, ...) otherwise; with the protocol's pieces both paths share
//! (`Accept`, the reply).
//!
//! Bounded like every request: the request deadline stops the evaluation
//! (408 `timeout`), and a reply holds at most `query.max_sparql_rows` rows
//! or triples (422 `result_too_large`).

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use kgbox_bundle::Kg;
use oxrdfio::RdfFormat;
use spargebra::Query;

use crate::service::sparql::{self, SparqlError};
pub(super) use crate::service::sparql::{Bounds, Formats};

use super::ApiError;

fn api_error(e: SparqlError) -> ApiError {
    match e {
        SparqlError::Timeout => ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "timeout",
            "the SPARQL query ran past the request deadline (http.request_timeout_ms)",
        ),
        e @ SparqlError::TooLarge(_) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "result_too_large",
            e.to_string(),
        ),
        e @ SparqlError::Evaluation(_) => {
            ApiError::new(StatusCode::BAD_REQUEST, "sparql_evaluation", e.to_string())
        }
        e @ SparqlError::Write(_) => {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string())
        }
    }
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

/// Evaluates `query` over `kg` within `bounds` ([`crate::service::sparql`]).
pub(super) fn answer(
    kg: &Kg<'_>,
    query: &Query,
    formats: Formats,
    bounds: &Bounds,
) -> Result<Response, ApiError> {
    let (body, media) = sparql::answer(kg, query, formats, bounds).map_err(api_error)?;
    Ok(reply(body, media))
}
