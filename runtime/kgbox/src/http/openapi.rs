//! `GET /openapi.json`: the OpenAPI 3.1 description of the public API,
//! derived by utoipa from the handlers' `#[utoipa::path]` attributes and
//! the wire types' `ToSchema` derives, so it cannot drift from the code.
//! docs/http-api.md is checked against it (`documented_routes_match`).

use axum::Json;
use serde::Serialize;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

/// symbolic, neural, hybrid or sparql_store.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum ExecutorName {
    Symbolic,
    Neural,
    Hybrid,
    #[schema(rename = "sparql_store")]
    SparqlStore,
}

/// cypher or sparql.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum RenderLanguage {
    Cypher,
    Sparql,
}

/// auto (repair a query with no answers) or off.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum RepairModeName {
    Auto,
    Off,
}

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

struct AdminAuth;

impl Modify for AdminAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        if let Some(components) = openapi.components.as_mut() {
            components.add_security_scheme(
                "admin_token",
                SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
            );
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "kgbox",
        description = "Offline knowledge-graph question answering: the device's HTTP API. See docs/http-api.md.",
        license(name = "Apache-2.0")
    ),
    paths(
        super::console::page,
        super::health,
        super::readyz,
        super::live_v2,
        super::v2_ready,
        super::metrics,
        super::bundle,
        super::entity,
        super::query::query,
        super::query::link,
        super::query::retrieve_subgraph,
        super::sparql::get,
        super::sparql::post,
        super::ask::ask,
        super::openai::chat_completions,
        super::openai::models,
        super::admin::status,
        super::admin::put_bundle,
        super::admin::rollback,
        openapi_json,
    ),
    components(schemas(ErrorBody, ErrorDetail, ExecutorName, RenderLanguage, RepairModeName)),
    modifiers(&AdminAuth),
    tags(
        (name = "answers", description = "Questions, queries, linking and retrieval"),
        (name = "graph", description = "The served bundle and its entities"),
        (name = "operations", description = "Health, readiness, metrics and status"),
    )
)]
pub struct ApiDoc;

/// The OpenAPI description of this API.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "operations",
    responses((status = 200, description = "The OpenAPI 3.1 description", content_type = "application/json", body = Object))
)]
pub async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_names_every_public_route_and_the_shared_answer() {
        let doc = ApiDoc::openapi();
        let paths: Vec<&String> = doc.paths.paths.keys().collect();
        for p in [
            "/v1/query",
            "/v1/ask",
            "/sparql",
            "/v1/entities/{name}",
            "/openapi.json",
            "/healthz",
        ] {
            assert!(
                paths.iter().any(|q| q.as_str() == p),
                "{p} missing from {paths:?}"
            );
        }
        let json = serde_json::to_value(&doc).expect("serializable");
        let answer = &json["components"]["schemas"]["Answer"];
        assert!(answer["properties"]["id"].is_object(), "{answer}");
        assert!(answer["properties"]["entity"].is_null(), "{answer}");
        assert_eq!(json["openapi"].as_str().map(|v| &v[..2]), Some("3."));
    }

    /// docs/http-api.md's route table lists exactly the described routes.
    #[test]
    fn documented_routes_match() {
        let doc = ApiDoc::openapi();
        let mut described: Vec<String> = Vec::new();
        for (path, item) in &doc.paths.paths {
            let json = serde_json::to_value(item).expect("serializable");
            for method in ["get", "put", "post", "delete", "patch"] {
                if json.get(method).is_some() {
                    described.push(format!("{} {path}", method.to_uppercase()));
                }
            }
        }
        described.sort();
        let md = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/http-api.md"),
        )
        .expect("docs/http-api.md");
        // Rows of the route table: `| METHOD | [`/path`](#anchor) | ...`.
        let mut documented: Vec<String> = md
            .lines()
            .filter_map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                let method = *cells.get(1)?;
                if !["GET", "PUT", "POST", "DELETE", "PATCH"].contains(&method) {
                    return None;
                }
                let path = cells.get(2)?.split('`').nth(1)?;
                Some(format!("{method} {path}"))
            })
            .collect();
        documented.sort();
        documented.dedup();
        assert_eq!(
            documented, described,
            "docs/http-api.md's route table vs /openapi.json"
        );
    }
}
