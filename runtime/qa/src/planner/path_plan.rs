//! Plans from the path ranker ([`super::paths`]), alone or weighed
//! together with the learned planner's predictions.
//!
//! Each candidate (a ranked path, or a chain the learned planner predicts)
//! scores its path score plus [`RankOptions::learned_weight`] times the log of the
//! learned planner's probability for it (at least [`LEARNED_FLOOR`]). A path
//! that is no template of the planner gets the floor, unless the planner's
//! synthesised questions left paths of its length out: then it is unknown to
//! the planner, not unlikely, and gets [`RankOptions::unknown_learned`]. The learned planner
//! knows the graph's phrasings; the ranker knows every path from the
//! topic, the long ones a synthesised planner rarely keeps among them.

use serde::Serialize;

use super::guided::chain_query;
use super::paths::{self, Question, RankOptions, StepVectors};
use super::{LearnedPlanner, NextQuery, PlanError, PlanRequest, Planned, Planners, Prediction};
use crate::question::{mask, Topic, MASK};
use kgbox_bundle::Kg;

/// The least learned probability a candidate is scored with.
pub const LEARNED_FLOOR: f32 = 1e-3;
/// Ranked paths that compete with the learned predictions, at most.
const RANKED: usize = 40;
/// Candidates shown in [`super::PlanInfo::paths`].
const SHOWN: usize = 5;

/// One candidate of the path ranker.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathCandidate {
    pub query: String,
    /// Its final score: the path score and the learned planner's weighed in.
    pub score: f32,
    /// The path ranker's score alone.
    pub path_score: f32,
    /// The learned planner's probability, when the path is one of its
    /// templates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub learned: Option<f32>,
    #[serde(skip)]
    pub keep_anchors: bool,
}

/// When the path ranker plans (`planner.paths`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PathRanker {
    /// Weighed with a planner trained on questions synthesised from the
    /// graph (packed without examples), alone with no learned planner, and
    /// with one trained on the operator's examples only when it is unsure
    /// (its best template below `planner.paths_below`).
    #[default]
    Auto,
    /// Always (with the encoder loaded).
    On,
    /// Never: the learned planner alone.
    Off,
}

impl std::fmt::Display for PathRanker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PathRanker::Auto => "auto",
            PathRanker::On => "on",
            PathRanker::Off => "off",
        })
    }
}

impl std::str::FromStr for PathRanker {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(PathRanker::Auto),
            "on" => Ok(PathRanker::On),
            "off" => Ok(PathRanker::Off),
            other => Err(format!(
                "unknown path ranker setting {other:?} (auto, on or off)"
            )),
        }
    }
}

impl PathRanker {
    /// The mode for a question: the ranker weighed with `learned` (when
    /// there is one), alone without, or off.
    pub fn mode(self, learned: Option<&LearnedPlanner>) -> PathMode {
        match (self, learned) {
            (PathRanker::Off, _) => PathMode::Off,
            (_, None) => PathMode::Only,
            (PathRanker::On, Some(_)) => PathMode::Mix,
            (PathRanker::Auto, Some(l)) if l.meta.demo_weight > 0.0 => PathMode::Mix,
            (PathRanker::Auto, Some(_)) => PathMode::Unsure,
        }
    }
}

/// Whether and how the path ranker plans one question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathMode {
    /// The learned planner alone.
    Off,
    /// The path ranker alone.
    Only,
    /// Both, weighed together.
    Mix,
    /// Both, weighed together, when the learned planner is unsure; else
    /// the learned planner alone.
    Unsure,
}

