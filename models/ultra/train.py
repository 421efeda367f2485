"""Fine-tune UltraQuery on one graph (pack-time training of a bundle's executor).

    python models/ultra/train.py --dir TRAIN_DIR [--init $CKPT_DIR/ultraquery.pth]
        [--steps N | --budget 30m] [--seed 0] [--out PREFIX]

TRAIN_DIR holds the inputs, written by `kgbox-pack train` (or by hand):
  * `triples.tsv`   the graph, `head<TAB>relation<TAB>tail` (the bundle's own graph);
  * `examples.jsonl` (optional) supervised chain queries, one JSON object per line:
    {"anchor": NAME, "path": [[RELATION, INVERSE], ...], "answers": [NAME, ...]}.
    Their answers may hold facts the graph lacks: that is what the model must learn.
and receives `state.pt` (resumable training state), `progress.json` and the result.

What one step trains (the runtime's neural projection, exactly as it runs there):
a batch of queries, each a chain of projections. For every projection the
subgraph is SEPPR's top `--seppr-k` nodes around the current fuzzy set
(kgbox-neural's seppr.rs: alpha 0.85, 5 steps), the entity model runs on the
induced subgraph with the start set as h_prob, conditioned on the projected
relation (UltraQuery), and a sigmoid gives the next fuzzy set; anchors are
dropped from every hop's output. The loss is binary cross-entropy on the last
hop, with self-adversarial weights on the negatives (temperature 1), as ULTRA.
Two kinds of queries:
  * link prediction on the graph's own triples: for a query (h, r, ?) the
    sampled target edge, and each other edge (h, r, *) with probability 1/2,
    is removed from the message-passing graph; every known tail is a positive;
  * the examples' chains (when given), with their answer sets as positives.

Deterministic: the batch of step s is drawn from an RNG seeded with (seed, s)
and the learning rate is constant, so the model after s steps does not depend
on the budget, on interruptions or on resuming (same torch build and thread
count). `--budget` stops at the last whole step before the wall-clock limit;
the record says how many steps ran, and `--steps` with that number redoes it.
Interrupt with Ctrl-C (or SIGTERM) at any time: the state is saved and the
next run with the same --dir resumes.

Output: PREFIX.relation.onnx, PREFIX.entity.onnx (export.py's contract,
checked against PyTorch with onnxruntime), PREFIX.train.json (the training
record) and PREFIX.pth (the fine-tuned weights).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import signal
import sys
import time

import warnings

import numpy as np
import torch
from torch import nn

from ultra import DIM, Ultra, _layer_norm, build_relation_graph, load_state_dict

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
STATE_VERSION = 1
# Where training runs: the CPU, or the GPU when torch sees one (set in `run`).
DEV = torch.device("cpu")


def dev(x: np.ndarray) -> torch.Tensor:
    """A numpy array as a tensor on DEV."""
    return torch.from_numpy(x).to(DEV)


class TrainError(Exception):
    """Bad training input; the message names the file and the problem."""


# ---------------------------------------------------------------- inputs

class Graph:
    """Triples with dense ids, and what SEPPR and the subgraphs need."""

    def __init__(self, triples: np.ndarray, entities: list[str], relations: list[str]):
        self.triples = triples  # [M, 3] int64 (h, r, t)
        self.entities = entities
        self.relations = relations
        self.n = len(entities)
        self.r = len(relations)
        self.index = {name: i for i, name in enumerate(entities)}
        h, r, t = triples[:, 0], triples[:, 1], triples[:, 2]
        # SEPPR diffusion: mass spreads evenly over a node's edges in both directions.
        deg = np.bincount(h, minlength=self.n) + np.bincount(t, minlength=self.n)
        rows = np.concatenate([t, h])  # mass of column node moves into row node
        cols = np.concatenate([h, t])
        vals = 1.0 / np.maximum(deg[cols], 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.diffuse = self._diffusion(rows, cols, vals)
        # (h, r) -> tails and (t, r) -> heads, for targets and filtering.
        self.tails: dict[tuple[int, int], np.ndarray] = {}
        order = np.lexsort((t, r, h))
        self._group(h[order], r[order], t[order], order, self.tails)
        self.heads: dict[tuple[int, int], np.ndarray] = {}
        order = np.lexsort((h, r, t))
        self._group(t[order], r[order], h[order], order, self.heads)
        src, dst, typ = (torch.cat([torch.from_numpy(t), torch.from_numpy(h)]),
                         torch.cat([torch.from_numpy(h), torch.from_numpy(t)]),
                         torch.cat([torch.from_numpy(r), torch.from_numpy(r) + self.r]))
        self.rel_graph = tuple(t.to(DEV) for t in
                               build_relation_graph(src, dst, typ, self.n, 2 * self.r))

    def _diffusion(self, rows, cols, vals):
        return torch.sparse_coo_tensor(
            torch.from_numpy(np.stack([rows, cols])), torch.from_numpy(vals).float(),
            (self.n, self.n)).coalesce().to_sparse_csr().to(DEV)

    @staticmethod
    def _group(a, b, c, order, out):
        if len(a) == 0:
            return
        key = a * (b.max() + 1) + b
        cuts = np.flatnonzero(np.diff(key)) + 1
        for lo, hi in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [len(a)]])):
            out[(int(a[lo]), int(b[lo]))] = np.stack([c[lo:hi], order[lo:hi]], axis=1)

    def neighbours(self, e: int, rel: int) -> np.ndarray:
        """[k, 2] (other end, triple index) of (e, rel, ?) for rel < R, (?, rel - R, e) else."""
        if rel < self.r:
            return self.tails.get((e, rel), np.zeros((0, 2), dtype=np.int64))
        return self.heads.get((e, rel - self.r), np.zeros((0, 2), dtype=np.int64))


def read_graph(path: str) -> Graph:
    if not os.path.isfile(path):
        raise TrainError(f"{path}: no such file (the graph to train on)")
    names: dict[str, int] = {}
    rels: dict[str, int] = {}
    rows = []
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            parts = line.split("\t")
            if len(parts) != 3 or not all(parts):
                raise TrainError(f"{path}:{no}: expected head<TAB>relation<TAB>tail, got {line[:80]!r}")
            h, r, t = parts
            rows.append((names.setdefault(h, len(names)), rels.setdefault(r, len(rels)),
                         names.setdefault(t, len(names))))
    if not rows:
        raise TrainError(f"{path}: the graph has no triples; there is nothing to train on")
    entities = [""] * len(names)
    for k, v in names.items():
        entities[v] = k
    relations = [""] * len(rels)
    for k, v in rels.items():
        relations[v] = k
    triples = np.asarray(rows, dtype=np.int64)
    triples = np.unique(triples, axis=0)
    return Graph(triples, entities, relations)


def read_examples(path: str, graph: Graph) -> tuple[list[tuple[int, list[int], np.ndarray]], dict]:
    """Chains (anchor, [relation index in 0..2R), answers) and counts of what was skipped."""
    out: list[tuple[int, list[int], np.ndarray]] = []
    skipped = {"unknown_anchor": 0, "unknown_relation": 0, "no_known_answer": 0}
    if not os.path.exists(path):
        return out, skipped
    rel_index = {name: i for i, name in enumerate(graph.relations)}
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                anchor, path_, answers = obj["anchor"], obj["path"], obj["answers"]
                if not isinstance(anchor, str) or not isinstance(answers, list) or not path_:
                    raise ValueError("anchor must be a string, path a non-empty list, answers a list")
                steps = [(str(p[0]), bool(p[1])) for p in path_]
            except (ValueError, KeyError, TypeError, IndexError) as e:
                raise TrainError(f"{path}:{no}: not an example "
                                 f"({{\"anchor\", \"path\": [[relation, inverse], ...], \"answers\"}}): {e}")
            if anchor not in graph.index:
                skipped["unknown_anchor"] += 1
                continue
            if any(name not in rel_index for name, _ in steps):
                skipped["unknown_relation"] += 1
                continue
            ans = np.asarray(sorted({graph.index[a] for a in answers if a in graph.index}),
                             dtype=np.int64)
            if len(ans) == 0:
                skipped["no_known_answer"] += 1
                continue
            rels = [rel_index[name] + (graph.r if inv else 0) for name, inv in steps]
            out.append((graph.index[anchor], rels, ans))
    return out, skipped


# ---------------------------------------------------------------- subgraphs

def seppr(graph: Graph, seeds: list[tuple[np.ndarray, np.ndarray]], k: int,
          alpha: float = 0.85, steps: int = 5) -> list[np.ndarray]:
    """SEPPR top-k nodes (sorted global ids) for each (ids, weights) seed set; seeds are kept."""
    x0 = torch.zeros(graph.n, len(seeds), device=DEV)
    for j, (ids, w) in enumerate(seeds):
        w = np.maximum(w, 0)
        x0[dev(ids), j] = dev((w / max(w.sum(), 1e-30)).astype(np.float32))
    x = x0.clone()
    for _ in range(steps):
        x = alpha * (graph.diffuse @ x) + (1 - alpha) * x0
    out = []
    kk = min(k, graph.n)
    vals, idx = torch.topk(x, kk, dim=0)
    vals, idx = vals.cpu(), idx.cpu()
    for j, (ids, _) in enumerate(seeds):
        keep = idx[:, j][vals[:, j] > 0].numpy()
        out.append(np.union1d(keep, ids))
    return out


class Packed:
    """Several queries' subgraphs as one disjoint graph (node-major, no batch axis)."""

    def __init__(self, graph: Graph, nodes: list[np.ndarray], hidden: list[np.ndarray]):
        tri = graph.triples
        srcs, dsts, typs, qs, offsets = [], [], [], [], []
        off = 0
        member = np.full(graph.n, -1, dtype=np.int64)
        for q, (nd, hid) in enumerate(zip(nodes, hidden)):
            member[nd] = np.arange(len(nd))
            mask = (member[tri[:, 0]] >= 0) & (member[tri[:, 2]] >= 0)
            if len(hid):
                mask[hid] = False
            sel = tri[mask]
            h, r, t = member[sel[:, 0]] + off, sel[:, 1], member[sel[:, 2]] + off
            srcs += [t, h]
            dsts += [h, t]
            typs += [r, r + graph.r]
            qs.append(np.full(2 * len(sel), q, dtype=np.int64))
            member[nd] = -1
            offsets.append(off)
            off += len(nd)
        self.nodes = nodes
        self.offsets = offsets
        self.total = off
        self.src = dev(np.concatenate(srcs))
        self.dst = dev(np.concatenate(dsts))
        self.typ = dev(np.concatenate(typs))
        self.edge_query = dev(np.concatenate(qs))
        self.node_query = dev(np.concatenate(
            [np.full(len(nd), q, dtype=np.int64) for q, nd in enumerate(nodes)]))


