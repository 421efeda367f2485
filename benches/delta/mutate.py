#!/usr/bin/env python3
"""Writes a changed copy of a TSV knowledge graph, deterministically.

Usage: mutate.py KB.tsv PERCENT SEED OUT.tsv

Removes PERCENT % of the (distinct) triples and adds as many new ones. A
new triple keeps the relation of a random existing triple; its head and
tail are random existing entities, except that a fifth of the new triples
get a new head or tail entity (a new film, a new person), so entities are
added as well as removed (an entity whose last triple goes is removed).
"""
import random
import sys


def main():
    kb, percent, seed, out = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    triples = []
    seen = set()
    with open(kb, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3 or tuple(parts) in seen:
                continue
            seen.add(tuple(parts))
            triples.append(tuple(parts))
    rng = random.Random(seed)
    n = round(len(triples) * percent / 100)
    removed = set(rng.sample(range(len(triples)), n))
    kept = [t for i, t in enumerate(triples) if i not in removed]
    entities = sorted({t[0] for t in triples} | {t[2] for t in triples})
    added = []
    have = set(kept)
    k = 0
    while len(added) < n:
        _, rel, _ = triples[rng.randrange(len(triples))]
        h = entities[rng.randrange(len(entities))]
        t = entities[rng.randrange(len(entities))]
        r = rng.random()
        if r < 0.1:
            h = f"New Film {seed}-{k}"
            k += 1
        elif r < 0.2:
            t = f"New Person {seed}-{k}"
            k += 1
        if (h, rel, t) in have:
            continue
        have.add((h, rel, t))
        added.append((h, rel, t))
    with open(out, "w", encoding="utf-8") as f:
        for t in kept + added:
            f.write("\t".join(t) + "\n")


if __name__ == "__main__":
    main()
