#!/usr/bin/env bash
# Rebuilds the committed reranker fixture: fixtures/metaqa.{onnx,json}, trained on (a sample of)
# the MetaQA feature rows that benches/metaqa/rerank.sh exports, and fixtures/metaqa-scores.tsv,
# 64 of those rows (both labels) with onnxruntime's P(correct), which the Rust tests compare with tract's.
#
#   models/reranker/make_fixture.sh FEATURES_TSV
#
# e.g. after `WORK=$SCRATCH/rr KEEP=1 benches/metaqa/rerank.sh $DATA/metaqa/kb.tsv`:
#   models/reranker/make_fixture.sh $SCRATCH/rr/features.tsv
# PYTHON names a python3 with models/reranker/requirements.txt (default: python3).
set -euo pipefail
(($# == 1)) || { echo "usage: models/reranker/make_fixture.sh FEATURES_TSV" >&2; exit 1; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=${PYTHON:-python3}
[[ -s $1 ]] || { echo "make_fixture.sh: missing or empty $1" >&2; exit 1; }
"$PY" "$HERE/train.py" "$1" --out "$HERE/fixtures/metaqa" --max-rows 30000
"$PY" - "$1" "$HERE/fixtures/metaqa.onnx" "$HERE/fixtures/metaqa-scores.tsv" <<'PY'
import random, sys
import numpy as np
import onnxruntime as ort
src, model, out = sys.argv[1:]
lines = [l for l in open(src, encoding="utf-8") if not l.startswith("#")]
header = lines[0].rstrip("\n").split("\t")
rows = [l.rstrip("\n").split("\t") for l in lines[1:]]
random.Random(3).shuffle(rows)
# Both labels, so the check covers both ends of the model's range.
pos = [r for r in rows if r[2] == "1"][:32]
neg = [r for r in rows if r[2] == "0"][:64 - len(pos)]
x = np.array([[float(v) for v in r[4:]] for r in pos + neg], dtype=np.float32)
p = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(
    ["probabilities"], {"features": x})[0][:, 1]
with open(out, "w", encoding="utf-8") as f:
    f.write("\t".join(header[4:] + ["p_correct"]) + "\n")
    for xi, pi in zip(x, p):
        f.write("\t".join(repr(float(v)) for v in xi) + f"\t{float(pi)!r}\n")
print(f"wrote {out}")
PY
