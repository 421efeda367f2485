//! The ONNX Runtime engine (cargo feature `ort`). The library is loaded at
//! run time from `ORT_DYLIB_PATH` (for example the `libonnxruntime.so` of the
//! `onnxruntime` Python wheel); nothing is downloaded. With
//! `Device::Cuda`/`Auto`, the CUDA execution provider is used when the
//! loaded library has it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use ort::environment::Environment;
#[cfg(feature = "cuda")]
use ort::ep::{self, ExecutionProvider};
use ort::session::{Session, SessionInputValue};
use ort::value::Tensor;

use super::api::{Arg, Device, Engine, Threads};
use crate::{NeuralError, Result};

/// The environment variable naming the ONNX Runtime library.
pub const DYLIB_VAR: &str = "ORT_DYLIB_PATH";

static ENVIRONMENT: OnceLock<std::result::Result<Environment, String>> = OnceLock::new();

pub(crate) fn environment() -> Result<&'static Environment> {
    ENVIRONMENT
        .get_or_init(|| {
            let path = std::env::var_os(DYLIB_VAR).ok_or_else(|| {
                format!("{DYLIB_VAR} is not set: point it at libonnxruntime.so (the onnxruntime wheel ships one)")
            })?;
            ort::init_from(&path)
                .map_err(|e| format!("cannot load {}: {e}", std::path::Path::new(&path).display()))?
                .with_name("kgbox")
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| NeuralError::Load(e.clone()))
}

fn load_err(e: impl std::fmt::Display) -> NeuralError {
    NeuralError::Load(e.to_string())
}

fn run_err(e: impl std::fmt::Display) -> NeuralError {
    NeuralError::Run(e.to_string())
}

/// Most sessions of one single-threaded graph.
const MAX_SESSIONS: usize = 8;

pub struct OrtEngine {
    /// `Session::run` needs exclusive access. A graph that must run on one
    /// intra-op thread gets one session per core, so that concurrent
    /// requests still use every core; others get one session.
    sessions: Vec<Mutex<Session>>,
    /// Which session a caller that finds none free waits for.
    next: AtomicUsize,
    device: &'static str,
    /// Model input names, in position order.
    inputs: Vec<String>,
}

/// Whether the loaded ONNX Runtime has the CUDA execution provider.
/// Always false when built without the `cuda` feature.
pub fn cuda_available() -> bool {
    #[cfg(feature = "cuda")]
    {
        environment().is_ok() && ep::CUDA::is_available().unwrap_or(false)
    }
    #[cfg(not(feature = "cuda"))]
    {
        false
    }
}

impl OrtEngine {
    pub fn from_bytes(onnx: &[u8], device: Device, threads: Threads) -> Result<OrtEngine> {
        let env = environment()?;
        let use_cuda = match device {
            Device::Cpu => false,
            Device::Auto => cuda_available(),
            Device::Cuda => {
                if !cuda_available() {
                    return Err(NeuralError::Load(format!(
                        "device = cuda, but the ONNX Runtime library in {DYLIB_VAR} has no CUDA execution provider"
                    )));
                }
                true
            }
        };
        // One intra-op thread for graphs that scatter: ONNX Runtime's
        // multi-threaded CPU ScatterND with reduction="add" races on repeated
        // indices (wrong sums), and every message-passing layer scatters into
        // repeated destinations.
        let count = if threads == Threads::One && !use_cuda {
            std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_SESSIONS))
        } else {
            1
        };
        let mut sessions = Vec::with_capacity(count);
        for _ in 0..count {
            #[allow(unused_mut)]
            let mut builder = Session::builder(env).map_err(load_err)?;
            if threads == Threads::One {
                builder = builder.with_intra_threads(1).map_err(load_err)?;
            } else {
                // Intra-op threads spin while a run lasts (much faster than
                // without) and stop when it returns: spinning on, they held
                // the cores that the graph walk and the entity model need
                // right after the encoder (3-hop execution 10.6 ms instead
                // of 7.3 on 2 cores).
                builder = builder
                    .with_config_entry("session.force_spinning_stop", "1")
                    .map_err(load_err)?;
            }
            #[cfg(feature = "cuda")]
            if use_cuda {
                builder = builder
                    .with_execution_providers([ep::CUDA::default().build().error_on_failure()])
                    .map_err(load_err)?;
            }
            sessions.push(Mutex::new(
                builder.commit_from_memory(onnx).map_err(load_err)?,
            ));
        }
        let inputs = match sessions.first().map(Mutex::lock) {
            Some(Ok(s)) => s.inputs().iter().map(|i| i.name().to_string()).collect(),
            _ => return Err(NeuralError::Load("no ONNX Runtime session".into())),
        };
        Ok(OrtEngine {
            sessions,
            next: AtomicUsize::new(0),
            device: if use_cuda { "cuda" } else { "cpu" },
            inputs,
        })
    }
}

impl Engine for OrtEngine {
    fn name(&self) -> &'static str {
        "ort"
    }

    fn device(&self) -> &'static str {
        self.device
    }

    fn inputs(&self) -> &[String] {
        &self.inputs
    }

    fn run(&self, inputs: &[(&str, Arg<'_>)]) -> Result<(Vec<usize>, Vec<f32>)> {
        let mut values: Vec<(String, SessionInputValue<'static>)> =
            Vec::with_capacity(inputs.len());
        for (name, arg) in inputs {
            arg.check(name)?;
            let value: SessionInputValue<'static> = match arg {
                Arg::F32(shape, data) => Tensor::from_array((shape.to_vec(), data.to_vec()))
                    .map_err(run_err)?
                    .into(),
                Arg::I64(shape, data) => Tensor::from_array((shape.to_vec(), data.to_vec()))
                    .map_err(run_err)?
                    .into(),
            };
            values.push((name.to_string(), value));
        }
        // The first free session (a lone caller keeps using the first, whose
        // buffers are warm), else wait for one, taking turns.
        let free = self.sessions.iter().find_map(|s| s.try_lock().ok());
        let mut session = match free {
            Some(s) => s,
            None => {
                let turn = self.next.fetch_add(1, Ordering::Relaxed) % self.sessions.len();
                self.sessions[turn]
                    .lock()
                    .map_err(|_| NeuralError::Run("a previous run panicked".into()))?
            }
        };
        let outputs = session.run(values).map_err(run_err)?;
        if outputs.len() == 0 {
            return Err(NeuralError::Run("the model has no output".into()));
        }
        let (shape, data) = outputs[0].try_extract_tensor::<f32>().map_err(run_err)?;
        let shape = shape.iter().map(|&d| d.max(0) as usize).collect();
        Ok((shape, data.to_vec()))
    }
}
