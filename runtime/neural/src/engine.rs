//! One trait over the ONNX engines: run a graph on named `f32`/`i64` tensors
//! and get its first output back as `f32`.

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
    /// tract: pure Rust, always built.
    #[default]
    Tract,
    /// ONNX Runtime, loaded from `ORT_DYLIB_PATH` (cargo feature `ort`).
    Ort,
}

impl FromStr for EngineKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "tract" => Ok(EngineKind::Tract),
            "ort" => Ok(EngineKind::Ort),
            _ => Err(format!("unknown engine {s:?} (expected tract or ort)")),
        }
    }
}

impl std::fmt::Display for EngineKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
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

/// Loads `onnx` into the chosen engine.
pub fn load(kind: EngineKind, device: Device, onnx: &[u8]) -> Result<Box<dyn Engine>> {
    match kind {
        EngineKind::Tract => {
            if device == Device::Cuda {
                return Err(NeuralError::Load(
                    "tract runs on the CPU only; use the ort engine for CUDA".into(),
                ));
            }
            Ok(Box::new(crate::engine::tract::TractEngine::from_bytes(
                onnx,
            )?))
        }
        #[cfg(feature = "ort")]
        EngineKind::Ort => Ok(Box::new(crate::engine::ort::OrtEngine::from_bytes(
            onnx, device,
        )?)),
        #[cfg(not(feature = "ort"))]
        EngineKind::Ort => {
            let _ = device;
            Err(NeuralError::EngineMissing("ort"))
        }
    }
}

/// Loads a token model (every input int64 `[batch, sequence]`, such as a
/// BERT-style sentence encoder) into the chosen engine. tract builds one
/// plan per sequence length (see [`tract::TractEngine::for_tokens`]), the
/// first for `first_length` now; ONNX Runtime takes any length.
pub fn load_tokens(
    kind: EngineKind,
    device: Device,
    onnx: &[u8],
    first_length: usize,
) -> Result<Box<dyn Engine>> {
    match kind {
        EngineKind::Tract => {
            if device == Device::Cuda {
                return Err(NeuralError::Load(
                    "tract runs on the CPU only; use the ort engine for CUDA".into(),
                ));
            }
            Ok(Box::new(crate::engine::tract::TractEngine::for_tokens(
                onnx,
                first_length,
            )?))
        }
        EngineKind::Ort => load(kind, device, onnx),
    }
}

#[cfg(feature = "ort")]
pub mod ort;
pub mod tract;
