"""Parity fixtures for the Rust ULTRA runtime (PyTorch is the reference).

    python make_fixtures.py [--data $DATA/codex-s] [--ckpt-dir $CKPT_DIR]
                            [--out models/ultra/fixtures] [--ckpts ultra_3g ultraquery]

Graph: CoDEx-S train triples minus the 3 most frequent relations (otherwise the
densest core is countries with only 4 relations), restricted to a dense core of
~120 entities (peeling from the 600 highest-degree entities), keeping the 16 most
frequent relations among them; entities and relations relabelled densely in order
of first appearance.  See README.md for the JSON layout.
"""

import argparse
import json
import os
from collections import Counter

import torch

from ultra import build_relation_graph, checkpoint_path, entity_edges, load_model, read_triples

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def r7(x):
    """Round floats to 7 significant digits (recursively over lists)."""
    if isinstance(x, list):
        return [r7(v) for v in x]
    return float(f"{x:.7g}")


def dense_subgraph(triples, n_keep, n_rel, start=600):
    deg = Counter()
    for h, _, t in triples:
        deg[h] += 1
        deg[t] += 1
    keep = {e for e, _ in deg.most_common(start)}
    while True:
        sub = [(h, r, t) for h, r, t in triples if h in keep and t in keep and h != t]
        if len(keep) <= n_keep:
            break
        d = Counter({e: 0 for e in keep})
        for h, _, t in sub:
            d[h] += 1
            d[t] += 1
        # drop the entity with the fewest triples inside the set (ties by id for determinism)
        worst = min(keep, key=lambda e: (d[e], e))
        keep.remove(worst)
    rel_count = Counter(r for _, r, _ in sub)
    top = {r for r, _ in sorted(rel_count.items(), key=lambda kv: (-kv[1], kv[0]))[:n_rel]}
    sub = sorted(set((h, r, t) for h, r, t in sub if r in top))
    ents, rels = {}, {}
    out = []
    for h, r, t in sub:
        hi = ents.setdefault(h, len(ents))
        ri = rels.setdefault(r, len(rels))
        ti = ents.setdefault(t, len(ents))
        out.append((hi, ri, ti))
    return out, len(ents), len(rels)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(REPO, "..", "shared", "data", "codex-s"))
    ap.add_argument("--ckpt-dir", default=os.path.join(REPO, "..", "shared", "models", "ultra"))
    ap.add_argument("--out", default=os.path.join(HERE, "fixtures"))
    ap.add_argument("--ckpts", nargs="+", default=["ultra_3g", "ultraquery"])
    ap.add_argument("--ckpt-files", nargs="+", default=[],
                    help="checkpoint files instead of --ckpts (name: the file name without .pth)")
    ap.add_argument("--entities", type=int, default=120)
    ap.add_argument("--relations", type=int, default=16)
    ap.add_argument("--drop-top", type=int, default=3,
                    help="leave out the N most frequent relations of the train split")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    train = read_triples(os.path.join(args.data, "train.txt"))
    freq = Counter(r for _, r, _ in train)
    dropped = {r for r, _ in sorted(freq.items(), key=lambda kv: (-kv[1], kv[0]))[: args.drop_top]}
    train = [x for x in train if x[1] not in dropped]
    triples, n, r = dense_subgraph(train, args.entities, args.relations)
    nr = 2 * r
    src, dst, typ = entity_edges(triples, r)
    rs, rd, rt = build_relation_graph(src, dst, typ, n, nr)
    print(f"fixture graph: {n} entities, {r} relations, {len(triples)} triples, "
          f"{len(src)} edges, {len(rs)} relation-graph edges")

    # cases: deterministic choices
    g = torch.Generator().manual_seed(7)
    h0, r0, t0 = triples[len(triples) // 3]
    h1, r1, t1 = triples[(2 * len(triples)) // 3]
    fuzzy = []
    for k, (c, cnt) in enumerate(((triples[len(triples) // 5][1], 4), (triples[len(triples) // 2][1] + r, 5))):
        idx = torch.randperm(n, generator=g)[:cnt]
        hp = torch.zeros(n)
        hp[idx] = torch.rand(cnt, generator=g) * 0.9 + 0.1
        hp[idx[0]] = 1.0
        fuzzy.append((c, c, hp))
    cases = []
    one = torch.zeros(n); one[h0] = 1.0
    cases.append((r0, r0, one))  # tail query (h0, r0, ?)
    one = torch.zeros(n); one[t1] = 1.0
    cases.append((r1, r1 + r, one))  # head query (?, r1, t1) as (t1, r1 + R, ?)
    cases += fuzzy

    if args.ckpt_files:
        jobs = [(os.path.basename(p).removesuffix(".pth"), p) for p in args.ckpt_files]
    else:
        jobs = [(name, checkpoint_path(args.ckpt_dir, name)) for name in args.ckpts]
    for name, ckpt in jobs:
        model = load_model(ckpt)
        with torch.no_grad():
            boundary = torch.eye(nr)
            rel_reps = model.relation_model(boundary, rs, rd, rt)  # [NR(cond), NR, D]
            out_cases = []
            for c, q, hp in cases:
                rr = rel_reps[c: c + 1]
                logits = model.entity_model(hp[None], rr[:, q], rr, src, dst, typ)[0]
                out_cases.append({"condition": int(c), "query_relation": int(q),
                                  "h_prob": r7(hp.tolist()), "logits": r7(logits.tolist())})
        fx = {
            "checkpoint": name,
            "num_entities": n,
            "num_relations": r,
            "dim": 64,
            "triples": [list(t) for t in triples],
            "relation_graph": {"src": rs.tolist(), "dst": rd.tolist(), "type": rt.tolist()},
            "edges": {"src": src.tolist(), "dst": dst.tolist(), "type": typ.tolist()},
            "rel_reps": r7(rel_reps.tolist()),
            "cases": out_cases,
        }
        path = os.path.join(args.out, f"{name}.parity.json")
        with open(path, "w") as f:
            json.dump(fx, f, separators=(",", ":"))
            f.write("\n")
        print(f"{path}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
