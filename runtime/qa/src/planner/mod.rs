//! The planners: a question and its linked entities in, a DSL query out.
//! [`plan`] runs the one asked for: the bundle's learned classifier
//! ([`learned`], over [`features`], choosing among [`template`]s), the
//! zero-shot relation matcher ([`zeroshot`]) when the bundle has no
//! classifier, or an LLM ([`llm`]). The packager fits the classifier with
//! `train` (feature `train`).

mod choose;
pub mod features;
#[cfg(feature = "train")]
mod fit;
pub mod guided;
pub mod heads;
pub mod learned;
pub mod llm;
pub mod path_plan;
pub mod paths;
pub mod template;
#[cfg(feature = "train")]
pub mod train;
#[cfg(feature = "train")]
mod train_heads;
pub mod zeroshot;

#[cfg(test)]
pub(crate) mod fallback_tests;
#[cfg(test)]
mod sampling_tests;
#[cfg(test)]
mod window_tests;

use kgbox_bundle::Kg;
use serde::{Deserialize, Serialize};

use crate::llm::ChatBackend;
use crate::prompt::EntityInfo;
use crate::question::{mask, LinkedEntity, Topic};
use heads::WindowVectors;
use kgbox_query::dense::TextEncoder;

pub use learned::{LearnedPlanner, Prediction, DEFAULT_THRESHOLD};
pub use llm::{Candidate, LlmPlanError, Rejected};
pub use path_plan::{PathCandidate, PathMode, PathRanker};
pub use paths::StepVectors;
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
    /// The learned planner, and the `llm` planner when it is unsure.
    #[serde(rename = "learned+llm", alias = "learned+remote")]
    LearnedLlm,
    /// The learned planner, and the `local` planner when it is unsure.
    #[serde(rename = "learned+local")]
    LearnedLocal,
}

impl PlannerKind {
    /// The chat model it may ask: [`PlannerKind::Llm`] (the OpenAI-compatible
    /// endpoint) or [`PlannerKind::Local`] (the in-process model).
    pub fn chat(self) -> Option<PlannerKind> {
        match self {
            PlannerKind::Llm | PlannerKind::LearnedLlm => Some(PlannerKind::Llm),
            PlannerKind::Local | PlannerKind::LearnedLocal => Some(PlannerKind::Local),
            PlannerKind::Learned | PlannerKind::Zeroshot => None,
        }
    }
}

impl std::fmt::Display for PlannerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PlannerKind::Learned => "learned",
            PlannerKind::Llm => "llm",
            PlannerKind::Local => "local",
            PlannerKind::Zeroshot => "zeroshot",
            PlannerKind::LearnedLlm => "learned+llm",
            PlannerKind::LearnedLocal => "learned+local",
        })
    }
}

impl std::str::FromStr for PlannerKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "learned" => Ok(PlannerKind::Learned),
            "llm" | "remote" => Ok(PlannerKind::Llm),
            "local" => Ok(PlannerKind::Local),
            "learned+llm" | "learned+remote" => Ok(PlannerKind::LearnedLlm),
            "learned+local" => Ok(PlannerKind::LearnedLocal),
            other => Err(format!(
                "unknown planner {other:?} (learned, llm, local, learned+llm or learned+local)"
            )),
        }
    }
}

/// How the plan was made.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PlanInfo {
    /// The learned planner's best templates with their probabilities.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<Prediction>,
    /// LLM attempts made by the planner (1 + retries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<usize>,
    /// Replies the LLM gave over those attempts (`planner.samples` each).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replies: Option<usize>,
    /// The LLM's distinct valid queries, best first, with their scores.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<Candidate>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<Rejected>,
    /// The zero-shot match's cosine similarity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
    /// Whether the LLM was held to chains that bind: the bundle's chain
    /// grammar, shown retrieved demonstrations ([`guided`]), or the path
    /// ranker's best chains ([`choose`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub guided: bool,
    /// With `learned+llm` / `learned+local`: why the LLM was or was not
    /// asked, or why its plan was not used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// Planned queries that found no answers, in the order tried; the
    /// planner's next choice was run instead.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub found_nothing: Vec<String>,
    /// The path ranker's best candidates, when it planned ([`path_plan`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<PathCandidate>,
}

