#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run): system setup, formatting,
# lints (warnings are errors), a build of every binary, then every test.
set -euo pipefail
# A from-scratch build gains nothing from incremental state (1-2 GB on disk).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
cd "$(dirname "$0")/.."

# Each step names the disk space left: a full disk shows as a linker's bus
# error, far from its cause.
step() { printf '\n==> %s (disk: %s free)\n' "$*" "$(df -h --output=avail . | tail -1 | tr -d ' ')"; }

step "setup"
bash scripts/setup.sh

# ONNX Runtime, from the wheel setup.sh installs: the `kgbox` binary is built
# with the `ort` feature by default, and the tests of every engine need it.
ORT_DYLIB_PATH=$(bash scripts/ort-lib.sh)
export ORT_DYLIB_PATH

step "cargo fmt --all --check"
cargo fmt --all --check

step "no module import cycles (every crate of runtime/ and the packager)"
python3 scripts/module-cycles.py runtime/*/src packager/src

step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo build --workspace --bins"
cargo build --workspace --bins

step "cargo test --workspace"
cargo test --workspace

# Soak and abuse over HTTP, the short version (the hour-long run and its
# figures: docs/reliability.md).
step "soak and abuse, 30 s (kgbox-soak --seconds 30 --idle 500)"
cargo run --quiet -p kgbox-benches --bin kgbox-soak -- --seconds 30 --idle 500 --slow 20

# Supply chain: licenses, bans, sources and RustSec advisories (deny.toml),
# and the release's SBOM (CycloneDX) made and checked.
step "cargo deny check (scripts/deny.sh)"
bash scripts/deny.sh
step "SBOM (scripts/release.sh --sbom-only)"
bash scripts/release.sh --sbom-only

# Every fuzz target for a short fixed time (the long runs: docs/reliability.md).
step "fuzz: every target, 15 s each (scripts/fuzz.sh 15)"
bash scripts/fuzz.sh 15
# The instrumented targets (about 4 GB) serve no later step; CI (.ci/run sets
# CI) frees the space, a developer's checkout keeps them for the next run.
if [[ -n "${CI:-}" ]]; then
  rm -rf fuzz/target
fi

# The neural crate on its own with ONNX Runtime: lints, then the parity
# test against the PyTorch fixtures through every engine.
step "cargo clippy -p kgbox-neural --features ort --all-targets -- -D warnings"
cargo clippy -p kgbox-neural --features ort --all-targets -- -D warnings
step "cargo test -p kgbox-neural --features ort (ORT_DYLIB_PATH=$ORT_DYLIB_PATH)"
cargo test -p kgbox-neural --features ort
# The CUDA path compiles, and with no GPU (the wheel's library has no CUDA
# provider) `device = auto` falls back to the CPU and `cuda` is refused.
step "cargo clippy -p kgbox-neural --features cuda --all-targets -- -D warnings"
cargo clippy -p kgbox-neural --features cuda --all-targets -- -D warnings
step "cargo test -p kgbox-neural --features cuda --test device"
cargo test -p kgbox-neural --features cuda --test device

# The in-process LLM (llama.cpp, built from source by llama-cpp-sys-2) with
# the SmolLM2 GGUF that setup.sh installs.
step "cargo clippy -p kgbox-qa --features local-llm --all-targets -- -D warnings"
cargo clippy -p kgbox-qa --features local-llm --all-targets -- -D warnings
step "cargo test -p kgbox-qa --features local-llm --test local_llm"
cargo test -p kgbox-qa --features local-llm --test local_llm

step "all checks passed"
