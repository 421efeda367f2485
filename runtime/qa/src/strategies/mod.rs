//! Multi-strategy retrieval for the `llm` and `local` planners (BYOKG-RAG's
//! idea: when one way into the graph fails, try others). When the planned
//! query has no answers or is low-confidence ([`low_confidence`]), the
//! strategies are tried in order, each bounded:
//!
//! 1. `paths` ([`paths`]): the LLM picks among the relation paths that exist
//!    from the linked entities; their end entities are candidates;
//! 2. `triplets` ([`triplets`]): the LLM chooses relations step by step from
//!    a growing frontier, until it says it can answer;
//! 3. `final_answer`: after a strategy yields new candidates, the LLM
//!    chooses among everything gathered (the query's candidates too). If it
//!    chooses none, the next strategy is tried.
//!
//! What the LLM sees is written by [`crate::prompt`]: the question, entity
//! and relation names, candidate names; triples only with context sharing.
//! An LLM call that fails (other than a bad reply) ends the sequence.
//! `ask`'s `strategies_tests` run the fall-through end to end.

mod paths;
mod triplets;
mod walk;

use std::time::Instant;

use kgbox_bundle::Kg;
use kgbox_query::exec::Answer;
use kgbox_query::Answers;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::arbitrate::{threshold_cut, Arbitration};
use crate::llm::{ChatBackend, ChatRequest, LlmError};
use crate::names::path_text;
use crate::planner::PlannerKind;
use crate::prompt::{self, CandidateInfo, EntityInfo};
use crate::question::LinkedEntity;

/// Linked entities the strategies start from at most.
const MAX_SOURCES: usize = 4;

/// When to fall through, and the bounds of each strategy
/// (`[planner.strategies]` in the configuration).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StrategyOptions {
    /// Fall through to the other strategies when the LLM's query has no
    /// answers or is low-confidence (`llm` and `local` planners only).
    pub enabled: bool,
    /// Low confidence: the best candidate's score is below this.
    pub min_score: f32,
    /// Low confidence: the query has more candidates than this (0: no limit).
    pub max_answers: usize,
    /// Paths: relations per path at most (1 to 3).
    pub max_path_length: usize,
    /// Paths: paths offered to the LLM per linked entity at most.
    pub max_paths: usize,
    /// Triplets: LLM steps at most.
    pub max_steps: usize,
    /// An (entity, relation) pair with more neighbours is not expanded
    /// further (KGFR's asymmetric pruning); its neighbours are still reached.
    pub fanout: usize,
    /// Edges each strategy may look at.
    pub max_edge_visits: u64,
}

impl Default for StrategyOptions {
    fn default() -> Self {
        StrategyOptions {
            enabled: true,
            min_score: 0.5,
            max_answers: 50,
            max_path_length: 2,
            max_paths: 40,
            max_steps: 3,
            fanout: 100,
            max_edge_visits: 100_000,
        }
    }
}

impl StrategyOptions {
    /// Checks the bounds; the message names the key.
    pub fn check(&self) -> Result<(), String> {
        if !(1..=3).contains(&self.max_path_length) {
            return Err("planner.strategies.max_path_length must be 1, 2 or 3".into());
        }
        if self.max_paths == 0 || self.max_steps == 0 || self.fanout == 0 {
            return Err(
                "planner.strategies.max_paths, max_steps and fanout must be at least 1".into(),
            );
        }
        if !(0.0..=1.0).contains(&self.min_score) {
            return Err("planner.strategies.min_score must be between 0 and 1".into());
        }
        Ok(())
    }
}

/// A retrieval strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StrategyName {
    /// The LLM's DSL query.
    Query,
    Paths,
    Triplets,
    FinalAnswer,
}

