//! Question answering over a kgbox bundle: a question goes through entity
//! linking ([`question`]), a planner that writes a DSL query (the learned
//! classifier of [`learned`], an LLM through [`llm`], or the zero-shot
//! relation matcher of [`zeroshot`]), the query executor, and the
//! arbitrator ([`arbitrate`]) that picks the final answers. [`ask`] runs the
//! stages in order and times them.
//!
//! The LLM never sees the graph's structure: prompts carry the question, the
//! linked entities' names, relation names and descriptions and candidate
//! answers' names ([`prompt`]); what is sent is governed by [`llm::policy`]
//! and recorded by [`llm::audit`].

pub mod arbitrate;
pub mod ask;
pub mod features;
pub mod learned;
pub mod llm;
pub mod llm_planner;
pub mod prompt;
mod query_repair;
pub mod question;
pub mod rerank;
pub mod strategies;
pub mod template;
pub mod train;
pub mod zeroshot;

pub use ask::{AskError, AskOptions, AskResult, PlannerKind};
pub use learned::LearnedPlanner;

/// A sentence encoder: unit-length embeddings of texts, in order. The
/// runtime passes the bundle's encoder (`model.encoder.*`).
pub trait Embedder: Send + Sync {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String>;
    /// Components per embedding.
    fn dim(&self) -> usize;
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
}
