"""Export ULTRA checkpoints to ONNX (opset 16) and check them with onnxruntime.

    python export.py [--ckpt-dir $CKPT_DIR] [--out models/ultra/onnx] [--ckpts ultra_3g ultraquery]

Writes <out>/<ckpt>.relation.onnx and <out>/<ckpt>.entity.onnx (see README.md for
the contract).  Each file is compared against PyTorch on random inputs of two
sizes; the script exits non-zero if a max abs diff reaches 1e-4.

The exported graphs compute the same function as ultra.py but run node-major:
node states are [N, B, D] (nodes first), messages [E, B, D] are gathered on axis 0
and summed into their destination rows with ScatterND(reduction="add") and
indices = dst[:, None] ([E, 1]): one index per [B, D] slice.  tract (the Rust
runtime) runs ScatterElements element by element, which made the batch-major
[B, E, D] scatter of the old export the bottleneck.  The I/O contract (names,
shapes, dtypes, dynamic axes) is unchanged; the transposes are inside the graph.
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

from ultra import DIM, _layer_norm, build_relation_graph, checkpoint_path, load_model

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OPSET = 16
TOL = 1e-4


class ScatterAddRows(torch.autograd.Function):
    """`zeros` with `updates[e]` added into row `index[e, 0]` (axis 0).

    zeros: [N, B, D]; index: [E, 1] int64; updates: [E, B, D].  Exported as ONNX
    ScatterND(data=zeros, indices=index, updates, reduction="add"): one index per
    whole trailing [B, D] slice, no expanded index tensor.  (torch's own
    index_put export emits ScatterND without reduction plus an Add, which is
    wrong for repeated indices.)
    """

    @staticmethod
    def forward(ctx, zeros, index, updates):
        return zeros.clone().index_add_(0, index[:, 0], updates)

    @staticmethod
    def symbolic(g, zeros, index, updates):
        return g.op("ScatterND", zeros, index, updates, reduction_s="add")


def _layer_step(layer, x, b, rel, src, dst1, typ, zeros):
    """One RelationalConv layer plus shortcut in node-major layout.

    x, b, zeros: [N, B, D]; rel: [K, B, D] or [K, 1, D]; src/typ: [E];
    dst1: [E, 1].  Same function as RelationalConv.forward + x (ultra.py)."""
    msg = x.index_select(0, src) * rel.index_select(0, typ)  # [E, B, D]
    agg = ScatterAddRows.apply(zeros, dst1, msg) + b  # [N, B, D]
    out = layer.linear(torch.cat([x, agg], dim=-1))
    out = _layer_norm(out, layer.layer_norm)
    return torch.relu(out) + x


class RelationExport(nn.Module):
    """RelNBFNet, node-major ([NR, B, D] states) for export."""

    def __init__(self, model):
        super().__init__()
        self.m = model.relation_model

    def forward(self, boundary, rel_src, rel_dst, rel_type):
        ones = torch.ones(self.m.dim, dtype=boundary.dtype)
        b = boundary.t().unsqueeze(-1) * ones  # [NR, B, D]
        x, zeros, dst1 = b, torch.zeros_like(b), rel_dst.unsqueeze(-1)
        for layer in self.m.layers:
            rel = layer.relation.weight.unsqueeze(1)  # [4, 1, D]
            x = _layer_step(layer, x, b, rel, rel_src, dst1, rel_type, zeros)
        return x.transpose(0, 1)  # [B, NR, D]


class EntityExport(nn.Module):
    """EntityNBFNet, node-major ([N, B, D] states) for export."""

    def __init__(self, model):
        super().__init__()
        self.m = model.entity_model

    def forward(self, h_prob, query, rel_reps, edge_src, edge_dst, edge_type):
        b = h_prob.t().unsqueeze(-1) * query.unsqueeze(0)  # [N, B, D]
        x, zeros, dst1 = b, torch.zeros_like(b), edge_dst.unsqueeze(-1)
        for layer in self.m.layers:
            rel = layer.relation_projection(rel_reps).transpose(0, 1)  # [NR, B, D]
            x = _layer_step(layer, x, b, rel, edge_src, dst1, edge_type, zeros)
        node_query = query.unsqueeze(0).expand_as(x)
        out = self.m.mlp(torch.cat([x, node_query], dim=-1))  # [N, B, 1]
        return out.squeeze(-1).t()  # [B, N]


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


def check_ops(m):
    """The graph must aggregate with ScatterND(reduction="add") only."""
    ops = {n.op_type for n in m.graph.node}
    assert "ScatterElements" not in ops, "ScatterElements in the exported graph"
    for n in m.graph.node:
        if n.op_type == "ScatterND":
            red = [a.s for a in n.attribute if a.name == "reduction"]
            assert red == [b"add"], red
    return m


def ort_session(path):
    """onnxruntime session for the checks.  Single-threaded: onnxruntime's CPU
    ScatterND with reduction="add" races on repeated indices when it runs on
    several threads (results change run to run, microsoft/onnxruntime#23396)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def export_one(module, inputs, path, in_names, out_names, axes):
    kwargs = dict(input_names=in_names, output_names=out_names, dynamic_axes=axes,
                  opset_version=OPSET, do_constant_folding=True)
    try:
        torch.onnx.export(module, inputs, path, dynamo=False, **kwargs)
    except TypeError:  # older torch without the dynamo flag
        torch.onnx.export(module, inputs, path, **kwargs)
    m = check_ops(onnx.load(path))
    onnx.checker.check_model(m, full_check=True)
    # clear producer info and doc strings so the bytes depend only on the graph
    m.producer_version = ""
    for node in m.graph.node:
        node.doc_string = ""
    onnx.save(m, path)
    return m


def check(path, module, inputs, names):
    sess = ort_session(path)
    feed = {k: v.numpy() for k, v in zip(names, inputs)}
    got = sess.run(None, feed)[0]
    with torch.no_grad():
        want = module(*inputs).numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    return float(np.abs(got - want).max())


def export_model(model, prefix):
    """Exports `model` to PREFIX.relation.onnx and PREFIX.entity.onnx and checks both
    against the torch model with onnxruntime; returns the max abs diffs, raises if one
    reaches TOL."""
    torch.manual_seed(0)
    rel_mod, ent_mod = RelationExport(model).eval(), EntityExport(model).eval()
    cases = [random_case(1, 2, 40, 5, 150, model), random_case(2, 3, 173, 11, 900, model)]
    diffs = {}
    # reference = the batch-major torch model of ultra.py (plain gather/scatter)
    for kind, mod, ref, idx, in_names, out_names, axes in (
            ("relation", rel_mod, model.relation_model, 0, REL_IN, REL_OUT, REL_AXES),
            ("entity", ent_mod, model.entity_model, 1, ENT_IN, ENT_OUT, ENT_AXES)):
        path = f"{prefix}.{kind}.onnx"
        m = export_one(mod, cases[0][idx], path, in_names, out_names, axes)
        ops = collections.Counter(n.op_type for n in m.graph.node)
        d = [check(path, ref, c[idx], in_names) for c in cases]
        sha = hashlib.sha256(open(path, "rb").read()).hexdigest()[:16]
        print(f"{os.path.basename(path)}  {os.path.getsize(path)} bytes  sha256 {sha}", file=sys.stderr)
        print(f"  ops: {dict(sorted(ops.items()))}", file=sys.stderr)
        print("  onnxruntime vs torch max abs diff: " + ", ".join(f"{x:.2e}" for x in d),
              file=sys.stderr)
        diffs[kind] = float(f"{max(d):.3g}")
        if max(d) >= TOL:
            raise AssertionError(f"{path}: onnxruntime differs from torch by {max(d):.2e} (>= {TOL})")
    return diffs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt-dir", default=os.path.join(REPO, "..", "shared", "models", "ultra"))
    ap.add_argument("--out", default=os.path.join(HERE, "onnx"))
    ap.add_argument("--ckpts", nargs="+", default=["ultra_3g", "ultraquery"])
    ap.add_argument("--ckpt-file", help="export this checkpoint file instead (to OUT/NAME.*.onnx, "
                    "NAME = the file name without .pth)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.ckpt_file:
        jobs = [(os.path.basename(args.ckpt_file).removesuffix(".pth"), args.ckpt_file)]
    else:
        jobs = [(name, checkpoint_path(args.ckpt_dir, name)) for name in args.ckpts]
    for name, path in jobs:
        try:
            export_model(load_model(path), os.path.join(args.out, name))
        except AssertionError as e:
            print(f"FAIL: {e}", file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    main()