def entity_forward(model: Ultra, packed: Packed, h_prob: torch.Tensor,
                   query: torch.Tensor, rel_reps: torch.Tensor) -> torch.Tensor:
    """EntityNBFNet over a packed batch: h_prob [Ntot], query [Q, D], rel_reps [Q, NR, D] -> logits [Ntot].

    The same function as ultra.py's EntityNBFNet applied to each query's own subgraph."""
    m = model.entity_model
    nq = query.index_select(0, packed.node_query)  # [Ntot, D]
    b = h_prob.unsqueeze(-1) * nq
    x = b
    nr = rel_reps.shape[1]
    edge_rel = packed.edge_query * nr + packed.typ
    for layer in m.layers:
        rel = layer.relation_projection(rel_reps).reshape(-1, rel_reps.shape[-1])  # [Q*NR, D]
        msg = x.index_select(0, packed.src) * rel.index_select(0, edge_rel)
        agg = b.index_add(0, packed.dst, msg)
        out = layer.linear(torch.cat([x, agg], dim=-1))
        x = torch.relu(_layer_norm(out, layer.layer_norm)) + x
    return m.mlp(torch.cat([x, nq], dim=-1)).squeeze(-1)


def relation_forward(model: Ultra, conditions: torch.Tensor, nr: int, rel_graph) -> torch.Tensor:
    boundary = torch.zeros(len(conditions), nr, device=DEV)
    boundary[torch.arange(len(conditions), device=DEV), conditions] = 1.0
    return model.relation_model(boundary, *rel_graph)