/// What the planners may use: the bundle's planner sections, its sentence
/// encoder and the configured chat model.
pub struct Planners<'a, 'k> {
    pub kg: &'a Kg<'k>,
    pub learned: Option<&'a LearnedPlanner>,
    pub relvecs: Option<&'a RelationVectors>,
    pub embedder: Option<&'a dyn TextEncoder>,
    /// The chat model of the `llm` and `local` planners.
    pub chat: Option<&'a dyn ChatBackend>,
    /// The relations' word vectors of the path ranker ([`paths`]), when
    /// the encoder is loaded.
    pub steps: Option<&'a StepVectors>,
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
    /// LLM retries after an attempt without a valid query.
    pub max_retries: usize,
    /// LLM replies asked for per attempt (the first greedy, the others
    /// sampled).
    pub samples: usize,
    /// Relations listed to the LLM at most.
    pub max_relations: usize,
    /// `learned+llm` / `learned+local`: the LLM is asked when the learned
    /// planner's best template has a lower probability than this (1:
    /// always).
    pub fallback_below: f32,
    /// With [`PathMode::Unsure`] (a planner trained on examples), the path
    /// ranker is weighed in when the learned planner's best template has a
    /// lower probability than this (1: always).
    pub paths_below: f32,
    /// When the path ranker plans ([`path_plan`]).
    pub paths: PathRanker,
}

/// The default of [`PlanRequest::fallback_below`].
pub const DEFAULT_FALLBACK_BELOW: f32 = 0.8;
/// The default of [`PlanRequest::paths_below`]: an example-trained planner
/// is sure of a free phrasing less often than of its own templates, and the
/// ranker costs a few milliseconds.
pub const DEFAULT_PATHS_BELOW: f32 = 0.95;
/// `learned+llm` / `learned+local`: the LLM's plan is used when the learned
/// planner gives it at least this share of its best template's probability
/// (a plan it does not know counts 0).
pub const LLM_MIN_SHARE: f32 = 0.25;
/// The default of [`PlanRequest::samples`].
pub const DEFAULT_SAMPLES: usize = 3;
/// Predictions shown in [`PlanInfo::alternatives`].
const SHOWN_ALTERNATIVES: usize = 3;
/// The planner's next choices run when its query finds nothing
/// ([`Planned::next`]).
pub const NEXT_QUERIES: usize = 2;
/// Weight of the answer type's log-probability in an LLM candidate's
/// score (its own log-probability has weight 1).
pub const ANSWER_TYPE_WEIGHT: f32 = 0.5;
/// The least answer-type probability a candidate is scored with.
const ANSWER_TYPE_FLOOR: f32 = 1e-3;

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
    /// The planner's next choices, in order, run when `query` finds no
    /// answers (at most [`NEXT_QUERIES`]).
    pub next: Vec<NextQuery>,
}

/// A planner's later choice ([`Planned::next`]).
#[derive(Debug, Clone, PartialEq)]
pub struct NextQuery {
    pub query: String,
    pub keep_anchors: bool,
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
        PlannerKind::Llm | PlannerKind::Local => {
            if let (Some(chat), true) = (p.chat, ranks_paths(p, req)) {
                return choose::choose(p, req, chat, plan_learned(p, req)?);
            }
            let (preds, vector) = match (p.learned, req.topic) {
                (Some(_), Some(_)) => predictions(p, req)?,
                _ => (Vec::new(), None),
            };
            plan_llm(p, req, &preds, vector.as_deref())
        }
        PlannerKind::LearnedLlm | PlannerKind::LearnedLocal => plan_with_fallback(p, req),
    }
}

/// The learned planner's predictions for the question, most likely first,
/// and the masked question's embedding when the planner used one.
fn predictions(
    p: &Planners<'_, '_>,
    req: &PlanRequest<'_>,
) -> Result<(Vec<Prediction>, Option<Vec<f32>>), PlanError> {
    let topic = req.topic.ok_or(PlanError::NoEntity)?;
    let learned = p
        .learned
        .ok_or_else(|| PlanError::NoPlanner("the bundle has no learned planner".into()))?;
    let masked = mask(req.question, topic.range);
    let windows: Vec<String> = learned
        .meta
        .heads
        .iter()
        .map(|h| h.kind.window(&masked))
        .collect();
    let (embedding, window_vectors) = match learned.meta.window_vectors {
        WindowVectors::Pooled => pooled_vectors(p, &masked, learned)?,
        // The question and each head's window, embedded in one batch.
        WindowVectors::Alone => {
            let mut texts = vec![masked.as_str()];
            texts.extend(windows.iter().map(String::as_str));
            let mut vectors = embed_texts(p, &texts, learned.spec().embed_dim > 0)?.into_iter();
            (vectors.next().flatten(), vectors.collect())
        }
    };
    let spec = learned.spec();
    let x = features::featurize(p.kg, &masked, topic.entity, embedding.as_deref(), spec);
    let heads: Vec<features::Features> = windows
        .iter()
        .zip(window_vectors)
        .map(|(w, e)| features::featurize(p.kg, w, topic.entity, e.as_deref(), spec))
        .collect();
    Ok((learned.predict_with(&x, &heads), embedding))
}

