//! Question answering over a kgbox bundle, as a pipeline of stages: entity
//! linking ([`question`]), a planner that writes a DSL query ([`planner`]:
//! the learned classifier, the zero-shot relation matcher, or an LLM through
//! [`llm`]), the query executor with query repair, the retrieval strategies
//! after a failed LLM query ([`strategies`]), the reranker ([`rerank`]) and
//! the arbitrator ([`arbitrate`]) that picks the final answers. The types
//! the stages share are in [`pipeline`]; [`ask`] runs the stages in order
//! and times them.
//!
//! Features: `dense` (the bundle's sentence encoder as the [`Embedder`]),
//! `local-llm` (an in-process GGUF model), `train` (the packager's side: the
//! planner trainer and the planner sections' writers).
//!
//! The LLM never sees the graph's structure: prompts carry the question, the
//! linked entities' names, relation names and descriptions and candidate
//! answers' names ([`prompt`]); what is sent is governed by [`llm::policy`]
//! and recorded by [`llm::audit`].

pub mod arbitrate;
pub mod ask;
pub mod confidence;
pub mod llm;
mod names;
pub mod pipeline;
pub mod planner;
pub mod prompt;
mod query_repair;
pub mod question;
pub mod rerank;
pub mod rng;
pub mod strategies;
pub mod words;

pub use pipeline::{
    AskError, AskOptions, AskResult, Confidence, Context, ExecSpec, PlannerKind, Stages,
};
pub use planner::{LearnedPlanner, LlmPlanError, RelationVectors};

/// A sentence encoder: unit-length embeddings of texts, in order. The
/// runtime passes the bundle's encoder (`model.encoder.*`).
pub trait Embedder: Send + Sync {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String>;
    /// Components per embedding.
    fn dim(&self) -> usize;
    /// For each `(text, spans)`: the whole text's vector, then one per span
    /// (byte ranges of the text) pooled from the same pass over the text
    /// (see `kgbox_neural::Encoder::embed_spans`).
    fn embed_spans(
        &self,
        items: &[(&str, Vec<std::ops::Range<usize>>)],
    ) -> Result<Vec<Vec<Vec<f32>>>, String> {
        let _ = items;
        Err("this encoder cannot pool spans of a text".into())
    }
}

/// The bundle's sentence encoder as an [`Embedder`].
#[cfg(feature = "dense")]
pub struct EncoderEmbedder {
    encoder: std::sync::Arc<kgbox_neural::Encoder>,
    dim: usize,
}

#[cfg(feature = "dense")]
impl EncoderEmbedder {
    /// Wraps `encoder`, embedding one probe text to learn its dimension.
    pub fn new(encoder: std::sync::Arc<kgbox_neural::Encoder>) -> Result<Self, String> {
        let dim = encoder
            .embed(&["dimension probe"])
            .map_err(|e| e.to_string())?
            .first()
            .map(Vec::len)
            .unwrap_or(0);
        Ok(EncoderEmbedder { encoder, dim })
    }
}

#[cfg(feature = "dense")]
impl Embedder for EncoderEmbedder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        self.encoder.embed(texts).map_err(|e| e.to_string())
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn embed_spans(
        &self,
        items: &[(&str, Vec<std::ops::Range<usize>>)],
    ) -> Result<Vec<Vec<Vec<f32>>>, String> {
        self.encoder.embed_spans(items).map_err(|e| e.to_string())
    }
}
