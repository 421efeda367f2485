//! The planners: a question and its linked entities in, a DSL query out.
//! [`plan`] runs the one asked for: the bundle's learned classifier
//! ([`learned`], over [`features`], choosing among [`template`]s), the
//! zero-shot relation matcher ([`zeroshot`]) when the bundle has no
//! classifier, or an LLM ([`llm`]). The packager fits the classifier with
//! `train` (feature `train`).

pub mod features;
pub mod learned;
pub mod llm;
pub mod template;
#[cfg(feature = "train")]
pub mod train;
pub mod zeroshot;

use kgbox_bundle::Kg;
use serde::{Deserialize, Serialize};

use crate::llm::ChatBackend;
use crate::prompt::EntityInfo;
use crate::question::{mask, LinkedEntity, Topic};
use crate::Embedder;

pub use learned::{LearnedPlanner, Prediction, DEFAULT_THRESHOLD};
pub use llm::{LlmPlanError, Rejected};
pub use zeroshot::RelationVectors;

/// Which planner writes the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlannerKind {
    /// The bundle's classifier (or, without one, the zero-shot matcher).
    #[default]
    Learned,
    /// An LLM over the OpenAI-compatible API.
    Llm,
    /// The in-process GGUF model.
    Local,
    /// Relation descriptions by embedding similarity (reported, not chosen).
    Zeroshot,
}

impl std::fmt::Display for PlannerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PlannerKind::Learned => "learned",
            PlannerKind::Llm => "llm",
            PlannerKind::Local => "local",
            PlannerKind::Zeroshot => "zeroshot",
        })
    }
}

impl std::str::FromStr for PlannerKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "learned" => Ok(PlannerKind::Learned),
            "llm" => Ok(PlannerKind::Llm),
            "local" => Ok(PlannerKind::Local),
            other => Err(format!("unknown planner {other:?} (learned, llm or local)")),
        }
    }
}

/// How the plan was made.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PlanInfo {
    /// The learned planner's best templates with their probabilities.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<Prediction>,
    /// LLM calls made by the planner.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<usize>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<Rejected>,
    /// The zero-shot match's cosine similarity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
}

/// What the planners may use: the bundle's planner sections, its sentence
/// encoder and the configured chat model.
pub struct Planners<'a, 'k> {
    pub kg: &'a Kg<'k>,
    pub learned: Option<&'a LearnedPlanner>,
    pub relvecs: Option<&'a RelationVectors>,
    pub embedder: Option<&'a dyn Embedder>,
    /// The chat model of the `llm` and `local` planners.
    pub chat: Option<&'a dyn ChatBackend>,
}

/// One question to plan.
pub struct PlanRequest<'a> {
    pub kind: PlannerKind,
    pub question: &'a str,
    /// The entity the question is about (the learned and zero-shot
    /// planners need one).
    pub topic: Option<&'a Topic>,
    /// Every linked entity (named to the LLM).
    pub linked: &'a [LinkedEntity],
    /// LLM retries after an invalid query.
    pub max_retries: usize,
    /// Relations listed to the LLM at most.
    pub max_relations: usize,
}

/// A planned query.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The planner that wrote it (`learned` becomes `zeroshot` when the
    /// bundle has relation vectors but no classifier).
    pub planner: PlannerKind,
    pub query: String,
    /// Whether the query's anchor entities may be answers (the learned
    /// template's calibrated policy).
    pub keep_anchors: bool,
    pub info: PlanInfo,
    /// The masked question's embedding, when the planner made one (the
    /// reranker reuses it).
    pub question_vec: Option<Vec<f32>>,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("no entity of the graph was found in the question")]
    NoEntity,
    #[error("{0}")]
    NoPlanner(String),
    #[error("the LLM planner failed: {0}")]
    Llm(#[from] LlmPlanError),
    #[error("the question could not be embedded: {0}")]
    Embed(String),
}