/// The predictions whose chain can start at `entity` (it has an edge of
/// the first relation, in that direction), renormalised; all of them when
/// none can. A template that cannot start finds nothing, so it is no plan
/// for this topic however the question reads. Applied to the learned plan;
/// the LLM planners' guidance keeps the classifier's own probabilities.
pub fn starting_at(kg: &Kg<'_>, entity: u32, preds: Vec<Prediction>) -> Vec<Prediction> {
    let starts = |pr: &Prediction| {
        let Some(first) = pr.template.chain().and_then(|c| c.first().copied()) else {
            return true;
        };
        match paths::path_steps(kg, &[first]).as_deref() {
            Some([step]) => !step.neighbours(kg, entity).is_empty(),
            _ => false,
        }
    };
    let kept: Vec<Prediction> = preds.iter().filter(|pr| starts(pr)).cloned().collect();
    let total: f32 = kept.iter().map(|pr| pr.probability).sum();
    if kept.is_empty() || total <= 0.0 {
        return preds;
    }
    kept.into_iter()
        .map(|pr| Prediction {
            probability: pr.probability / total,
            ..pr
        })
        .collect()
}

/// The masked question's vector, and each head's window vector.
type Vectors = (Option<Vec<f32>>, Vec<Option<Vec<f32>>>);

/// [`Vectors`] pooled from one pass over the masked question
/// ([`WindowVectors::Pooled`]); `None`s without embeddings.
fn pooled_vectors(
    p: &Planners<'_, '_>,
    masked: &str,
    learned: &LearnedPlanner,
) -> Result<Vectors, PlanError> {
    let heads = &learned.meta.heads;
    if learned.spec().embed_dim == 0 {
        return Ok((None, vec![None; heads.len()]));
    }
    let spans = heads::pooled_spans(masked);
    let out = embedder(p)?
        .embed_spans(&[(masked, spans)])
        .map_err(|e| PlanError::Embed(e.to_string()))?;
    heads::check_pooled(&out, 1).map_err(PlanError::Embed)?;
    let mut vectors: Vec<Option<Vec<f32>>> = out.into_iter().flatten().map(Some).collect();
    let windows = heads
        .iter()
        .map(|h| vectors.get(h.kind.slot()).cloned().flatten())
        .collect();
    Ok((vectors.first_mut().and_then(Option::take), windows))
}

/// The bundle's sentence encoder, or the error that the planner needs it.
fn embedder<'a>(p: &Planners<'a, '_>) -> Result<&'a dyn TextEncoder, PlanError> {
    p.embedder.ok_or_else(|| {
        PlanError::NoPlanner(
            "the planner needs the bundle's sentence encoder, which is not loaded".into(),
        )
    })
}

/// The encoder's vector of each text when `needed` (`None`s otherwise).
fn embed_texts(
    p: &Planners<'_, '_>,
    texts: &[&str],
    needed: bool,
) -> Result<Vec<Option<Vec<f32>>>, PlanError> {
    if !needed {
        return Ok(vec![None; texts.len()]);
    }
    let vecs = embedder(p)?
        .embed(texts)
        .map_err(|e| PlanError::Embed(e.to_string()))?;
    if vecs.len() != texts.len() {
        return Err(PlanError::Embed(format!(
            "the encoder returned {} vectors for {} texts",
            vecs.len(),
            texts.len()
        )));
    }
    Ok(vecs.into_iter().map(Some).collect())
}

