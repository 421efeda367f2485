#!/usr/bin/env bash
# Prints the path of libonnxruntime.so from the `onnxruntime` Python wheel
# (installed by `scripts/setup.sh --dev` into .venv), for ORT_DYLIB_PATH:
#   ORT_DYLIB_PATH=$(scripts/ort-lib.sh) kgbox serve ...   # with executor.engine = "ort"
set -euo pipefail
# The repository's virtual environment when there is one, else python3.
venv="$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python3"
py=python3
[[ -x $venv ]] && py=$venv
"$py" - <<'PY'
import glob, os, sys
try:
    import onnxruntime
except ImportError:
    sys.exit("ort-lib.sh: the onnxruntime wheel is not installed (run scripts/setup.sh --dev)")
libs = sorted(glob.glob(os.path.join(os.path.dirname(onnxruntime.__file__), "capi", "libonnxruntime.so*")))
if not libs:
    sys.exit("ort-lib.sh: no libonnxruntime.so in the onnxruntime wheel")
print(libs[0])
PY
