//! What an ONNX engine is: one trait over the engines ([`Engine`]: run a
//! graph on named `f32`/`i64` tensors and get its first output back as
//! `f32`), its tensor arguments ([`Arg`]), and the choices an engine is
//! loaded with ([`EngineKind`], [`Device`], [`Threads`]). The engines and
//! their loader ([`crate::engine`]) import it; it imports neither.

use std::str::FromStr;

use crate::{NeuralError, Result};

/// A tensor argument: shape and row-major data.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    F32(&'a [usize], &'a [f32]),
    I64(&'a [usize], &'a [i64]),
}

impl Arg<'_> {
    pub(crate) fn check(&self, name: &str) -> Result<()> {
        let (shape, len) = match self {
            Arg::F32(s, d) => (*s, d.len()),
            Arg::I64(s, d) => (*s, d.len()),
        };
        if shape.iter().product::<usize>() != len {
            return Err(NeuralError::Run(format!(
                "input `{name}`: shape {shape:?} does not match {len} values"
            )));
        }
        Ok(())
    }
}

/// A loaded ONNX graph, ready to run from any thread.
pub trait Engine: Send + Sync {
    /// `tract` or `ort`.
    fn name(&self) -> &'static str;
    /// The device it runs on (`cpu`, `cuda`).
    fn device(&self) -> &'static str;
    /// The graph's input names, in position order.
    fn inputs(&self) -> &[String];
    /// Runs the graph; returns the first output's shape and values.
    fn run(&self, inputs: &[(&str, Arg<'_>)]) -> Result<(Vec<usize>, Vec<f32>)>;
}

/// Which engine runs the models.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// The fastest available: the entity model on the native engine
    /// ([`crate::native`], CPU) or, with `device` cuda (or auto on a binary
    /// built with `cuda` and a GPU present), on ONNX Runtime's CUDA provider;
    /// other models on ONNX Runtime when built with `ort` (and its library
    /// loads), else tract.
    #[default]
    Native,
    /// tract: pure Rust, always built.
    Tract,
    /// ONNX Runtime, loaded from `ORT_DYLIB_PATH` (cargo feature `ort`).
    Ort,
}

impl FromStr for EngineKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "native" => Ok(EngineKind::Native),
            "tract" => Ok(EngineKind::Tract),
            "ort" => Ok(EngineKind::Ort),
            _ => Err(format!(
                "unknown engine {s:?} (expected native, tract or ort)"
            )),
        }
    }
}

impl std::fmt::Display for EngineKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EngineKind::Native => "native",
            EngineKind::Tract => "tract",
            EngineKind::Ort => "ort",
        })
    }
}

/// Where the `ort` engine runs; tract always runs on the CPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    /// CUDA when built with it and a GPU answers, else the CPU.
    #[default]
    Auto,
    Cpu,
    /// CUDA or an error.
    Cuda,
}

impl FromStr for Device {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Device::Auto),
            "cpu" => Ok(Device::Cpu),
            "cuda" => Ok(Device::Cuda),
            _ => Err(format!("unknown device {s:?} (expected auto, cpu or cuda)")),
        }
    }
}

/// Intra-op threads for ONNX Runtime: 1 for graphs that scatter (its
/// multi-threaded ScatterND with `reduction="add"` races on repeated
/// indices), else its default (every core).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    One,
    All,
}
