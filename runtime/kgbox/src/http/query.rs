//! `POST /v1/query`, `/v1/link`, `/v1/retrieve`: wire types and handlers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use kgbox_bundle::Kg;
use kgbox_query::link::LinkOptions;
use kgbox_query::names;
use kgbox_query::repair::{RepairMode, RepairOptions, RepairReport};
use kgbox_query::retrieve::{retrieve, RetrieveOptions, MAX_HOPS};
use kgbox_query::{DiagKind, Diagnostic, ExecError, QueryError, RepairSpec};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::schema::{ExecutorName, RenderLanguage, RepairModeName};
use super::{ApiError, AppState};
use crate::config::{ExecutorConfig, QueryConfig};
use crate::served::Served;

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryRequest {
    pub query: String,
    pub top_k: Option<usize>,
    /// Provenance paths per answer: `true` (the configured number), `false`, or a number.
    pub paths: Option<PathsParam>,
    /// Keep anchor entities in multi-hop answers.
    #[serde(default)]
    pub include_anchors: bool,
    /// symbolic, neural, hybrid or sparql_store (default: the configured
    /// `executor.mode`).
    #[schema(value_type = Option<ExecutorName>)]
    pub executor: Option<kgbox_query::Executor>,
    /// SEPPR subgraph size for the neural executors (default: `executor.seppr_k`).
    #[schema(minimum = 1)]
    pub seppr_k: Option<usize>,
    /// Also return the query as openCypher or SPARQL (`cypher` | `sparql`).
    #[schema(value_type = Option<RenderLanguage>)]
    pub render: Option<kgbox_query::render::Language>,
    /// The language of `query`: `dsl` (default), `cypher` (a read-only
    /// path pattern) or `sparql` (a basic graph pattern); see
    /// docs/query-language.md.
    pub language: Option<QueryLanguage>,
    /// Query repair (docs/query-language.md, "Query repair"): `auto`
    /// (default) relaxes a query with no answers, and tightens one with
    /// more than `max_answers` when `tighten` or `max_answers` is given;
    /// `off` never repairs.
    #[serde(default)]
    #[schema(value_type = RepairModeName)]
    pub repair: RepairMode,
    /// Tighten a query with more than `max_answers` answers.
    #[serde(default)]
    pub tighten: bool,
    /// Answers a tightened query keeps at most (default 50); implies `tighten`.
    pub max_answers: Option<usize>,
    /// Entities (names or `#id`) a tightening constrains the answers by first.
    #[serde(default)]
    pub tighten_with: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum QueryLanguage {
    Dsl,
    Cypher,
    Sparql,
}

/// A translation error as an API error: 400 for syntax, 422 for a valid
/// query outside the supported subset.
pub fn translate_error(e: kgbox_query::translate::TranslateError) -> ApiError {
    use kgbox_query::translate::TranslateError;
    let code = match e {
        TranslateError::Unsupported { .. } => "unsupported_construct",
        TranslateError::Syntax(..) => "syntax_error",
        TranslateError::Shape(_) => "unsupported_shape",
    };
    let status = if code == "syntax_error" {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    ApiError::new(status, code, e.to_string())
}

/// `query` as DSL text when it is openCypher or SPARQL: `Some(None)` when
/// the SPARQL names something the bundle lacks, so nothing can match.
/// SPARQL's own semantics keep anchors (`include_anchors` is set).
fn dsl_text(
    kg: &Kg<'_>,
    req: &mut QueryRequest,
    max_len: usize,
) -> Result<Option<Option<String>>, ApiError> {
    use kgbox_query::translate::{from_cypher, from_sparql, Form};
    if !matches!(req.language, None | Some(QueryLanguage::Dsl)) && req.query.len() > max_len {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "query_too_large",
            format!("the query is longer than {max_len} bytes (query.max_query_bytes)"),
        ));
    }
    match req.language {
        None | Some(QueryLanguage::Dsl) => Ok(None),
        Some(QueryLanguage::Cypher) => from_cypher(&req.query)
            .map(|q| Some(Some(q.to_string())))
            .map_err(translate_error),
        Some(QueryLanguage::Sparql) => {
            let opts = kgbox_query::render::RenderOptions::default();
            let sq = from_sparql(kg, &req.query, &opts).map_err(translate_error)?;
            let plain = matches!(&sq.form, Form::Select { name: None, .. })
                && sq.name_tests.is_empty()
                && sq.order.is_none()
                && sq.offset == 0
                && sq.limit.is_none();
            if !plain {
                return Err(ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "unsupported_construct",
                    "ASK, LIMIT, OFFSET, ORDER BY and names (rdfs:label) are answered by the SPARQL endpoint, POST /sparql; /v1/query takes a SELECT of one variable",
                ));
            }
            req.include_anchors = true;
            Ok(Some(sq.query.map(|q| q.to_string())))
        }
    }
}

