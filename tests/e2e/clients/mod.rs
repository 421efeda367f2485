//! The device against the clients people use: the web console in a real
//! browser, the OpenAI-compatible facade, the OpenAPI description, the
//! Python client package, the SPARQL endpoint (and pyoxigraph's answers on
//! three public graphs), the W3C SPARQL 1.1 query tests and YASGUI
//! against the endpoint from another origin.

mod console;
mod openai;
mod openapi;
mod python;
mod sparql;
mod sparql_graphs;
mod w3c;
mod yasgui;
