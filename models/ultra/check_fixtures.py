"""Replay the parity fixtures through the exported ONNX files with onnxruntime.

    python check_fixtures.py [--fixtures models/ultra/fixtures] [--onnx models/ultra/onnx]

This is what the Rust parity tests do: relation model on the fixture's relation
graph for every conditioning relation, then the entity model for each case.
"""

import argparse
import glob
import json
import os
import sys

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))


def session(path):
    # Single-threaded: onnxruntime's CPU ScatterND with reduction="add" races on
    # repeated indices when it runs on several threads (microsoft/onnxruntime#23396).
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixtures", default=os.path.join(HERE, "fixtures"))
    ap.add_argument("--onnx", default=os.path.join(HERE, "onnx"))
    args = ap.parse_args()
    worst = 0.0
    for path in sorted(glob.glob(os.path.join(args.fixtures, "*.parity.json"))):
        fx = json.load(open(path))
        name = fx["checkpoint"]
        nr = 2 * fx["num_relations"]
        rel = session(os.path.join(args.onnx, f"{name}.relation.onnx"))
        ent = session(os.path.join(args.onnx, f"{name}.entity.onnx"))
        rg = {k: np.asarray(v, dtype=np.int64) for k, v in fx["relation_graph"].items()}
        ed = {k: np.asarray(v, dtype=np.int64) for k, v in fx["edges"].items()}
        rel_reps = rel.run(None, {"boundary": np.eye(nr, dtype=np.float32), "rel_src": rg["src"],
                                  "rel_dst": rg["dst"], "rel_type": rg["type"]})[0]
        d_rel = float(np.abs(rel_reps - np.asarray(fx["rel_reps"], dtype=np.float32)).max())
        d_log = 0.0
        for case in fx["cases"]:
            c, q = case["condition"], case["query_relation"]
            rr = rel_reps[c: c + 1]
            logits = ent.run(None, {"h_prob": np.asarray([case["h_prob"]], dtype=np.float32),
                                    "query": rr[:, q], "rel_reps": rr, "edge_src": ed["src"],
                                    "edge_dst": ed["dst"], "edge_type": ed["type"]})[0][0]
            d_log = max(d_log, float(np.abs(logits - np.asarray(case["logits"])).max()))
        print(f"{os.path.basename(path)}: rel_reps max abs diff {d_rel:.2e}, logits max abs diff {d_log:.2e}")
        worst = max(worst, d_rel, d_log)
    if worst >= 1e-4:
        sys.exit(1)


if __name__ == "__main__":
    main()
