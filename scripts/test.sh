#!/usr/bin/env bash
# The test suite, in two tiers (README.md states how long each takes):
#
#   scripts/test.sh         the whole suite, as CI runs it (.ci/run): system
#                           setup, formatting, lints (warnings are errors), a
#                           build of every binary, then every test
#   scripts/test.sh quick   for every change, with a warm build: formatting,
#                           the cycle check, lints, the unit tests and the core
#                           end-to-end tests (serve, query, ask, ops, deploy
#                           over HTTP, MQTT requests); no setup (run the whole
#                           suite, or scripts/setup.sh, once first)
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "") TIER=full ;;
  quick) TIER=quick ;;
  *) echo "usage: scripts/test.sh [quick]" >&2; exit 2 ;;
esac
# A from-scratch build gains nothing from incremental state (1-2 GB on disk);
# the quick tier runs on a developer's warm, incremental build.
if [[ $TIER == full ]]; then
  export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
fi

# Each step names the disk space left: a full disk shows as a linker's bus
# error, far from its cause.
step() { printf '\n==> %s (disk: %s free)\n' "$*" "$(df -h --output=avail . | tail -1 | tr -d ' ')"; }

# What both tiers check first: formatting, the module cycles, lints and a
# build of every binary.
checks() {
  step "cargo fmt --all --check"
  cargo fmt --all --check
  step "no module import cycles (every crate of runtime/ and the packager)"
  python3 scripts/module-cycles.py runtime/*/src packager/src
  step "cargo clippy --workspace --all-targets -- -D warnings"
  cargo clippy --workspace --all-targets -- -D warnings
  step "cargo build --workspace --bins"
  cargo build --workspace --bins
}

if [[ $TIER == full ]]; then
  step "setup"
  bash scripts/setup.sh
fi

# ONNX Runtime, from the wheel setup.sh installs: the `kgbox` binary is built
# with the `ort` feature by default, and the tests of every engine need it.
ORT_DYLIB_PATH=$(bash scripts/ort-lib.sh)
export ORT_DYLIB_PATH

checks

if [[ $TIER == quick ]]; then
  step "unit tests (cargo test --workspace --lib --bins)"
  cargo test --workspace --lib --bins
  step "core end-to-end tests"
  cargo test -p kgbox-testkit --test e2e -- serve:: query:: ops:: deploy::http mqtt::requests \
    qa::ask::learned_planner_over_http_cli_and_eval
  step "quick tier passed (the whole suite: scripts/test.sh)"
  exit 0
fi

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
