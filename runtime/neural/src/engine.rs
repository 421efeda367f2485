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

/// Whether the entity model runs on the native engine for this choice: the
/// native kind, unless CUDA is asked for, or `auto` finds it.
pub fn native_runs(kind: EngineKind, device: Device) -> bool {
    kind == EngineKind::Native
        && match device {
            Device::Cpu => true,
            Device::Cuda => false,
            Device::Auto => !cuda_available(),
        }
}

/// Whether this binary has ONNX Runtime's CUDA provider and a GPU answers
/// (false when built without the `cuda` feature).
pub fn cuda_available() -> bool {
    #[cfg(feature = "ort")]
    {
        crate::engine::ort::cuda_available()
    }
    #[cfg(not(feature = "ort"))]
    {
        false
    }
}

/// Why CUDA is not used under `device = auto`, or `None` when it is
/// available: for the log line of a CPU fallback.
pub fn cuda_unavailable_reason() -> Option<String> {
    if !cfg!(feature = "cuda") {
        return Some("this build has no `cuda` feature".into());
    }
    #[cfg(feature = "ort")]
    {
        if let Err(e) = crate::engine::ort::environment() {
            return Some(e.to_string());
        }
    }
    if cuda_available() {
        None
    } else {
        Some("ONNX Runtime's CUDA execution provider is not available (no GPU, or the library lacks it)".into())
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

/// Loads `onnx` into the chosen engine.
pub fn load(kind: EngineKind, device: Device, onnx: &[u8]) -> Result<Box<dyn Engine>> {
    load_with(kind, device, onnx, Threads::One)
}

/// [`load`], with ONNX Runtime's intra-op threads for a graph without scatters.
pub fn load_with(
    kind: EngineKind,
    device: Device,
    onnx: &[u8],
    threads: Threads,
) -> Result<Box<dyn Engine>> {
    match kind {
        EngineKind::Native => load_fastest(device, onnx, threads),
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
            onnx, device, threads,
        )?)),
        #[cfg(not(feature = "ort"))]
        EngineKind::Ort => {
            let _ = (device, threads);
            Err(NeuralError::EngineMissing("ort"))
        }
    }
}

/// ONNX Runtime for a generic graph under [`EngineKind::Native`]: the
/// engine when built with it and its library loads, `None` to fall back to
/// tract (CPU), an error when CUDA was asked for and cannot be had.
fn try_ort(device: Device, onnx: &[u8], threads: Threads) -> Result<Option<Box<dyn Engine>>> {
    #[cfg(feature = "ort")]
    {
        match crate::engine::ort::OrtEngine::from_bytes(onnx, device, threads) {
            Ok(e) => return Ok(Some(Box::new(e))),
            Err(e) if device == Device::Cuda => return Err(e),
            Err(_) => {}
        }
    }
    #[cfg(not(feature = "ort"))]
    let _ = (onnx, threads);
    if device == Device::Cuda {
        return Err(NeuralError::Load(
            "device = cuda needs ONNX Runtime with CUDA (build with `--features cuda`)".into(),
        ));
    }
    Ok(None)
}

fn load_fastest(device: Device, onnx: &[u8], threads: Threads) -> Result<Box<dyn Engine>> {
    match try_ort(device, onnx, threads)? {
        Some(e) => Ok(e),
        None => Ok(Box::new(crate::engine::tract::TractEngine::from_bytes(
            onnx,
        )?)),
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
        EngineKind::Native => match try_ort(device, onnx, Threads::All)? {
            Some(e) => Ok(e),
            None => load_tokens(EngineKind::Tract, Device::Cpu, onnx, first_length),
        },
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
        EngineKind::Ort => load_with(kind, device, onnx, Threads::All),
    }
}

#[cfg(feature = "ort")]
pub mod ort;
pub mod tract;