# ---------------------------------------------------------------- one batch

MIN_MEMBERSHIP = 1e-4  # the runtime drops memberships below this (projector.rs)


def run_chains(model: Ultra, graph: Graph, queries, k: int, direct: bool = False):
    """Runs a batch of chains hop by hop; returns the last hop's Packed and logits.

    queries: list of (anchor, [relation], hidden triple indices for the first hop).
    Each projection conditions the relation model on its own relation (UltraQuery),
    or with `direct` on the direct relation r of r and r + R (ULTRA's link prediction,
    what `kgbox eval kgc` scores)."""
    nr = 2 * graph.r
    conditioned = (lambda r: r % graph.r) if direct else (lambda r: r)
    cond = sorted({conditioned(r) for _, rels, _ in queries for r in rels})
    reps_all = relation_forward(model, torch.tensor(cond, device=DEV), nr, graph.rel_graph)  # [C, NR, D]
    where = {r: i for i, r in enumerate(cond)}
    fuzzy = [(np.array([a]), torch.ones(1, device=DEV)) for a, _, _ in queries]  # (global ids, memberships)
    hops = max(len(rels) for _, rels, _ in queries)
    packed = logits = None
    for hop in range(hops):
        active = [i for i, (_, rels, _) in enumerate(queries) if hop < len(rels)]
        assert len(active) == len(queries), "a batch holds chains of one length"
        seeds = [(fuzzy[i][0], fuzzy[i][1].detach().cpu().numpy()) for i in active]
        nodes = seppr(graph, seeds, k)
        hidden = [queries[i][2] if hop == 0 else np.zeros(0, dtype=np.int64) for i in active]
        packed = Packed(graph, nodes, hidden)
        h_prob = torch.zeros(packed.total, device=DEV)
        for j, i in enumerate(active):
            ids, mem = fuzzy[i]
            pos = np.searchsorted(nodes[j], ids)
            h_prob = h_prob.index_put((dev(pos + packed.offsets[j]),), mem,
                                      accumulate=True)
        rels = [queries[i][1][hop] for i in active]
        idx = torch.tensor([where[conditioned(r)] for r in rels], device=DEV)
        rel_reps = reps_all.index_select(0, idx)
        query = rel_reps[torch.arange(len(rels), device=DEV), torch.tensor(rels, device=DEV)]
        logits = entity_forward(model, packed, h_prob, query, rel_reps)
        if hop + 1 < hops:
            probs = torch.sigmoid(logits)
            for j, i in enumerate(active):
                lo = packed.offsets[j]
                p = probs[lo:lo + len(nodes[j])]
                keep = (p.detach() >= MIN_MEMBERSHIP).cpu().numpy() & (nodes[j] != queries[i][0])
                fuzzy[i] = (nodes[j][keep], p[dev(keep)])
    return packed, logits


