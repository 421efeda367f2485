//! The `model.ultra.meta` section: what the `model.ultra.*` sections hold.

use kgbox_query::Fusion;
use serde::{Deserialize, Serialize};

use crate::{NeuralError, Result};

/// Contents of `model.ultra.meta` (JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UltraMeta {
    /// The checkpoint the weights come from, e.g. `ultraquery`.
    pub checkpoint: String,
    /// Hidden size (64 for the published checkpoints).
    pub dim: usize,
    /// Relation types the model sees: 2R (each relation and its inverse).
    pub relations: usize,
    /// Edges of the relation graph the representations were computed on.
    pub relation_graph_edges: usize,
    /// Default-domain ONNX opset of the entity model.
    pub opset: u32,
    /// How `hybrid` fuses the model's answers with the graph's, fitted by the
    /// packager on held-out examples (absent: [`Fusion::default`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fusion: Option<Fusion>,
}

impl UltraMeta {
    pub fn from_json(bytes: &[u8]) -> Result<UltraMeta> {
        let meta: UltraMeta = serde_json::from_slice(bytes)
            .map_err(|e| NeuralError::Invalid(format!("model.ultra.meta: {e}")))?;
        if meta.fusion.is_some_and(|f| !f.is_finite()) {
            return Err(NeuralError::Invalid(
                "model.ultra.meta: the fusion weights are not finite".into(),
            ));
        }
        Ok(meta)
    }

    /// The fusion `hybrid` uses with this model.
    pub fn fusion(&self) -> Fusion {
        self.fusion.unwrap_or_default()
    }

    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }
}
