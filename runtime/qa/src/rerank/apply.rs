//! The reranking step of [`crate::ask::ask`]: the candidates' feature rows
//! (for the reranker, or exported for training it) and their new order.

use std::time::Instant;

use kgbox_query::Answers;

use super::{RerankInfo, WIDTH};
use crate::ask::{ms, AskError, AskOptions, Context, LinkedEntity};
use crate::question::{mask, Topic};
use crate::rerank;

/// One candidate's reranker features.
#[derive(Debug, Clone)]
pub struct CandidateFeatures {
    pub entity: u32,
    pub values: [f32; WIDTH],
}

/// What [`rerank_candidates`] did.
#[derive(Default)]
pub(crate) struct Reranked {
    /// P(correct) of the reordered candidates (the first `info.candidates`),
    /// and the cut.
    pub probabilities: Option<(Vec<f32>, f32)>,
    pub info: Option<RerankInfo>,
    pub features: Vec<CandidateFeatures>,
}

/// Computes the candidates' features (when the reranker runs or they are
/// exported) and reorders the reranked ones by P(correct).
pub(crate) fn rerank_candidates(
    ctx: &Context<'_, '_>,
    opts: &AskOptions,
    question: &str,
    topic: Option<&Topic>,
    linked: &[LinkedEntity],
    question_vec: Option<Vec<f32>>,
    found: &mut Answers,
) -> Result<Reranked, AskError> {
    let reranker = ctx.reranker.filter(|_| opts.rerank);
    let mut out = Reranked::default();
    if (reranker.is_none() && !opts.export_features) || found.answers.is_empty() {
        return Ok(out);
    }
    let t = Instant::now();
    let n = reranker
        .map(|r| r.meta.candidates)
        .unwrap_or(opts.candidates)
        .min(found.answers.len());
    let wants_text = reranker.is_none_or(|r| r.meta.text_similarity);
    let question_vec = match (wants_text, ctx.name_similarity, ctx.embedder) {
        (true, Some(_), Some(e)) => match question_vec {
            Some(v) => Some(v),
            None => {
                let text = topic.map(|t| mask(question, t.range));
                let text = text.as_deref().unwrap_or(question);
                e.embed(&[text])
                    .map_err(AskError::Embed)?
                    .into_iter()
                    .next()
            }
        },
        _ => None,
    };
    let similarity = |entity: u32| {
        let q = question_vec.as_deref()?;
        ctx.name_similarity.and_then(|f| f(q, entity))
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
        ctx.kg,
        &entities,
        &candidates,
        found.total,
        text,
        &rerank::SubgraphLimits::default(),
    );
    if opts.export_features {
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
        ms: ms(t),
    });
    Ok(out)
}