impl StrategyName {
    pub const ALL: [StrategyName; 4] = [
        StrategyName::Query,
        StrategyName::Paths,
        StrategyName::Triplets,
        StrategyName::FinalAnswer,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StrategyName::Query => "query",
            StrategyName::Paths => "paths",
            StrategyName::Triplets => "triplets",
            StrategyName::FinalAnswer => "final_answer",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// What one strategy did (`AskResult::strategies`).
#[derive(Debug, Clone, Serialize)]
pub struct StrategyReport {
    pub name: StrategyName,
    /// LLM calls it made.
    pub llm_calls: usize,
    /// Candidates it yielded (for `final_answer`: those it chose among).
    pub candidates: usize,
    /// Whether the final answers include its candidates.
    pub answered: bool,
    pub ms: f64,
    /// The paths followed (as queries), or the relations chosen per step.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub followed: Vec<String>,
    /// Why it fell through, or why it stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl StrategyReport {
    fn new(name: StrategyName, t: Instant) -> StrategyReport {
        StrategyReport {
            name,
            llm_calls: 0,
            candidates: 0,
            answered: false,
            ms: t.elapsed().as_secs_f64() * 1e3,
            followed: Vec::new(),
            note: None,
            error: None,
        }
    }
}

/// A linked entity to start from.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub entity: u32,
    pub name: String,
    pub mention: String,
}

impl Source {
    fn info(&self) -> EntityInfo {
        EntityInfo {
            mention: self.mention.clone(),
            name: self.name.clone(),
        }
    }
}

/// What a strategy yielded.
#[derive(Debug, Default)]
pub(crate) struct Yield {
    pub candidates: Vec<Answer>,
    pub llm_calls: usize,
    pub followed: Vec<String>,
    pub note: Option<String>,
    pub error: Option<LlmError>,
}

/// The final answers, when a strategy found them.
#[derive(Debug)]
pub struct Answered {
    /// Everything gathered, in the order shown to the LLM.
    pub found: Answers,
    /// Indices into `found.answers`, at most `top_k`.
    pub chosen: Vec<usize>,
    pub arbitration: Arbitration,
}

/// What the fall-through did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Empty when it did not run.
    pub reports: Vec<StrategyReport>,
    pub answer: Option<Answered>,
}

/// Why the query's candidates call for the other strategies; `None` when
/// they do not.
pub fn low_confidence(found: &Answers, opts: &StrategyOptions) -> Option<String> {
    let Some(best) = found.answers.first() else {
        return Some("the query has no answers".into());
    };
    if best.score < opts.min_score {
        return Some(format!(
            "the best score {:.3} is below min_score {}",
            best.score, opts.min_score
        ));
    }
    if opts.max_answers > 0 && found.total > opts.max_answers {
        return Some(format!(
            "{} candidates is more than max_answers {}",
            found.total, opts.max_answers
        ));
    }
    None
}

/// The JSON object in a reply (also when wrapped in prose or a code fence).
pub(crate) fn parse_reply<T: DeserializeOwned>(reply: &str) -> Result<T, LlmError> {
    serde_json::from_str(reply.trim())
        .or_else(|e| {
            let start = reply.find('{').ok_or(e)?;
            let end = reply.rfind('}').unwrap_or(start);
            serde_json::from_str(reply.get(start..=end).unwrap_or(""))
        })
        .map_err(|e| LlmError::BadReply(format!("not the JSON object asked for: {e}")))
}

/// Only a bad reply lets the sequence go on: a failed call would fail again.
fn is_fatal(e: &LlmError) -> bool {
    !matches!(e, LlmError::BadReply(_))
}

/// One question's inputs to the fall-through.
pub(crate) struct FallThrough<'a, 'k> {
    pub kg: &'a Kg<'k>,
    /// The chat model; without one nothing falls through.
    pub chat: Option<&'a dyn ChatBackend>,
    /// The planner that wrote the first query.
    pub planner: PlannerKind,
    pub question: &'a str,
    pub linked: &'a [LinkedEntity],
    pub opts: &'a StrategyOptions,
    /// Candidates the executor returns.
    pub candidates: usize,
    /// Final answers at most.
    pub top_k: usize,
    /// Relations listed to the LLM at most.
    pub max_relations: usize,
    /// Send triples to the LLM.
    pub share_context: bool,
}

/// The first query, as the first strategy.
pub(crate) struct FirstQuery {
    /// LLM calls made by the planner.
    pub llm_calls: usize,
    /// Planning and execution, milliseconds.
    pub ms: f64,
    /// The arbitrator's threshold (the cut when the final answer fails).
    pub threshold: f32,
    /// The topic entity, started from first.
    pub topic: Option<u32>,
    /// The query is a guided chain (held to the bundle's demonstrated
    /// templates): it falls through only when it finds nothing, since a
    /// large answer set is what many such questions ask for.
    pub guided: bool,
}

