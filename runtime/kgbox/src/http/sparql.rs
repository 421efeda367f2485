//! `/sparql`: the SPARQL 1.1 Protocol over the served bundle.
//!
//! `GET /sparql?query=...`, `POST` with a `query=` form or an
//! `application/sparql-query` body, parsed by `spargebra`.
//!
//! - A bundle packed from RDF with its statements as given (`rdf.*`
//!   sections): every query is evaluated over them by spareval
//!   ([`sparql_eval`]), so the answers are the file's own.
//! - Otherwise the query is translated to the DSL
//!   ([`kgbox_query::translate::from_sparql`]) where it can be, and run by
//!   the symbolic executor (`Executors::run`) with SPARQL's semantics
//!   (anchors are answers like any other entity), its name tests,
//!   `ORDER BY`, `OFFSET` and `LIMIT` applied here, and the rows (terms
//!   from `translate::iri::entity_term`) written by `sparesults` as SPARQL
//!   JSON (the default), XML, CSV or TSV, chosen by the `Accept` header or
//!   a `format` parameter. What the translator cannot express goes to
//!   spareval over the question-answering graph (docs/sparql.md).

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use kgbox_bundle::Kg;
use kgbox_query::render::RenderOptions;
use kgbox_query::translate::iri::{entity_term, EntityTerm};
use kgbox_query::translate::{from_sparql, Form, SparqlQuery};
use oxrdf::{Literal, NamedNode, Term, Variable};
use sparesults::{QueryResultsFormat, QueryResultsSerializer};

use super::query::kg_of;
use super::sparql_eval;
use super::{ApiError, AppState, Chosen};
use crate::served::Served;
use crate::service::executors::{Executors, Overrides, Paths};

/// The protocol's parameters, from the URL or a form body.
#[derive(Default)]
struct Params {
    query: Option<String>,
    format: Option<String>,
    /// `default-graph-uri`: the graphs whose union is the default graph.
    default_graphs: Vec<String>,
    /// `named-graph-uri`: the named graphs the query sees.
    named_graphs: Vec<String>,
}

fn bad(code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, code, message)
}

impl Params {
    fn read(&mut self, encoded: &[u8]) -> Result<(), ApiError> {
        let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(encoded).map_err(|e| {
            bad(
                "bad_request",
                format!("the parameters are not URL-encoded: {e}"),
            )
        })?;
        for (k, v) in pairs {
            match k.as_str() {
                "query" if self.query.is_some() => {
                    return Err(bad("bad_request", "give one query parameter"))
                }
                "query" => self.query = Some(v),
                // Results formats as some clients name them.
                "format" | "output" | "results" => self.format = Some(v),
                "default-graph-uri" if !v.is_empty() => self.default_graphs.push(v),
                "named-graph-uri" if !v.is_empty() => self.named_graphs.push(v),
                "update" => {
                    return Err(bad(
                        "unsupported_sparql",
                        "SPARQL Update: the bundle is read-only",
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// SPARQL 1.1 Protocol query by GET (docs/sparql.md).
#[utoipa::path(get, path = "/sparql", tag = "answers",
    params(
        ("query" = String, Query, description = "The SPARQL query"),
        ("format" = Option<String>, Query, description = "json, xml, csv or tsv (else by Accept)"),
    ),
    responses(
        (status = 200, description = "Rows (SELECT) or a boolean (ASK) as SPARQL JSON, XML, CSV or TSV", content(
            (Object = "application/sparql-results+json"),
            (String = "application/sparql-results+xml"),
            (String = "text/csv"),
            (String = "text/tab-separated-values"))),
        super::schema::SparqlErrors))]
pub async fn get(
    State(state): State<Arc<AppState>>,
    Chosen(served): Chosen,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Response {
    let answer = (|| {
        let mut params = Params::default();
        params.read(raw.unwrap_or_default().as_bytes())?;
        respond(&state, &served, params, &headers)
    })();
    varies_by_accept(answer)
}

/// Every `/sparql` reply, errors too, depends on `Accept` (caches and
/// browsers must not reuse one format for another).
fn varies_by_accept(answer: Result<Response, ApiError>) -> Response {
    let mut response = answer.unwrap_or_else(IntoResponse::into_response);
    response
        .headers_mut()
        .insert(header::VARY, HeaderValue::from_static("accept"));
    response
}

/// SPARQL 1.1 Protocol query by POST: a `query=` form or an
/// `application/sparql-query` body (docs/sparql.md).
#[utoipa::path(post, path = "/sparql", tag = "answers",
    request_body(content(
        (String = "application/sparql-query"),
        (Object = "application/x-www-form-urlencoded"))),
    responses(
        (status = 200, description = "Rows (SELECT) or a boolean (ASK) as SPARQL JSON, XML, CSV or TSV", content(
            (Object = "application/sparql-results+json"),
            (String = "application/sparql-results+xml"),
            (String = "text/csv"),
            (String = "text/tab-separated-values"))),
        super::schema::SparqlErrors))]
pub async fn post(
    State(state): State<Arc<AppState>>,
    Chosen(served): Chosen,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    varies_by_accept(post_answer(&state, &served, raw, &headers, &body))
}

fn post_answer(
    state: &AppState,
    served: &Served,
    raw: Option<String>,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let mut params = Params::default();
    params.read(raw.unwrap_or_default().as_bytes())?;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match content_type.as_str() {
        "application/sparql-query" => {
            if params.query.is_some() {
                return Err(bad("bad_request", "the query is in the body; leave out the query parameter"));
            }
            let text = String::from_utf8(body.to_vec())
                .map_err(|_| bad("bad_request", "the query is not UTF-8"))?;
            params.query = Some(text);
        }
        "application/x-www-form-urlencoded" => params.read(body)?,
        other => {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                format!(
                    "POST /sparql takes application/sparql-query or application/x-www-form-urlencoded, not {:?}",
                    other
                ),
            ))
        }
    }
    respond(state, served, params, headers)
}

/// The results format: the `format` parameter, else the acceptable media
/// type of `Accept` with the highest quality (wildcards: `*/*` and
/// `application/*` SPARQL JSON, `text/*` CSV), else SPARQL JSON without
/// `Accept`. An `Accept` that names only formats kgbox cannot write is a
/// 406.
fn results_format(params: &Params, headers: &HeaderMap) -> Result<QueryResultsFormat, ApiError> {
    if let Some(f) = &params.format {
        let named = match f.to_ascii_lowercase().as_str() {
            "json" | "srj" => Some(QueryResultsFormat::Json),
            "xml" | "srx" => Some(QueryResultsFormat::Xml),
            "csv" => Some(QueryResultsFormat::Csv),
            "tsv" => Some(QueryResultsFormat::Tsv),
            other => QueryResultsFormat::from_media_type(other),
        };
        if let Some(f) = named {
            return Ok(f);
        }
    }
    let accept = sparql_eval::accept_items(headers);
    let mut ranked: Vec<(f32, usize, QueryResultsFormat)> = accept
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let mut parts = item.split(';');
            let media = parts.next()?.trim();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            let format = match media.to_ascii_lowercase().as_str() {
                "*/*" | "application/*" => QueryResultsFormat::Json,
                "text/*" => QueryResultsFormat::Csv,
                other => QueryResultsFormat::from_media_type(other)?,
            };
            (q > 0.0).then_some((q, i, format))
        })
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    match ranked.first() {
        Some(r) => Ok(r.2),
        None if accept.iter().all(|a| a.trim().is_empty()) => Ok(QueryResultsFormat::Json),
        None => Err(ApiError::new(
            StatusCode::NOT_ACCEPTABLE,
            "not_acceptable",
            format!(
                "no format of Accept: {} can be written; /sparql writes \
                 application/sparql-results+json, application/sparql-results+xml, \
                 text/csv and text/tab-separated-values (or give format=json|xml|csv|tsv)",
                accept.join(",").trim()
            ),
        )),
    }
}

