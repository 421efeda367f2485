//! What the stages of a question share: the caller's [`Stages`] and
//! [`Context`], the knobs ([`AskOptions`]), the result ([`AskResult`]) and
//! the error ([`AskError`]). The stage modules ([`crate::planner`],
//! [`crate::rerank`], [`crate::strategies`], [`crate::arbitrate`]) never
//! import this module: it gathers their types, and [`crate::ask`] runs
//! them.

use std::time::Instant;

use kgbox_bundle::Kg;
use kgbox_query::link::Mention;
use kgbox_query::{Answers, QueryError};
use serde::Serialize;

use crate::arbitrate::Arbitration;
use crate::llm::{ChatBackend, LlmError};
use crate::planner::{LearnedPlanner, LlmPlanError, PlanError, RelationVectors};
use crate::question::Topic;
use crate::rerank::apply::{ApplyError, CandidateFeatures};
use crate::rerank::{RerankError, RerankInfo, Reranker};
use crate::strategies::{StrategyOptions, StrategyReport};
use kgbox_query::dense::TextEncoder;

pub use crate::arbitrate::AskAnswer;
pub use crate::confidence::Confidence;
pub use crate::planner::{PlanInfo, PlannerKind};
pub use crate::question::LinkedEntity;
pub use crate::rerank::NameSimilarity;

/// The stages that depend on how the bundle is served, supplied by the
/// caller (the runtime links with or without the dense stage and runs the
/// configured executor).
pub trait Stages {
    /// Finds the mentions of entities in `text`.
    fn link(&self, text: &str) -> Result<Vec<Mention>, String>;
    /// Runs a DSL query with the served executor.
    fn execute(&self, spec: &ExecSpec<'_>) -> Result<Answers, QueryError>;
}

/// One query for [`Stages::execute`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecSpec<'a> {
    /// The DSL text.
    pub query: &'a str,
    /// Answers returned at most.
    pub candidates: usize,
    /// Keep the query's anchor entities among the answers (otherwise they
    /// are excluded).
    pub keep_anchors: bool,
    /// Entities never among the answers, whatever the query
    /// ([`kgbox_query::ExecOptions::exclude`]): without `keep_anchors`, the
    /// query's topic ([`kgbox_query::repair::topic`]: its anchors and the
    /// entities named like them next to them).
    pub exclude: &'a [u32],
}

