#!/usr/bin/env python3
"""PyTorch CPU reference of kgbox's neural query executor, for chain queries.

Same pipeline as `runtime/neural` (seppr.rs, subgraph.rs, projector.rs,
model.rs), written with torch only:

  ids        entity / relation ids = sorted order of their names (byte order),
             triples deduplicated and sorted by (h, r, t), as the packager does
  rel reps   the UltraQuery relation model over ULTRA's relation graph of the
             whole KB, once per conditioning relation (2R of them); the
             packager stores the same table in the bundle
  per projection `x -> r` (r + R for a relation name ending in `_inv`):
    SEPPR    x0 = memberships / sum; T=5 times x <- 0.85 diffuse(x) + 0.15 x0,
             diffuse spreads each node's mass evenly over all its edges in
             both directions (degree = out + in, every relation); the top-k
             nodes by mass (ties by id, only nodes with mass > 0), seeds kept
    subgraph facts with both ends kept: edges (t -> h, r), then (h -> t, r + R)
    model    entity model, batch 1: h_prob = memberships on the subgraph,
             query = rel_reps[r][r], rel_reps conditioned on r
    output   sigmoid, memberships < 1e-4 dropped, the query's anchors removed
  answers    ranked by membership (ties by id); Hits@1 against the gold names

Timed per query: SEPPR + subgraph + model + sigmoid for every projection
(data loading and the relation model are not timed). Prints one JSON line:
{"p50_ms", "p95_ms", "hits_at_1", "n", "errors", "seppr_k", "threads"}.

    python benches/neural/torch_reference.py --kb $DATA/metaqa/kb_half.tsv \
        --gold gold-2.tsv --sample 100 --seppr-k 500 --threads 1
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys
import time

import warnings

import torch

warnings.filterwarnings("ignore", message="Sparse")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
MIN_MEMBERSHIP = 1e-4


def load_ultra(path: str):
    spec = importlib.util.spec_from_file_location("ultra", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def sample_evenly(items, n):
    """kgbox's --sample rule: keep item i when (i * n) % len < n."""
    ln = len(items)
    if n <= 0 or n >= ln:
        return items
    return [x for i, x in enumerate(items) if (i * n) % ln < n]


def percentile(sorted_vals, p):
    """The p-th percentile (p in percent) of ascending values by kgbox's rule.

    Nearest rank, as kgbox_protocol::stats::percentile (behind `kgbox eval
    queries`, whose p50 bench.sh divides by this one): the value at 1-based
    rank ceil(p * n / 100), clamped to 1..n; 0.0 for no values.
    """
    if not sorted_vals:
        return 0.0
    rank = min(max(math.ceil(p * len(sorted_vals) / 100.0), 1), len(sorted_vals))
    return sorted_vals[rank - 1]