/// Chooses among the ranker's paths and the learned `preds` (already
/// renormalised over those that start at the topic). Best first.
pub fn candidates(
    kg: &Kg<'_>,
    topic: (u32, &str),
    question: &Question,
    steps: &StepVectors,
    learned: Option<(&LearnedPlanner, &[Prediction])>,
    mode: PathMode,
    opts: &RankOptions,
) -> Vec<PathCandidate> {
    let (entity, name) = topic;
    let ranked = paths::rank(kg, entity, question, steps, opts);
    let mut out: Vec<PathCandidate> = Vec::new();
    let preds = match (mode, learned) {
        (PathMode::Mix | PathMode::Unsure, Some((_, preds))) => preds,
        _ => &[],
    };
    let prob_of = |query: &str| -> Option<(f32, bool)> {
        let (planner, _) = learned?;
        preds
            .iter()
            .find(|p| p.template.instantiate(name) == query)
            .map(|p| (p.probability, planner.keeps_anchors(p.class)))
    };
    // A path that is no template: unlikely where the planner was trained
    // on every path of its length, unknown where a quota left some out.
    let unlisted = |hops: usize| {
        let partial = learned.is_some_and(|(planner, _)| {
            hops.checked_sub(1)
                .and_then(|i| planner.meta.partial_hops.get(i))
                .is_some_and(|&p| p)
        });
        if partial {
            opts.unknown_learned
        } else {
            0.0
        }
    };
    let weigh = |path_score: f32, learned: Option<f32>, hops: usize| match mode {
        PathMode::Mix | PathMode::Unsure => {
            path_score
                + opts.learned_weight
                    * learned
                        .unwrap_or_else(|| unlisted(hops))
                        .max(LEARNED_FLOOR)
                        .ln()
        }
        _ => path_score,
    };
    for r in ranked.iter().take(RANKED) {
        let Some(names) = paths::path_names(kg, &r.steps) else {
            continue;
        };
        let query = chain_query(name, &names);
        let found = prob_of(&query);
        out.push(PathCandidate {
            score: weigh(r.score, found.map(|f| f.0), r.steps.len()),
            path_score: r.score,
            learned: found.map(|f| f.0),
            keep_anchors: found.is_some_and(|f| f.1),
            query,
        });
    }
    // The learned planner's chains the ranker did not rank high.
    if let Some((planner, _)) = learned {
        for p in preds {
            let query = p.template.instantiate(name);
            if out.iter().any(|c| c.query == query) {
                continue;
            }
            let path_score = p
                .template
                .chain()
                .and_then(|c| paths::path_steps(kg, &c))
                .map(|s| paths::score_path(question, steps, &s, &opts.weights))
                .unwrap_or(0.0);
            out.push(PathCandidate {
                score: weigh(path_score, Some(p.probability), 0),
                path_score,
                learned: Some(p.probability),
                keep_anchors: planner.keeps_anchors(p.class),
                query,
            });
        }
    }
    out.sort_by(|a, b| b.score.total_cmp(&a.score));
    out
}

/// The best candidate's query and keep-anchors policy, and the next ones.
fn split(cands: &[PathCandidate]) -> Option<(NextQuery, Vec<NextQuery>)> {
    let mut it = cands.iter().map(|c| NextQuery {
        query: c.query.clone(),
        keep_anchors: c.keep_anchors,
    });
    let best = it.next()?;
    Some((best, it.take(super::NEXT_QUERIES).collect()))
}

/// The candidates shown in the plan's report.
fn shown(cands: &[PathCandidate]) -> Vec<PathCandidate> {
    cands.iter().take(SHOWN).cloned().collect()
}

/// Whether the question asks for others of the same kind ("which *other*
/// actors ...", "who *else*", "*also*": [`chunks::phrases`]'s `same`) and
/// `best`, the learned planner's likeliest template, is one step. Such a
/// question goes somewhere and back, so a planner sure of one step there
/// ("[X]'s movies") has read only the start of it: the ranker is weighed
/// in as when it is unsure.
///
/// [`chunks::phrases`]: paths::chunks::phrases
pub(super) fn one_step_for_others(question: &str, topic: &Topic, best: &Prediction) -> bool {
    let one_step = best.template.chain().is_some_and(|c| c.len() == 1);
    one_step && paths::chunks::phrases(&mask(question, topic.range), MASK).same
}

/// Replaces `planned`'s query (and next ones) with the best candidate
/// (nothing without the encoder or the relations' vectors, or when no
/// path binds).
pub(super) fn replan(
    p: &Planners<'_, '_>,
    req: &PlanRequest<'_>,
    topic: &Topic,
    learned: Option<(&LearnedPlanner, &[Prediction])>,
    mode: PathMode,
    planned: &mut Planned,
) -> Result<(), PlanError> {
    let (Some(steps), Some(embedder)) = (p.steps, p.embedder) else {
        return Ok(());
    };
    let masked = mask(req.question, topic.range);
    let question = Question::new(&masked, MASK, embedder).map_err(PlanError::Embed)?;
    let cands = candidates(
        p.kg,
        (topic.entity, &topic.name),
        &question,
        steps,
        learned,
        mode,
        &RankOptions::default(),
    );
    if let Some((best, next)) = split(&cands) {
        planned.query = best.query;
        planned.keep_anchors = best.keep_anchors;
        planned.next = next;
        planned.info.paths = shown(&cands);
    }
    Ok(())
}
