//! The query service: a DSL, openCypher or SPARQL query with its options in,
//! named answers with their paths out. `kgbox query`, `POST /v1/query` (and
//! MQTT's `query` requests, through it) answer with [`answer`], so they
//! return the same JSON for the same query.
//!
//! [`answer`]: the options checked and defaulted
//! ([`Executors::options`]); openCypher (`translate::from_cypher`) or
//! SPARQL (`translate::from_sparql`, a plain `SELECT` of one variable)
//! translated to the DSL; then [`kgbox_query::run_repaired`] (run, repair
//! the text when the answers call for it, run the repaired text), each run
//! through [`Executors::run`]; the answers and their paths named
//! (`kgbox_query::names`) and, when asked, the query rendered as openCypher
//! or SPARQL.

use std::time::{Duration, Instant};

use kgbox_bundle::Kg;
use kgbox_query::names;
use kgbox_query::repair::{RepairMode, RepairOptions, RepairReport};
use kgbox_query::{QueryError, RepairSpec};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::executors::{Executors, Overrides, Paths};
use super::schema::{ExecutorName, RenderLanguage, RepairModeName};
use super::RequestError;
use crate::config::QueryConfig;

/// A query and how to run it; `QueryRequest { query, ..Default::default() }`
/// runs it with every setting at its configured default.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryRequest {
    pub query: String,
    pub top_k: Option<usize>,
    /// Provenance paths per answer: `true` (the configured number), `false`, or a number (at most 100).
    pub paths: Option<Paths>,
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

/// What a query runs against: the bundle's graph and executors, and the
/// query configuration that requests override.
pub struct QueryTarget<'t, 'k> {
    pub kg: &'t Kg<'k>,
    pub executors: &'t Executors,
    pub query: &'t QueryConfig,
}

/// `d` in milliseconds, as the responses' timings give it.
pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `query` as DSL text when it is openCypher or SPARQL: `Some(None)` when
/// the SPARQL names something the bundle lacks, so nothing can match.
/// SPARQL's own semantics keep anchors (`include_anchors` is set).
fn dsl_text(
    kg: &Kg<'_>,
    req: &mut QueryRequest,
    max_len: usize,
) -> Result<Option<Option<String>>, RequestError> {
    use kgbox_query::translate::{from_cypher, from_sparql, Form};
    if !matches!(req.language, None | Some(QueryLanguage::Dsl)) && req.query.len() > max_len {
        return Err(RequestError::QueryTooLarge(format!(
            "the query is longer than {max_len} bytes (query.max_query_bytes)"
        )));
    }
    match req.language {
        None | Some(QueryLanguage::Dsl) => Ok(None),
        Some(QueryLanguage::Cypher) => Ok(Some(Some(from_cypher(&req.query)?.to_string()))),
        Some(QueryLanguage::Sparql) => {
            let opts = kgbox_query::render::RenderOptions::default();
            let sq = from_sparql(kg, &req.query, &opts)?;
            let plain = matches!(&sq.form, Form::Select { name: None, .. })
                && sq.name_tests.is_empty()
                && sq.order.is_none()
                && sq.offset == 0
                && sq.limit.is_none();
            if !plain {
                return Err(RequestError::Unsupported(
                    "ASK, LIMIT, OFFSET, ORDER BY and names (rdfs:label) are answered by the SPARQL endpoint, POST /sparql; /v1/query takes a SELECT of one variable".into(),
                ));
            }
            req.include_anchors = true;
            Ok(Some(sq.query.map(|q| q.to_string())))
        }
    }
}

/// Answers a query: checks and defaults its options
/// ([`Executors::options`]), translates openCypher or SPARQL, runs it (with
/// repair: run, repair, run again), and names the answers and their paths.
pub fn answer(
    target: &QueryTarget<'_, '_>,
    mut req: QueryRequest,
    deadline: Option<Instant>,
) -> Result<QueryResponse, RequestError> {
    let (cfg, kg) = (target.query, target.kg);
    let overrides = Overrides::new(req.executor, req.top_k, req.paths, req.seppr_k, deadline);
    let mut run = target.executors.options(cfg, &overrides)?;
    let translated = match dsl_text(kg, &mut req, cfg.max_query_bytes)? {
        None => None,
        Some(Some(t)) => {
            req.query = t.clone();
            Some(t)
        }
        // Nothing can match: no query to run.
        Some(None) => return Ok(nothing(run.exec.executor)),
    };
    run.exec.exclude_anchors = !req.include_anchors;
    let repair = repair_options(&req, cfg.max_top_k)?;
    let with = match repair {
        Some(_) => {
            if req.tighten_with.len() > 100 {
                return Err(RequestError::BadRequest(
                    "tighten_with lists at most 100 entities".into(),
                ));
            }
            resolve_names(kg, &req.tighten_with)?
        }
        None => Vec::new(),
    };
    let t = Instant::now();
    let limits = cfg.parse_limits();
    let ran = kgbox_query::run_repaired(
        kg,
        &req.query,
        &limits,
        &run.exec,
        repair.as_ref().map(|options| RepairSpec {
            options,
            with: &with,
        }),
        |text, exclude| {
            let mut run = run.clone();
            run.exec.exclude.extend_from_slice(exclude);
            target.executors.run(kg, text, &limits, &run)
        },
        |(answers, _)| answers.total,
    )?;
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
                exclude_anchors: run.exec.exclude_anchors,
                ..Default::default()
            };
            let text = kgbox_query::render::render_text(kg, &req.query, &limits, lang, &r)
                .map_err(|e| RequestError::CannotRender(e.to_string()))?;
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
        executor: run.exec.executor,
        timings_ms: QueryTimings {
            parse: ms(timings.parse),
            bind: ms(timings.bind),
            execute: ms(timings.execute),
            repair: ran.repair_time.map(ms),
            total: ms(t.elapsed()),
        },
    })
}

/// The response to a query that cannot match anything.
fn nothing(executor: kgbox_query::Executor) -> QueryResponse {
    QueryResponse {
        answers: Vec::new(),
        total: 0,
        edge_visits: 0,
        executor,
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
    }
}

/// The repair a request asks for: `None` with `"repair": "off"`.
fn repair_options(
    req: &QueryRequest,
    max_top_k: usize,
) -> Result<Option<RepairOptions>, RequestError> {
    if req.repair == RepairMode::Off {
        return Ok(None);
    }
    let mut o = RepairOptions {
        tighten: req.tighten || req.max_answers.is_some() || !req.tighten_with.is_empty(),
        ..RepairOptions::default()
    };
    if let Some(m) = req.max_answers {
        if m == 0 || m > max_top_k {
            return Err(RequestError::BadRequest(format!(
                "max_answers must be between 1 and {max_top_k}"
            )));
        }
        o.max_answers = m;
    }
    Ok(Some(o))
}

/// Entity names (or `#id`), resolved like the entities of a query.
pub fn resolve_names(kg: &Kg<'_>, names: &[String]) -> Result<Vec<u32>, RequestError> {
    names
        .iter()
        .map(|name| {
            kgbox_query::bind::resolve_entity_text(kg, name)
                .map_err(|d| RequestError::Query(QueryError::Invalid(d)))
        })
        .collect()
}