fn embed_masked(
    p: &Planners<'_, '_>,
    masked: &str,
    needed: bool,
) -> Result<Option<Vec<f32>>, PlanError> {
    Ok(embed_texts(p, &[masked], needed)?
        .into_iter()
        .next()
        .flatten())
}

/// The learned planner's plan from its predictions (most likely first).
fn learned_plan(
    learned: &LearnedPlanner,
    topic: &Topic,
    preds: &[Prediction],
    embedding: Option<Vec<f32>>,
) -> Result<Planned, PlanError> {
    let best = preds
        .first()
        .ok_or_else(|| PlanError::NoPlanner("the planner has no templates".into()))?;
    let next = preds
        .iter()
        .skip(1)
        .take(NEXT_QUERIES)
        .map(|p| NextQuery {
            query: p.template.instantiate(&topic.name),
            keep_anchors: learned.keeps_anchors(p.class),
        })
        .collect();
    Ok(Planned {
        planner: PlannerKind::Learned,
        query: best.template.instantiate(&topic.name),
        keep_anchors: learned.keeps_anchors(best.class),
        info: PlanInfo {
            alternatives: preds.iter().take(SHOWN_ALTERNATIVES).cloned().collect(),
            ..PlanInfo::default()
        },
        question_vec: embedding,
        next,
    })
}

/// The learned classifier, or without one the zero-shot matcher; with the
/// path ranker when the mode asks for it.
fn plan_learned(p: &Planners<'_, '_>, req: &PlanRequest<'_>) -> Result<Planned, PlanError> {
    let topic = req.topic.ok_or(PlanError::NoEntity)?;
    let mode = match (p.steps, p.embedder) {
        (Some(_), Some(_)) => req.paths.mode(p.learned),
        _ => PathMode::Off,
    };
    if let Some(learned) = p.learned {
        let (preds, embedding) = predictions(p, req)?;
        let preds = starting_at(p.kg, topic.entity, preds);
        let preds = match embedding.as_deref() {
            Some(e) => learned.by_nearest_demo(preds, e),
            None => preds,
        };
        let mut planned = learned_plan(learned, topic, &preds, embedding)?;
        let sure = preds.first().is_some_and(|b| {
            req.paths_below < 1.0
                && b.probability >= req.paths_below
                && !path_plan::one_step_for_others(req.question, topic, b)
        });
        if mode == PathMode::Mix || mode == PathMode::Unsure && !sure {
            path_plan::replan(p, req, topic, Some((learned, &preds)), mode, &mut planned)?;
        }
        return Ok(planned);
    }
    if mode != PathMode::Off {
        let mut planned = Planned {
            planner: PlannerKind::Zeroshot,
            query: String::new(),
            keep_anchors: false,
            info: PlanInfo::default(),
            question_vec: None,
            next: Vec::new(),
        };
        path_plan::replan(p, req, topic, None, PathMode::Only, &mut planned)?;
        if !planned.query.is_empty() {
            return Ok(planned);
        }
    }
    let Some(rv) = p.relvecs else {
        return Err(PlanError::NoPlanner(
            "the bundle has no learned planner and no relation vectors (pack it with --planner-examples, or with --embed for the zero-shot planner), and no LLM is configured".into(),
        ));
    };
    let masked = mask(req.question, topic.range);
    let e = embed_masked(p, &masked, true)?
        .ok_or_else(|| PlanError::Embed("the encoder returned no vector".into()))?;
    let (query, cos) = rv
        .plan(p.kg, topic.entity, &topic.name, &e)
        .ok_or_else(|| {
            PlanError::NoPlanner(format!("{} has no relations to follow", topic.name))
        })?;
    Ok(Planned {
        planner: PlannerKind::Zeroshot,
        query,
        keep_anchors: false,
        info: PlanInfo {
            similarity: Some(cos),
            ..PlanInfo::default()
        },
        question_vec: Some(e),
        next: Vec::new(),
    })
}

/// Whether the chat planners choose among the path ranker's plans
/// ([`choose`]) rather than write one: the encoder is loaded and the
/// ranker plans alone or with a planner synthesised from the graph
/// ([`PathMode::Only`], [`PathMode::Mix`]). A planner trained on the
/// operator's examples keeps guided writing ([`guided`]).
fn ranks_paths(p: &Planners<'_, '_>, req: &PlanRequest<'_>) -> bool {
    p.steps.is_some()
        && p.embedder.is_some()
        && matches!(req.paths.mode(p.learned), PathMode::Only | PathMode::Mix)
}