def chain_loss(packed: Packed, logits: torch.Tensor, queries, answers, temperature=1.0,
               negatives: int = 0, rng: np.random.Generator | None = None, ignore=None):
    """BCE on the last hop: every answer is a positive; the other nodes of the
    subgraph (all of them, or `negatives` drawn uniformly, as ULTRA samples them)
    are negatives with self-adversarial weights. `ignore[j]` (true answers that
    are neither) is kept out of both."""
    losses = []
    for j, (anchor, _, _) in enumerate(queries):
        nd = packed.nodes[j]
        lo = packed.offsets[j]
        lg = logits[lo:lo + len(nd)]
        pos = np.isin(nd, answers[j])
        if not pos.any():
            continue
        neg = ~pos & (nd != anchor)
        if ignore is not None and len(ignore[j]):
            neg &= ~np.isin(nd, ignore[j])
        if negatives and rng is not None and neg.sum() > negatives:
            idx = np.flatnonzero(neg)
            neg = np.zeros_like(neg)
            neg[rng.choice(idx, size=negatives, replace=False)] = True
        lp = lg[dev(pos)]
        ln = lg[dev(neg)]
        loss = -nn.functional.logsigmoid(lp).mean()
        if len(ln):
            w = torch.softmax(ln.detach() / temperature, dim=0)
            loss = loss - (w * nn.functional.logsigmoid(-ln)).sum()
        losses.append(loss)
    if not losses:
        return None
    return torch.stack(losses).mean()


