//! `GET /openapi.json`: the OpenAPI 3.1 description of the public API,
//! derived by utoipa from the handlers' `#[utoipa::path]` attributes and
//! the wire types' `ToSchema` derives, so it cannot drift from the code.
//! docs/http-api.md is checked against it (`documented_routes_match`).

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::schema::{ErrorBody, ErrorDetail};
use crate::service::schema::{ExecutorName, RenderLanguage, RepairModeName};

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
