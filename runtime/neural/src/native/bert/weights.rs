//! A BERT-style sentence encoder's weights (all-MiniLM-L6-v2 and its kin),
//! read from its ONNX file, the one tract and ort run.
//!
//! Biases and LayerNorm parameters are initializers named after the
//! PyTorch parameters (`{prefix}encoder.layer.{i}.attention.self.query.bias`,
//! ...). Matrix weights have anonymous names; each is the constant operand
//! of a `MatMul` whose output the `Add` of a named bias takes, which says
//! what it is. A weight may be stored as int8 with a scale per output
//! column or per row (`Cast(w_q)`, then `Mul` by `w_scale`): it is
//! dequantized here as that `Mul` would. The head size is the positive
//! constant of the query's `Reshape`. Anything else is refused with the
//! reason, so the caller can fall back to an ONNX engine.

use std::collections::HashMap;

use tract_onnx::pb::{tensor_proto::DataType, NodeProto, TensorProto};

use super::gemm::{Matrix, Packed};
use crate::{NeuralError, Result};

/// One transformer layer; matrices are `[in, out]`, packed ([`Matrix`]).
#[derive(Debug, Clone)]
pub struct Layer {
    /// Query, key and value side by side: `[H, 3H]`, `[3H]`.
    pub qkv_w: Matrix,
    pub qkv_b: Vec<f32>,
    /// `[H, H]`, `[H]`.
    pub out_w: Matrix,
    pub out_b: Vec<f32>,
    pub ln1_w: Vec<f32>,
    pub ln1_b: Vec<f32>,
    /// `[H, I]`, `[I]`.
    pub up_w: Matrix,
    pub up_b: Vec<f32>,
    /// `[I, H]`, `[H]`.
    pub down_w: Matrix,
    pub down_b: Vec<f32>,
    pub ln2_w: Vec<f32>,
    pub ln2_b: Vec<f32>,
}

/// The word embeddings, kept as stored (int8 rows are dequantized when
/// looked up: a question reads a dozen of 30,000).
#[derive(Debug, Clone)]
pub enum WordTable {
    F32(Vec<f32>),
    /// Values and one scale per row.
    I8(Vec<i8>, Vec<f32>),
}

#[derive(Debug, Clone)]
pub struct BertWeights {
    /// The graph's inputs (not initializers), in order.
    pub inputs: Vec<String>,
    pub hidden: usize,
    pub heads: usize,
    pub inter: usize,
    pub vocab: usize,
    pub eps: f32,
    pub words: WordTable,
    /// `[positions, H]`, `[types, H]`.
    pub positions: Vec<f32>,
    pub types: Vec<f32>,
    pub emb_ln_w: Vec<f32>,
    pub emb_ln_b: Vec<f32>,
    pub layers: Vec<Layer>,
}

impl BertWeights {
    /// Row `id` of the word embeddings, into `out` (`H` values).
    pub fn word(&self, id: usize, out: &mut [f32]) {
        let h = self.hidden;
        match &self.words {
            WordTable::F32(v) => out.copy_from_slice(&v[id * h..(id + 1) * h]),
            WordTable::I8(q, scale) => {
                let s = scale[id];
                for (o, &x) in out.iter_mut().zip(&q[id * h..(id + 1) * h]) {
                    *o = f32::from(x) * s;
                }
            }
        }
    }
}

fn invalid(msg: impl Into<String>) -> NeuralError {
    NeuralError::Invalid(format!(
        "the encoder is not in the layout the native engine reads: {}",
        msg.into()
    ))
}

/// A tensor's element count from its dims.
fn count(t: &TensorProto) -> Result<usize> {
    t.dims
        .iter()
        .map(|&d| usize::try_from(d).ok())
        .try_fold(1usize, |a, d| d.and_then(|d| a.checked_mul(d)))
        .ok_or_else(|| invalid(format!("initializer `{}` has bad dims", t.name)))
}

fn floats(t: &TensorProto) -> Result<Vec<f32>> {
    crate::native::weights::float_values(t).map_err(invalid)
}

