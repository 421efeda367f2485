"""Export ULTRA checkpoints to ONNX (opset 16) and check them with onnxruntime.

    python export.py [--ckpt-dir ../shared/models/ultra] [--out models/ultra/onnx] [--ckpts ultra_3g ultraquery]

Writes <out>/<ckpt>.relation.onnx and <out>/<ckpt>.entity.onnx (see README.md for
the contract).  Each file is compared against PyTorch on random inputs of two
sizes; the script exits non-zero if a max abs diff reaches 1e-4.
"""

import argparse
import collections
import hashlib
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

from ultra import DIM, build_relation_graph, checkpoint_path, load_model

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OPSET = 16
TOL = 1e-4


class RelationExport(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.m = model.relation_model

    def forward(self, boundary, rel_src, rel_dst, rel_type):
        return self.m(boundary, rel_src, rel_dst, rel_type)


class EntityExport(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.m = model.entity_model

    def forward(self, h_prob, query, rel_reps, edge_src, edge_dst, edge_type):
        return self.m(h_prob, query, rel_reps, edge_src, edge_dst, edge_type)


REL_IN = ["boundary", "rel_src", "rel_dst", "rel_type"]
REL_OUT = ["rel_reps"]
REL_AXES = {"boundary": {0: "B", 1: "NR"}, "rel_src": {0: "E2"}, "rel_dst": {0: "E2"},
            "rel_type": {0: "E2"}, "rel_reps": {0: "B", 1: "NR"}}
ENT_IN = ["h_prob", "query", "rel_reps", "edge_src", "edge_dst", "edge_type"]
ENT_OUT = ["logits"]
ENT_AXES = {"h_prob": {0: "B", 1: "N"}, "query": {0: "B"}, "rel_reps": {0: "B", 1: "NR"},
            "edge_src": {0: "E"}, "edge_dst": {0: "E"}, "edge_type": {0: "E"},
            "logits": {0: "B", 1: "N"}}


def random_case(seed, b, n, r, e, model):
    """A random KG (n entities, r direct relations, e facts) and inputs for both models."""
    g = torch.Generator().manual_seed(seed)
    h = torch.randint(0, n, (e,), generator=g)
    t = torch.randint(0, n, (e,), generator=g)
    rel = torch.randint(0, r, (e,), generator=g)
    src, dst, typ = torch.cat([t, h]), torch.cat([h, t]), torch.cat([rel, rel + r])
    rs, rd, rt = build_relation_graph(src, dst, typ, n, 2 * r)
    cond = torch.randint(0, 2 * r, (b,), generator=g)
    boundary = torch.zeros(b, 2 * r)
    boundary[torch.arange(b), cond] = 1.0
    with torch.no_grad():
        rel_reps = model.relation_model(boundary, rs, rd, rt)
    qrel = torch.randint(0, 2 * r, (b,), generator=g)
    query = rel_reps[torch.arange(b), qrel]
    h_prob = torch.rand(b, n, generator=g) * (torch.rand(b, n, generator=g) < 0.1)
    h_prob[:, 0] = 1.0
    rel_in = (boundary, rs, rd, rt)
    ent_in = (h_prob, query, rel_reps, src, dst, typ)
    return rel_in, ent_in


def drop_identity_slices(m):
    """torch's scatter_add export slices `src` to the shape of `index`; ours are
    equal by construction (index = expand(dst, shape(src))), so the Slice is an
    identity with data-dependent ends.  Remove it to keep the graph simple."""
    g = m.graph
    producer = {o: n for n in g.node for o in n.output}
    removed = set()
    for n in g.node:
        if n.op_type != "ScatterElements":
            continue
        sl = producer.get(n.input[2])
        if sl is None or sl.op_type != "Slice":
            continue
        ends = producer.get(sl.input[2])
        exp = producer.get(n.input[1])
        assert ends is not None and ends.op_type == "Shape" and ends.input[0] == n.input[1]
        assert exp.op_type == "Expand"
        shape_src = producer[exp.input[1]]
        assert shape_src.op_type == "Shape" and shape_src.input[0] == sl.input[0]
        n.input[2] = sl.input[0]
        removed.add(id(sl))
    keep = [n for n in g.node if id(n) not in removed]
    # prune nodes whose outputs are no longer used
    while True:
        used = {i for n in keep for i in n.input} | {o.name for o in g.output}
        nxt = [n for n in keep if any(o in used for o in n.output)]
        if len(nxt) == len(keep):
            break
        keep = nxt
    del g.node[:]
    g.node.extend(keep)
    return m


def export_one(module, inputs, path, in_names, out_names, axes):
    kwargs = dict(input_names=in_names, output_names=out_names, dynamic_axes=axes,
                  opset_version=OPSET, do_constant_folding=True)
    try:
        torch.onnx.export(module, inputs, path, dynamo=False, **kwargs)
    except TypeError:  # older torch without the dynamo flag
        torch.onnx.export(module, inputs, path, **kwargs)
    m = drop_identity_slices(onnx.load(path))
    onnx.checker.check_model(m, full_check=True)
    # clear producer info and doc strings so the bytes depend only on the graph
    m.producer_version = ""
    for node in m.graph.node:
        node.doc_string = ""
    onnx.save(m, path)
    return m


def check(path, module, inputs, names):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {k: v.numpy() for k, v in zip(names, inputs)}
    got = sess.run(None, feed)[0]
    with torch.no_grad():
        want = module(*inputs).numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    return float(np.abs(got - want).max())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt-dir", default=os.path.join(REPO, "..", "shared", "models", "ultra"))
    ap.add_argument("--out", default=os.path.join(HERE, "onnx"))
    ap.add_argument("--ckpts", nargs="+", default=["ultra_3g", "ultraquery"])
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    ok = True
    for name in args.ckpts:
        model = load_model(checkpoint_path(args.ckpt_dir, name))
        rel_mod, ent_mod = RelationExport(model).eval(), EntityExport(model).eval()
        cases = [random_case(1, 2, 40, 5, 150, model), random_case(2, 3, 173, 11, 900, model)]
        for kind, mod, idx, in_names, out_names, axes in (
                ("relation", rel_mod, 0, REL_IN, REL_OUT, REL_AXES),
                ("entity", ent_mod, 1, ENT_IN, ENT_OUT, ENT_AXES)):
            path = os.path.join(args.out, f"{name}.{kind}.onnx")
            m = export_one(mod, cases[0][idx], path, in_names, out_names, axes)
            ops = collections.Counter(n.op_type for n in m.graph.node)
            diffs = [check(path, mod, c[idx], in_names) for c in cases]
            sha = hashlib.sha256(open(path, "rb").read()).hexdigest()[:16]
            print(f"{name}.{kind}.onnx  {os.path.getsize(path)} bytes  sha256 {sha}")
            print(f"  ops: {dict(sorted(ops.items()))}")
            print(f"  onnxruntime vs torch max abs diff: " + ", ".join(f"{d:.2e}" for d in diffs))
            if max(diffs) >= TOL:
                ok = False
                print("  FAIL: diff above tolerance")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
