//! `POST /v1/ask`: the question service ([`crate::service::ask`]) over HTTP.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use kgbox_qa::AskResult;
use kgbox_query::Executor;

use super::errors::ApiJson;
use super::{ApiError, AppState, Chosen};
use crate::served::Served;
use crate::service::ask::{answer, result_json, AskRequest};

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
    Chosen(served): Chosen,
    ApiJson(req): ApiJson<AskRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let (result, executor) = run(&state, served, req).await?;
    Ok(Json(result_json(&result, executor)?))
}

/// Answers `req` with `served` on a blocking thread (a question
/// can take seconds of LLM time): `/v1/ask` and the OpenAI-compatible
/// facade.
pub(super) async fn run(
    state: &Arc<AppState>,
    served: Arc<Served>,
    req: AskRequest,
) -> Result<(AskResult, Executor), ApiError> {
    let config = state.config.clone();
    let deadline = Some(Instant::now() + state.request_timeout);
    tokio::task::spawn_blocking(move || answer(&served, &config, req, deadline))
        .await
        .map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                format!("the question failed inside kgbox: {e}"),
            )
        })?
        .map_err(ApiError::from)
}