def sample_link(graph: Graph, rng: np.random.Generator, size: int, hide_others: float = 0.5,
                hidden_only: bool = False):
    """Link-prediction queries: (anchor, [rel], hidden triples), answers, ignored.

    The answers are every known tail, or with `hidden_only` the removed ones
    (ULTRA's target), the visible tails then being ignored by the loss."""
    queries, answers, ignore = [], [], []
    picks = rng.integers(0, len(graph.triples), size=size)
    flips = rng.random(size) < 0.5
    for i, flip in zip(picks, flips):
        h, r, t = graph.triples[i]
        anchor, rel = (int(t), int(r) + graph.r) if flip else (int(h), int(r))
        nb = graph.neighbours(anchor, rel)  # [k, 2] (answer, triple index)
        drop = rng.random(len(nb)) < hide_others
        drop |= nb[:, 1] == i
        queries.append((anchor, [rel], nb[drop, 1]))
        if hidden_only:
            answers.append(nb[drop, 0])
            ignore.append(nb[~drop, 0])
        else:
            answers.append(nb[:, 0])
            ignore.append(np.zeros(0, dtype=np.int64))
    return queries, answers, ignore


def sample_examples(examples, rng: np.random.Generator, size: int):
    """A batch of example chains of one length (the length drawn by frequency)."""
    lengths = np.array([len(rels) for _, rels, _ in examples])
    hop = lengths[rng.integers(0, len(examples))]
    pool = np.flatnonzero(lengths == hop)
    picks = rng.choice(pool, size=min(size, len(pool)), replace=False)
    queries = [(examples[i][0], examples[i][1], np.zeros(0, dtype=np.int64)) for i in picks]
    return queries, [examples[i][2] for i in picks], None


def batch_for(step: int, seed: int, graph: Graph, examples, args):
    """The batch of `step`: (queries, answers, ignored, whether they are link-prediction queries)."""
    rng = np.random.default_rng([seed, step])
    if examples and rng.random() < args.example_share:
        return (*sample_examples(examples, rng, args.batch), False)
    return (*sample_link(graph, rng, args.batch, args.hide_others,
                         args.link_targets == "hidden"), True)


# ---------------------------------------------------------------- evaluation

@torch.no_grad()
def hits_at_1(model: Ultra, graph: Graph, examples, k: int, batch: int = 32) -> dict:
    """Hits@1 of the neural chain on `examples`, per chain length."""
    by_len: dict[int, list] = {}
    for ex in examples:
        by_len.setdefault(len(ex[1]), []).append(ex)
    out = {}
    for hops, exs in sorted(by_len.items()):
        hit = 0
        for lo in range(0, len(exs), batch):
            part = exs[lo:lo + batch]
            queries = [(a, rels, np.zeros(0, dtype=np.int64)) for a, rels, _ in part]
            packed, logits = run_chains(model, graph, queries, k)
            for j, (anchor, _, ans) in enumerate(part):
                nd = packed.nodes[j]
                lg = logits[packed.offsets[j]:packed.offsets[j] + len(nd)].clone()
                lg[dev(nd == anchor)] = -math.inf
                hit += int(nd[int(torch.argmax(lg))] in set(ans.tolist()))
        out[f"{hops}"] = round(100.0 * hit / len(exs), 2)
    return out


# ---------------------------------------------------------------- driver

def parse_budget(text: str | None) -> float | None:
    if text is None:
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*", text)
    if not m:
        raise TrainError(f"--budget {text!r}: expected a duration like 90s, 30m or 2h")
    value = float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]
    if value <= 0:
        raise TrainError("--budget must be positive")
    return value