fn int8s(t: &TensorProto) -> Result<Vec<i8>> {
    if t.data_type != DataType::Int8 as i32 || !t.external_data.is_empty() {
        return Err(invalid(format!(
            "initializer `{}` is not inline int8",
            t.name
        )));
    }
    let values: Vec<i8> = if t.raw_data.is_empty() {
        t.int32_data.iter().map(|&v| v as i8).collect()
    } else {
        t.raw_data.iter().map(|&b| b as i8).collect()
    };
    if values.len() != count(t)? {
        return Err(invalid(format!(
            "initializer `{}` does not hold its dims' values",
            t.name
        )));
    }
    Ok(values)
}

fn int64s(t: &TensorProto) -> Option<Vec<i64>> {
    if t.data_type != DataType::Int64 as i32 {
        return None;
    }
    if t.raw_data.is_empty() {
        return Some(t.int64_data.clone());
    }
    Some(
        t.raw_data
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect(),
    )
}

/// The graph's constants: initializers, and the int8 weights a
/// `Cast` + `Mul` dequantizes.
struct Consts<'a> {
    inits: HashMap<&'a str, &'a TensorProto>,
    /// Output of the `Mul` → (the int8 initializer, the scale initializer).
    dequantized: HashMap<&'a str, (&'a TensorProto, &'a TensorProto)>,
}

impl<'a> Consts<'a> {
    fn new(inits: &'a [TensorProto], nodes: &'a [NodeProto]) -> Consts<'a> {
        let inits: HashMap<&str, &TensorProto> =
            inits.iter().map(|t| (t.name.as_str(), t)).collect();
        // `Cast(q) -> f`, then `Mul(f, scale) -> w`.
        let cast_of: HashMap<&str, &str> = nodes
            .iter()
            .filter(|n| n.op_type == "Cast" && n.input.len() == 1 && n.output.len() == 1)
            .filter(|n| inits.contains_key(n.input[0].as_str()))
            .map(|n| (n.output[0].as_str(), n.input[0].as_str()))
            .collect();
        let mut dequantized = HashMap::new();
        for n in nodes
            .iter()
            .filter(|n| n.op_type == "Mul" && n.input.len() == 2)
        {
            let (a, b) = (n.input[0].as_str(), n.input[1].as_str());
            let found = match (cast_of.get(a), cast_of.get(b)) {
                (Some(q), None) => Some((*q, b)),
                (None, Some(q)) => Some((*q, a)),
                _ => None,
            };
            if let Some((q, scale)) = found {
                if let (Some(q), Some(scale), Some(out)) =
                    (inits.get(q), inits.get(scale), n.output.first())
                {
                    dequantized.insert(out.as_str(), (*q, *scale));
                }
            }
        }
        Consts { inits, dequantized }
    }

    fn is_const(&self, name: &str) -> bool {
        self.inits.contains_key(name) || self.dequantized.contains_key(name)
    }

    /// The dims of a constant.
    fn dims(&self, name: &str) -> Option<&[i64]> {
        match (self.inits.get(name), self.dequantized.get(name)) {
            (Some(t), _) => Some(&t.dims),
            (None, Some((q, _))) => Some(&q.dims),
            _ => None,
        }
    }

    /// A float constant of `dims`, dequantized if stored as int8.
    fn get(&self, name: &str, dims: &[usize]) -> Result<Vec<f32>> {
        let want: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
        if self.dims(name) != Some(want.as_slice()) {
            return Err(invalid(format!(
                "`{name}` has dims {:?}, expected {dims:?}",
                self.dims(name)
            )));
        }
        if let Some(t) = self.inits.get(name) {
            return floats(t);
        }
        let Some((q, scale)) = self.dequantized.get(name) else {
            return Err(invalid(format!("no constant `{name}`")));
        };
        let (values, scales) = (int8s(q)?, floats(scale)?);
        let (rows, cols) = match dims {
            [r, c] => (*r, *c),
            [n] => (1, *n),
            _ => return Err(invalid(format!("`{name}` is not a matrix"))),
        };
        // The scale broadcasts as the `Mul` does: per column, per row, or one.
        let at: Box<dyn Fn(usize, usize) -> f32> = match scale.dims.as_slice() {
            [1, c] if *c as usize == cols => Box::new(|_, j| scales[j]),
            [r, 1] if *r as usize == rows => Box::new(|i, _| scales[i]),
            [] | [1] | [1, 1] if scales.len() == 1 => Box::new(|_, _| scales[0]),
            other => return Err(invalid(format!("`{name}`: a scale of dims {other:?}"))),
        };
        Ok(values
            .iter()
            .enumerate()
            .map(|(k, &v)| f32::from(v) * at(k / cols, k % cols))
            .collect())
    }

    /// A `rows × cols` weight as stored: int8 with a scale per column
    /// stays int8.
    fn raw(&self, name: &str, rows: usize, cols: usize) -> Result<Raw> {
        if let Some((q, scale)) = self.dequantized.get(name) {
            if q.dims == [rows as i64, cols as i64] && scale.dims == [1, cols as i64] {
                return Ok(Raw::I8(int8s(q)?, floats(scale)?));
            }
        }
        Ok(Raw::F32(self.get(name, &[rows, cols])?))
    }
}