/// `true` (the configured number of paths per answer), `false`, or a number.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum PathsParam {
    On(bool),
    Count(usize),
}

/// The answer schema every interface shares.
pub use kgbox_qa::arbitrate::AskAnswer as WireAnswer;

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct QueryResponse {
    pub answers: Vec<WireAnswer>,
    /// Entities with a non-zero score (answers holds the top_k of them).
    pub total: usize,
    pub edge_visits: u64,
    /// The executor that ran.
    #[schema(value_type = ExecutorName)]
    pub executor: kgbox_query::Executor,
    pub timings_ms: QueryTimings,
    /// The query in the language the request asked for (`render`):
    /// `{"language", "text"}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub rendered: Option<serde_json::Value>,
    /// The DSL an openCypher or SPARQL query was translated to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub translated: Option<String>,
    /// What query repair did, when it ran; the answers are then those of
    /// `repair.repaired` (when a repaired query was found).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub repair: Option<RepairReport>,
}

/// Milliseconds per stage of a query; `repair` is null when repair did not run.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct QueryTimings {
    pub parse: f64,
    pub bind: f64,
    pub execute: f64,
    pub repair: Option<f64>,
    pub total: f64,
}

/// Turns a JSON body rejection into our error envelope.
pub fn bad_body(e: JsonRejection) -> ApiError {
    let status = e.status();
    let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
        "payload_too_large"
    } else if status == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        "unsupported_media_type"
    } else {
        "bad_json"
    };
    ApiError::new(status, code, e.body_text())
}

/// A query diagnostic as an API error with its position and suggestions.
pub fn diagnostic_error(d: &Diagnostic) -> ApiError {
    let (status, code) = match d.kind {
        DiagKind::Syntax => (StatusCode::BAD_REQUEST, "syntax_error"),
        DiagKind::TooLarge => (StatusCode::BAD_REQUEST, "query_too_large"),
        DiagKind::UnknownEntity => (StatusCode::NOT_FOUND, "unknown_entity"),
        DiagKind::AmbiguousEntity => (StatusCode::CONFLICT, "ambiguous_entity"),
        DiagKind::UnknownRelation => (StatusCode::NOT_FOUND, "unknown_relation"),
        _ => (StatusCode::BAD_REQUEST, "invalid_query"),
    };
    ApiError::new(status, code, d.message.clone())
        .with_extra(json!({
            "line": d.line,
            "column": d.column,
            "snippet": d.snippet,
            "suggestions": d.suggestions,
        }))
        .with_detail(d.to_string())
}

pub fn exec_error(e: &ExecError) -> ApiError {
    match e {
        ExecError::Timeout => ApiError::new(StatusCode::REQUEST_TIMEOUT, "timeout", e.to_string()),
        ExecError::Budget { .. } => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "query_too_expensive",
            e.to_string(),
        ),
        ExecError::NoModel(_) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "no_neural_model",
            e.to_string(),
        ),
        ExecError::Remote { failure, message } => {
            use kgbox_query::RemoteFailure as F;
            let (status, code) = match failure {
                F::Timeout => (StatusCode::GATEWAY_TIMEOUT, "store_timeout"),
                F::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable"),
                F::BadReply => (StatusCode::BAD_GATEWAY, "store_error"),
                F::TooLarge => (StatusCode::UNPROCESSABLE_ENTITY, "query_too_expensive"),
                F::Unsupported => (StatusCode::UNPROCESSABLE_ENTITY, "unsupported_construct"),
                F::NotConfigured => (StatusCode::UNPROCESSABLE_ENTITY, "no_sparql_store"),
            };
            ApiError::new(status, code, message.clone())
        }
        _ => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
    }
}