/// A query the translator leaves out, evaluated by spareval over the graph
/// (`sparql_eval.rs`).
fn full_sparql(
    state: &AppState,
    kg: &Kg<'_>,
    text: &str,
    params: &Params,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let mut query = kgbox_query::translate::parse_sparql(text)
        .map_err(|e| bad("sparql_syntax", e.to_string()))?;
    if !params.default_graphs.is_empty() || !params.named_graphs.is_empty() {
        set_dataset(&mut query, params)?;
    }
    let results = match query {
        spargebra::Query::Construct { .. } | spargebra::Query::Describe { .. } => {
            QueryResultsFormat::Json
        }
        _ => results_format(params, headers)?,
    };
    let graph = sparql_eval::graph_format(params.format.as_deref(), headers);
    let bounds = sparql_eval::Bounds {
        deadline: Instant::now() + state.request_timeout,
        max_rows: state.query.max_sparql_rows,
    };
    let formats = sparql_eval::Formats { results, graph };
    sparql_eval::answer(kg, &query, formats, &bounds)
}

/// The protocol's `default-graph-uri` and `named-graph-uri`, which take the
/// place of the query's `FROM` and `FROM NAMED`.
fn set_dataset(query: &mut spargebra::Query, params: &Params) -> Result<(), ApiError> {
    let iri = |v: &String| {
        NamedNode::new(v.clone()).map_err(|e| bad("bad_request", format!("graph IRI <{v}>: {e}")))
    };
    let dataset = spargebra::algebra::QueryDataset {
        default: params
            .default_graphs
            .iter()
            .map(iri)
            .collect::<Result<_, _>>()?,
        named: match params.named_graphs.is_empty() {
            true => None,
            false => Some(
                params
                    .named_graphs
                    .iter()
                    .map(iri)
                    .collect::<Result<_, _>>()?,
            ),
        },
    };
    match query {
        spargebra::Query::Select { dataset: d, .. }
        | spargebra::Query::Construct { dataset: d, .. }
        | spargebra::Query::Describe { dataset: d, .. }
        | spargebra::Query::Ask { dataset: d, .. } => *d = Some(dataset),
    }
    Ok(())
}