/// `learned+llm` / `learned+local`: the learned plan when it is sure,
/// otherwise the LLM's (shown the learned planner's likely templates); the
/// learned plan again when the LLM fails.
fn plan_with_fallback(p: &Planners<'_, '_>, req: &PlanRequest<'_>) -> Result<Planned, PlanError> {
    let Some(chat_kind) = req.kind.chat() else {
        return plan_learned(p, req);
    };
    let llm_req = PlanRequest {
        kind: chat_kind,
        ..*req
    };
    if let (Some(chat), true) = (p.chat, ranks_paths(p, req)) {
        let mut planned = plan_learned(p, req)?;
        let best = planned.info.alternatives.first().map(|b| b.probability);
        if sure(req, best, &mut planned) {
            return Ok(planned);
        }
        return choose::choose(p, &llm_req, chat, planned);
    }
    let (Some(model), Some(topic)) = (p.learned, req.topic) else {
        return plan_llm(p, &llm_req, &[], None);
    };
    let (preds, embedding) = predictions(p, req)?;
    let started = starting_at(p.kg, topic.entity, preds.clone());
    let mut learned = learned_plan(model, topic, &started, embedding.clone())?;
    let best = preds.first().map_or(0.0, |b| b.probability);
    if sure(req, Some(best), &mut learned) {
        return Ok(learned);
    }
    match plan_llm(p, &llm_req, &preds, embedding.as_deref()) {
        Ok(mut planned) => {
            // The LLM breaks near-ties; it does not overrule a clear
            // preference of the learned planner.
            let weight =
                prediction_of(&preds, &topic.name, &planned.query).map_or(0.0, |pr| pr.probability);
            if weight < LLM_MIN_SHARE * best {
                learned.info.fallback = Some(format!(
                    "learned planner unsure (p {best:.2} < {:.2}); {chat_kind} chose a plan it gives p {weight:.2}, under {LLM_MIN_SHARE} of its best: kept the learned plan {}",
                    req.fallback_below, planned.query
                ));
                learned.info.attempts = planned.info.attempts;
                learned.info.replies = planned.info.replies;
                learned.info.candidates = planned.info.candidates;
                learned.info.rejected = planned.info.rejected;
                return Ok(learned);
            }
            planned.info.fallback = Some(format!(
                "learned planner unsure (p {best:.2} < {:.2}); asked {chat_kind}",
                req.fallback_below
            ));
            planned.info.alternatives = learned.info.alternatives;
            planned.question_vec = embedding;
            Ok(planned)
        }
        Err(e) => {
            learned.info.fallback = Some(format!(
                "learned planner unsure (p {best:.2}); {chat_kind} failed, kept the learned plan: {e}"
            ));
            Ok(learned)
        }
    }
}

/// Whether the learned planner's `best` probability reaches
/// `planner.fallback_below`, so that no LLM is asked (noted in `planned`).
/// 1 means "always ask": a probability that rounds to 1 does not count.
fn sure(req: &PlanRequest<'_>, best: Option<f32>, planned: &mut Planned) -> bool {
    let best = best.unwrap_or(0.0);
    let sure = req.fallback_below < 1.0 && best >= req.fallback_below;
    if sure {
        planned.info.fallback = Some(format!(
            "learned planner sure (p {best:.2} >= {:.2})",
            req.fallback_below
        ));
    }
    sure
}

/// The learned planner's prediction whose template, about `topic`, is
/// `query` (a chain the LLM wrote that is one of the templates).
fn prediction_of<'p>(preds: &'p [Prediction], topic: &str, query: &str) -> Option<&'p Prediction> {
    preds
        .iter()
        .find(|pr| pr.template.instantiate(topic) == query)
}