pub(super) fn kg_of(served: &Served) -> Result<Kg<'_>, ApiError> {
    served.bundle.kg().map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "bundle_corrupt",
            e.to_string(),
        )
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs a DSL, openCypher or SPARQL query.
#[utoipa::path(post, path = "/v1/query", tag = "answers", request_body = QueryRequest,
    responses((status = 200, description = "The answers", body = QueryResponse),
        super::schema::QueryErrors, super::schema::StoreErrors))]
pub async fn query(
    State(state): State<Arc<AppState>>,
    body: Result<Json<QueryRequest>, JsonRejection>,
) -> Result<Json<QueryResponse>, ApiError> {
    let Json(req) = body.map_err(bad_body)?;
    let served = state.served();
    let executor = req.executor.unwrap_or(served.executor.mode);
    let deadline = Some(Instant::now() + state.request_timeout);
    let run = move |state: &AppState| {
        let kg = kg_of(&served)?;
        let target = QueryTarget {
            kg: &kg,
            model: served.model.as_deref(),
            store: Some(&served.qa.store),
            query: &state.query,
            executor: &served.executor,
        };
        answer(&target, req, deadline)
    };
    if executor == kgbox_query::Executor::Symbolic {
        // Microseconds: run on the async thread.
        return run(&state).map(Json);
    }
    // Tens of milliseconds of model time: keep it off the async threads.
    tokio::task::spawn_blocking(move || run(&state))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?
        .map(Json)
}

/// What a query runs against: the bundle's graph, neural model and SPARQL
/// store, and the query and executor configuration that requests override.
pub struct QueryTarget<'t, 'k> {
    pub kg: &'t Kg<'k>,
    pub model: Option<&'t kgbox_neural::UltraModel>,
    /// The `sparql_store` executor's store.
    pub store: Option<&'t crate::sparql_store::SparqlStore>,
    pub query: &'t QueryConfig,
    pub executor: &'t ExecutorConfig,
}