fn respond(
    state: &AppState,
    served: &Served,
    params: Params,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let text = params.query.as_deref().ok_or_else(|| {
        bad(
            "bad_request",
            "no query: give query=... (GET or a form) or an application/sparql-query body",
        )
    })?;
    let max = state.query.max_query_bytes;
    if text.len() > max {
        return Err(bad(
            "query_too_large",
            format!("the query is longer than {max} bytes (query.max_query_bytes)"),
        ));
    }
    let kg = kg_of(served)?;
    // A bundle with its RDF statements as given answers from them alone:
    // the translator binds the question-answering graph's names.
    let dataset = !params.default_graphs.is_empty() || !params.named_graphs.is_empty();
    if kg.statements().is_some() || dataset {
        return full_sparql(state, &kg, text, &params, headers);
    }
    let opts = RenderOptions::default();
    let sq = match from_sparql(&kg, text, &opts) {
        Ok(sq) => sq,
        Err(e @ kgbox_query::translate::TranslateError::Syntax(..)) => {
            return Err(bad("sparql_syntax", e.to_string()))
        }
        // Outside what the DSL expresses: all of SPARQL, by spareval.
        Err(_) => return full_sparql(state, &kg, text, &params, headers),
    };
    let format = results_format(&params, headers)?;
    let ids = answers(state, &served.executors, &kg, &sq)?;
    let body = match &sq.form {
        Form::Ask => QueryResultsSerializer::from_format(format)
            .serialize_boolean_to_writer(Vec::new(), !ids.is_empty()),
        Form::Select {
            answer,
            name,
            columns,
        } => rows(&kg, &opts, format, &ids, answer, name.as_deref(), columns),
    }
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?;
    Ok(sparql_eval::reply(body, format.media_type()))
}

/// The answer entities in order, after the name tests, `ORDER BY`,
/// `OFFSET` and `LIMIT`.
fn answers(
    state: &AppState,
    executors: &Executors,
    kg: &Kg<'_>,
    sq: &SparqlQuery,
) -> Result<Vec<u32>, ApiError> {
    let Some(q) = &sq.query else {
        return Ok(Vec::new());
    };
    let overrides = Overrides {
        executor: Some(kgbox_query::Executor::Symbolic),
        paths: Some(Paths::On(false)),
        deadline: Some(Instant::now() + state.request_timeout),
        ..Overrides::default()
    };
    let mut run = executors.options(&state.query, &overrides)?;
    // Every answer: SPARQL's own LIMIT cuts them after the name tests.
    run.exec.top_k = kg.entity_count().max(1);
    run.exec.exclude_anchors = false;
    let (found, _) = executors
        .run(kg, &q.to_string(), &state.query.parse_limits(), &run)
        .map_err(|e| super::errors::query_error(&e))?;
    let name = |id: u32| kg.entity_name(id).unwrap_or("");
    let mut ids: Vec<u32> = found
        .answers
        .iter()
        .map(|a| a.entity)
        .filter(|&id| sq.name_tests.iter().all(|t| t.matches(name(id))))
        .collect();
    // Ids are in name order; ORDER BY the term sorts by IRI.
    ids.sort_unstable();
    if let Some(order) = sq.order {
        if !order.by_name {
            let opts = RenderOptions::default();
            ids.sort_by_cached_key(|&id| match entity_term(kg, id, opts.namespaces()) {
                Some(EntityTerm::Iri(i)) | Some(EntityTerm::Literal(i)) => i,
                None => String::new(),
            });
        }
        if order.descending {
            ids.reverse();
        }
    }
    Ok(ids
        .into_iter()
        .skip(sq.offset)
        .take(sq.limit.unwrap_or(usize::MAX))
        .collect())
}

fn rows(
    kg: &Kg<'_>,
    opts: &RenderOptions,
    format: QueryResultsFormat,
    ids: &[u32],
    answer: &str,
    name: Option<&str>,
    columns: &[String],
) -> std::io::Result<Vec<u8>> {
    let variable = |v: &str| {
        Variable::new(v).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let vars = columns
        .iter()
        .map(|c| variable(c))
        .collect::<std::io::Result<Vec<_>>>()?;
    let answer_var = variable(answer)?;
    let name_var = name.map(variable).transpose()?;
    let mut out = QueryResultsSerializer::from_format(format)
        .serialize_solutions_to_writer(Vec::new(), vars)?;
    for &id in ids {
        let term: Term = match entity_term(kg, id, opts.namespaces()) {
            Some(EntityTerm::Iri(iri)) => match NamedNode::new(iri.clone()) {
                Ok(n) => n.into(),
                Err(_) => Literal::new_simple_literal(iri).into(),
            },
            Some(EntityTerm::Literal(v)) => Literal::new_simple_literal(v).into(),
            None => continue,
        };
        let mut row = vec![(answer_var.as_ref(), term.clone())];
        let label: Option<Term> = name_var
            .as_ref()
            .map(|_| Literal::new_simple_literal(kg.entity_name(id).unwrap_or("")).into());
        if let (Some(v), Some(l)) = (&name_var, &label) {
            row.push((v.as_ref(), l.clone()));
        }
        out.serialize(row.iter().map(|(v, t)| (*v, t.as_ref())))?;
    }
    out.finish()
}
