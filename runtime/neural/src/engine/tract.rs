//! The tract engine. A graph is optimized once with symbolic sizes (batch,
//! nodes, edges, relations), then run for any concrete size; a token model
//! (a BERT-style encoder) is optimized once per sequence length instead.

use std::io::Cursor;
use std::sync::{Arc, Mutex};

use tract_onnx::prelude::*;

use super::api::{Arg, Engine};
use crate::{NeuralError, Result};

pub struct TractEngine {
    plans: Plans,
    /// Model input names, in position order.
    inputs: Vec<String>,
}

enum Plans {
    /// One plan, optimized with the model's own (symbolic) input shapes.
    One(Arc<TypedRunnableModel>),
    /// Every input is int64 `[batch, sequence]`: one plan per sequence
    /// length, built on first use, with the batch left symbolic. tract 0.23
    /// computes a wrong attention-mask shape for exports such as
    /// all-MiniLM-L6-v2's when the sequence length is symbolic, so it must
    /// be concrete.
    PerLength {
        model: InferenceModel,
        plans: Mutex<Vec<(usize, Arc<TypedRunnableModel>)>>,
    },
}

fn load_err(e: impl std::fmt::Display) -> NeuralError {
    NeuralError::Load(format!("{e:#}"))
}

fn run_err(e: impl std::fmt::Display) -> NeuralError {
    NeuralError::Run(format!("{e:#}"))
}

/// Parses `onnx`, ignoring the intermediate shapes exporters record
/// (`value_info`): they are not always right (torch's attention-mask
/// broadcast is one), and tract infers them itself.
fn parse(onnx: &[u8]) -> Result<(InferenceModel, Vec<String>)> {
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
    Ok((model, inputs))
}

impl TractEngine {
    pub fn from_bytes(onnx: &[u8]) -> Result<TractEngine> {
        let (model, inputs) = parse(onnx)?;
        let plan = model
            .into_optimized()
            .map_err(load_err)?
            .into_runnable()
            .map_err(load_err)?;
        Ok(TractEngine {
            plans: Plans::One(plan),
            inputs,
        })
    }

    /// A token model: every input is int64 `[batch, sequence]`, and a plan
    /// is optimized for each sequence length it is run with. The plan for
    /// `first_length` is built now, so that a model tract cannot run fails
    /// here and not on first use.
    pub fn for_tokens(onnx: &[u8], first_length: usize) -> Result<TractEngine> {
        let (model, inputs) = parse(onnx)?;
        let engine = TractEngine {
            plans: Plans::PerLength {
                model,
                plans: Mutex::new(Vec::new()),
            },
            inputs,
        };
        engine.plan_for_length(first_length)?;
        Ok(engine)
    }

    /// The plan for token inputs of `seq` tokens, built on first use.
    fn plan_for_length(&self, seq: usize) -> Result<Arc<TypedRunnableModel>> {
        let Plans::PerLength { model, plans } = &self.plans else {
            return Err(NeuralError::Run("not a token model".into()));
        };
        let mut plans = plans
            .lock()
            .map_err(|_| NeuralError::Load("a previous model build panicked".into()))?;
        if let Some((_, p)) = plans.iter().find(|(s, _)| *s == seq) {
            return Ok(p.clone());
        }
        let mut model = model.clone();
        let batch = model.symbols.sym("batch");
        for pos in 0..self.inputs.len() {
            model
                .set_input_fact(pos, i64::fact([batch.to_dim(), seq.to_dim()]).into())
                .map_err(load_err)?;
        }
        let plan = model
            .into_optimized()
            .map_err(load_err)?
            .into_runnable()
            .map_err(load_err)?;
        plans.push((seq, plan.clone()));
        Ok(plan)
    }
}

impl Engine for TractEngine {
    fn name(&self) -> &'static str {
        "tract"
    }

    fn device(&self) -> &'static str {
        "cpu"
    }

    fn inputs(&self) -> &[String] {
        &self.inputs
    }

    fn run(&self, inputs: &[(&str, Arg<'_>)]) -> Result<(Vec<usize>, Vec<f32>)> {
        let mut values: TVec<TValue> = TVec::new();
        let mut seq = None;
        for name in &self.inputs {
            let (_, arg) = inputs
                .iter()
                .find(|(n, _)| n == name)
                .ok_or_else(|| NeuralError::Run(format!("no value for model input `{name}`")))?;
            arg.check(name)?;
            let tensor = match arg {
                Arg::F32(shape, data) => Tensor::from_shape(shape, data),
                Arg::I64(shape, data) => {
                    seq = seq.or(shape.get(1).copied());
                    Tensor::from_shape(shape, data)
                }
            }
            .map_err(run_err)?;
            values.push(tensor.into_tvalue());
        }
        let plan = match &self.plans {
            Plans::One(plan) => plan.clone(),
            Plans::PerLength { .. } => {
                let seq = seq.ok_or_else(|| {
                    NeuralError::Run("a token model needs int64 [batch, sequence] inputs".into())
                })?;
                self.plan_for_length(seq)?
            }
        };
        let outputs = plan.run(values).map_err(run_err)?;
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