/// The query service: resolves the executor and options from the
/// configuration and the request's overrides, translates openCypher or
/// SPARQL, runs the query (with repair: run, repair, run again), and names
/// the answers and their paths. `POST /v1/query` and `kgbox query` both
/// answer through it, so they return the same JSON for the same query.
pub fn answer(
    target: &QueryTarget<'_, '_>,
    mut req: QueryRequest,
    deadline: Option<Instant>,
) -> Result<QueryResponse, ApiError> {
    let (cfg, exec, kg) = (target.query, target.executor, target.kg);
    let translated = match dsl_text(kg, &mut req, cfg.max_query_bytes)? {
        None => None,
        Some(Some(t)) => {
            req.query = t.clone();
            Some(t)
        }
        // Nothing can match: no query to run.
        Some(None) => {
            return Ok(QueryResponse {
                answers: Vec::new(),
                total: 0,
                edge_visits: 0,
                executor: req.executor.unwrap_or(target.executor.mode),
                timings_ms: QueryTimings {
                    parse: 0.0,
                    bind: 0.0,
                    execute: 0.0,
                    repair: None,
                    total: 0.0,
                },
                rendered: None,
                translated: None,
                repair: None,
            })
        }
    };
    let executor = req.executor.unwrap_or(exec.mode);
    let seppr_k = req.seppr_k.unwrap_or(exec.seppr_k);
    if seppr_k == 0 || seppr_k > exec.max_seppr_k {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("seppr_k must be between 1 and {}", exec.max_seppr_k),
        ));
    }
    let top_k = req.top_k.unwrap_or(cfg.top_k);
    if top_k == 0 || top_k > cfg.max_top_k {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("top_k must be between 1 and {}", cfg.max_top_k),
        ));
    }
    let mut opts = cfg.exec_options();
    opts.top_k = top_k;
    opts.max_paths = match req.paths {
        None | Some(PathsParam::On(true)) => cfg.max_paths,
        Some(PathsParam::On(false)) => 0,
        Some(PathsParam::Count(n)) => n.min(100),
    };
    opts.exclude_anchors = !req.include_anchors;
    opts.deadline = deadline;
    opts.executor = executor;
    let repair = repair_options(&req, cfg.max_top_k)?;
    let with = match repair {
        Some(_) => {
            if req.tighten_with.len() > 100 {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                    "tighten_with lists at most 100 entities",
                ));
            }
            resolve_names(kg, &req.tighten_with)?
        }
        None => Vec::new(),
    };
    let t = Instant::now();
    let limits = cfg.parse_limits();
    let seppr = exec.seppr(seppr_k);
    let ran = kgbox_query::run_repaired(
        kg,
        &req.query,
        &limits,
        &opts,
        repair.as_ref().map(|options| RepairSpec {
            options,
            with: &with,
        }),
        |text, exclude| {
            let mut opts = opts.clone();
            opts.exclude.extend_from_slice(exclude);
            crate::neural::run_query(kg, target.model, target.store, text, &limits, &opts, seppr)
        },
        |(answers, _)| answers.total,
    )
    .map_err(|e| query_error(&e))?;
    let (answers, timings) = ran.outcome;
    req.query = ran.query;
    let wire = answers
        .answers
        .iter()
        .map(|a| WireAnswer {
            entity: a.entity,
            name: names::entity(kg, a.entity),
            score: a.score,
            rerank_score: None,
            paths: a.paths.iter().map(|p| names::path(kg, p)).collect(),
        })
        .collect();
    let rendered = match req.render {
        None => None,
        Some(lang) => {
            let r = kgbox_query::render::RenderOptions {
                exclude_anchors: opts.exclude_anchors,
                ..Default::default()
            };
            let text = kgbox_query::render::render_text(kg, &req.query, &limits, lang, &r)
                .map_err(|e| {
                    ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "cannot_render",
                        e.to_string(),
                    )
                })?;
            Some(json!({"language": lang, "text": text}))
        }
    };
    Ok(QueryResponse {
        answers: wire,
        rendered,
        translated,
        repair: ran.report,
        total: answers.total,
        edge_visits: answers.edge_visits,
        executor,
        timings_ms: QueryTimings {
            parse: ms(timings.parse),
            bind: ms(timings.bind),
            execute: ms(timings.execute),
            repair: ran.repair_time.map(ms),
            total: ms(t.elapsed()),
        },
    })
}

/// A query that failed to parse, bind or run, as an API error.
pub fn query_error(e: &QueryError) -> ApiError {
    match e {
        QueryError::Invalid(d) => diagnostic_error(d),
        QueryError::Exec(e) => exec_error(e),
    }
}

/// The repair a request asks for: `None` with `"repair": "off"`.
fn repair_options(req: &QueryRequest, max_top_k: usize) -> Result<Option<RepairOptions>, ApiError> {
    if req.repair == RepairMode::Off {
        return Ok(None);
    }
    let mut o = RepairOptions {
        tighten: req.tighten || req.max_answers.is_some() || !req.tighten_with.is_empty(),
        ..RepairOptions::default()
    };
    if let Some(m) = req.max_answers {
        if m == 0 || m > max_top_k {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_request",
                format!("max_answers must be between 1 and {max_top_k}"),
            ));
        }
        o.max_answers = m;
    }
    Ok(Some(o))
}

