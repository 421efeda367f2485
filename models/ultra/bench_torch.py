"""Time the PyTorch entity model on a saved input (for comparison with the Rust runtime).

    python bench_torch.py INPUT.npz [--ckpt $CKPT_DIR/ultra_3g.pth] [--runs 20] [--threads 1] [--warmup 2]

INPUT.npz holds the entity-model ONNX inputs: h_prob [B,N] f32, query [B,D] f32,
rel_reps [B,NR,D] f32, edge_src/edge_dst/edge_type [E] int64.  Prints one JSON line
{"p50_ms": .., "p95_ms": .., ...}.  Uses the plain gather/scatter message passing
(the same computation as the ONNX graph).
"""

import argparse
import json
import math
import os
import time

import numpy as np
import torch

from ultra import load_model


def percentile(sorted_values, p):
    """Nearest rank, as every kgbox bench (benches/src/quantile.rs): the value
    at 1-based rank ceil(p/100 * n) of the sorted samples, clamped to 1..n."""
    n = len(sorted_values)
    rank = min(max(math.ceil(p / 100.0 * n), 1), n)
    return sorted_values[rank - 1]

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("--ckpt", default=os.path.join(REPO, "..", "shared", "models", "ultra", "ultra_3g.pth"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    z = np.load(args.input)
    names = ["h_prob", "query", "rel_reps", "edge_src", "edge_dst", "edge_type"]
    inputs = [torch.from_numpy(np.ascontiguousarray(z[k])) for k in names]
    inputs = [t.float() if i < 3 else t.long() for i, t in enumerate(inputs)]
    model = load_model(args.ckpt).entity_model
    times = []
    with torch.no_grad():
        for i in range(args.warmup + args.runs):
            t0 = time.perf_counter()
            model(*inputs)
            if i >= args.warmup:
                times.append((time.perf_counter() - t0) * 1000.0)
    times.sort()
    print(json.dumps({"p50_ms": round(percentile(times, 50), 3), "p95_ms": round(percentile(times, 95), 3), "runs": args.runs,
                      "threads": args.threads, "batch": int(inputs[0].shape[0]),
                      "num_nodes": int(inputs[0].shape[1]), "num_edges": int(inputs[3].shape[0])}))


if __name__ == "__main__":
    main()
