//! Queries and their executors: `/v1/query`, `/v1/retrieve` and
//! `/v1/link` over a real socket, dense entity linking, the neural and
//! hybrid executors, the `sparql_store` executor against Oxigraph, and the
//! one check of request options every service shares.

mod api;
mod dense;
mod neural;
mod options;
mod sparql_store;