/// The `llm` or `local` planner: the chat model writes the query, guided by
/// the learned planner's `preds` (and the masked question's `vector`) when
/// the bundle has demonstrations.
fn plan_llm(
    p: &Planners<'_, '_>,
    req: &PlanRequest<'_>,
    preds: &[Prediction],
    vector: Option<&[f32]>,
) -> Result<Planned, PlanError> {
    let chat = p.chat.ok_or_else(|| {
        PlanError::NoPlanner(format!(
            "the {} planner needs an LLM: set llm.mode and llm.endpoint (or llm.local_model)",
            req.kind
        ))
    })?;
    let kind = req.kind.chat().unwrap_or(req.kind);
    let topics: Vec<String> = req.linked.iter().map(|l| l.name.clone()).collect();
    let guide = p.learned.and_then(|l| {
        let guide = guided::Guide::new(l, preds, req.question, vector, topics)?;
        Some((l, guide))
    });
    if let Some((learned, guide)) = guide {
        let read = |reply: &str| -> Result<String, String> {
            let (topic, path) = guide.read(reply)?;
            let q = guided::chain_query(&topic, &path);
            llm::validate(p.kg, &q).map(|()| q)
        };
        let tries = llm::Tries {
            max_retries: req.max_retries,
            samples: req.samples,
        };
        let planned = llm::plan_with(
            chat,
            guide.messages(req.question),
            guide.constraint(),
            tries,
            req.topic.and_then(|t| guide.draft(&t.name)),
            &read,
        )?;
        let mut candidates = planned.candidates;
        score_answer_types(&mut candidates, preds);
        // A chain that is one of the templates keeps its anchor policy.
        let keep_anchors = |query: &str| {
            req.topic
                .and_then(|t| prediction_of(preds, &t.name, query))
                .is_some_and(|pr| learned.keeps_anchors(pr.class))
        };
        let mut ranked = candidates.iter().map(|c| NextQuery {
            query: c.query.clone(),
            keep_anchors: keep_anchors(&c.query),
        });
        let best = ranked
            .next()
            .ok_or_else(|| PlanError::NoPlanner("the LLM planner returned no candidate".into()))?;
        let next = ranked.take(NEXT_QUERIES).collect();
        return Ok(Planned {
            planner: kind,
            query: best.query,
            keep_anchors: best.keep_anchors,
            info: PlanInfo {
                alternatives: preds.iter().take(SHOWN_ALTERNATIVES).cloned().collect(),
                attempts: Some(planned.attempts),
                replies: Some(planned.replies),
                candidates,
                rejected: planned.rejected,
                guided: true,
                ..PlanInfo::default()
            },
            question_vec: None,
            next,
        });
    }
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
        planner: kind,
        query: planned.query,
        keep_anchors: false,
        info: PlanInfo {
            attempts: Some(planned.attempts),
            replies: Some(planned.replies),
            rejected: planned.rejected,
            ..PlanInfo::default()
        },
        question_vec: None,
        next: Vec::new(),
    })
}

/// The probability that the question asks for what `relation` leads to:
/// the learned planner's probability summed over the templates that end in
/// it (its answer head has already weighed the question's wording, "which
/// genres", "in which years").
fn answer_type(preds: &[Prediction], relation: &str) -> f32 {
    preds
        .iter()
        .filter(|p| {
            p.template
                .chain()
                .and_then(|c| c.last().copied())
                .is_some_and(|r| r == relation)
        })
        .map(|p| p.probability)
        .sum()
}

/// Scores and reorders the LLM's candidates: their log-probability (votes
/// as a share of the replies when the backend gave none) plus
/// [`ANSWER_TYPE_WEIGHT`] times the log of their answer type's probability
/// ([`answer_type`]; without predictions it does not count). Ties keep the
/// order they came in.
fn score_answer_types(candidates: &mut [Candidate], preds: &[Prediction]) {
    let replies: usize = candidates.iter().map(|c| c.votes).sum();
    for c in candidates.iter_mut() {
        let own = c
            .logprob
            .unwrap_or_else(|| (c.votes as f32 / replies.max(1) as f32).ln());
        let typed = match (preds.is_empty(), last_relation(&c.query)) {
            (false, Some(r)) => {
                ANSWER_TYPE_WEIGHT * answer_type(preds, &r).max(ANSWER_TYPE_FLOOR).ln()
            }
            _ => 0.0,
        };
        c.score = Some(own + typed);
    }
    candidates.sort_by(|a, b| {
        let s = |c: &Candidate| c.score.unwrap_or(f32::NEG_INFINITY);
        s(b).total_cmp(&s(a))
    });
}

/// The last relation a chain query follows (`"X" -> a -> b` gives `b`).
fn last_relation(query: &str) -> Option<String> {
    match kgbox_query::parse(query).ok()? {
        kgbox_query::Query::Project { relation, .. } => Some(relation.name),
        _ => None,
    }
}
