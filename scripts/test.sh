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
#                           suite, or scripts/setup.sh --dev, once first)
#
# Python tools and clients come from the repository's virtual environment,
# .venv (scripts/setup.sh --dev), put first on PATH here. SETUP_PYTHON
# names the python3 that makes it (CI: Debian's own /usr/bin/python3).
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

# Each step names the time so far (CI stops at 90 minutes) and the disk
# space left: a full disk shows as a linker's bus error, far from its cause.
step() {
  printf '\n==> %s (at %dm%02ds, disk: %s free)\n' "$*" $((SECONDS / 60)) $((SECONDS % 60)) \
    "$(df -h --output=avail . | tail -1 | tr -d ' ')"
}

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
  step "setup (scripts/setup.sh --dev${SETUP_PYTHON:+ --python $SETUP_PYTHON})"
  bash scripts/setup.sh --dev ${SETUP_PYTHON:+--python "$SETUP_PYTHON"}
fi
if [[ -x .venv/bin/python3 ]]; then
  export VIRTUAL_ENV="$PWD/.venv"
  export PATH="$VIRTUAL_ENV/bin:$PATH"
elif [[ $TIER == quick ]]; then
  echo "test.sh: no .venv: run scripts/setup.sh --dev (or the whole suite) once first" >&2
  exit 1
fi

# kgbox reads every KGBOX_* variable as a config key: the tests start from
# none (a shell that followed the README's tour has KGBOX_CONFIG and
# KGBOX_ADMIN_TOKEN); each test sets the ones it means.
while read -r var; do unset "$var"; done < <(compgen -e | grep '^KGBOX_' || true)

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
# The test executables (2-3 GB) serve no later step: CI frees them; the
# libraries they link stay, so the feature builds below only add their own.
if [[ -n "${CI:-}" ]]; then
  cargo test --workspace --no-run --message-format=json 2>/dev/null | python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["profile"]["test"] and m.get("executable"):
        os.remove(m["executable"])'
fi

# Soak and abuse over HTTP, the short version (the hour-long run and its
# figures: docs/reliability.md).
step "soak and abuse, 30 s (kgbox-soak --seconds 30 --idle 500)"
cargo run --quiet -p kgbox-benches --bin kgbox-soak -- --seconds 30 --idle 500 --slow 20

# Supply chain: licenses, bans, sources and RustSec advisories (deny.toml).
step "cargo deny check (scripts/deny.sh)"
bash scripts/deny.sh

# The README's tour, every block as written, in a scratch directory, with
# the binaries built above.
step "README tour (scripts/readme-tour.sh)"
bash scripts/readme-tour.sh

# The packages: .deb for amd64 and arm64 (cross-built), tarballs, SBOMs and
# checksums, from the debug profile built above (a release build of both
# architectures would not fit CI's time; scripts/release.sh with no flags is
# the release). Then installed, linted, verified and run, arm64 under qemu.
step "packages (scripts/release.sh --profile dev), checked (scripts/package-check.sh)"
# (arm64: the runtime only; lighter compression.)
# The arm64 build only has to start and answer under qemu: the dev profile's
# opt-level 3 for the hot crates (Cargo.toml) is dropped there, to compile
# in less time.
cross_flags=(--config profile.dev.debug=false)
for p in $(sed -n 's/^\[profile\.dev\.package\.\([A-Za-z0-9_-]*\)\]$/\1/p' Cargo.toml); do
  cross_flags+=(--config "profile.dev.package.$p.opt-level=0")
done
DIST=target/dist CROSS_PACKAGES=kgbox CROSS_CARGO_FLAGS="${cross_flags[*]}" \
  bash scripts/release.sh --profile dev --fast
DIST=target/dist bash scripts/package-check.sh
if [[ -n "${CI:-}" ]]; then
  rm -rf target/aarch64-unknown-linux-gnu target/dist
fi

# The neural crate's `ort` feature is on in the workspace (kgbox's default
# features), so the lints and `cargo test --workspace` above cover it: the
# parity test against the PyTorch fixtures ran through every engine there,
# with ORT_DYLIB_PATH set.
# The CUDA path compiles, and with no GPU (the wheel's library has no CUDA
# provider) `device = auto` falls back to the CPU and `cuda` is refused.
# With --workspace the other crates keep the features of the builds above,
# so only ort and what uses kgbox-neural are built again (-p kgbox-neural
# alone would rebuild tract and the rest under other features).
step "cargo clippy --workspace --all-targets --features kgbox-neural/cuda -- -D warnings"
cargo clippy --workspace --all-targets --features kgbox-neural/cuda -- -D warnings
step "cargo test --workspace --features kgbox-neural/cuda --test device"
cargo test --workspace --features kgbox-neural/cuda --test device

# The in-process LLM (llama.cpp, built from source by llama-cpp-sys-2) with
# the SmolLM2 GGUF that setup.sh --dev installs.
# (--workspace as above: llama.cpp is the one new build.)
step "cargo clippy --workspace --all-targets --features kgbox-qa/local-llm -- -D warnings"
cargo clippy --workspace --all-targets --features kgbox-qa/local-llm -- -D warnings
step "cargo test --workspace --features kgbox-qa/local-llm --test local_llm"
cargo test --workspace --features kgbox-qa/local-llm --test local_llm

# Every fuzz target for a short fixed time (the long runs: docs/reliability.md).
# Built unoptimized (FUZZ_DEV): the build of every target with the sanitizer
# is CI's longest step, and 10 s is a smoke run, not a search. It comes last:
# its instrumented build (up to about 7 GB in fuzz/target) shares nothing with the
# workspace's, which CI (.ci/run sets CI) frees first when it lies in the
# clone (a CARGO_TARGET_DIR cache elsewhere is kept); a developer's checkout
# keeps both for the next run.
if [[ -n "${CI:-}" && "$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')" == "$PWD/target" ]]; then
  rm -rf target
fi
# FUZZ_PRUNE removes each target's binary after its run (about 4 GB in all).
step "fuzz: every target, 10 s each (FUZZ_DEV=1 FUZZ_PRUNE=1 scripts/fuzz.sh 10)"
FUZZ_DEV=1 FUZZ_PRUNE=1 bash scripts/fuzz.sh 10
if [[ -n "${CI:-}" ]]; then
  rm -rf fuzz/target
fi

step "all checks passed"
