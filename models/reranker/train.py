#!/usr/bin/env python3
"""Train kgbox's answer reranker on features exported by the runtime.

The rows come from `kgbox eval qa --export-features FILE` run on questions
with known answers (the operator's questions): one row per candidate answer
the executor ranked, labelled 1 when it is a gold answer. The features are
computed by the Rust code that also serves the model, so training and serving
agree (the feature set's name is checked on both sides).

    python3 models/reranker/train.py FEATURES.tsv --out PREFIX [--model mlp|logistic]

writes PREFIX.onnx (input `features`, float [n, F]; first output the class
probabilities [n, 2]; plain MatMul/Add/Relu/Sigmoid operators, which tract and
ONNX Runtime both run) and PREFIX.json (the `rerank.meta` section), which
`kgbox-pack build --reranker PREFIX` adds to a bundle.

It holds out one question in five (by question number, seeded), reports
Hits@1 with the executor's order and with the model's on them, and picks the
answer cut (keep the best, then P(correct) >= cut) by mean F1 there; then it
refits on every question. The exported model is checked against scikit-learn
with onnxruntime.

Requirements: models/reranker/requirements.txt (CPU only).
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

META_FORMAT = 1


def die(msg: str) -> None:
    sys.exit(f"train.py: {msg}")


def read_rows(path: Path):
    feature_set = None
    with path.open(newline="", encoding="utf-8") as f:
        lines = []
        for line in f:
            if line.startswith("# feature_set\t"):
                feature_set = line.rstrip("\n").split("\t", 1)[1]
            elif not line.startswith("#"):
                lines.append(line)
    if feature_set is None:
        die(f"{path}: no '# feature_set' line; export it with kgbox eval qa --export-features")
    reader = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
    header = next(reader, None)
    if not header or header[:4] != ["question", "line", "label", "entity"]:
        die(f"{path}: the header must start with question, line, label, entity")
    names = header[4:]
    missing = [c for c in ("exec_rank", "text_similarity") if c not in names]
    if missing:
        die(f"{path}: no column {', '.join(missing)}; export it with kgbox eval qa --export-features")
    qids, labels, xs = [], [], []
    for n, row in enumerate(reader, start=2):
        if len(row) != len(header):
            die(f"{path}: row {n} has {len(row)} columns, the header {len(header)}")
        try:
            qids.append(int(row[0]))
            labels.append(int(row[2]))
            xs.append([float(v) for v in row[4:]])
        except ValueError as e:
            die(f"{path}: row {n}: {e}")
    if not xs:
        die(f"{path}: no rows")
    return feature_set, names, np.array(qids), np.array(labels), np.array(xs, dtype=np.float32)


def groups(qids: np.ndarray) -> dict[int, np.ndarray]:
    g: dict[int, list[int]] = defaultdict(list)
    for i, q in enumerate(qids):
        g[int(q)].append(i)
    return {q: np.array(ix) for q, ix in g.items()}


def evaluate(probs, labels, by_q, rank_col, cut):
    """Hits@1 (executor order and model order) and mean F1 of the cut."""
    h_exec = h_model = 0
    f1 = 0.0
    for ix in by_q.values():
        ranks = rank_col[ix]
        y = labels[ix]
        h_exec += int(y[np.argmin(ranks)] == 1)
        # Best first; ties keep the executor's order (as the runtime does).
        order = sorted(range(len(ix)), key=lambda i: (-probs[ix][i], ranks[i]))
        h_model += int(y[order[0]] == 1)
        kept = [order[0]] + [i for i in order[1:] if probs[ix][i] >= cut]
        hit = sum(int(y[i]) for i in kept)
        gold = int(y.sum())
        if hit:
            p, r = hit / len(kept), hit / gold
            f1 += 2 * p * r / (p + r)
    n = max(len(by_q), 1)
    return h_exec / n, h_model / n, f1 / n


def fit(kind: str, x, y, seed: int):
    """A classifier on standardized features; the scaling is kept for the export."""
    mu, sd = x.mean(axis=0), x.std(axis=0)
    sd[sd == 0] = 1.0
    z = (x - mu) / sd
    if kind == "mlp":
        from sklearn.neural_network import MLPClassifier

        model = MLPClassifier(hidden_layer_sizes=(32,), alpha=1e-3, max_iter=300,
                              early_stopping=True, random_state=seed).fit(z, y)
    else:
        from sklearn.linear_model import LogisticRegression

        model = LogisticRegression(max_iter=2000, C=1.0).fit(z, y)
    model.kgbox_scale = (mu, sd)
    return model


def predict(model, x):
    mu, sd = model.kgbox_scale
    return model.predict_proba((x - mu) / sd)[:, 1]


def to_onnx(model, width: int):
    """Plain ONNX operators (MatMul, Add, Relu, Sigmoid, Concat), which every
    engine runs; the standardization is folded into the first layer."""
    import onnx
    from onnx import TensorProto, helper

    mu, sd = model.kgbox_scale
    if hasattr(model, "coefs_"):
        weights = [w.astype(np.float32) for w in model.coefs_]
        biases = [b.astype(np.float32) for b in model.intercepts_]
    else:
        weights = [model.coef_.T.astype(np.float32)]
        biases = [model.intercept_.astype(np.float32)]
    # (x - mu) / sd @ W + b  ==  x @ (W / sd) + (b - (mu / sd) @ W)
    w0 = weights[0].astype(np.float64)
    biases[0] = (biases[0] - (mu / sd) @ w0).astype(np.float32)
    weights[0] = (w0 / sd[:, None]).astype(np.float32)
    nodes, inits, x = [], [], "features"
    for i, (w, b) in enumerate(zip(weights, biases)):
        inits.append(helper.make_tensor(f"w{i}", TensorProto.FLOAT, list(w.shape), w.flatten().tolist()))
        inits.append(helper.make_tensor(f"b{i}", TensorProto.FLOAT, list(b.shape), b.tolist()))
        nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]))
        x = f"a{i}"
        if i < len(weights) - 1:
            nodes.append(helper.make_node("Relu", [x], [f"r{i}"]))
            x = f"r{i}"
    inits.append(helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0]))
    nodes += [
        helper.make_node("Sigmoid", [x], ["p1"]),
        helper.make_node("Sub", ["one", "p1"], ["p0"]),
        helper.make_node("Concat", ["p0", "p1"], ["probabilities"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "kgbox-reranker",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["n", width])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["n", 2])],
        inits,
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("features", type=Path, help="TSV from kgbox eval qa --export-features")
    ap.add_argument("--out", type=Path, required=True, help="PREFIX for PREFIX.onnx and PREFIX.json")
    ap.add_argument("--model", choices=["mlp", "logistic"], default="mlp",
                    help="a one-hidden-layer perceptron (default) or logistic regression")
    ap.add_argument("--candidates", type=int, default=20,
                    help="the executor's best N candidates per question are reranked (default 20)")
    ap.add_argument("--ablation", action="store_true",
                    help="also report held-out Hits@1 with the executor's columns only, "
                         "then adding the graph's, then the text similarity (nothing is written for these)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-rows", type=int, default=300_000,
                    help="questions are sampled down to about this many rows (default 300000)")
    args = ap.parse_args()
    if args.candidates < 1:
        die("--candidates must be at least 1")

    feature_set, names, qids, labels, x = read_rows(args.features)
    rank_col = x[:, names.index("exec_rank")]
    keep = rank_col < args.candidates
    qids, labels, x, rank_col = qids[keep], labels[keep], x[keep], rank_col[keep]
    by_q = groups(qids)
    rng = random.Random(args.seed)
    questions = sorted(by_q)
    if len(labels) > args.max_rows:
        frac = args.max_rows / len(labels)
        questions = [q for q in questions if rng.random() < frac]
    rng.shuffle(questions)
    n_val = max(1, len(questions) // 5)
    val_q, train_q = set(questions[:n_val]), questions[n_val:]
    if not train_q:
        die("too few questions to hold some out (need at least 2)")
    idx = lambda qs: np.concatenate([by_q[q] for q in qs])  # noqa: E731
    tr, va = idx(train_q), idx(sorted(val_q))
    if len(set(labels[tr])) < 2:
        die("the training rows have only one label; export questions whose candidates include gold answers and wrong ones")
    print(f"train.py: {len(train_q)} training and {len(val_q)} held-out questions, "
          f"{len(tr)} + {len(va)} rows, {int(labels.sum())} positive", file=sys.stderr)

    model = fit(args.model, x[tr], labels[tr], args.seed)
    pv = predict(model, x[va])
    va_groups = groups(qids[va])
    best = None
    for cut in [i / 20 for i in range(1, 20)]:
        h_exec, h_model, f1 = evaluate(pv, labels[va], va_groups, rank_col[va], cut)
        if best is None or f1 > best[3]:
            best = (cut, h_exec, h_model, f1)
    cut, h_exec, h_model, f1 = best
    print(f"train.py: held out: Hits@1 executor {h_exec:.4f}, reranked {h_model:.4f}; "
          f"F1 {f1:.4f} at cut {cut:.2f}", file=sys.stderr)
    # Permutation importance on the held-out rows: the drop in Hits@1 when a
    # column is shuffled.
    prng = np.random.default_rng(args.seed)
    drops = []
    for j, name in enumerate(names):
        xp = x[va].copy()
        xp[:, j] = prng.permutation(xp[:, j])
        _, h, _ = evaluate(predict(model, xp), labels[va], va_groups, rank_col[va], cut)
        drops.append((h_model - h, name))
    drops.sort(reverse=True)
    print("train.py: Hits@1 lost when a column is shuffled: "
          + ", ".join(f"{n} {d:+.4f}" for d, n in drops[:8]), file=sys.stderr)

    if args.ablation:
        groups_ = {
            "executor": ["exec_score", "exec_rank", "reciprocal_rank", "score_ratio", "candidates_log"],
        }
        groups_["executor+graph"] = [n for n in names if n != "text_similarity"]
        groups_["all"] = names
        for label, cols in groups_.items():
            ix = [names.index(c) for c in cols]
            m = fit(args.model, x[tr][:, ix], labels[tr], args.seed)
            _, h, f = evaluate(predict(m, x[va][:, ix]), labels[va], va_groups, rank_col[va], cut)
            print(f"train.py: ablation: {label:<15} Hits@1 {h:.4f}", file=sys.stderr)

    all_rows = idx(questions)
    model = fit(args.model, x[all_rows], labels[all_rows], args.seed)
    onnx_model = to_onnx(model, x.shape[1])

    import onnxruntime as ort

    sess = ort.InferenceSession(onnx_model.SerializeToString(), providers=["CPUExecutionProvider"])
    probe = x[va][:2000]
    got = sess.run(["probabilities"], {"features": probe})[0][:, 1]
    diff = float(np.abs(got - predict(model, probe)).max())
    if diff > 1e-4:
        die(f"the ONNX model differs from scikit-learn by {diff}")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    onnx_path, meta_path = Path(f"{args.out}.onnx"), Path(f"{args.out}.json")
    onnx_path.write_bytes(onnx_model.SerializeToString())
    meta = {
        "format": META_FORMAT,
        "feature_set": feature_set,
        "features": names,
        "input": "features",
        "output_column": 1,
        "candidates": args.candidates,
        "cut": cut,
        "model": {"mlp": "perceptron (32 hidden units)", "logistic": "logistic regression"}[args.model],
        "trained_questions": len(questions),
        "trained_rows": int(len(all_rows)),
        "text_similarity": bool(np.any(x[:, names.index("text_similarity")] != 0)),
        "validation": {
            "questions": len(val_q),
            "hits_at_1_executor": round(h_exec, 4),
            "hits_at_1_reranked": round(h_model, 4),
            "f1": round(f1, 4),
            "onnx_max_abs_diff": diff,
        },
    }
    meta_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {onnx_path} ({onnx_path.stat().st_size} bytes) and {meta_path}")
    print(json.dumps(meta["validation"]))


if __name__ == "__main__":
    main()
