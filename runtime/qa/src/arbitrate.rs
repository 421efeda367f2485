//! The arbitrator: from the executor's ranked candidates to final answers.
//! Without an LLM, the candidates scoring at least a calibrated fraction of
//! the best score; with one, the candidates it chooses (it sees names and
//! scores only, paths only when context sharing is on).

use serde::Serialize;

use crate::llm::{ChatBackend, ChatRequest, LlmError};
use crate::prompt::{arbitrate_constraint, arbitrate_messages, CandidateInfo};

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
