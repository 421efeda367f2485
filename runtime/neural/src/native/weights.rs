//! The entity model's weights, read from the ONNX graph that
//! `models/ultra/export.py` writes (the same file tract and ort run).
//!
//! Biases, LayerNorm scales and offsets are initializers named after the
//! PyTorch parameters (`m.layers.{i}.linear.bias`, ...). The exporter gives
//! matrix weights anonymous names, so they are taken from the graph's
//! `MatMul` nodes in order: per layer the relation projection's two
//! `[D, D]` weights, then the layer's `[2D, D]` linear weight; last the
//! readout MLP's `[2D, 2D]` and `[2D, 1]`. Every shape is checked, and a
//! graph of another structure is refused with the reason, so the caller can
//! fall back to an ONNX engine.

use std::collections::HashMap;
use std::io::Cursor;

use tract_onnx::pb::{tensor_proto::DataType, ModelProto, TensorProto};
use tract_onnx::prelude::Framework;

use crate::{NeuralError, Result};

/// One message-passing layer (`RelationalConv` with a relation projection).
#[derive(Debug, Clone)]
pub struct Layer {
    /// `[D, D]`, `[D]`: first linear of the relation projection.
    pub rel_w1: Vec<f32>,
    pub rel_b1: Vec<f32>,
    /// `[D, D]`, `[D]`: second linear of the relation projection.
    pub rel_w2: Vec<f32>,
    pub rel_b2: Vec<f32>,
    /// `[2D, D]` (rows: the node state, then the aggregate), `[D]`.
    pub lin_w: Vec<f32>,
    pub lin_b: Vec<f32>,
    /// LayerNorm scale and offset, `[D]` each.
    pub ln_w: Vec<f32>,
    pub ln_b: Vec<f32>,
}

/// The entity model: layers, then the readout MLP over `[state, query]`.
#[derive(Debug, Clone)]
pub struct Weights {
    pub dim: usize,
    pub layers: Vec<Layer>,
    /// `[2D, 2D]`, `[2D]`.
    pub mlp_w1: Vec<f32>,
    pub mlp_b1: Vec<f32>,
    /// `[2D]` (the `[2D, 1]` weight), and the output bias.
    pub mlp_w2: Vec<f32>,
    pub mlp_b2: f32,
}

fn invalid(msg: impl Into<String>) -> NeuralError {
    NeuralError::Invalid(format!(
        "the entity model is not in the layout the native engine reads: {}",
        msg.into()
    ))
}

fn floats(t: &TensorProto) -> Result<Vec<f32>> {
    float_values(t).map_err(invalid)
}

/// An inline float32 initializer's values: as many as its dims say, all
/// finite; else why not.
pub(crate) fn float_values(t: &TensorProto) -> std::result::Result<Vec<f32>, String> {
    if t.data_type != DataType::Float as i32 {
        return Err(format!("initializer `{}` is not float32", t.name));
    }
    if !t.external_data.is_empty() {
        return Err(format!(
            "initializer `{}` is stored outside the file",
            t.name
        ));
    }
    let want: usize = t
        .dims
        .iter()
        .map(|&d| usize::try_from(d).unwrap_or(usize::MAX))
        .try_fold(1usize, |a, d| a.checked_mul(d))
        .ok_or_else(|| format!("initializer `{}` has bad dims", t.name))?;
    let values = if t.raw_data.is_empty() {
        t.float_data.clone()
    } else {
        crate::f32le::decode_f32s(&t.raw_data).map_err(|e| e.to_string())?
    };
    if values.len() != want {
        return Err(format!(
            "initializer `{}` holds {} values for dims {:?}",
            t.name,
            values.len(),
            t.dims
        ));
    }
    if values.iter().any(|v| !v.is_finite()) {
        return Err(format!("initializer `{}` holds NaN or infinity", t.name));
    }
    Ok(values)
}

/// An ONNX file's model proto and its graph.
pub(crate) fn read_proto(onnx: &[u8]) -> Result<ModelProto> {
    let proto: ModelProto = tract_onnx::onnx()
        .proto_model_for_read(&mut Cursor::new(onnx))
        .map_err(|e| NeuralError::Load(format!("{e:#}")))?;
    if proto.graph.is_none() {
        return Err(NeuralError::Invalid("the ONNX file has no graph".into()));
    }
    Ok(proto)
}

struct Initializers<'a>(HashMap<&'a str, &'a TensorProto>);

impl Initializers<'_> {
    fn get(&self, name: &str, dims: &[i64]) -> Result<Vec<f32>> {
        let t = self
            .0
            .get(name)
            .ok_or_else(|| invalid(format!("no initializer `{name}`")))?;
        if t.dims != dims {
            return Err(invalid(format!(
                "`{name}` has dims {:?}, expected {dims:?}",
                t.dims
            )));
        }
        floats(t)
    }
}

impl Weights {
    /// Reads the weights of an exported entity model of `dim`-wide states.
    pub fn from_onnx(onnx: &[u8], dim: usize) -> Result<Weights> {
        let proto = read_proto(onnx)?;
        let graph = proto
            .graph
            .as_ref()
            .ok_or_else(|| invalid("the file has no graph"))?;
        let inits = Initializers(
            graph
                .initializer
                .iter()
                .map(|t| (t.name.as_str(), t))
                .collect(),
        );
        // Matrix weights: the initializer operand of each MatMul, in node order.
        let matrices: Vec<&str> = graph
            .node
            .iter()
            .filter(|n| n.op_type == "MatMul")
            .filter_map(|n| n.input.iter().find(|i| inits.0.contains_key(i.as_str())))
            .map(String::as_str)
            .collect();
        if matrices.len() < 2 || !(matrices.len() - 2).is_multiple_of(3) {
            return Err(invalid(format!(
                "{} weight matrices, expected 3 per layer plus 2",
                matrices.len()
            )));
        }
        let layer_count = (matrices.len() - 2) / 3;
        let (d, d2) = (dim as i64, 2 * dim as i64);
        let mut layers = Vec::with_capacity(layer_count);
        for i in 0..layer_count {
            let p = format!("m.layers.{i}");
            layers.push(Layer {
                rel_w1: inits.get(matrices[3 * i], &[d, d])?,
                rel_b1: inits.get(&format!("{p}.relation_projection.0.bias"), &[d])?,
                rel_w2: inits.get(matrices[3 * i + 1], &[d, d])?,
                rel_b2: inits.get(&format!("{p}.relation_projection.2.bias"), &[d])?,
                lin_w: inits.get(matrices[3 * i + 2], &[d2, d])?,
                lin_b: inits.get(&format!("{p}.linear.bias"), &[d])?,
                ln_w: inits.get(&format!("{p}.layer_norm.weight"), &[d])?,
                ln_b: inits.get(&format!("{p}.layer_norm.bias"), &[d])?,
            });
        }
        let last = 3 * layer_count;
        let mlp_b2 = inits.get("m.mlp.2.bias", &[1])?;
        Ok(Weights {
            dim,
            layers,
            mlp_w1: inits.get(matrices[last], &[d2, d2])?,
            mlp_b1: inits.get("m.mlp.0.bias", &[d2])?,
            mlp_w2: inits.get(matrices[last + 1], &[d2, 1])?,
            mlp_b2: mlp_b2.first().copied().unwrap_or(0.0),
        })
    }
}