/// Entity names (or `#id`), resolved like the entities of a query.
fn resolve_names(kg: &Kg<'_>, names: &[String]) -> Result<Vec<u32>, ApiError> {
    names
        .iter()
        .map(|name| {
            kgbox_query::bind::resolve_entity_text(kg, name).map_err(|d| diagnostic_error(&d))
        })
        .collect()
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkRequest {
    pub text: String,
    /// Candidates per mention.
    pub top_m: Option<usize>,
    /// Allow the fuzzy stage for bracketed mentions.
    pub fuzzy: Option<bool>,
    /// Allow the dense stage for bracketed mentions (when the bundle has a dense index).
    pub dense: Option<bool>,
}

/// Longest text `/v1/link` accepts, bytes.
pub const MAX_LINK_TEXT: usize = 8 * 1024;

/// Finds entity mentions in a text.
#[utoipa::path(post, path = "/v1/link", tag = "answers", request_body = LinkRequest,
    responses((status = 200, description = "The mentions and their candidates", body = Object),
        super::schema::QueryErrors))]
pub async fn link(
    State(state): State<Arc<AppState>>,
    body: Result<Json<LinkRequest>, JsonRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let Json(req) = body.map_err(bad_body)?;
    if req.text.len() > MAX_LINK_TEXT {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("text must be at most {MAX_LINK_TEXT} bytes"),
        ));
    }
    let mut opts = LinkOptions::default();
    if let Some(m) = req.top_m {
        if m == 0 || m > 100 {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_request",
                "top_m must be between 1 and 100",
            ));
        }
        opts.top_m = m;
    }
    if let Some(f) = req.fuzzy {
        opts.fuzzy = f;
    }
    if let Some(d) = req.dense {
        opts.dense = d;
    }
    let served = state.served();
    let kg = kg_of(&served)?;
    let t = Instant::now();
    let mentions = crate::dense::link_text(
        &served.bundle,
        &kg,
        served.encoder.as_deref(),
        &req.text,
        &opts,
    )
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "dense_link_failed", e))?;
    Ok(Json(json!({
        "mentions": mentions,
        "dense": served.encoder.is_some(),
        "timings_ms": {"link": ms(t.elapsed())},
    })))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetrieveRequest {
    /// Entity names, or `#id`.
    pub entities: Vec<String>,
    #[serde(default = "one")]
    pub hops: usize,
    #[serde(default = "two_hundred")]
    pub max_triples: usize,
}

fn one() -> usize {
    1
}

fn two_hundred() -> usize {
    200
}

/// Most triples one retrieval may return.
pub const MAX_RETRIEVE_TRIPLES: usize = 10_000;

/// The subgraph around some entities.
#[utoipa::path(post, path = "/v1/retrieve", tag = "answers", request_body = RetrieveRequest,
    responses((status = 200, description = "The triples", body = Object),
        super::schema::QueryErrors))]
pub async fn retrieve_subgraph(
    State(state): State<Arc<AppState>>,
    body: Result<Json<RetrieveRequest>, JsonRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let Json(req) = body.map_err(bad_body)?;
    if req.entities.is_empty() || req.entities.len() > 100 {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "entities must list 1 to 100 names",
        ));
    }
    if req.hops == 0 || req.hops > MAX_HOPS {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("hops must be between 1 and {MAX_HOPS}"),
        ));
    }
    if req.max_triples == 0 || req.max_triples > MAX_RETRIEVE_TRIPLES {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("max_triples must be between 1 and {MAX_RETRIEVE_TRIPLES}"),
        ));
    }
    let served = state.served();
    let kg = kg_of(&served)?;
    let seeds = resolve_names(&kg, &req.entities)?;
    let t = Instant::now();
    let sub = retrieve(
        &kg,
        &seeds,
        &RetrieveOptions {
            hops: req.hops,
            max_triples: req.max_triples,
            ..RetrieveOptions::default()
        },
    );
    let entities: Vec<_> = sub
        .entities
        .iter()
        .map(|&e| json!({"id": e, "name": kg.entity_name(e).unwrap_or("?")}))
        .collect();
    let triples: Vec<[String; 3]> = sub.triples.iter().map(|t| names::triple(&kg, t)).collect();
    Ok(Json(json!({
        "triples": triples,
        "entities": entities,
        "truncated": sub.truncated,
        "timings_ms": {"retrieve": ms(t.elapsed())},
    })))
}