/// Runs the fall-through after the planned query when it applies: an
/// `llm` or `local` planner, strategies enabled, a chat model, and
/// [`low_confidence`] candidates (for a guided query: none).
pub(crate) fn after_query(q: &FallThrough<'_, '_>, found: &Answers, first: FirstQuery) -> Outcome {
    let so = q.opts;
    let linked = q.linked;
    let llm_planned = q.planner.chat().is_some();
    let (Some(chat), true, true) = (q.chat, llm_planned, so.enabled) else {
        return Outcome::default();
    };
    let reason = if first.guided {
        found
            .answers
            .is_empty()
            .then(|| "the guided query has no answers".to_string())
    } else {
        low_confidence(found, so)
    };
    let Some(reason) = reason else {
        return Outcome::default();
    };
    let mut sources: Vec<Source> = Vec::new();
    let mut ordered: Vec<&LinkedEntity> = linked.iter().collect();
    ordered.sort_by_key(|l| Some(l.entity) != first.topic);
    for l in ordered {
        if sources.len() < MAX_SOURCES && sources.iter().all(|s| s.entity != l.entity) {
            sources.push(Source {
                entity: l.entity,
                name: l.name.clone(),
                mention: l.mention.clone(),
            });
        }
    }
    let mut query = StrategyReport::new(StrategyName::Query, Instant::now());
    query.ms = first.ms;
    query.llm_calls = first.llm_calls;
    query.candidates = found.total;
    query.note = Some(reason);
    let run = Run {
        kg: q.kg,
        chat,
        question: q.question,
        sources: &sources,
        opts: so,
        candidates: q.candidates.max(q.top_k).max(1),
        top_k: q.top_k.max(1),
        max_relations: q.max_relations,
        share_context: q.share_context,
        threshold: first.threshold,
    };
    run.fall_through(found, query)
}

/// One fall-through's inputs.
struct Run<'a, 'k> {
    kg: &'a Kg<'k>,
    chat: &'a dyn ChatBackend,
    question: &'a str,
    sources: &'a [Source],
    opts: &'a StrategyOptions,
    /// Candidates the final answer chooses among at most.
    candidates: usize,
    top_k: usize,
    max_relations: usize,
    share_context: bool,
    threshold: f32,
}

impl Run<'_, '_> {
    fn fall_through(&self, found: &Answers, query: StrategyReport) -> Outcome {
        let mut reports = vec![query];
        // Candidates with the strategies that yielded them (bit masks).
        let mut gathered: Vec<(Answer, u8)> = Vec::new();
        let mut answer = None;
        if self.sources.is_empty() {
            if let Some(note) = reports.first_mut().and_then(|q| q.note.as_mut()) {
                note.push_str("; no linked entity to start other strategies from");
            }
        }
        for name in [StrategyName::Paths, StrategyName::Triplets] {
            if self.sources.is_empty() {
                break;
            }
            let t = Instant::now();
            let y = match name {
                StrategyName::Paths => {
                    paths::run(self.kg, self.chat, self.question, self.sources, self.opts)
                }
                _ => triplets::run(
                    self.kg,
                    self.chat,
                    self.question,
                    self.sources,
                    self.opts,
                    self.max_relations,
                    self.share_context,
                ),
            };
            let mut report = StrategyReport::new(name, t);
            report.llm_calls = y.llm_calls;
            report.candidates = y.candidates.len();
            report.followed = y.followed;
            report.note = y.note;
            report.error = y.error.as_ref().map(ToString::to_string);
            reports.push(report);
            let mut new = 0;
            for c in y.candidates {
                let full = gathered.len() >= self.candidates;
                match gathered.iter_mut().find(|(g, _)| g.entity == c.entity) {
                    Some((_, mask)) => *mask |= name.bit(),
                    None if !full => {
                        gathered.push((c, name.bit()));
                        new += 1;
                    }
                    None => {}
                }
            }
            if y.error.as_ref().is_some_and(is_fatal) {
                break;
            }
            if new == 0 {
                continue;
            }
            let pool = self.pool(&gathered, found);
            let (done, a) = self.final_answer(&pool, &mut reports);
            answer = a;
            if done {
                break;
            }
        }
        if answer.is_none() {
            // The answers come from the query's candidates, if any.
            if let Some(q) = reports.first_mut() {
                q.answered = !found.answers.is_empty();
            }
        }
        Outcome { reports, answer }
    }

    /// The gathered candidates, then the query's, at most `candidates`.
    fn pool(&self, gathered: &[(Answer, u8)], found: &Answers) -> Vec<(Answer, u8)> {
        let mut pool = gathered.to_vec();
        for a in &found.answers {
            if pool.len() >= self.candidates {
                break;
            }
            match pool.iter_mut().find(|(g, _)| g.entity == a.entity) {
                Some((_, mask)) => *mask |= StrategyName::Query.bit(),
                None => pool.push((a.clone(), StrategyName::Query.bit())),
            }
        }
        pool
    }

