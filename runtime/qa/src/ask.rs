//! A question in, answers out: link → plan → execute → arbitrate, timed per
//! stage. The caller supplies the stages that depend on how the bundle is
//! served (linking with or without the dense stage, the executor).

use std::time::Instant;

use kgbox_bundle::Kg;
use kgbox_query::link::{Mention, Method};
use kgbox_query::{Answers, QueryError};
use serde::{Deserialize, Serialize};

use crate::arbitrate::{llm_choose, threshold_cut, Arbitration};
use crate::features::featurize;
use crate::learned::{LearnedPlanner, Prediction};
use crate::llm::{ChatBackend, LlmError};
use crate::llm_planner::{self, LlmPlanError, Rejected};
use crate::prompt::{CandidateInfo, EntityInfo, RelationInfo};
use crate::question::{choose_topic, mask, Topic};
use crate::rerank::{self, RerankInfo, Reranker};
use crate::train::DEFAULT_THRESHOLD;
use crate::zeroshot::RelationVectors;
use crate::Embedder;

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
    Rerank(#[from] rerank::RerankError),
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
    /// Relations listed to the LLM at most.
    pub max_relations: usize,
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
    pub strategies: crate::strategies::StrategyOptions,
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
            max_relations: 300,
            rerank: true,
            export_features: false,
            repair: true,
            strategies: crate::strategies::StrategyOptions::default(),
        }
    }
}

/// Cosine similarity of a question embedding to an entity's name vector.
pub type NameSimilarity<'a> = dyn Fn(&[f32], u32) -> Option<f32> + 'a;