def read_gold(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n").rstrip("\r")
            if not line.strip() or line.startswith("#"):
                continue
            query, answers = line.split("\t", 1)
            out.append((query, {a for a in answers.split("|") if a}))
    return out


def parse_chain(text):
    """`"Anchor" -> rel -> rel_inv` -> (anchor name, [relation names])."""
    text = text.strip()
    if not text.startswith('"'):
        raise ValueError(f"not a chain query: {text}")
    i, name = 1, []
    while i < len(text) and text[i] != '"':
        if text[i] == "\\" and i + 1 < len(text):
            i += 1
        name.append(text[i])
        i += 1
    rest = text[i + 1:].strip()
    rels = [r.strip() for r in rest.split("->")]
    if not rels or rels[0] != "" or any(not r for r in rels[1:]):
        raise ValueError(f"not a chain query: {text}")
    return "".join(name), rels[1:]


class Graph:
    def __init__(self, kb_path, ultra):
        raw = ultra.read_triples(kb_path)
        ents = sorted({t[0] for t in raw} | {t[2] for t in raw},
                      key=lambda s: s.encode("utf-8"))
        rels = sorted({t[1] for t in raw}, key=lambda s: s.encode("utf-8"))
        self.ent_names = ents
        self.ent_id = {e: i for i, e in enumerate(ents)}
        self.rel_id = {r: i for i, r in enumerate(rels)}
        self.n = len(ents)
        self.r = len(rels)
        facts = sorted({(self.ent_id[h], self.rel_id[r], self.ent_id[t]) for h, r, t in raw})
        f = torch.tensor(facts, dtype=torch.long)
        self.h, self.rel, self.t = f[:, 0].contiguous(), f[:, 1].contiguous(), f[:, 2].contiguous()
        # SEPPR transition: every fact is an edge h->t and t->h; mass of u
        # spreads over deg(u) = out + in edges.
        deg = torch.bincount(torch.cat([self.h, self.t]), minlength=self.n).float()
        src = torch.cat([self.h, self.t])
        dst = torch.cat([self.t, self.h])
        val = 1.0 / deg[src]
        self.diffuse = torch.sparse_coo_tensor(
            torch.stack([dst, src]), val, (self.n, self.n)).coalesce().to_sparse_csr()


def seppr(g: Graph, seeds: torch.Tensor, weights: torch.Tensor, k: int,
          alpha=0.85, iterations=5) -> torch.Tensor:
    w = weights.clamp(min=0)
    x0 = torch.zeros(g.n)
    x0.index_add_(0, seeds, w / w.sum())
    x = x0.clone()
    for _ in range(iterations):
        x = alpha * (g.diffuse @ x.unsqueeze(1)).squeeze(1) + (1 - alpha) * x0
    reached = (x > 0).nonzero(as_tuple=True)[0]
    if len(reached) > k:
        order = torch.sort(x[reached], descending=True, stable=True).indices[:k]
        reached = reached[order]
    return torch.unique(torch.cat([reached, seeds]))  # sorted


def induced(g: Graph, nodes: torch.Tensor):
    local = torch.full((g.n,), -1, dtype=torch.long)
    local[nodes] = torch.arange(len(nodes))
    lh, lt = local[g.h], local[g.t]
    keep = (lh >= 0) & (lt >= 0)
    lh, lt, r = lh[keep], lt[keep], g.rel[keep]
    return torch.cat([lt, lh]), torch.cat([lh, lt]), torch.cat([r, r + g.r])


@torch.no_grad()
def project(g, model, reps, members: dict, relation: int, k: int) -> dict:
    seeds = torch.tensor(list(members.keys()), dtype=torch.long)
    weights = torch.tensor(list(members.values()), dtype=torch.float32)
    nodes = seppr(g, seeds, weights, k)
    src, dst, typ = induced(g, nodes)
    h_prob = torch.zeros(g.n)
    h_prob[seeds] = weights
    h_prob = h_prob[nodes].unsqueeze(0)
    rel_reps = reps[relation].unsqueeze(0)  # [1, 2R, D]
    query = rel_reps[:, relation]  # [1, D]
    logits = model.entity_model(h_prob, query, rel_reps, src, dst, typ)[0]
    p = torch.sigmoid(logits)
    keep = p >= MIN_MEMBERSHIP
    return dict(zip(nodes[keep].tolist(), p[keep].tolist()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kb", default="../shared/data/metaqa/kb_half.tsv")
    ap.add_argument("--gold", required=True)
    ap.add_argument("--ckpt", default="../shared/models/ultra/ultraquery.pth")
    ap.add_argument("--ultra", default=os.path.join(REPO, "models", "ultra", "ultra.py"))
    ap.add_argument("--sample", type=int, default=100)
    ap.add_argument("--seppr-k", type=int, default=500)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    ultra = load_ultra(args.ultra)
    g = Graph(args.kb, ultra)
    model = ultra.load_model(args.ckpt)
    with torch.no_grad():
        src, dst, typ = ultra.entity_edges(
            torch.stack([g.h, g.rel, g.t], 1).tolist(), g.r)
        rel_graph = ultra.build_relation_graph(src, dst, typ, g.n, 2 * g.r)
        reps = model.relation_reps(torch.arange(2 * g.r), 2 * g.r, rel_graph)  # [2R, 2R, D]

    gold = sample_evenly(read_gold(args.gold), args.sample)
    latencies, hits, errors = [], 0, 0
    for query, answers in gold:
        try:
            anchor, chain = parse_chain(query)
            a = g.ent_id[anchor]
            rels = []
            for name in chain:
                inv = name.endswith("_inv") and name not in g.rel_id
                base = name[: -len("_inv")] if inv else name
                rels.append(g.rel_id[base] + (g.r if inv else 0))
        except (KeyError, ValueError):
            errors += 1
            continue
        t0 = time.perf_counter()
        x = {a: 1.0}
        for r in rels:
            if not x:
                break
            x = project(g, model, reps, x, r, args.seppr_k)
            x.pop(a, None)  # the anchors of the input are never answers
        latencies.append((time.perf_counter() - t0) * 1e3)
        if x:
            top = min(x.items(), key=lambda p: (-p[1], p[0]))[0]
            hits += g.ent_names[top] in answers
    latencies.sort()
    n = max(len(gold), 1)
    print(json.dumps({
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "hits_at_1": hits / n,
        "n": len(gold),
        "errors": errors,
        "seppr_k": args.seppr_k,
        "threads": args.threads,
    }))


if __name__ == "__main__":
    sys.exit(main())
