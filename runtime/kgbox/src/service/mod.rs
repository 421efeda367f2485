//! The device's services: what a request asks of the served bundle, with no
//! transport in it. The front ends (`kgbox query` and `kgbox ask`, HTTP,
//! MQTT through HTTP's router) parse their input into these requests and
//! show the results; only [`crate::http`] knows status codes and the JSON
//! error envelope (`From<RequestError> for ApiError`).
//!
//! - [`executors`]: the executors of the served bundle (symbolic, neural,
//!   hybrid, sparql_store), the one place that checks and defaults a
//!   request's `top_k`, `paths` and `seppr_k`, and runs a query. It sits
//!   below [`crate::served`], which owns one.
//! - [`query`]: a DSL, openCypher or SPARQL query with repair.
//! - [`ask`]: a question through the planners.
//! - [`sparql`]: all of SPARQL 1.1 Query, evaluated over the bundle.

pub mod ask;
pub mod executors;
pub mod query;
pub mod schema;
pub mod sparql;

use kgbox_qa::AskError;
use kgbox_query::translate::TranslateError;
use kgbox_query::QueryError;

/// Why a request was not answered. Each variant is one kind of failure that
/// a front end shows its own way (HTTP: a status and an error code).
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// A request field out of its range, or a request that cannot be run
    /// as given (`bad_request`).
    #[error("{0}")]
    BadRequest(String),
    /// A query longer than `query.max_query_bytes` (`query_too_large`).
    #[error("{0}")]
    QueryTooLarge(String),
    /// openCypher or SPARQL that does not translate to the DSL.
    #[error(transparent)]
    Translate(#[from] TranslateError),
    /// A valid query that this service does not answer (it names the one
    /// that does) (`unsupported_construct`).
    #[error("{0}")]
    Unsupported(String),
    /// The query did not parse, bind or run.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The question could not be answered.
    #[error(transparent)]
    Ask(#[from] AskError),
    /// The query cannot be written in the language asked for (`cannot_render`).
    #[error("{0}")]
    CannotRender(String),
    /// A failure inside kgbox (`internal`).
    #[error("{0}")]
    Internal(String),
}