/// What a bundle and its configuration offer to [`ask`].
pub struct Context<'a, 'k> {
    pub kg: &'a Kg<'k>,
    pub learned: Option<&'a LearnedPlanner>,
    pub relvecs: Option<&'a RelationVectors>,
    pub embedder: Option<&'a dyn Embedder>,
    /// The chat model for the `llm` or `local` planner and the arbitrator.
    pub chat: Option<&'a dyn ChatBackend>,
    /// Finds mentions in the question.
    pub link: &'a dyn Fn(&str) -> Result<Vec<Mention>, String>,
    /// Runs a DSL query with the served executor, returning at most
    /// `candidates` answers; `keep_anchors` keeps anchor entities in answers.
    pub run: &'a dyn Fn(&str, usize, bool) -> Result<Answers, QueryError>,
    /// The bundle's answer reranker.
    pub reranker: Option<&'a Reranker>,
    /// Cosine similarity of a question embedding to an entity's name vector
    /// (the bundle's `kg.dense.*`), for the reranker's text feature.
    pub name_similarity: Option<&'a NameSimilarity<'a>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AskAnswer {
    pub entity: u32,
    pub name: String,
    pub score: f32,
    /// The reranker's P(correct), when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank_score: Option<f32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<Vec<[String; 3]>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LinkedEntity {
    pub mention: String,
    pub entity: u32,
    pub name: String,
    pub probability: f32,
    pub method: Method,
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

/// Milliseconds per stage.
#[derive(Debug, Clone, Copy, Default, Serialize)]
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

#[derive(Debug, Clone, Serialize)]
pub struct AskResult {
    pub answers: Vec<AskAnswer>,
    /// The DSL query that ran.
    pub query: String,
    pub topic: Option<Topic>,
    pub linked: Vec<LinkedEntity>,
    pub planner: PlannerKind,
    pub plan: PlanInfo,
    pub arbitration: Arbitration,
    /// What the reranker did, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank: Option<RerankInfo>,
    /// The reranker's feature rows of the scored candidates (with
    /// [`AskOptions::export_features`]).
    #[serde(skip)]
    pub features: Vec<crate::rerank::apply::CandidateFeatures>,
    /// What query repair did, when it ran; the answers then come from
    /// `repair.repaired` (when one was found), not from `query`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair: Option<kgbox_query::repair::RepairReport>,
    /// Candidates the executor found (non-zero score), or those the
    /// retrieval strategies gathered when they found the answers.
    pub candidates: usize,
    /// The retrieval strategies tried after a failed or low-confidence LLM
    /// query, in order (empty when the query was enough).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub strategies: Vec<crate::strategies::StrategyReport>,
    pub timings_ms: StageTimings,
}

pub(crate) fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn relations(kg: &Kg<'_>, max: usize) -> Vec<RelationInfo> {
    (0..kg.relation_count() as u32)
        .take(max)
        .filter_map(|r| {
            Some(RelationInfo {
                name: kg.relation_name(r)?.to_string(),
                description: kg.relation_description(r).map(String::from),
            })
        })
        .collect()
}

/// Whether a query follows at least one relation (a bare entity, or a set
/// of entities, only answers the question with its own entities).
pub fn has_projection(q: &kgbox_query::Query) -> bool {
    use kgbox_query::Query;
    match q {
        Query::Entity { .. } => false,
        Query::Project { .. } => true,
        Query::And { operands, .. } | Query::Or { operands, .. } => {
            operands.iter().any(has_projection)
        }
        Query::Not { operand, .. } => has_projection(operand),
    }
}

fn validate(kg: &Kg<'_>, q: &str) -> Result<(), String> {
    let query = kgbox_query::parse(q).map_err(|d| d.to_string())?;
    if !has_projection(&query) {
        return Err(
            "the query follows no relation: write ENTITY -> relation (-> relation ...)".into(),
        );
    }
    kgbox_query::bind::bind(kg, &query, q)
        .map(|_| ())
        .map_err(|d| d.to_string())
}

/// The triples of a path as names.
fn name_path(kg: &Kg<'_>, path: &[kgbox_query::exec::Triple]) -> Vec<[String; 3]> {
    path.iter()
        .map(|t| {
            let e = |id: u32| kg.entity_name(id).unwrap_or("?").to_string();
            [
                e(t[0]),
                kg.relation_name(t[1]).unwrap_or("?").to_string(),
                e(t[2]),
            ]
        })
        .collect()
}

/// Answers `question`.
pub fn ask(
    ctx: &Context<'_, '_>,
    question: &str,
    opts: &AskOptions,
) -> Result<AskResult, AskError> {
    let t_all = Instant::now();
    let t = Instant::now();
    let mentions = (ctx.link)(question).map_err(AskError::Embed)?;
    let topic = choose_topic(question, &mentions);
    let linked: Vec<LinkedEntity> = mentions
        .iter()
        .filter_map(|m| {
            let c = m.candidates.first()?;
            Some(LinkedEntity {
                mention: m.text.clone(),
                entity: c.entity,
                name: c.name.clone(),
                probability: c.probability,
                method: c.method,
            })
        })
        .collect();
    let link_ms = ms(t);

    let t = Instant::now();
    let mut plan = PlanInfo::default();
    let mut keep_anchors = false;
    // The planner's question embedding, reused by the reranker.
    let mut question_vec: Option<Vec<f32>> = None;
    let threshold = ctx
        .learned
        .map(|l| l.meta.answer_threshold)
        .unwrap_or(DEFAULT_THRESHOLD);
    let (planner, query) = match opts.planner {
        PlannerKind::Learned | PlannerKind::Zeroshot => {
            let topic = topic.as_ref().ok_or(AskError::NoEntity)?;
            let masked = mask(question, topic.range);
            let spec_dim = ctx.learned.map(|l| l.spec().embed_dim).unwrap_or(0);
            let needs_embedding = spec_dim > 0 || (ctx.learned.is_none() && ctx.relvecs.is_some());
            let embedding = if needs_embedding {
                let e = ctx.embedder.ok_or_else(|| {
                    AskError::NoPlanner(
                        "the planner needs the bundle's sentence encoder, which is not loaded"
                            .into(),
                    )
                })?;
                e.embed(&[masked.as_str()])
                    .map_err(AskError::Embed)?
                    .into_iter()
                    .next()
            } else {
                None
            };
            question_vec.clone_from(&embedding);
            match (ctx.learned, ctx.relvecs, &embedding) {
                (Some(learned), _, _) => {
                    let x = featurize(ctx.kg, &masked, topic.entity, embedding.as_deref(), learned.spec());
                    let mut preds = learned.predict(&x);
                    preds.truncate(3);
                    let best = preds.first().ok_or_else(|| AskError::NoPlanner("the planner has no templates".into()))?;
                    keep_anchors = learned.keeps_anchors(best.class);
                    let q = best.template.instantiate(&topic.name);
                    plan.alternatives = preds;
                    (PlannerKind::Learned, q)
                }
                (None, Some(rv), Some(e)) => {
                    let (q, cos) = rv.plan(ctx.kg, topic.entity, &topic.name, e).ok_or_else(|| {
                        AskError::NoPlanner(format!("{} has no relations to follow", topic.name))
                    })?;
                    plan.similarity = Some(cos);
                    (PlannerKind::Zeroshot, q)
                }
                _ => {
                    return Err(AskError::NoPlanner(
                        "the bundle has no learned planner and no relation vectors (pack it with --planner-examples, or with --embed for the zero-shot planner), and no LLM is configured".into(),
                    ))
                }
            }
        }
        PlannerKind::Llm | PlannerKind::Local => {
            let chat = ctx.chat.ok_or_else(|| {
                AskError::NoPlanner(format!(
                    "the {} planner needs an LLM: set llm.mode and llm.endpoint (or llm.local_model)",
                    opts.planner
                ))
            })?;
            let entities: Vec<EntityInfo> = linked
                .iter()
                .map(|l| EntityInfo {
                    mention: l.mention.clone(),
                    name: l.name.clone(),
                })
                .collect();
            let rels = relations(ctx.kg, opts.max_relations);
            let p = llm_planner::plan(chat, question, &entities, &rels, opts.max_retries, &|q| {
                validate(ctx.kg, q)
            })?;
            plan.attempts = Some(p.attempts);
            plan.rejected = p.rejected;
            (opts.planner, p.query)
        }
    };
    let plan_ms = ms(t);

    let t = Instant::now();
    let mut found =
        (ctx.run)(&query, opts.candidates.max(opts.top_k), keep_anchors).map_err(|error| {
            AskError::Query {
                query: query.clone(),
                error: Box::new(error),
            }
        })?;
    let repair = if opts.repair {
        let topic_id = topic.as_ref().map(|t| t.entity);
        let with: Vec<u32> = linked
            .iter()
            .map(|l| l.entity)
            .filter(|&e| Some(e) != topic_id)
            .collect();
        let n = opts.candidates.max(opts.top_k);
        crate::query_repair::repair_found(ctx, &query, n, keep_anchors, &with, &mut found)?
    } else {
        None
    };
    let execute_ms = ms(t);

    // A failed or low-confidence LLM query falls through to the other
    // retrieval strategies; answers they find skip the reranker and the
    // arbitrator (their final answer call chose them).
    let t = Instant::now();
    let first = crate::strategies::FirstQuery {
        llm_calls: plan.attempts.unwrap_or(0),
        ms: plan_ms + execute_ms,
        threshold,
        topic: topic.as_ref().map(|t| t.entity),
    };
    let fell = crate::strategies::after_query(ctx, opts, question, &linked, &found, first);
    let mut preset = None;
    if let Some(a) = fell.answer {
        found = a.found;
        preset = Some((a.chosen, a.arbitration));
    }
    let strategies_ms = ms(t);

    let t = Instant::now();
    let reranked = if preset.is_some() {
        crate::rerank::apply::Reranked::default()
    } else {
        crate::rerank::apply::rerank_candidates(
            ctx,
            opts,
            question,
            topic.as_ref(),
            &linked,
            question_vec,
            &mut found,
        )?
    };
    let rerank_ms = ms(t);

    let t = Instant::now();
    let scores: Vec<f32> = found.answers.iter().map(|a| a.score).collect();
    let use_llm = opts.llm_arbitrate && ctx.chat.is_some() && !found.answers.is_empty();
    let (chosen, arbitration) = if let Some(preset) = preset {
        preset
    } else if use_llm {
        let candidates: Vec<CandidateInfo> = found
            .answers
            .iter()
            .map(|a| CandidateInfo {
                name: ctx.kg.entity_name(a.entity).unwrap_or("?").to_string(),
                score: a.score,
                context: a
                    .paths
                    .iter()
                    .map(|p| {
                        name_path(ctx.kg, p)
                            .iter()
                            .map(|[h, r, t]| format!("{h} -[{r}]-> {t}"))
                            .collect::<Vec<_>>()
                            .join("; ")
                    })
                    .collect(),
            })
            .collect();
        match ctx
            .chat
            .map(|chat| llm_choose(chat, question, &candidates, opts.share_context))
        {
            Some(Ok(mut idx)) => {
                idx.truncate(opts.top_k.max(1));
                (
                    idx,
                    Arbitration::Llm {
                        candidates: candidates.len(),
                    },
                )
            }
            Some(Err(e)) => (
                threshold_cut(&scores, threshold, opts.top_k),
                Arbitration::Fallback {
                    threshold,
                    reason: e.to_string(),
                },
            ),
            None => (
                threshold_cut(&scores, threshold, opts.top_k),
                Arbitration::Threshold { threshold },
            ),
        }
    } else if let Some((probs, cut)) = &reranked.probabilities {
        (
            rerank::cut(probs, &scores, *cut, threshold, opts.top_k),
            Arbitration::Reranker { cut: *cut },
        )
    } else {
        (
            threshold_cut(&scores, threshold, opts.top_k),
            Arbitration::Threshold { threshold },
        )
    };
    let probability = |i: usize| {
        reranked
            .probabilities
            .as_ref()
            .and_then(|(p, _)| p.get(i).copied())
    };
    let answers = chosen
        .into_iter()
        .filter_map(|i| found.answers.get(i).map(|a| (i, a)))
        .map(|(i, a)| AskAnswer {
            entity: a.entity,
            name: ctx.kg.entity_name(a.entity).unwrap_or("?").to_string(),
            score: a.score,
            rerank_score: probability(i),
            paths: a.paths.iter().map(|p| name_path(ctx.kg, p)).collect(),
        })
        .collect();
    let arbitrate_ms = ms(t);
    Ok(AskResult {
        answers,
        query,
        topic,
        linked,
        planner,
        plan,
        arbitration,
        rerank: reranked.info,
        features: reranked.features,
        repair,
        candidates: found.total,
        strategies: fell.reports,
        timings_ms: StageTimings {
            link: link_ms,
            plan: plan_ms,
            execute: execute_ms,
            rerank: rerank_ms,
            arbitrate: arbitrate_ms,
            strategies: strategies_ms,
            total: ms(t_all),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::has_projection;

    #[test]
    fn a_query_must_follow_a_relation() {
        let q = |t: &str| kgbox_query::parse(t).expect("parses");
        assert!(!has_projection(&q("\"Blade Runner\"")));
        assert!(!has_projection(&q("OR(a, b)")));
        assert!(has_projection(&q("\"Blade Runner\" -> directed_by")));
        assert!(has_projection(&q("AND(a -> r, b)")));
    }
}
