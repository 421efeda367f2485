//! Which engine and device a choice of `engine`/`device` ends on: the native
//! engine on the CPU by default, and with `device = auto` a CPU fallback
//! that says why when there is no CUDA (no `cuda` feature, or an ONNX
//! Runtime without a GPU provider, as the `onnxruntime` wheel is). With
//! `device = cuda` and no CUDA, loading fails with a reason, never silently
//! runs on the CPU.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use kgbox_neural::engine::{self, cuda_unavailable_reason, native_runs};
use kgbox_neural::model::UltraModel;
use kgbox_neural::{Device, EngineKind, UltraMeta};

fn entity_onnx() -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../models/ultra/onnx/ultraquery.entity.onnx");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn meta() -> UltraMeta {
    UltraMeta {
        checkpoint: "ultraquery".into(),
        dim: 64,
        relations: 4,
        relation_graph_edges: 0,
        opset: 16,
        fusion: None,
    }
}

#[test]
fn auto_falls_back_to_the_native_cpu_engine_with_a_reason() {
    // No GPU is reachable from the test machines (CI has none).
    let reason = cuda_unavailable_reason().expect("no CUDA here");
    if cfg!(feature = "cuda") {
        assert!(
            reason.contains("CUDA execution provider") || reason.contains("ORT_DYLIB_PATH"),
            "{reason}"
        );
    } else {
        assert!(reason.contains("no `cuda` feature"), "{reason}");
    }
    assert!(native_runs(EngineKind::Native, Device::Auto));
    assert!(native_runs(EngineKind::Native, Device::Cpu));
    assert!(!native_runs(EngineKind::Native, Device::Cuda));
    assert!(!native_runs(EngineKind::Tract, Device::Cpu));
    let model = UltraModel::native(&entity_onnx(), meta(), vec![0.0; 4 * 4 * 64]).unwrap();
    assert_eq!((model.engine_name(), model.device()), ("native", "cpu"));
}

#[test]
fn cuda_without_a_gpu_is_an_error_that_names_it() {
    for kind in [EngineKind::Native, EngineKind::Ort] {
        let err = engine::load(kind, Device::Cuda, &entity_onnx())
            .err()
            .unwrap_or_else(|| panic!("{kind} loaded on CUDA without a GPU"));
        let msg = err.to_string();
        assert!(
            msg.contains("cuda") || msg.contains("CUDA") || msg.contains("`ort` engine"),
            "{kind}: {msg}"
        );
    }
}

#[test]
fn generic_models_under_native_run_on_the_fastest_engine_built() {
    let e = engine::load(EngineKind::Native, Device::Auto, &entity_onnx()).unwrap();
    let ort_here = cfg!(feature = "ort") && std::env::var_os("ORT_DYLIB_PATH").is_some();
    assert_eq!(e.name(), if ort_here { "ort" } else { "tract" });
    assert_eq!(e.device(), "cpu");
}
