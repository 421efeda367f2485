//! `GET /openapi.json`: the OpenAPI 3.1 description of the public API,
//! derived by utoipa from the handlers' `#[utoipa::path]` attributes and
//! the wire types' `ToSchema` derives, so it cannot drift from the code.
//! docs/http-api.md is checked against it (`documented_routes_match`).

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, Response};
use utoipa::{Modify, OpenApi};

use super::schema::{ErrorBody, ErrorDetail};
use crate::service::schema::{ExecutorName, RenderLanguage, RepairModeName};

struct Security;

/// The routes anyone may call (see `super::router`).
const OPEN: &[&str] = &[
    "/",
    "/healthz",
    "/readyz",
    "/v2/health/live",
    "/v2/health/ready",
    "/openapi.json",
];

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        if let Some(components) = openapi.components.as_mut() {
            components.add_security_scheme(
                "admin_token",
                SecurityScheme::Http(
                    HttpBuilder::new()
                        .scheme(HttpAuthScheme::Bearer)
                        .description(Some("The admin token, or an API key with the admin scope"))
                        .build(),
                ),
            );
            components.add_security_scheme(
                "api_key",
                SecurityScheme::Http(
                    HttpBuilder::new()
                        .scheme(HttpAuthScheme::Bearer)
                        .bearer_format("kgb_<id>_<secret>")
                        .description(Some(
                            "An API key (`kgbox keys add`). Optional where anonymous reads are on \
                             (http.allow_anonymous; by default on a loopback address only).",
                        ))
                        .build(),
                ),
            );
        }
        let error = |description: &str| {
            Response::builder()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ErrorBody")))
                        .build(),
                )
                .build()
        };
        for (path, item) in openapi.paths.paths.iter_mut() {
            if OPEN.contains(&path.as_str()) {
                continue;
            }
            for op in [item.get.as_mut(), item.post.as_mut(), item.put.as_mut()]
                .into_iter()
                .flatten()
            {
                if op.security.is_some() {
                    continue; // the admin routes: their own.
                }
                op.security = Some(vec![
                    SecurityRequirement::new("api_key", Vec::<String>::new()),
                    SecurityRequirement::default(),
                ]);
                let responses = &mut op.responses.responses;
                for (status, description) in [
                    ("400", "A bad request, or an API key in the URL (`key_in_url`)"),
                    ("401", "No API key where one is needed (`missing_key`), or an unknown, wrong or revoked one (`invalid_key`)"),
                    ("403", "The key may not read this bundle (`forbidden`)"),
                    ("429", "The key is past its request rate (`rate_limited`, with `Retry-After`)"),
                ] {
                    responses
                        .entry(status.to_string())
                        .or_insert_with(|| error(description).into());
                }
            }
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
    modifiers(&Security),
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