    /// Asks the LLM to choose among `pool`; pushes its report. Returns
    /// whether the sequence is done, and the answers when there are some
    /// (the threshold cut when the call failed).
    fn final_answer(
        &self,
        pool: &[(Answer, u8)],
        reports: &mut Vec<StrategyReport>,
    ) -> (bool, Option<Answered>) {
        let t = Instant::now();
        let infos: Vec<CandidateInfo> = pool
            .iter()
            .map(|(a, _)| CandidateInfo {
                name: self.kg.entity_name(a.entity).unwrap_or("?").to_string(),
                score: a.score,
                context: a.paths.iter().map(|p| path_text(self.kg, p)).collect(),
            })
            .collect();
        let names: Vec<String> = infos.iter().map(|c| c.name.clone()).collect();
        let reply = self
            .chat
            .complete(&ChatRequest {
                messages: prompt::final_answer_messages(self.question, &infos, self.share_context),
                constraint: prompt::final_answer_constraint(&names),
                max_tokens: 256,
                temperature: 0.0,
                purpose: "final_answer",
                draft: None,
            })
            .and_then(|r| parse_reply::<FinalReply>(&r));
        let mut report = StrategyReport::new(StrategyName::FinalAnswer, t);
        report.llm_calls = 1;
        report.candidates = pool.len();
        let (chosen, arbitration) = match reply {
            Ok(r) => {
                let chosen: Vec<usize> = names
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| r.answers.iter().any(|a| a.trim() == n.as_str()))
                    .map(|(i, _)| i)
                    .take(self.top_k)
                    .collect();
                if chosen.is_empty() {
                    report.note = Some("the LLM chose none of the candidates".into());
                    (chosen, None)
                } else {
                    let arbitration = Arbitration::Llm {
                        candidates: pool.len(),
                    };
                    (chosen, Some(arbitration))
                }
            }
            Err(e) => {
                report.error = Some(e.to_string());
                let scores: Vec<f32> = pool.iter().map(|(a, _)| a.score).collect();
                let cut = threshold_cut(&scores, self.threshold, self.top_k);
                let fallback = Arbitration::Fallback {
                    threshold: self.threshold,
                    reason: e.to_string(),
                };
                (cut, Some(fallback))
            }
        };
        let Some(arbitration) = arbitration else {
            reports.push(report);
            return (false, None);
        };
        report.answered = true;
        for &i in &chosen {
            let mask = pool.get(i).map_or(0, |(_, m)| *m);
            for r in reports.iter_mut() {
                if mask & r.name.bit() != 0 {
                    r.answered = true;
                }
            }
        }
        reports.push(report);
        let answers: Vec<Answer> = pool.iter().map(|(a, _)| a.clone()).collect();
        let found = Answers {
            total: answers.len(),
            answers,
            edge_visits: 0,
        };
        (
            true,
            Some(Answered {
                found,
                chosen,
                arbitration,
            }),
        )
    }
}

#[derive(Deserialize)]
struct FinalReply {
    answers: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn low_confidence_is_no_answers_a_low_best_score_or_too_many() {
        let opts = StrategyOptions::default();
        let answers = |scores: &[f32], total: usize| Answers {
            answers: scores
                .iter()
                .enumerate()
                .map(|(i, &score)| Answer {
                    entity: i as u32,
                    score,
                    paths: Vec::new(),
                })
                .collect(),
            total,
            edge_visits: 0,
        };
        assert!(low_confidence(&answers(&[], 0), &opts).is_some());
        assert!(low_confidence(&answers(&[0.3], 1), &opts).is_some());
        assert!(low_confidence(&answers(&[1.0], 51), &opts).is_some());
        assert!(low_confidence(&answers(&[1.0, 0.2], 2), &opts).is_none());
        let unlimited = StrategyOptions {
            max_answers: 0,
            ..opts
        };
        assert!(low_confidence(&answers(&[1.0], 5000), &unlimited).is_none());
        assert!(opts.check().is_ok());
        let bad = StrategyOptions {
            max_path_length: 4,
            ..opts
        };
        assert!(bad.check().unwrap_err().contains("max_path_length"));
    }

    #[test]
    fn replies_are_parsed_leniently_and_never_panic() {
        #[derive(Deserialize, Debug)]
        struct R {
            #[allow(dead_code)]
            paths: Vec<String>,
        }
        assert!(parse_reply::<R>(r#"{"paths": []}"#).is_ok());
        assert!(parse_reply::<R>("```json\n{\"paths\": [\"a\"]}\n```").is_ok());
        for bad in ["", "}{", "{", "no json", r#"{"paths": 3}"#, "}"] {
            assert!(parse_reply::<R>(bad).is_err(), "{bad}");
        }
    }
}