/// The arbitrator's threshold: the learned planner's calibrated one, else
/// [`DEFAULT_THRESHOLD`].
pub fn answer_threshold(learned: Option<&LearnedPlanner>) -> f32 {
    learned
        .map(|l| l.meta.answer_threshold)
        .unwrap_or(DEFAULT_THRESHOLD)
}

/// Writes the query for `req` with the planner it asks for.
pub fn plan(p: &Planners<'_, '_>, req: &PlanRequest<'_>) -> Result<Planned, PlanError> {
    match req.kind {
        PlannerKind::Learned | PlannerKind::Zeroshot => plan_learned(p, req),
        PlannerKind::Llm | PlannerKind::Local => plan_llm(p, req),
    }
}

/// The learned classifier, or without one the zero-shot matcher.
fn plan_learned(p: &Planners<'_, '_>, req: &PlanRequest<'_>) -> Result<Planned, PlanError> {
    let topic = req.topic.ok_or(PlanError::NoEntity)?;
    let masked = mask(req.question, topic.range);
    let spec_dim = p.learned.map(|l| l.spec().embed_dim).unwrap_or(0);
    let needs_embedding = spec_dim > 0 || (p.learned.is_none() && p.relvecs.is_some());
    let embedding = if needs_embedding {
        let e = p.embedder.ok_or_else(|| {
            PlanError::NoPlanner(
                "the planner needs the bundle's sentence encoder, which is not loaded".into(),
            )
        })?;
        e.embed(&[masked.as_str()])
            .map_err(PlanError::Embed)?
            .into_iter()
            .next()
    } else {
        None
    };
    let mut info = PlanInfo::default();
    let (planner, query, keep_anchors) = match (p.learned, p.relvecs, &embedding) {
        (Some(learned), _, _) => {
            let x = features::featurize(
                p.kg,
                &masked,
                topic.entity,
                embedding.as_deref(),
                learned.spec(),
            );
            let mut preds = learned.predict(&x);
            preds.truncate(3);
            let best = preds
                .first()
                .ok_or_else(|| PlanError::NoPlanner("the planner has no templates".into()))?;
            let keep_anchors = learned.keeps_anchors(best.class);
            let q = best.template.instantiate(&topic.name);
            info.alternatives = preds;
            (PlannerKind::Learned, q, keep_anchors)
        }
        (None, Some(rv), Some(e)) => {
            let (q, cos) = rv.plan(p.kg, topic.entity, &topic.name, e).ok_or_else(|| {
                PlanError::NoPlanner(format!("{} has no relations to follow", topic.name))
            })?;
            info.similarity = Some(cos);
            (PlannerKind::Zeroshot, q, false)
        }
        _ => {
            return Err(PlanError::NoPlanner(
                "the bundle has no learned planner and no relation vectors (pack it with --planner-examples, or with --embed for the zero-shot planner), and no LLM is configured".into(),
            ))
        }
    };
    Ok(Planned {
        planner,
        query,
        keep_anchors,
        info,
        question_vec: embedding,
    })
}

/// The `llm` or `local` planner: the chat model writes the query.
fn plan_llm(p: &Planners<'_, '_>, req: &PlanRequest<'_>) -> Result<Planned, PlanError> {
    let chat = p.chat.ok_or_else(|| {
        PlanError::NoPlanner(format!(
            "the {} planner needs an LLM: set llm.mode and llm.endpoint (or llm.local_model)",
            req.kind
        ))
    })?;
    let entities: Vec<EntityInfo> = req
        .linked
        .iter()
        .map(|l| EntityInfo {
            mention: l.mention.clone(),
            name: l.name.clone(),
        })
        .collect();
    let rels = llm::relations(p.kg, req.max_relations);
    let planned = llm::plan(
        chat,
        req.question,
        &entities,
        &rels,
        req.max_retries,
        &|q| llm::validate(p.kg, q),
    )?;
    Ok(Planned {
        planner: req.kind,
        query: planned.query,
        keep_anchors: false,
        info: PlanInfo {
            attempts: Some(planned.attempts),
            rejected: planned.rejected,
            ..PlanInfo::default()
        },
        question_vec: None,
    })
}
