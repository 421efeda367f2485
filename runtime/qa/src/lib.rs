//! Question answering over a kgbox bundle, as a pipeline of stages: entity
//! linking ([`question`]), a planner that writes a DSL query ([`planner`]:
//! the learned classifier, the zero-shot relation matcher, or an LLM through
//! [`llm`]), the query executor with query repair, the retrieval strategies
//! after a failed LLM query ([`strategies`]), the reranker ([`rerank`]) and
//! the arbitrator ([`arbitrate`]) that picks the final answers. The types
//! the stages share are in [`pipeline`]; [`ask`] runs the stages in order
//! and times them.
//!
//! The sentence encoder the planners and the reranker embed with is a
//! [`kgbox_query::dense::TextEncoder`] (the runtime passes the bundle's).
//!
//! Features: `local-llm` (an in-process GGUF model), `train` (the packager's
//! side: the planner trainer and the planner sections' writers).
//!
//! The LLM never sees the graph's structure: prompts carry the question, the
//! linked entities' names, relation names and descriptions and candidate
//! answers' names ([`prompt`]); what is sent is governed by [`llm::policy`]
//! and recorded by [`llm::audit`].

mod answer_order;
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
