//! The types that only describe the API in `/openapi.json` (error bodies,
//! the error responses of each route; the enum names the request types use
//! are in [`crate::service::schema`]): the handlers name them in
//! their `#[utoipa::path]` attributes and [`super::openapi`] lists them, so
//! they sit below both (no handler <-> openapi module cycle).

use serde::Serialize;
use utoipa::ToSchema;

/// Every error: `{"error": {"code", "message", ...}}`, with extra fields
/// for some codes (`suggestions`, `candidates`, `query`, `span`, ...).
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// A stable machine-readable code, e.g. `unknown_entity`.
    pub code: String,
    /// What went wrong, for a person.
    pub message: String,
}

/// An error of the OpenAI-compatible facade, in OpenAI's shape.
#[derive(Serialize, ToSchema)]
pub struct OpenAiErrorBody {
    pub error: OpenAiErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct OpenAiErrorDetail {
    pub message: String,
    /// `invalid_request_error` below 500, `server_error` from 500.
    #[serde(rename = "type")]
    pub kind: String,
    pub param: Option<String>,
    /// The kgbox error code, e.g. `no_user_message`.
    pub code: String,
}

/// The errors of the answering routes (`/v1/query`, `/v1/link`,
/// `/v1/retrieve`, `/v1/ask`).
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum QueryErrors {
    #[response(status = 400, description = "A bad request or query")]
    BadRequest(ErrorBody),
    #[response(status = 404, description = "An unknown entity or relation")]
    NotFound(ErrorBody),
    #[response(status = 408, description = "Past the request timeout")]
    Timeout(ErrorBody),
    #[response(status = 409, description = "An ambiguous entity name")]
    Ambiguous(ErrorBody),
    #[response(status = 413, description = "The body is over the size limit")]
    TooLarge(ErrorBody),
    #[response(status = 415, description = "The body is not JSON")]
    NotJson(ErrorBody),
    #[response(
        status = 422,
        description = "Valid but not answerable: unsupported constructs, no entity, no planner"
    )]
    Unprocessable(ErrorBody),
}

/// The errors of the `sparql_store` executor (`/v1/query`, `/v1/ask`): the
/// external graph store failed; the message names its endpoint.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum StoreErrors {
    #[response(
        status = 502,
        description = "`store_error`: the SPARQL store answered an error status or results that do not parse"
    )]
    BadGateway(ErrorBody),
    #[response(
        status = 503,
        description = "`store_unavailable`: the SPARQL store cannot be reached"
    )]
    Unavailable(ErrorBody),
    #[response(
        status = 504,
        description = "`store_timeout`: no reply from the SPARQL store within `sparql_store.timeout_ms`"
    )]
    GatewayTimeout(ErrorBody),
}

/// The errors of `/sparql`.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum SparqlErrors {
    #[response(
        status = 400,
        description = "Not SPARQL, or outside the supported subset (named in the message)"
    )]
    BadRequest(ErrorBody),
    #[response(
        status = 406,
        description = "Accept names only formats /sparql cannot write"
    )]
    NotAcceptable(ErrorBody),
    #[response(status = 408, description = "Past the request timeout")]
    Timeout(ErrorBody),
    #[response(status = 413, description = "The body is over the size limit")]
    TooLarge(ErrorBody),
    #[response(
        status = 415,
        description = "A body that is neither a form nor application/sparql-query"
    )]
    NotAQuery(ErrorBody),
    #[response(
        status = 422,
        description = "The translated query cannot run (e.g. over the query limits)"
    )]
    Unprocessable(ErrorBody),
}
