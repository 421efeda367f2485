//! The neural query executor (ULTRAG's query executor, UltraQuery's
//! projection): for each projection of a query, a subgraph is cut around the
//! fuzzy input set with SEPPR ([`seppr`]), the ULTRA entity model scores every
//! node of it ([`model`]), and the sigmoid of those scores is the projected
//! fuzzy set ([`projector`]).
//!
//! ULTRA's relation half depends only on the graph and the query relation, so
//! the packager runs it once per relation ([`relgraph`], [`model::relation_reps`])
//! and the bundle stores the result; a query runs only the entity half.
//!
//! The entity model runs by default on the [`native`] engine (ULTRA's
//! entity model in Rust, its weights read from the ONNX file); two engines
//! run ONNX graphs behind one trait ([`engine::Engine`]): tract (pure Rust)
//! and ONNX Runtime (cargo feature `ort`, with CUDA behind the `cuda`
//! feature). The bundle's sentence encoder ([`encoder`]) and the answer
//! reranker's model run on them too: this crate is the one home of ONNX.

pub mod batcher;
pub mod encoder;
pub mod engine;
pub mod f32le;
pub mod kgc;
pub mod meta;
pub mod model;
pub mod native;
pub mod projector;
pub mod relgraph;
pub mod seppr;
pub mod subgraph;

pub use encoder::{Encoder, EncoderError};
pub use engine::{Device, Engine, EngineKind};
pub use meta::UltraMeta;
pub use model::UltraModel;
pub use projector::NeuralProjector;

/// Errors of the neural executor.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NeuralError {
    #[error("the ONNX model cannot be loaded: {0}")]
    Load(String),
    #[error("the ONNX model failed to run: {0}")]
    Run(String),
    #[error("the `{0}` engine is not built into this binary (rebuild with `--features {0}`)")]
    EngineMissing(&'static str),
    #[error("the bundle's neural model is invalid: {0}")]
    Invalid(String),
}

pub type Result<T, E = NeuralError> = std::result::Result<T, E>;
