//! Errors on the wire: each service error ([`RequestError`]) as a status and
//! a stable error code in the JSON envelope, and JSON bodies extracted with
//! the same envelope for their rejections ([`ApiJson`]).

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::Json;
use kgbox_qa::llm::LlmError;
use kgbox_qa::{AskError, LlmPlanError};
use kgbox_query::{DiagKind, Diagnostic, ExecError, QueryError};
use serde::de::DeserializeOwned;
use serde_json::json;

use super::ApiError;
use crate::service::RequestError;

/// A JSON request body; a body that is not one is refused in the error
/// envelope ([`bad_body`]).
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let Json(body) = Json::<T>::from_request(req, state).await?;
        Ok(ApiJson(body))
    }
}

impl From<JsonRejection> for ApiError {
    fn from(e: JsonRejection) -> Self {
        bad_body(e)
    }
}

/// A JSON body rejection as an error: 413, 415, or 400/422 `bad_json`.
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

impl From<RequestError> for ApiError {
    fn from(e: RequestError) -> Self {
        let message = e.to_string();
        match e {
            RequestError::BadRequest(_) => {
                ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
            }
            RequestError::QueryTooLarge(_) => {
                ApiError::new(StatusCode::BAD_REQUEST, "query_too_large", message)
            }
            RequestError::Translate(e) => translate_error(e),
            RequestError::Unsupported(_) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unsupported_construct",
                message,
            ),
            RequestError::Query(e) => query_error(&e),
            RequestError::Ask(e) => ask_error(e),
            RequestError::CannotRender(_) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "cannot_render", message)
            }
            RequestError::Internal(_) => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
            }
        }
    }
}

/// A translation error: 400 for syntax, 422 for a valid query outside the
/// supported subset.
pub fn translate_error(e: kgbox_query::translate::TranslateError) -> ApiError {
    use kgbox_query::translate::TranslateError;
    let (status, code) = match e {
        TranslateError::Unsupported { .. } => {
            (StatusCode::UNPROCESSABLE_ENTITY, "unsupported_construct")
        }
        TranslateError::Syntax(..) => (StatusCode::BAD_REQUEST, "syntax_error"),
        TranslateError::Shape(_) => (StatusCode::UNPROCESSABLE_ENTITY, "unsupported_shape"),
    };
    ApiError::new(status, code, e.to_string())
}

/// A query that failed to parse, bind or run.
pub fn query_error(e: &QueryError) -> ApiError {
    match e {
        QueryError::Invalid(d) => diagnostic_error(d),
        QueryError::Exec(e) => exec_error(e),
    }
}

/// A query diagnostic with its position and suggestions.
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

/// A query that parsed and bound but did not run to the end.
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

/// A question that could not be answered.
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
            query_error(&error).with_extra(json!({ "query": query }))
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