/// A weight matrix as read, before packing.
enum Raw {
    F32(Vec<f32>),
    /// Values and a scale per column.
    I8(Vec<i8>, Vec<f32>),
}

impl Raw {
    fn floats(self, cols: usize) -> Vec<f32> {
        match self {
            Raw::F32(v) => v,
            Raw::I8(q, scale) => q
                .iter()
                .enumerate()
                .map(|(i, &v)| f32::from(v) * scale[i % cols])
                .collect(),
        }
    }

    fn pack(self, rows: usize, cols: usize) -> Matrix {
        match self {
            Raw::F32(v) => Matrix::F32(Packed::new(&v, rows, cols, None)),
            Raw::I8(q, scale) => Matrix::I8(Packed::new(&q, rows, cols, Some(scale))),
        }
    }

    /// Matrices of `rows` rows side by side (int8 when all are).
    fn side_by_side(parts: Vec<(Raw, usize)>, rows: usize) -> Matrix {
        let total: usize = parts.iter().map(|(_, c)| c).sum();
        if parts.iter().all(|(r, _)| matches!(r, Raw::I8(..))) {
            let mut q = vec![0i8; rows * total];
            let mut scale = Vec::with_capacity(total);
            let mut at = 0;
            for (raw, cols) in parts {
                if let Raw::I8(v, s) = raw {
                    for r in 0..rows {
                        q[r * total + at..r * total + at + cols]
                            .copy_from_slice(&v[r * cols..(r + 1) * cols]);
                    }
                    scale.extend(s);
                }
                at += cols;
            }
            return Matrix::I8(Packed::new(&q, rows, total, Some(scale)));
        }
        let mut w = vec![0f32; rows * total];
        let mut at = 0;
        for (raw, cols) in parts {
            let v = raw.floats(cols);
            for r in 0..rows {
                w[r * total + at..r * total + at + cols]
                    .copy_from_slice(&v[r * cols..(r + 1) * cols]);
            }
            at += cols;
        }
        Matrix::F32(Packed::new(&w, rows, total, None))
    }
}

/// What a bias says its matrix is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Part {
    Query,
    Key,
    Value,
    AttnOut,
    Up,
    Down,
}

/// `(layer, part)` of a bias name, and the prefix before `encoder.layer.`.
fn bias_part(name: &str) -> Option<(usize, Part, &str)> {
    let at = name.find("encoder.layer.")?;
    let (prefix, rest) = name.split_at(at);
    let rest = rest.strip_prefix("encoder.layer.")?;
    let (index, what) = rest.split_once('.')?;
    let part = match what {
        "attention.self.query.bias" => Part::Query,
        "attention.self.key.bias" => Part::Key,
        "attention.self.value.bias" => Part::Value,
        "attention.output.dense.bias" => Part::AttnOut,
        "intermediate.dense.bias" => Part::Up,
        "output.dense.bias" => Part::Down,
        _ => return None,
    };
    Some((index.parse().ok()?, part, prefix))
}

