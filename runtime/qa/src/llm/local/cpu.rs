//! The instruction sets llama.cpp was compiled for, checked against this
//! CPU before the backend starts: a clear error instead of an illegal
//! instruction.

/// The instruction sets llama.cpp was compiled for (`GGML_*` at build
/// time, set in `.cargo/config.toml`), each with whether this CPU has it.
fn compiled_for() -> Vec<(&'static str, bool)> {
    let wanted = [
        ("sse4.2", option_env!("GGML_SSE42")),
        ("avx", option_env!("GGML_AVX")),
        ("avx2", option_env!("GGML_AVX2")),
        ("fma", option_env!("GGML_FMA")),
        ("f16c", option_env!("GGML_F16C")),
        ("bmi2", option_env!("GGML_BMI2")),
    ];
    wanted
        .into_iter()
        .filter(|(_, on)| on.is_some_and(|v| v.eq_ignore_ascii_case("on")))
        .map(|(name, _)| (name, cpu_has(name)))
        .collect()
}

#[cfg(target_arch = "x86_64")]
fn cpu_has(feature: &str) -> bool {
    match feature {
        "sse4.2" => std::is_x86_feature_detected!("sse4.2"),
        "avx" => std::is_x86_feature_detected!("avx"),
        "avx2" => std::is_x86_feature_detected!("avx2"),
        "fma" => std::is_x86_feature_detected!("fma"),
        "f16c" => std::is_x86_feature_detected!("f16c"),
        "bmi2" => std::is_x86_feature_detected!("bmi2"),
        _ => false,
    }
}

/// The x86 settings are not used on other architectures.
#[cfg(not(target_arch = "x86_64"))]
fn cpu_has(_feature: &str) -> bool {
    true
}

/// An error naming the instructions llama.cpp was built for that this CPU
/// lacks (running it would stop the process with an illegal instruction).
pub(super) fn check_cpu() -> Result<(), String> {
    let missing: Vec<&str> = compiled_for()
        .into_iter()
        .filter(|(_, has)| !has)
        .map(|(name, _)| name)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(cpu_error(&missing))
}

fn cpu_error(missing: &[&str]) -> String {
    format!(
        "this kgbox's llama.cpp was compiled for CPUs with {}, which this CPU lacks; \
         rebuild it here with GGML_{}=OFF (see .cargo/config.toml)",
        missing.join(", "),
        missing
            .iter()
            .map(|m| m.replace('.', "").to_uppercase())
            .collect::<Vec<_>>()
            .join("=OFF GGML_")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_without_what_llama_cpp_was_built_for_is_named() {
        let m = cpu_error(&["avx2", "sse4.2"]);
        assert!(m.contains("CPUs with avx2, sse4.2"), "{m}");
        assert!(m.contains("GGML_AVX2=OFF GGML_SSE42=OFF"), "{m}");
        // The repository's build settings are seen here, and this machine
        // (which runs the tests) has what they ask for.
        #[cfg(target_arch = "x86_64")]
        assert!(
            compiled_for().contains(&("avx2", true)),
            "{:?}",
            compiled_for()
        );
        assert_eq!(check_cpu(), Ok(()));
    }
}
