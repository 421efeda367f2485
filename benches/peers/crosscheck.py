#!/usr/bin/env python3
"""Cross-engine check of kgbox's Cypher and SPARQL renderings.

Loads the KB into kuzu and Oxigraph (as run_peers.py does), then has
`kgbox render` print, for each DSL query of the query files, its answers
(symbolic executor, all of them) and its openCypher and SPARQL renderings,
runs the renderings in kuzu and Oxigraph, and compares the three answer
sets. Every mismatch is listed;
the exit status is 1 when there is one.

    $SCRATCH/peers-venv/bin/python benches/peers/crosscheck.py --kb $DATA/metaqa/kb.tsv \\
        --kgbox target/release/kgbox --bundle metaqa.kgb --trust op.pub \\
        --queries $SCRATCH/mq/1hop.tsv --queries $SCRATCH/mq/2hop.tsv --queries $SCRATCH/mq/3hop.tsv [--limit 200]

Query files hold `DSL<TAB>...` lines (benches/metaqa/gold_queries.py); only
the DSL is used. Duplicate DSL lines are checked once.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from urllib.parse import unquote

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_peers import ENTITY_NS, KuzuEngine, OxigraphEngine, read_kb  # noqa: E402


def kgbox_render(args, queries: list[str]) -> list[dict]:
    """`kgbox render -` over the queries: one JSON object per query."""
    cmd = [args.kgbox, "render", "-", "--bundle", args.bundle, "--trust", args.trust]
    out = subprocess.run(cmd, input="\n".join(queries) + "\n", capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise SystemExit(f"kgbox render failed: {out.stderr.strip()}")
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    if len(rows) != len(queries):
        raise SystemExit(f"kgbox render printed {len(rows)} lines for {len(queries)} queries")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kb", required=True)
    ap.add_argument("--queries", action="append", required=True)
    ap.add_argument("--kgbox", required=True)
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--trust", required=True)
    ap.add_argument("--limit", type=int, default=None, help="first N distinct queries per file")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    triples = read_kb(args.kb)
    ku = KuzuEngine(threads=1, schema="per-rel", plan="auto", query_timeout_ms=60_000)
    ku.load(triples)
    ox = OxigraphEngine(params="inline")
    ox.load(triples)
    import pyoxigraph

    report = {"files": {}, "mismatches": []}
    for path in args.queries:
        seen: dict[str, None] = {}
        with open(path, encoding="utf-8") as f:
            for line in f:
                dsl = line.rstrip("\n").split("\t")[0].strip()
                if dsl and not dsl.startswith("#"):
                    seen[dsl] = None
                    if args.limit and len(seen) >= args.limit:
                        break
        seen = list(seen)
        counts = {"queries": len(seen), "kuzu_same": 0, "oxigraph_same": 0, "errors": 0}
        for i, row in enumerate(kgbox_render(args, seen)):
            dsl = row["query"]
            try:
                if "error" in row:
                    raise RuntimeError(f"kgbox: {row['error']}")
                mine = set(row["answers"])
                got_k = set()
                res = ku.conn.execute(row["cypher"])
                while res.has_next():
                    got_k.add(res.get_next()[0])
                got_o = {
                    unquote(s[pyoxigraph.Variable("x")].value[len(ENTITY_NS):])
                    for s in ox.store.query(row["sparql"])
                }
            except Exception as e:  # a failure is a mismatch to list, not a crash
                counts["errors"] += 1
                report["mismatches"].append({"file": path, "query": dsl, "error": str(e)})
                continue
            counts["kuzu_same"] += got_k == mine
            counts["oxigraph_same"] += got_o == mine
            if got_k != mine or got_o != mine:
                report["mismatches"].append({
                    "file": path, "query": dsl,
                    "kuzu_diff": sorted(got_k ^ mine)[:5],
                    "oxigraph_diff": sorted(got_o ^ mine)[:5],
                })
            if not args.json and (i + 1) % 1000 == 0:
                print(f"{path}: {i + 1}/{len(seen)}", file=sys.stderr)
        report["files"][path] = counts
    if args.json:
        print(json.dumps(report))
    else:
        for path, c in report["files"].items():
            print(f"{path}: {c['queries']} queries; same answers as kgbox: kuzu {c['kuzu_same']}, "
                  f"oxigraph {c['oxigraph_same']}; errors {c['errors']}")
        for m in report["mismatches"]:
            print("MISMATCH", json.dumps(m))
        print(json.dumps({k: v for k, v in report.items() if k == "files"}))
    return 1 if report["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
