//! Queries and their executors: `/v1/query`, `/v1/retrieve` and
//! `/v1/link` over a real socket, dense entity linking, the neural and
//! hybrid executors, and the `sparql_store` executor against Oxigraph.

mod api;
mod dense;
mod neural;
mod sparql_store;