impl BertWeights {
    pub fn from_onnx(onnx: &[u8]) -> Result<BertWeights> {
        let proto = crate::native::weights::read_proto(onnx)?;
        let graph = proto
            .graph
            .as_ref()
            .ok_or_else(|| invalid("the file has no graph"))?;
        let c = Consts::new(&graph.initializer, &graph.node);
        // Each weight matrix by the bias added to its product.
        let add_of: HashMap<&str, &NodeProto> = graph
            .node
            .iter()
            .filter(|n| n.op_type == "Add" && n.input.len() == 2)
            .map(|n| (n.input[0].as_str(), n))
            .collect();
        let mut matrices: HashMap<(usize, Part), (&str, &str)> = HashMap::new();
        let mut prefix = None;
        let mut query_out = None;
        for n in graph
            .node
            .iter()
            .filter(|n| n.op_type == "MatMul" && n.input.len() == 2)
        {
            let (Some(w), Some(out)) = (n.input.get(1), n.output.first()) else {
                continue;
            };
            if !c.is_const(w) {
                continue;
            }
            let Some(add) = add_of.get(out.as_str()) else {
                continue;
            };
            let Some((layer, part, p)) = bias_part(&add.input[1]) else {
                continue;
            };
            prefix.get_or_insert(p);
            if layer == 0 && part == Part::Query {
                query_out = add.output.first().map(String::as_str);
            }
            matrices.insert((layer, part), (w.as_str(), add.input[1].as_str()));
        }
        let prefix = prefix.ok_or_else(|| invalid("no `encoder.layer.{i}` weights"))?;
        let layer_count = (0..)
            .take_while(|i| matrices.contains_key(&(*i, Part::Query)))
            .count();
        if layer_count == 0 || matrices.len() != 6 * layer_count {
            return Err(invalid(format!(
                "{} weight matrices, not 6 per layer for {layer_count} layers",
                matrices.len()
            )));
        }
        let dims = |part: Part| -> Result<(usize, usize)> {
            let (w, _) = matrices[&(0, part)];
            match c.dims(w) {
                Some([a, b]) if *a > 0 && *b > 0 => Ok((*a as usize, *b as usize)),
                other => Err(invalid(format!("weight `{w}` has dims {other:?}"))),
            }
        };
        let (hidden, _) = dims(Part::Query)?;
        let (_, inter) = dims(Part::Up)?;
        let head = head_size(graph, &c, query_out, hidden)?;
        let eps = graph
            .node
            .iter()
            .find(|n| n.op_type == "LayerNormalization")
            .and_then(|n| n.attribute.iter().find(|a| a.name == "epsilon"))
            .map_or(1e-12, |a| a.f);
        let e = |s: &str| format!("{prefix}embeddings.{s}");
        let word_name = e("word_embeddings.weight");
        let vocab = match c.dims(&word_name) {
            Some([v, h]) if *h as usize == hidden && *v > 0 => *v as usize,
            other => return Err(invalid(format!("`{word_name}` has dims {other:?}"))),
        };
        let words = match c.dequantized.get(word_name.as_str()) {
            Some((q, scale)) if scale.dims.as_slice() == [vocab as i64, 1] => {
                WordTable::I8(int8s(q)?, floats(scale)?)
            }
            _ => WordTable::F32(c.get(&word_name, &[vocab, hidden])?),
        };
        let table = |name: &str| -> Result<Vec<f32>> {
            let n = e(name);
            match c.dims(&n) {
                Some([rows, h]) if *h as usize == hidden && *rows > 0 => {
                    c.get(&n, &[*rows as usize, hidden])
                }
                other => Err(invalid(format!("`{n}` has dims {other:?}"))),
            }
        };
        let positions = table("position_embeddings.weight")?;
        let types = table("token_type_embeddings.weight")?;
        let mut layers = Vec::with_capacity(layer_count);
        for i in 0..layer_count {
            let m = |part: Part, rows: usize, cols: usize| -> Result<(Raw, Vec<f32>)> {
                let (w, b) = matrices[&(i, part)];
                Ok((c.raw(w, rows, cols)?, c.get(b, &[cols])?))
            };
            let (q_w, q_b) = m(Part::Query, hidden, hidden)?;
            let (k_w, k_b) = m(Part::Key, hidden, hidden)?;
            let (v_w, v_b) = m(Part::Value, hidden, hidden)?;
            let (out_w, out_b) = m(Part::AttnOut, hidden, hidden)?;
            let (up_w, up_b) = m(Part::Up, hidden, inter)?;
            let (down_w, down_b) = m(Part::Down, inter, hidden)?;
            let qkv_w =
                Raw::side_by_side(vec![(q_w, hidden), (k_w, hidden), (v_w, hidden)], hidden);
            let ln = |s: &str| c.get(&format!("{prefix}encoder.layer.{i}.{s}"), &[hidden]);
            layers.push(Layer {
                qkv_w,
                qkv_b: [q_b, k_b, v_b].concat(),
                out_w: out_w.pack(hidden, hidden),
                out_b,
                ln1_w: ln("attention.output.LayerNorm.weight")?,
                ln1_b: ln("attention.output.LayerNorm.bias")?,
                up_w: up_w.pack(hidden, inter),
                up_b,
                down_w: down_w.pack(inter, hidden),
                down_b,
                ln2_w: ln("output.LayerNorm.weight")?,
                ln2_b: ln("output.LayerNorm.bias")?,
            });
        }
        let inputs = graph
            .input
            .iter()
            .map(|i| i.name.clone())
            .filter(|n| !c.inits.contains_key(n.as_str()))
            .collect();
        Ok(BertWeights {
            inputs,
            hidden,
            heads: hidden / head,
            inter,
            vocab,
            eps,
            words,
            positions,
            types,
            emb_ln_w: c.get(&e("LayerNorm.weight"), &[hidden])?,
            emb_ln_b: c.get(&e("LayerNorm.bias"), &[hidden])?,
            layers,
        })
    }
}

