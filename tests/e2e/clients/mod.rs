//! The device against the clients people use: the web console in a real
//! browser, the OpenAI-compatible facade, the OpenAPI description, the
//! Python client package and the SPARQL endpoint.

mod console;
mod openai;
mod openapi;
mod python;
mod sparql;
