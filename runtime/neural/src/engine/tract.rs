//! The tract engine: the ONNX graph is optimized once with symbolic sizes
//! (batch, nodes, edges, relations), then run for any concrete size.

use std::io::Cursor;

use tract_onnx::prelude::*;

use super::{Arg, Engine};
use crate::{NeuralError, Result};

pub struct TractEngine {
    plan: std::sync::Arc<TypedRunnableModel>,
    /// Model input names, in position order.
    inputs: Vec<String>,
}

fn load_err(e: impl std::fmt::Display) -> NeuralError {
    NeuralError::Load(format!("{e:#}"))
}

fn run_err(e: impl std::fmt::Display) -> NeuralError {
    NeuralError::Run(format!("{e:#}"))
}

impl TractEngine {
    pub fn from_bytes(onnx: &[u8]) -> Result<TractEngine> {
        // Exporters record intermediate shapes that tract infers better itself.
        let framework = tract_onnx::onnx().with_ignore_value_info(true);
        let model = framework
            .model_for_read(&mut Cursor::new(onnx))
            .map_err(load_err)?;
        let inputs = model
            .input_outlets()
            .map_err(load_err)?
            .iter()
            .map(|o| model.node(o.node).name.clone())
            .collect();
        let plan = model
            .into_optimized()
            .map_err(load_err)?
            .into_runnable()
            .map_err(load_err)?;
        Ok(TractEngine { plan, inputs })
    }
}

impl Engine for TractEngine {
    fn name(&self) -> &'static str {
        "tract"
    }

    fn device(&self) -> &'static str {
        "cpu"
    }

    fn run(&self, inputs: &[(&str, Arg<'_>)]) -> Result<(Vec<usize>, Vec<f32>)> {
        let mut values: TVec<TValue> = TVec::new();
        for name in &self.inputs {
            let (_, arg) = inputs
                .iter()
                .find(|(n, _)| n == name)
                .ok_or_else(|| NeuralError::Run(format!("no value for model input `{name}`")))?;
            arg.check(name)?;
            let tensor = match arg {
                Arg::F32(shape, data) => Tensor::from_shape(shape, data),
                Arg::I64(shape, data) => Tensor::from_shape(shape, data),
            }
            .map_err(run_err)?;
            values.push(tensor.into_tvalue());
        }
        let outputs = self.plan.run(values).map_err(run_err)?;
        let out = outputs
            .first()
            .ok_or_else(|| NeuralError::Run("the model has no output".into()))?;
        let view = out.to_plain_array_view::<f32>().map_err(run_err)?;
        Ok((view.shape().to_vec(), view.iter().copied().collect()))
    }
}

/// The default-domain opset an ONNX model was exported with.
pub fn opset(onnx: &[u8]) -> Result<u32> {
    let proto = tract_onnx::onnx()
        .proto_model_for_read(&mut Cursor::new(onnx))
        .map_err(load_err)?;
    Ok(proto
        .opset_import
        .iter()
        .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
        .map(|o| o.version.max(0) as u32)
        .unwrap_or(0))
}
