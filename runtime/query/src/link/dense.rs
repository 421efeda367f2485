//! The dense stage: when the lexical stages find nothing, the nearest entity
//! names of the mention's embedding (see the [module docs](super)).

use kgbox_bundle::normalize::normalize;
use kgbox_bundle::Kg;

use super::candidate::{rank, Candidate, LinkOptions, Mention, Method};
use super::kernel::eq1;
use super::lexical::link_mention;
use super::text::link_text_with;
use crate::dense::{Dense, DenseError};

/// [`link_mention`], then, when it finds nothing, the dense stage (see the
/// module docs) if `dense` is given and [`LinkOptions::dense`] is set.
pub fn link_mention_dense(
    kg: &Kg<'_>,
    dense: Option<&Dense<'_>>,
    mention: &str,
    opts: &LinkOptions,
) -> Result<Vec<Candidate>, DenseError> {
    let found = link_mention(kg, mention, opts);
    let Some(dense) = dense else {
        return Ok(found);
    };
    if !found.is_empty() || !opts.dense || opts.top_m == 0 || normalize(mention).is_empty() {
        return Ok(found);
    }
    let query = dense
        .encoder
        .embed(&[mention])
        .map_err(DenseError::Encoder)?
        .pop()
        .unwrap_or_default();
    let hits: Vec<(u32, f32)> = dense
        .index
        .nearest(&query, opts.top_m)
        .into_iter()
        .filter(|&(e, _)| kg.entity_name(e).is_some())
        .collect();
    let distances: Vec<f32> = hits.iter().map(|h| h.1).collect();
    let probabilities = eq1(&distances);
    let candidates = hits
        .iter()
        .zip(probabilities)
        .filter_map(|(&(entity, d), p)| {
            Some(Candidate {
                entity,
                name: kg.entity_name(entity)?.to_string(),
                probability: p,
                method: Method::Dense,
                distance: 0,
                embedding_distance: Some(d),
            })
        })
        .collect();
    Ok(rank(candidates, opts.top_m))
}

/// [`link_text`] with the dense stage for bracketed mentions (see
/// [`link_mention_dense`]). Mentions outside brackets are still found by
/// exact and alias matches only.
pub fn link_text_dense(
    kg: &Kg<'_>,
    dense: Option<&Dense<'_>>,
    text: &str,
    opts: &LinkOptions,
) -> Result<Vec<Mention>, DenseError> {
    link_text_with(kg, text, opts, |m| link_mention_dense(kg, dense, m, opts))
}
