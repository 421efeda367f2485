//! The reranking stage of a question: the candidates' feature rows (for the
//! reranker, or exported for training it) and their new order.

use std::time::Instant;

use kgbox_bundle::Kg;
use kgbox_query::Answers;

use super::{NameSimilarity, RerankError, RerankInfo, Reranker, WIDTH};
use crate::question::{mask, LinkedEntity, Topic};
use crate::rerank;
use kgbox_query::dense::TextEncoder;

/// One candidate's reranker features.
#[derive(Debug, Clone)]
pub struct CandidateFeatures {
    pub entity: u32,
    pub values: [f32; WIDTH],
}

/// What [`rerank_candidates`] did.
#[derive(Debug, Default)]
pub(crate) struct Reranked {
    /// P(correct) of the reordered candidates (the first `info.candidates`),
    /// and the cut.
    pub probabilities: Option<(Vec<f32>, f32)>,
    pub info: Option<RerankInfo>,
    pub features: Vec<CandidateFeatures>,
}

/// What the reranking stage may use.
pub(crate) struct RerankInput<'a, 'k> {
    pub kg: &'a Kg<'k>,
    /// The bundle's reranker, when it is to run.
    pub reranker: Option<&'a Reranker>,
    /// Return every scored candidate's features.
    pub export_features: bool,
    /// Candidates featurized for export when no reranker runs.
    pub candidates: usize,
    pub embedder: Option<&'a dyn TextEncoder>,
    /// Cosine similarity of a question embedding to an entity's name vector.
    pub name_similarity: Option<&'a NameSimilarity<'a>>,
    pub question: &'a str,
    pub topic: Option<&'a Topic>,
    pub linked: &'a [LinkedEntity],
    /// The planner's question embedding, when it made one.
    pub question_vec: Option<Vec<f32>>,
}

/// Why the reranking stage failed.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("the question could not be embedded: {0}")]
    Embed(String),
    #[error(transparent)]
    Rerank(#[from] RerankError),
}

/// Computes the candidates' features (when the reranker runs or they are
/// exported) and reorders the reranked ones by P(correct).
pub(crate) fn rerank_candidates(
    input: RerankInput<'_, '_>,
    found: &mut Answers,
) -> Result<Reranked, ApplyError> {
    let RerankInput {
        kg,
        reranker,
        export_features,
        candidates,
        embedder,
        name_similarity,
        question,
        topic,
        linked,
        question_vec,
    } = input;
    let mut out = Reranked::default();
    if (reranker.is_none() && !export_features) || found.answers.is_empty() {
        return Ok(out);
    }
    let t = Instant::now();
    let n = reranker
        .map(|r| r.meta.candidates)
        .unwrap_or(candidates)
        .min(found.answers.len());
    let wants_text = reranker.is_none_or(|r| r.meta.text_similarity);
    let question_vec = match (wants_text, name_similarity, embedder) {
        (true, Some(_), Some(e)) => match question_vec {
            Some(v) => Some(v),
            None => {
                let text = topic.map(|t| mask(question, t.range));
                let text = text.as_deref().unwrap_or(question);
                e.embed(&[text])
                    .map_err(|e| ApplyError::Embed(e.to_string()))?
                    .into_iter()
                    .next()
            }
        },
        _ => None,
    };
    let similarity = |entity: u32| {
        let q = question_vec.as_deref()?;
        name_similarity.and_then(|f| f(q, entity))
    };
    let text: Option<&dyn Fn(u32) -> Option<f32>> = if question_vec.is_some() {
        Some(&similarity)
    } else {
        None
    };
    let mut entities: Vec<u32> = topic.iter().map(|t| t.entity).collect();
    entities.extend(linked.iter().map(|l| l.entity));
    let candidates: Vec<rerank::Candidate> = found.answers[..n]
        .iter()
        .map(|a| rerank::Candidate {
            entity: a.entity,
            score: a.score,
        })
        .collect();
    let rows = rerank::featurize(
        kg,
        &entities,
        &candidates,
        found.total,
        text,
        &rerank::SubgraphLimits::default(),
    );
    if export_features {
        out.features = candidates
            .iter()
            .zip(&rows)
            .map(|(c, r)| CandidateFeatures {
                entity: c.entity,
                values: *r,
            })
            .collect();
    }
    let Some(reranker) = reranker else {
        return Ok(out);
    };
    let probabilities = reranker.score(&rows)?;
    let order = rerank::order(&probabilities);
    let old_top = found.answers.first().map(|a| a.entity);
    let tail = found.answers.split_off(n);
    let mut head: Vec<Option<kgbox_query::exec::Answer>> = std::mem::take(&mut found.answers)
        .into_iter()
        .map(Some)
        .collect();
    found.answers = order
        .iter()
        .filter_map(|&i| head.get_mut(i).and_then(Option::take))
        .chain(tail)
        .collect();
    out.probabilities = Some((
        order
            .iter()
            .filter_map(|&i| probabilities.get(i).copied())
            .collect(),
        reranker.meta.cut,
    ));
    out.info = Some(RerankInfo {
        candidates: n,
        changed_top: found.answers.first().map(|a| a.entity) != old_top,
        engine: reranker.scorer.engine(),
        ms: t.elapsed().as_secs_f64() * 1e3,
    });
    Ok(out)
}
