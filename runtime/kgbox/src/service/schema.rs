//! Names that only describe request fields in `/openapi.json`, for enums
//! whose Rust types live in other crates (and so cannot derive a schema
//! here).

use utoipa::ToSchema;

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
