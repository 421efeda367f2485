#!/usr/bin/env python3
"""Writes a copy of an owngraph graph whose own predicates have opaque names.

Every predicate under NAMESPACE becomes NAMESPACE + "p1", "p2", ... (in order of first
use), as in graphs that name predicates by number (Wikidata's P19). With --labels, each
gets an `rdfs:label` in the graph with its old local name's words ("homeworld",
"birth year"), as such graphs publish them. The gold files are copied unchanged.

  python3 benches/owngraph/opaque.py starwars https://swapi.co/vocabulary/ OUT [--labels]
  GRAPHS_DIR=$(dirname OUT) benches/owngraph/eval.sh $(basename OUT)
"""
import argparse
import gzip
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LABEL = "<http://www.w3.org/2000/01/rdf-schema#label>"
TRIPLE = re.compile(r"(\S+) <([^>]+)> (.*)$")


def words(local: str) -> str:
    """`birthYear` -> `birth year`, `eye_color` -> `eye color`."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", local).replace("_", " ")
    return spaced.lower()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graph", help="a folder of benches/owngraph, e.g. starwars")
    ap.add_argument("namespace", help="the predicates' namespace, e.g. https://swapi.co/vocabulary/")
    ap.add_argument("out", type=Path, help="the folder to write (graph.nt.gz and gold-*.tsv)")
    ap.add_argument("--labels", action="store_true", help="label each predicate with its old name's words")
    args = ap.parse_args()
    source = HERE / args.graph / "graph.nt.gz"
    if not source.is_file():
        sys.exit(f"opaque.py: no {source}")
    numbers: dict[str, int] = {}
    lines = []
    with gzip.open(source, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = TRIPLE.match(line.rstrip("\n"))
            if not m:
                sys.exit(f"opaque.py: {source}:{n}: not an N-Triples line")
            s, p, o = m.groups()
            if p.startswith(args.namespace):
                p = f"{args.namespace}p{numbers.setdefault(p, len(numbers) + 1)}"
            lines.append(f"{s} <{p}> {o}")
    if not numbers:
        sys.exit(f"opaque.py: no predicate of {source} is under {args.namespace}")
    if args.labels:
        for p, i in numbers.items():
            lines.append(f'<{args.namespace}p{i}> {LABEL} "{words(p[len(args.namespace):])}"@en .')
    args.out.mkdir(parents=True, exist_ok=True)
    with gzip.open(args.out / "graph.nt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    for gold in sorted((HERE / args.graph).glob("gold-*.tsv")):
        shutil.copy(gold, args.out / gold.name)
    print(f"opaque.py: {len(numbers)} predicates renamed, {len(lines)} lines in {args.out}/graph.nt.gz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
