//! The `model.ultra.meta` section: what the `model.ultra.*` sections hold.

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
}

impl UltraMeta {
    pub fn from_json(bytes: &[u8]) -> Result<UltraMeta> {
        serde_json::from_slice(bytes)
            .map_err(|e| NeuralError::Invalid(format!("model.ultra.meta: {e}")))
    }

    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }
}
