//! The arbitrator: from the ranked candidates to final answers
//! ([`arbitrate`]). In order: answers the retrieval strategies already
//! chose; with an LLM, the candidates it chooses (it sees names and scores
//! only, paths only when context sharing is on), the threshold cut when its
//! choice is unusable; after the reranker, its cut ([`crate::rerank::cut`]);
//! else the candidates scoring at least a calibrated fraction of the best
//! score ([`threshold_cut`]).

use kgbox_bundle::Kg;
use kgbox_query::Answers;
use serde::Serialize;

use crate::llm::{ChatBackend, ChatRequest, LlmError};
use crate::names::{name_path, path_text};
use crate::prompt::{arbitrate_constraint, arbitrate_messages, CandidateInfo};
use crate::rerank;

/// How the final answers were chosen.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "method", rename_all = "lowercase")]
pub enum Arbitration {
    /// Score at least `threshold` × the best score.
    Threshold { threshold: f32 },
    /// The reranker's best, then those with P(correct) at least `cut`.
    Reranker { cut: f32 },
    /// Chosen by the LLM among `candidates`.
    Llm { candidates: usize },
    /// The LLM's choice was unusable; the threshold cut was used.
    Fallback { threshold: f32, reason: String },
}

/// A final answer: the answer schema every interface shares (`id`,
/// `name`, `score`, `paths`), plus the reranker's probability.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = Answer)]
pub struct AskAnswer {
    /// The entity's id in the bundle.
    #[serde(rename = "id")]
    pub entity: u32,
    /// The entity's display name.
    pub name: String,
    pub score: f32,
    /// The reranker's P(correct), when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank_score: Option<f32>,
    /// Provenance paths: each a list of `[subject, relation, object]` triples.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Vec<Vec<String>>>)]
    pub paths: Vec<Vec<[String; 3]>>,
}

/// What the arbitrator may use.
pub(crate) struct ArbitrateInput<'a, 'k> {
    pub kg: &'a Kg<'k>,
    /// The chat model, when the LLM is to choose.
    pub chat: Option<&'a dyn ChatBackend>,
    pub question: &'a str,
    /// Send candidates' provenance paths to the LLM.
    pub share_context: bool,
    /// Final answers at most.
    pub top_k: usize,
    /// The threshold cut's fraction of the best score.
    pub threshold: f32,
    /// The reranker's P(correct) of the reordered head, and its cut.
    pub reranked: Option<&'a (Vec<f32>, f32)>,
    /// Answers already chosen (by the retrieval strategies), as indices
    /// into the candidates.
    pub preset: Option<(Vec<usize>, Arbitration)>,
}

/// The final answers and how they were chosen.
#[derive(Debug)]
pub(crate) struct Arbitrated {
    pub answers: Vec<AskAnswer>,
    pub arbitration: Arbitration,
}

/// Chooses the final answers among `found`'s candidates.
pub(crate) fn arbitrate(input: ArbitrateInput<'_, '_>, found: &Answers) -> Arbitrated {
    let ArbitrateInput {
        kg,
        chat,
        question,
        share_context,
        top_k,
        threshold,
        reranked,
        preset,
    } = input;
    let scores: Vec<f32> = found.answers.iter().map(|a| a.score).collect();
    let chat = chat.filter(|_| !found.answers.is_empty());
    let (chosen, arbitration) = if let Some(preset) = preset {
        preset
    } else if let Some(chat) = chat {
        let candidates: Vec<CandidateInfo> = found
            .answers
            .iter()
            .map(|a| CandidateInfo {
                name: kg.entity_name(a.entity).unwrap_or("?").to_string(),
                score: a.score,
                context: a.paths.iter().map(|p| path_text(kg, p)).collect(),
            })
            .collect();
        match llm_choose(chat, question, &candidates, share_context) {
            Ok(mut idx) => {
                idx.truncate(top_k.max(1));
                (
                    idx,
                    Arbitration::Llm {
                        candidates: candidates.len(),
                    },
                )
            }
            Err(e) => (
                threshold_cut(&scores, threshold, top_k),
                Arbitration::Fallback {
                    threshold,
                    reason: e.to_string(),
                },
            ),
        }
    } else if let Some((probs, cut)) = reranked {
        (
            rerank::cut(probs, &scores, *cut, threshold, top_k),
            Arbitration::Reranker { cut: *cut },
        )
    } else {
        (
            threshold_cut(&scores, threshold, top_k),
            Arbitration::Threshold { threshold },
        )
    };
    let probability = |i: usize| reranked.and_then(|(p, _)| p.get(i).copied());
    let answers = chosen
        .into_iter()
        .filter_map(|i| found.answers.get(i).map(|a| (i, a)))
        .map(|(i, a)| AskAnswer {
            entity: a.entity,
            name: kg.entity_name(a.entity).unwrap_or("?").to_string(),
            score: a.score,
            rerank_score: probability(i),
            paths: a.paths.iter().map(|p| name_path(kg, p)).collect(),
        })
        .collect();
    Arbitrated {
        answers,
        arbitration,
    }
}

/// Indices (into `scores`, best first) of the answers kept by the cut: the
/// best always, then every score >= `threshold` × best, at most `top_k`.
pub fn threshold_cut(scores: &[f32], threshold: f32, top_k: usize) -> Vec<usize> {
    let Some(&top) = scores.first() else {
        return Vec::new();
    };
    scores
        .iter()
        .enumerate()
        .filter(|(i, s)| *i == 0 || **s >= threshold * top)
        .map(|(i, _)| i)
        .take(top_k.max(1))
        .collect()
}

/// Asks the LLM to choose among `candidates`; indices of the chosen ones, in
/// candidate order. Names not among the candidates are ignored; no valid
/// name is an error.
pub fn llm_choose(
    backend: &dyn ChatBackend,
    question: &str,
    candidates: &[CandidateInfo],
    share_context: bool,
) -> Result<Vec<usize>, LlmError> {
    let reply = backend.complete(&ChatRequest {
        messages: arbitrate_messages(question, candidates, share_context),
        constraint: arbitrate_constraint(),
        max_tokens: 256,
        temperature: 0.0,
        purpose: "arbitrate",
        draft: None,
    })?;
    let v: serde_json::Value = serde_json::from_str(reply.trim())
        .ok()
        .or_else(|| {
            let s = reply.find('{')?;
            let e = reply.rfind('}')?;
            serde_json::from_str(reply.get(s..=e)?).ok()
        })
        .ok_or_else(|| LlmError::BadReply("not the JSON object {\"answers\": [...]}".into()))?;
    let names: Vec<&str> = v
        .get("answers")
        .and_then(|a| a.as_array())
        .map(|a| a.iter().filter_map(|n| n.as_str()).collect())
        .ok_or_else(|| LlmError::BadReply("no \"answers\" array".into()))?;
    let chosen: Vec<usize> = candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| names.iter().any(|n| n.trim() == c.name))
        .map(|(i, _)| i)
        .collect();
    if chosen.is_empty() {
        return Err(LlmError::BadReply(
            "none of the chosen answers is a candidate".into(),
        ));
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_the_best_and_the_close_ones() {
        assert_eq!(threshold_cut(&[1.0, 0.99, 0.4, 0.3], 0.5, 10), vec![0, 1]);
        assert_eq!(threshold_cut(&[0.2, 0.1], 0.9, 10), vec![0]);
        assert_eq!(threshold_cut(&[1.0, 1.0, 1.0], 0.5, 2), vec![0, 1]);
        assert!(threshold_cut(&[], 0.5, 3).is_empty());
    }
}