/// The head size: the positive constant in the shape the first query is
/// reshaped to (`[batch, seq, -1, head]` or `[batch, seq, heads, head]`).
fn head_size(
    graph: &tract_onnx::pb::GraphProto,
    c: &Consts<'_>,
    query_out: Option<&str>,
    hidden: usize,
) -> Result<usize> {
    let query_out = query_out.ok_or_else(|| invalid("no first query projection"))?;
    let reshape = graph
        .node
        .iter()
        .find(|n| n.op_type == "Reshape" && n.input.first().map(String::as_str) == Some(query_out))
        .ok_or_else(|| invalid("the query is not reshaped into heads"))?;
    let shape_name = reshape.input.get(1).map(String::as_str).unwrap_or("");
    // The shape: a constant, or a Concat of pieces, some constant.
    let pieces: Vec<i64> = match c.inits.get(shape_name).and_then(|t| int64s(t)) {
        Some(v) => v,
        None => graph
            .node
            .iter()
            .find(|n| {
                n.op_type == "Concat" && n.output.first().map(String::as_str) == Some(shape_name)
            })
            .map(|n| {
                n.input
                    .iter()
                    .filter_map(|i| c.inits.get(i.as_str()).and_then(|t| int64s(t)))
                    .flatten()
                    .collect()
            })
            .unwrap_or_default(),
    };
    let head = pieces
        .iter()
        .rev()
        .filter_map(|&v| usize::try_from(v).ok())
        .find(|&v| v > 0 && v < hidden && hidden.is_multiple_of(v))
        .ok_or_else(|| invalid(format!("no head size in the query's shape {pieces:?}")))?;
    Ok(head)
}