#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error(
        "no entity of the graph was found in the question; write the one it is about in [brackets]"
    )]
    NoEntity,
    #[error("{0}")]
    NoPlanner(String),
    #[error("the LLM planner failed: {0}")]
    Plan(#[from] LlmPlanError),
    #[error("{0}")]
    Llm(#[from] LlmError),
    #[error("the planned query {query:?} failed: {error}")]
    Query {
        query: String,
        error: Box<QueryError>,
    },
    #[error("the question could not be embedded: {0}")]
    Embed(String),
    #[error("{0}")]
    Rerank(#[from] RerankError),
}

impl From<PlanError> for AskError {
    fn from(e: PlanError) -> Self {
        match e {
            PlanError::NoEntity => AskError::NoEntity,
            PlanError::NoPlanner(m) => AskError::NoPlanner(m),
            PlanError::Llm(e) => AskError::Plan(e),
            PlanError::Embed(m) => AskError::Embed(m),
        }
    }
}

impl From<ApplyError> for AskError {
    fn from(e: ApplyError) -> Self {
        match e {
            ApplyError::Embed(m) => AskError::Embed(m),
            ApplyError::Rerank(e) => AskError::Rerank(e),
        }
    }
}

/// Knobs of one question.
#[derive(Debug, Clone)]
pub struct AskOptions {
    pub planner: PlannerKind,
    /// Final answers at most.
    pub top_k: usize,
    /// Candidates the executor returns (and the LLM arbitrator sees).
    pub candidates: usize,
    /// Let the LLM choose the final answers (when an LLM is configured).
    pub llm_arbitrate: bool,
    /// Send candidates' provenance paths to the LLM.
    pub share_context: bool,
    pub max_retries: usize,
    /// LLM planner: replies per attempt ([`crate::planner::PlanRequest::samples`]).
    pub samples: usize,
    /// Relations listed to the LLM at most.
    pub max_relations: usize,
    /// `learned+llm` / `learned+local`: ask the LLM when the learned
    /// planner's best template is less likely than this.
    pub fallback_below: f32,
    /// With an example-trained planner and `paths` auto: weigh the path
    /// ranker in when its best template is less likely than this.
    pub paths_below: f32,
    /// When the path ranker plans.
    pub paths: crate::planner::PathRanker,
    /// Rerank candidates with the bundle's reranker (when it has one).
    pub rerank: bool,
    /// Return every scored candidate's reranker features
    /// ([`AskResult::features`]), for training a reranker.
    pub export_features: bool,
    /// Repair the planned query: relax it when it has no answers, tighten
    /// it by the other linked entities when it has too many.
    pub repair: bool,
    /// The fall-through to other retrieval strategies after a failed or
    /// low-confidence LLM query ([`crate::strategies`]).
    pub strategies: StrategyOptions,
}

impl Default for AskOptions {
    fn default() -> Self {
        AskOptions {
            planner: PlannerKind::Learned,
            top_k: 5,
            candidates: 50,
            llm_arbitrate: true,
            share_context: false,
            max_retries: 2,
            samples: crate::planner::DEFAULT_SAMPLES,
            max_relations: 300,
            fallback_below: crate::planner::DEFAULT_FALLBACK_BELOW,
            paths_below: crate::planner::DEFAULT_PATHS_BELOW,
            paths: crate::planner::PathRanker::Auto,
            rerank: true,
            export_features: false,
            repair: true,
            strategies: StrategyOptions::default(),
        }
    }
}

/// What a bundle and its configuration offer to [`crate::ask::ask`].
pub struct Context<'a, 'k> {
    pub kg: &'a Kg<'k>,
    pub learned: Option<&'a LearnedPlanner>,
    pub relvecs: Option<&'a RelationVectors>,
    pub embedder: Option<&'a dyn TextEncoder>,
    /// The relations' word vectors of the path ranker.
    pub steps: Option<&'a crate::planner::StepVectors>,
    /// The chat model for the `llm` or `local` planner and the arbitrator.
    pub chat: Option<&'a dyn ChatBackend>,
    /// Linking and the executor as served.
    pub stages: &'a dyn Stages,
    /// The bundle's answer reranker.
    pub reranker: Option<&'a Reranker>,
    /// Cosine similarity of a question embedding to an entity's name vector
    /// (the bundle's `kg.dense.*`), for the reranker's text feature.
    pub name_similarity: Option<&'a NameSimilarity<'a>>,
}

/// Milliseconds per stage.
#[derive(Debug, Clone, Copy, Default, Serialize, utoipa::ToSchema)]
pub struct StageTimings {
    pub link: f64,
    pub plan: f64,
    pub execute: f64,
    pub rerank: f64,
    pub arbitrate: f64,
    /// The fall-through to other retrieval strategies (0 when it did not run).
    pub strategies: f64,
    pub total: f64,
}

/// An answered question. The nested reports (`topic`, `linked`, `plan`,
/// `arbitration`, `rerank`, `repair`, `strategies`) are described in
/// docs/http-api.md; the OpenAPI description leaves them open objects.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AskResult {
    pub answers: Vec<AskAnswer>,
    /// The DSL query that ran.
    pub query: String,
    #[schema(value_type = Option<Object>)]
    pub topic: Option<Topic>,
    #[schema(value_type = Vec<Object>)]
    pub linked: Vec<LinkedEntity>,
    #[schema(value_type = String)]
    pub planner: PlannerKind,
    #[schema(value_type = Object)]
    pub plan: PlanInfo,
    #[schema(value_type = Object)]
    pub arbitration: Arbitration,
    /// What the reranker did, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub rerank: Option<RerankInfo>,
    /// The reranker's feature rows of the scored candidates (with
    /// [`AskOptions::export_features`]).
    #[serde(skip)]
    pub features: Vec<CandidateFeatures>,
    /// What query repair did, when it ran; the answers then come from
    /// `repair.repaired` (when one was found), not from `query`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub repair: Option<kgbox_query::repair::RepairReport>,
    /// How far to trust the answers ([`Confidence`]).
    pub confidence: Confidence,
    /// Why the answers are not `high` confidence, in words for a person
    /// (the repaired query, or the weak score); absent when they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caveat: Option<String>,
    /// Candidates the executor found (non-zero score), or those the
    /// retrieval strategies gathered when they found the answers.
    pub candidates: usize,
    /// The retrieval strategies tried after a failed or low-confidence LLM
    /// query, in order (empty when the query was enough).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub strategies: Vec<StrategyReport>,
    pub timings_ms: StageTimings,
}

/// Milliseconds since `t`.
pub fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Runs `stage`, writing its milliseconds to `slot`.
pub fn timed<T>(slot: &mut f64, stage: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let out = stage();
    *slot = ms(t);
    out
}
