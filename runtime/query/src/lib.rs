//! Queries over a kgbox bundle's graph.
//!
//! [`parse`] turns DSL text into an [`ast::Query`] without looking at any
//! graph; [`bind`] resolves its names against a bundle's [`Kg`] into a
//! [`plan::Plan`]; [`exec`] evaluates a plan over fuzzy sets with provenance
//! ([`proofs`]: the walk every executor's provenance comes from).
//! [`link`] finds entity mentions in text (its dense stage takes the
//! embeddings of a [`dense::TextEncoder`]); [`retrieve`] cuts a subgraph.
//! No ONNX model runs here: the encoder lives in `kgbox-neural`.
//!
//! [`Kg`]: kgbox_bundle::Kg

pub mod ast;
pub mod bind;
pub mod dataset;
pub mod dense;
pub mod diag;
pub mod exec;
pub mod fusion;
pub mod fuzzy;
pub mod link;
pub mod names;
pub mod parse;
pub mod plan;
pub mod probe;
pub mod proofs;
pub mod render;
pub mod repair;
pub mod retrieve;
pub mod run;
pub mod translate;

pub use ast::Query;
pub use diag::{DiagKind, Diagnostic};
pub use exec::{
    execute, execute_with, Answer, Answers, ExecError, ExecOptions, Executor, Projector,
    RemoteFailure, ANCHOR_WEIGHT,
};
pub use fusion::Fusion;
pub use parse::{parse, parse_with, ParseLimits};
pub use run::{
    repair_then, run_query, run_query_with, run_repaired, QueryError, RepairSpec, Repaired, Timings,
};