def file_digest(paths: list[str]) -> str:
    h = hashlib.sha256()
    for p in paths:
        if os.path.exists(p):
            with open(p, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()


def log(msg: str) -> None:
    print(f"train: {msg}", file=sys.stderr, flush=True)


def fmt_time(s: float) -> str:
    s = int(max(s, 0))
    return f"{s // 3600}h{s % 3600 // 60:02d}m{s % 60:02d}s" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="training folder (inputs, state, progress)")
    ap.add_argument("--init", default=os.path.join(REPO, "..", "shared", "models", "ultra", "ultraquery.pth"),
                    help="checkpoint to start from (UltraQuery)")
    ap.add_argument("--out", help="output prefix (default DIR/trained)")
    ap.add_argument("--steps", type=int, help="steps to train (the budget may stop earlier)")
    ap.add_argument("--budget", help="wall-clock limit for training, e.g. 30m (default: no limit)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=16, help="queries per step")
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--seppr-k", type=int, default=500, help="subgraph size (the runtime's seppr_k)")
    ap.add_argument("--hide-others", type=float, default=0.5,
                    help="link prediction: chance that each other known tail of the query is also "
                         "removed from the message-passing graph (0: only the target, as ULTRA)")
    ap.add_argument("--negatives", type=int, default=0,
                    help="negatives per query, drawn uniformly from the subgraph's other nodes "
                         "(0: all of them; ULTRA samples 256)")
    ap.add_argument("--link-targets", choices=["all", "hidden"], default="all",
                    help="link prediction: every known tail is a positive (all), or only the "
                         "removed ones, the visible tails being left out of the loss (hidden, "
                         "as ULTRA trains)")
    ap.add_argument("--example-share", type=float, default=0.5,
                    help="share of steps that train on the examples (when there are any)")
    ap.add_argument("--validate", type=int, default=300,
                    help="examples held back to report Hits@1 before and after (0: none)")
    ap.add_argument("--condition", choices=["relation", "direct"], default="relation",
                    help="link-prediction queries condition the relation model on the projected "
                         "relation (UltraQuery, what kgbox's executors do) or on its direct "
                         "relation (ULTRA's link prediction, what `kgbox eval kgc` scores)")
    ap.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                    help="auto: the GPU when torch sees one, else the CPU")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--save-every", type=float, default=60.0, help="seconds between saved states")
    args = ap.parse_args(argv)
    try:
        return run(args)
    except TrainError as e:
        print(f"train: error: {e}", file=sys.stderr)
        return 2


def run(args) -> int:
    budget = parse_budget(args.budget)
    if args.steps is None and budget is None:
        raise TrainError("give --steps, --budget or both")
    if args.steps is not None and args.steps < 0:
        raise TrainError("--steps must be >= 0")
    if args.negatives < 0:
        raise TrainError("--negatives must be >= 0")
    if not 0 <= args.example_share <= 1:
        raise TrainError("--example-share must be between 0 and 1")
    global DEV
    torch.set_num_threads(max(1, args.threads))
    if args.device == "cuda" and not torch.cuda.is_available():
        raise TrainError("--device cuda: torch sees no CUDA device")
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    DEV = torch.device("cuda" if use_cuda else "cpu")
    # On a GPU some scatter kernels have no deterministic variant: warn, do not fail.
    torch.use_deterministic_algorithms(True, warn_only=use_cuda)
    log(f"training on {DEV} ({args.threads} CPU threads)")
    out = args.out or os.path.join(args.dir, "trained")
    triples_path = os.path.join(args.dir, "triples.tsv")
    examples_path = os.path.join(args.dir, "examples.jsonl")
    t_load = time.time()
    graph = read_graph(triples_path)
    examples, skipped = read_examples(examples_path, graph)
    log(f"graph: {graph.n} entities, {graph.r} relations, {len(graph.triples)} triples; "
        f"examples: {len(examples)} (skipped {skipped}) [{time.time() - t_load:.1f}s]")
    rng = np.random.default_rng([args.seed, 1 << 30])
    order = rng.permutation(len(examples))
    nval = min(args.validate, len(examples) // 10)
    val = [examples[i] for i in order[:nval]]
    train = [examples[i] for i in order[nval:]]
    if not os.path.isfile(args.init):
        raise TrainError(f"--init {args.init}: no such checkpoint")
    model = Ultra()
    model.load_state_dict(load_state_dict(args.init), strict=True)
    model.to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    state_path = os.path.join(args.dir, "state.pt")
    digest = file_digest([triples_path, examples_path])
    step = 0
    spent = 0.0  # training seconds of earlier runs (the budget covers all of them)
    settings = {"seed": args.seed, "batch": args.batch, "lr": args.lr, "seppr_k": args.seppr_k,
                "condition": args.condition, "hide_others": args.hide_others,
                "example_share": args.example_share, "negatives": args.negatives,
                "link_targets": args.link_targets,
                "data_sha256": digest,
                "init_sha256": file_digest([args.init]), "threads": args.threads}
    metrics_before = None
    if os.path.exists(state_path):
        st = torch.load(state_path, map_location=DEV, weights_only=False)
        if st.get("version") != STATE_VERSION or st.get("settings") != settings:
            raise TrainError(f"{state_path} was saved for other data or settings; "
                             "remove it (or use another --dir) to start afresh")
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        step = st["step"]
        spent = st.get("seconds", 0.0)
        metrics_before = st.get("metrics_before")
        log(f"resuming at step {step} ({fmt_time(spent)} trained so far)")
    elif val:
        model.eval()
        metrics_before = hits_at_1(model, graph, val, args.seppr_k)
        log(f"Hits@1 on {len(val)} held-back examples before training: {metrics_before}")

    def save():
        tmp = state_path + ".tmp"
        torch.save({"version": STATE_VERSION, "settings": settings, "model": model.state_dict(),
                    "opt": opt.state_dict(), "step": step, "metrics_before": metrics_before,
                    "seconds": spent + time.time() - start}, tmp)
        os.replace(tmp, state_path)

    stop = {"flag": False}

    def on_signal(signum, _frame):
        stop["flag"] = True
        log(f"signal {signum}: stopping after this step (state is saved; run again to resume)")

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    start = time.time()
    last_save = last_log = start
    first_step = step
    loss_avg = None
    model.train()
    while not stop["flag"]:
        if args.steps is not None and step >= args.steps:
            break
        elapsed = time.time() - start
        done = step - first_step
        per_step = elapsed / done if done > 0 else 0.0
        if budget is not None and spent + elapsed + per_step > budget:
            log(f"budget reached after {fmt_time(spent + elapsed)} of training")
            break
        queries, answers, ignore, link = batch_for(step, args.seed, graph, train, args)
        packed, logits = run_chains(model, graph, queries, args.seppr_k,
                                    direct=link and args.condition == "direct")
        loss = chain_loss(packed, logits, queries, answers, negatives=args.negatives,
                          rng=np.random.default_rng([args.seed, step, 1]), ignore=ignore)
        if loss is not None:
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            v = float(loss.detach())
            loss_avg = v if loss_avg is None else 0.98 * loss_avg + 0.02 * v
        step += 1
        now = time.time()
        if now - last_save >= args.save_every:
            save()
            last_save = now
        if now - last_log >= 10:
            rate = (step - first_step) / (now - start)
            eta = []
            if args.steps is not None:
                eta.append((args.steps - step) / rate)
            if budget is not None:
                eta.append(budget - spent - (now - start))
            progress = {"step": step, "steps": args.steps, "elapsed_s": round(now - start, 1),
                        "eta_s": round(min(eta), 1), "steps_per_s": round(rate, 3),
                        "loss": None if loss_avg is None else round(loss_avg, 5)}
            with open(os.path.join(args.dir, "progress.json"), "w") as f:
                json.dump(progress, f)
            total = f"/{args.steps}" if args.steps is not None else ""
            log(f"step {step}{total}  loss {loss_avg:.4f}  {rate:.2f} steps/s  "
                f"elapsed {fmt_time(now - start)}  ETA {fmt_time(min(eta))}")
            last_log = now
    save()
    if stop["flag"]:
        log(f"interrupted at step {step}; run the same command again to resume")
        return 130
    model.eval()
    metrics_after = hits_at_1(model, graph, val, args.seppr_k) if val else None
    if metrics_after is not None:
        log(f"Hits@1 on {len(val)} held-back examples after {step} steps: {metrics_after}")
    model.cpu()
    sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    torch.save({"model": sd}, out + ".pth")
    import export  # noqa: E402  (onnx and onnxruntime are only needed here)
    diffs = export.export_model(model, out)
    record = {
        "method": ("ULTRA fine-tuned on the bundle's graph by link prediction (whole graph, "
                   "target edge held out, direct-relation conditioning)"
                   if args.condition == "direct" else
                   "UltraQuery fine-tuned on the bundle's graph (link prediction with held-out "
                   "target edges" + (", and the examples' chains" if train else "") + ")"),
        "init": os.path.basename(args.init), "steps": step, **settings,
        "budget_s": budget, "seconds": round(spent + time.time() - start, 1),
        "device": str(DEV),
        "torch": torch.__version__, "entities": graph.n, "relations": graph.r,
        "triples": int(len(graph.triples)), "examples": len(train), "examples_skipped": skipped,
        "validation_examples": len(val), "hits_at_1_before": metrics_before,
        "hits_at_1_after": metrics_after, "final_loss": None if loss_avg is None else round(loss_avg, 5),
        "onnx_max_abs_diff": diffs,
    }
    with open(out + ".train.json", "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")
    log(f"wrote {out}.relation.onnx, {out}.entity.onnx, {out}.train.json ({step} steps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
