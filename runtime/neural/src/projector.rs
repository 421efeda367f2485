//! The neural projection the executor calls: SEPPR subgraph → entity model →
//! sigmoid → fuzzy set over the whole graph.

use kgbox_bundle::Kg;
use kgbox_query::fuzzy::FuzzySet;
use kgbox_query::{Fusion, Projector};

use crate::batcher::{project_alone, Projection};
use crate::model::{sigmoid, UltraModel};
use crate::seppr::SepprParams;

/// Memberships below this are dropped from a projected set.
pub const MIN_MEMBERSHIP: f32 = 1e-4;

/// One request's projector; its projections go through the model's gate
/// and batcher when it has one ([`UltraModel::set_batching`]).
pub struct NeuralProjector<'k, 'a> {
    kg: &'k Kg<'a>,
    model: &'k UltraModel,
    params: SepprParams,
}

impl<'k, 'a> NeuralProjector<'k, 'a> {
    pub fn new(kg: &'k Kg<'a>, model: &'k UltraModel, params: SepprParams) -> Self {
        NeuralProjector { kg, model, params }
    }
}

impl Projector for NeuralProjector<'_, '_> {
    fn fusion(&self) -> Fusion {
        self.model.meta().fusion()
    }

    fn project(&self, x: &FuzzySet, relation: u32, inverse: bool) -> Result<FuzzySet, String> {
        let seeds: Vec<(u32, f32)> = x.iter().collect();
        if seeds.is_empty() {
            return Ok(FuzzySet::default());
        }
        let r = relation as usize + if inverse { self.kg.relation_count() } else { 0 };
        let projection = Projection {
            seeds,
            relation: r,
            params: self.params,
        };
        let (nodes, scores) = match self.model.batcher() {
            Some(b) => b.project(self.kg, self.model, projection),
            None => project_alone(self.kg, self.model, projection),
        }
        .map_err(|e| e.to_string())?;
        let pairs = nodes
            .iter()
            .zip(scores)
            .map(|(&v, logit)| (v, sigmoid(logit)))
            .filter(|p| p.1 >= MIN_MEMBERSHIP)
            .collect();
        Ok(FuzzySet::from_pairs(pairs, self.kg.entity_count()))
    }
}
