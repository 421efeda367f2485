#!/usr/bin/env python3
"""Exact-traversal reference for gold MetaQA chain queries (pure Python, stdlib).

Reads kb.tsv (`head<TAB>relation<TAB>tail`) and one or more files produced by
gold_queries.py (`"Entity" -> rel1 -> rel2 ...<TAB>ans1|ans2|...`). For each
line it walks the relation path from the anchor entity over the exact KB:

  * `rel`      follows head --rel--> tail,
  * `rel_inv`  follows tail <--rel-- head,
  * the anchor is removed from the frontier after every hop ("never pass
    through the anchor again"), so e.g. `"Film" -> directed_by -> directed_by_inv`
    returns the director's *other* films.

Per file it prints:
  exact     the answer set equals the gold set
  any_gold  at least one answer is gold
  hits@1    the first answer, answers sorted by name (Python code-point order),
            is gold (empty answer = miss)
  empty     no answer at all

`--keep-anchor` turns the anchor rule off (for comparison). `--json` prints one
machine-readable object keyed by file name instead of the table.

Usage:
    python3 benches/metaqa/check_traversal.py --kb $DATA/metaqa/kb.tsv \
        $SCRATCH/mq/1hop.tsv $SCRATCH/mq/2hop.tsv $SCRATCH/mq/3hop.tsv
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import defaultdict

INV_SUFFIX = "_inv"

# `"Entity \"x\" \\ y" -> rel -> rel_inv`
CHAIN_RE = re.compile(r'^\s*"((?:[^"\\]|\\.)*)"((?:\s*->\s*[A-Za-z_][A-Za-z0-9_]*)+)\s*$')
UNESCAPE_RE = re.compile(r"\\(.)")


def parse_chain(dsl: str) -> tuple[str, list[str]]:
    m = CHAIN_RE.match(dsl)
    if not m:
        raise ValueError(f"not a chain query: {dsl!r}")
    anchor = UNESCAPE_RE.sub(r"\1", m.group(1))
    rels = [r.strip() for r in m.group(2).split("->")[1:]]
    return anchor, rels


class KB:
    def __init__(self, path: str) -> None:
        # adj[(rel, forward)][node] -> set of neighbours
        self.adj: dict[tuple[str, bool], dict[str, set[str]]] = defaultdict(
            lambda: defaultdict(set)
        )
        self.n_triples = 0
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 3:
                    raise ValueError(f"{path}:{lineno}: expected 3 tab-separated fields")
                h, r, t = parts
                self.adj[(r, True)][h].add(t)
                self.adj[(r, False)][t].add(h)
                self.n_triples += 1
        self.relations = sorted({r for r, _ in self.adj})

    def step_key(self, rel: str) -> tuple[str, bool]:
        if rel.endswith(INV_SUFFIX) and rel[: -len(INV_SUFFIX)] in self.relations:
            return rel[: -len(INV_SUFFIX)], False
        if rel in self.relations:
            return rel, True
        raise ValueError(f"unknown relation {rel!r}")

    def traverse(self, anchor: str, rels: list[str], keep_anchor: bool = False) -> set[str]:
        frontier = {anchor}
        for rel in rels:
            table = self.adj[self.step_key(rel)]
            nxt: set[str] = set()
            for node in frontier:
                nxt |= table.get(node, set())
            if not keep_anchor:
                nxt.discard(anchor)
            frontier = nxt
            if not frontier:
                break
        return frontier


def evaluate(kb: KB, path: str, limit: int | None, keep_anchor: bool) -> dict:
    n = exact = any_gold = hits1 = empty = more = 0
    t0 = time.perf_counter()
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if limit is not None and n >= limit:
                break
            line = line.rstrip("\n")
            if not line:
                continue
            dsl, _, answers = line.partition("\t")
            gold = set(answers.split("|")) if answers else set()
            try:
                anchor, rels = parse_chain(dsl)
                got = kb.traverse(anchor, rels, keep_anchor)
            except ValueError as e:
                sys.exit(f"error: {path}:{lineno}: {e}")
            n += 1
            exact += got == gold
            any_gold += bool(got & gold)
            if got:
                hits1 += min(got) in gold
            else:
                empty += 1
            more += bool(got - gold)
    secs = time.perf_counter() - t0
    pct = lambda k: round(100.0 * k / n, 2) if n else 0.0  # noqa: E731
    return {
        "n": n,
        "exact": pct(exact),
        "exact_count": exact,
        "any_gold": pct(any_gold),
        "hits@1": pct(hits1),
        "empty": pct(empty),
        "extra_answers": pct(more),
        "seconds": round(secs, 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb", required=True, help="kb.tsv")
    ap.add_argument("files", nargs="+", help="gold query files from gold_queries.py")
    ap.add_argument("--limit", type=int, default=None, help="first N lines per file")
    ap.add_argument("--keep-anchor", action="store_true", help="allow revisiting the anchor")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    kb = KB(args.kb)
    load_s = time.perf_counter() - t0

    results = {
        os.path.basename(p): evaluate(kb, p, args.limit, args.keep_anchor) for p in args.files
    }
    if args.json:
        print(json.dumps({"kb_load_s": round(load_s, 3), "files": results}, indent=2))
        return 0

    rule = "anchor may be revisited" if args.keep_anchor else "never through the anchor again"
    print(f"kb: {kb.n_triples} triples, {len(kb.relations)} relations, loaded in {load_s:.2f}s")
    print(f"semantics: exact traversal, {rule}; hits@1 = first answer by name order")
    hdr = f"{'file':<16} {'n':>6} {'exact':>6} {'exact%':>7} {'any_gold%':>9} {'hits@1%':>8} {'empty%':>7} {'extra%':>7}"
    print(hdr)
    print("-" * len(hdr))
    for name, r in results.items():
        print(
            f"{name:<16} {r['n']:>6} {r['exact_count']:>6} {r['exact']:>7.2f} {r['any_gold']:>9.2f} "
            f"{r['hits@1']:>8.2f} {r['empty']:>7.2f} {r['extra_answers']:>7.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
