//! `POST /v1/query`, `/v1/link`, `/v1/retrieve`: handlers over the query
//! service ([`crate::service::query`]) and the graph.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use kgbox_bundle::Kg;
use kgbox_query::link::LinkOptions;
use kgbox_query::names;
use kgbox_query::retrieve::{retrieve, RetrieveOptions, MAX_HOPS};
use serde::Deserialize;
use serde_json::json;

use super::errors::ApiJson;
use super::{ApiError, AppState, Chosen};
use crate::served::Served;
use crate::service::query::{answer, ms, resolve_names, QueryRequest, QueryResponse, QueryTarget};

pub(super) fn kg_of(served: &Served) -> Result<Kg<'_>, ApiError> {
    served.bundle.kg().map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "bundle_corrupt",
            e.to_string(),
        )
    })
}

/// Runs a DSL, openCypher or SPARQL query.
#[utoipa::path(post, path = "/v1/query", tag = "answers", request_body = QueryRequest,
    responses((status = 200, description = "The answers", body = QueryResponse),
        super::schema::QueryErrors, super::schema::StoreErrors))]
pub async fn query(
    State(state): State<Arc<AppState>>,
    Chosen(served): Chosen,
    ApiJson(req): ApiJson<QueryRequest>,
) -> Result<Json<QueryResponse>, ApiError> {
    let executor = req.executor.unwrap_or(served.executors.config.mode);
    let deadline = Some(Instant::now() + state.request_timeout);
    let run = move |state: &AppState| {
        let kg = kg_of(&served)?;
        let target = QueryTarget {
            kg: &kg,
            executors: &served.executors,
            query: &state.query,
        };
        Ok(answer(&target, req, deadline)?)
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
    Chosen(served): Chosen,
    ApiJson(req): ApiJson<LinkRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
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
    Chosen(served): Chosen,
    ApiJson(req): ApiJson<RetrieveRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
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
