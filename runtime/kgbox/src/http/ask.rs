//! `POST /v1/ask`: a question in, answers out (see [`crate::qa`]).

use std::sync::Arc;
use std::time::Instant;

use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use kgbox_qa::llm::LlmError;
use kgbox_qa::LlmPlanError;
use kgbox_qa::{AskError, AskResult, PlannerKind};
use kgbox_query::{Executor, QueryError};
use serde::Deserialize;
use serde_json::json;

use super::query::{bad_body, diagnostic_error, exec_error, PathsParam};
use super::{ApiError, AppState};
use crate::qa::AskParams;

/// Longest question accepted, in bytes.
pub const MAX_QUESTION: usize = 2000;

/// The body of `/v1/ask`; `AskRequest { question, ..Default::default() }`
/// asks with every setting at its configured default.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AskRequest {
    /// The question, at most 2,000 bytes.
    pub question: String,
    pub top_k: Option<usize>,
    /// learned, llm, local, learned+llm or learned+local (default: `planner.kind`).
    #[schema(value_type = Option<String>)]
    pub planner: Option<PlannerKind>,
    /// symbolic, neural, hybrid or sparql_store (default: `executor.mode`).
    #[schema(value_type = Option<super::schema::ExecutorName>)]
    pub executor: Option<kgbox_query::Executor>,
    pub seppr_k: Option<usize>,
    /// Provenance paths per answer: `true` (the configured number), `false`, or a number.
    pub paths: Option<PathsParam>,
    /// Rerank with the bundle's reranker (default: `planner.rerank`).
    pub rerank: Option<bool>,
    /// Repair the planned query (default: `planner.repair`).
    pub repair: Option<bool>,
    /// LLM planner: fall through to the retrieval strategies (default:
    /// `planner.strategies.enabled`).
    pub strategies: Option<bool>,
}

fn bad_request(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
}

/// An ask error as an API error.
pub fn ask_error(e: AskError) -> ApiError {
    let message = e.to_string();
    match e {
        AskError::NoEntity => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "no_entity", message),
        AskError::NoPlanner(_) => {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "no_planner", message)
        }
        AskError::Plan(LlmPlanError::Invalid { rejected, .. }) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "llm_invalid_query",
            message,
        )
        .with_extra(json!({ "rejected": rejected })),
        AskError::Plan(LlmPlanError::Llm(e)) | AskError::Llm(e) => llm_error(&e),
        AskError::Query { query, error } => {
            let api = match *error {
                QueryError::Invalid(d) => diagnostic_error(&d),
                QueryError::Exec(e) => exec_error(&e),
            };
            api.with_extra(json!({ "query": query }))
        }
        AskError::Embed(_) => {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "embed_failed", message)
        }
        AskError::Rerank(_) => {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "rerank_failed", message)
        }
    }
}

fn llm_error(e: &LlmError) -> ApiError {
    let code = match e {
        LlmError::Policy(_) => "llm_refused_by_policy",
        LlmError::Audit(_) => "llm_audit_failed",
        LlmError::BadReply(_) => "llm_bad_reply",
        _ => "llm_unavailable",
    };
    ApiError::new(StatusCode::BAD_GATEWAY, code, e.to_string())
}

/// Answers a question: link, plan, execute, rerank, arbitrate.
///
/// Each answer also carries `entity`, the same number as `id`: the name
/// `/v1/ask` used before the answer schema was shared; it will be removed.
#[utoipa::path(
    post,
    path = "/v1/ask",
    tag = "answers",
    request_body = AskRequest,
    responses(
        (status = 200, description = "The answers and how they were found", body = kgbox_qa::AskResult),
        super::schema::QueryErrors,
        super::schema::StoreErrors,
        (status = 500, description = "The encoder or reranker failed", body = super::schema::ErrorBody),
        (status = 502, description = "The LLM could not be used (`llm_*`), or the SPARQL store (`store_error`)", body = super::schema::ErrorBody),
    )
)]
pub async fn ask(
    State(state): State<Arc<AppState>>,
    body: Result<Json<AskRequest>, JsonRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let Json(req) = body.map_err(bad_body)?;
    let (result, executor) = answer(&state, req).await?;
    Ok(Json(result_json(&result, executor)?))
}

/// The body of a `/v1/ask` reply (and `kgbox ask --json`): the result
/// with the executor that ran.
pub fn result_json(result: &AskResult, executor: Executor) -> Result<serde_json::Value, ApiError> {
    let mut v = serde_json::to_value(result)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?;
    v["executor"] = json!(executor);
    // The answer's id under the name `/v1/ask` gave it before the answer
    // schema was shared (deprecated).
    if let Some(answers) = v["answers"].as_array_mut() {
        for a in answers {
            a["entity"] = a["id"].clone();
        }
    }
    Ok(v)
}

/// Checks `req` and answers it with the served bundle (on a blocking
/// thread): the question service `/v1/ask` and the OpenAI-compatible
/// facade share. Also returns the executor that ran.
pub async fn answer(
    state: &Arc<AppState>,
    req: AskRequest,
) -> Result<(AskResult, Executor), ApiError> {
    let question = req.question.trim().to_string();
    if question.is_empty() {
        return Err(bad_request("question must not be empty"));
    }
    if question.len() > MAX_QUESTION {
        return Err(bad_request(format!(
            "question must be at most {MAX_QUESTION} bytes"
        )));
    }
    if let Some(k) = req.top_k {
        if k == 0 || k > state.query.max_top_k {
            return Err(bad_request(format!(
                "top_k must be between 1 and {}",
                state.query.max_top_k
            )));
        }
    }
    let served = state.served();
    if let Some(k) = req.seppr_k {
        if k == 0 || k > served.executor.max_seppr_k {
            return Err(bad_request(format!(
                "seppr_k must be between 1 and {}",
                served.executor.max_seppr_k
            )));
        }
    }
    let paths = match req.paths {
        None | Some(PathsParam::On(true)) => None,
        Some(PathsParam::On(false)) => Some(0),
        Some(PathsParam::Count(n)) if n <= 100 => Some(n),
        Some(PathsParam::Count(_)) => return Err(bad_request("paths must be at most 100")),
    };
    let executor = req.executor.unwrap_or(served.executor.mode);
    let params = AskParams {
        planner: req.planner,
        top_k: req.top_k,
        executor: Some(executor),
        seppr_k: req.seppr_k,
        paths,
        deadline: Some(Instant::now() + state.request_timeout),
        rerank: req.rerank,
        export_features: false,
        repair: req.repair,
        strategies: req.strategies,
    };
    let config = state.config.clone();
    let result = tokio::task::spawn_blocking(move || {
        served.qa.ask(
            &served.bundle,
            served.encoder.as_deref(),
            served.model.as_deref(),
            &config,
            &question,
            &params,
        )
    })
    .await
    .map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("the question failed inside kgbox: {e}"),
        )
    })?
    .map_err(ask_error)?;
    Ok((result, executor))
}
