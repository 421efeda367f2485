//! The ONNX engines: which one runs a graph ([`EngineKind`], [`Device`]),
//! loading a graph into it, and whether CUDA is at hand. What an engine is
//! ([`Engine`], one trait over them) is in [`api`], which the engines
//! themselves import.

use crate::{NeuralError, Result};

pub use self::api::{Arg, Device, Engine, EngineKind, Threads};

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
        // The native BERT encoder on the CPU; ONNX Runtime for CUDA, and for
        // a model of another layout (else tract).
        EngineKind::Native if device != Device::Cuda => {
            match crate::native::bert::BertEngine::from_onnx(onnx) {
                Ok(e) => Ok(Box::new(e)),
                // The caller sees which engine it got (`Engine::name`).
                Err(NeuralError::Invalid(_)) => match try_ort(device, onnx, Threads::All)? {
                    Some(e) => Ok(e),
                    None => load_tokens(EngineKind::Tract, Device::Cpu, onnx, first_length),
                },
                Err(e) => Err(e),
            }
        }
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

pub mod api;
#[cfg(feature = "ort")]
pub mod ort;
pub mod tract;
