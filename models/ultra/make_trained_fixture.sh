#!/usr/bin/env bash
# Regenerates the committed trained model and its parity fixture, with the
# scripts an operator's `kgbox-pack build --train-executor` runs:
#   1. train.py fine-tunes checkpoints/ultraquery.pth on demo/movies.tsv
#      (20 steps, seed 0, 1 thread: deterministic);
#   2. it exports onnx/ultraquery-demo-ft.{relation,entity}.onnx (export.py);
#   3. make_fixtures.py writes fixtures/ultraquery-demo-ft.parity.json.
# runtime/neural/tests/parity.rs then checks tract and ort against PyTorch.
#
#   models/ultra/make_trained_fixture.sh [--data $DATA/codex-s]
# Needs a python3 with models/ultra/requirements.txt (PYTHON=... to choose one).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PY=${PYTHON:-python3}
NAME=ultraquery-demo-ft
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kgbox-trained-fixture.XXXXXX")
trap 'rm -rf -- "$WORK"' EXIT
cp "$REPO/demo/movies.tsv" "$WORK/triples.tsv"
"$PY" "$HERE/train.py" --dir "$WORK" --init "$HERE/checkpoints/ultraquery.pth" \
  --steps 20 --seed 0 --threads 1 --validate 0 --out "$HERE/onnx/$NAME"
mv "$HERE/onnx/$NAME.pth" "$WORK/$NAME.pth"
rm -f "$HERE/onnx/$NAME.train.json"
"$PY" "$HERE/make_fixtures.py" --ckpt-files "$WORK/$NAME.pth" "$@"
sha256sum "$HERE/onnx/$NAME.relation.onnx" "$HERE/onnx/$NAME.entity.onnx"
