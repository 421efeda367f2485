"""ULTRA link prediction on CoDEx-S (filtered ranking, both directions), zero-shot or fine-tuned.

    python eval_codex.py [--data $DATA/codex-s] [--ckpt $CKPT_DIR/ultra_3g.pth]

Paths default relative to the repository root (run from there, or pass them).
Expected for ultra_3g: MRR 0.4716, Hits@10 0.6682.
"""

import argparse
import os
import time
from collections import defaultdict

import torch

from ultra import GroupedEdges, build_relation_graph, entity_edges, load_model, read_triples

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(REPO, "..", "shared", "data", "codex-s"))
    ap.add_argument("--ckpt", default=os.path.join(REPO, "..", "shared", "models", "ultra", "ultra_3g.pth"))
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = default)")
    ap.add_argument("--split", choices=["test", "valid"], default="test", help="the triples to rank")
    ap.add_argument("--limit", type=int, default=0, help="evaluate only the first N triples of the split")
    ap.add_argument("--plain", action="store_true",
                    help="use the plain gather/scatter message passing (slower, same result)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    splits = {s: read_triples(os.path.join(args.data, f"{s}.txt")) for s in ("train", "valid", "test")}
    ents, rels = {}, {}
    for s in ("train", "valid", "test"):
        for h, _, t in splits[s]:
            ents.setdefault(h, len(ents))
            ents.setdefault(t, len(ents))
    for _, r, _ in splits["train"]:
        rels.setdefault(r, len(rels))
    n, nr = len(ents), len(rels)
    enc = {s: [(ents[h], rels[r], ents[t]) for h, r, t in splits[s]] for s in splits}
    print(f"entities {n} relations {nr} train {len(enc['train'])} {args.split} {len(enc[args.split])}")

    src, dst, typ = entity_edges(enc["train"], nr)
    rel_graph = build_relation_graph(src, dst, typ, n, 2 * nr)
    print(f"entity edges {len(src)} relation-graph edges {len(rel_graph[0])}")

    # filter: known true answers from train+valid+test
    tails, heads = defaultdict(set), defaultdict(set)
    for s in ("train", "valid", "test"):
        for h, r, t in enc[s]:
            tails[(h, r)].add(t)
            heads[(r, t)].add(h)

    plan = None if args.plain else GroupedEdges(src, dst, typ, n)
    model = load_model(args.ckpt)
    t0 = time.time()
    with torch.no_grad():
        # relation representations for every conditioning (direct) relation
        rel_reps_all = model.relation_reps(torch.arange(nr), 2 * nr, rel_graph)  # [R, 2R, D]

        test = enc[args.split][: args.limit] if args.limit else enc[args.split]
        # queries: (source entity, conditioning relation, query relation, target, filter set)
        queries = []
        for h, r, t in test:
            queries.append((h, r, r, t, tails[(h, r)]))  # (h, r, ?)
            queries.append((t, r, r + nr, h, heads[(r, t)]))  # (?, r, t) as (t, r+R, ?)
        queries.sort(key=lambda q: q[1])  # group by conditioning relation

        ranks = []
        for i in range(0, len(queries), args.batch):
            qb = queries[i: i + args.batch]
            b = len(qb)
            start = torch.tensor([q[0] for q in qb])
            cond = torch.tensor([q[1] for q in qb])
            qrel = torch.tensor([q[2] for q in qb])
            h_prob = torch.zeros(b, n)
            h_prob[torch.arange(b), start] = 1.0
            rr = rel_reps_all[cond]  # [b, 2R, D]
            query = rr[torch.arange(b), qrel]
            logits = model.entity_model(h_prob, query, rr, src, dst, typ, plan)
            for j, q in enumerate(qb):
                target, known = q[3], q[4]
                s = logits[j]
                mask = torch.ones(n, dtype=torch.bool)
                mask[list(known)] = False  # includes the target itself
                ranks.append(1 + int(((s >= s[target]) & mask).sum()))
            if (i // args.batch) % 20 == 0:
                print(f"  {len(ranks)}/{len(queries)} queries, {time.time() - t0:.0f}s", flush=True)

    rk = torch.tensor(ranks, dtype=torch.float64)
    print(f"count {len(ranks)}")
    print(f"MRR {float((1.0 / rk).mean()):.4f}")
    for k in (1, 3, 10):
        print(f"Hits@{k} {float((rk <= k).double().mean()):.4f}")
    print(f"time {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
