#!/usr/bin/env python3
"""Peer benchmark: MetaQA gold chain queries on kuzu (Cypher) and Oxigraph (SPARQL).

Loads kb.tsv (`head<TAB>relation<TAB>tail`) into each engine, runs every chain
query `"Entity" -> rel1 -> rel2 ...` of the gold files written by
benches/metaqa/gold_queries.py (`rel_inv` = follow the edge backwards) as the
equivalent Cypher / SPARQL, checks the DISTINCT answer names against the gold
answers and reports warm per-query latency.

Semantics (same as benches/metaqa/check_traversal.py): exact traversal, and no
node after the anchor may be the anchor itself ("never pass through the anchor
again"), e.g. for `"Joel Zwick" -> directed_by_inv -> in_language`

    kuzu:     MATCH (a:Entity {name: $n})<-[:directed_by]-(x1:Entity)-[:in_language]->(x2:Entity)
              WHERE id(x1) <> id(a) AND id(x2) <> id(a) RETURN DISTINCT x2.name
    oxigraph: SELECT DISTINCT ?x2 WHERE { ?x1 <r/directed_by> ?a . ?x1 <r/in_language> ?x2 .
              FILTER(?x1 != ?a && ?x2 != ?a) }        (?a bound through `substitutions`)

Timing: queries run in chunks of 100; each chunk is run once untimed (warm-up,
and its answers are the ones checked against gold), then once more timed with
time.perf_counter(), the time covering execute + fetching every answer name
into a Python set. Each engine runs in its own child process with a time budget
(load + queries, --time-limit seconds): when the budget is spent the engine
stops after the current chunk and reports what it did (`truncated: true`); the
child is killed outright 120 s after the budget.

Usage:
    python3 benches/peers/run_peers.py --kb $DATA/metaqa/kb.tsv \
        --queries $SCRATCH/mq/1hop.tsv --queries $SCRATCH/mq/2hop.tsv [--limit N] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from urllib.parse import quote, unquote

INV_SUFFIX = "_inv"
ENTITY_NS = "http://kgbox.local/e/"
REL_NS = "http://kgbox.local/r/"
CHUNK = 100
ENGINES = ("kuzu", "oxigraph")

CHAIN_RE = re.compile(r'^\s*"((?:[^"\\]|\\.)*)"((?:\s*->\s*[A-Za-z_][A-Za-z0-9_]*)+)\s*$')
UNESCAPE_RE = re.compile(r"\\(.)")


# --------------------------------------------------------------------------- input


def parse_chain(dsl: str) -> tuple[str, list[tuple[str, bool]]] | None:
    """`"E" -> r1 -> r2_inv` -> ("E", [("r1", True), ("r2", False)]); None if not a chain."""
    m = CHAIN_RE.match(dsl)
    if not m:
        return None
    anchor = UNESCAPE_RE.sub(r"\1", m.group(1))
    steps = []
    for rel in (r.strip() for r in m.group(2).split("->")[1:]):
        if rel.endswith(INV_SUFFIX):
            steps.append((rel[: -len(INV_SUFFIX)], False))
        else:
            steps.append((rel, True))
    return anchor, steps


def read_queries(path: str, limit: int | None) -> tuple[list[dict], int]:
    queries, skipped = [], 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if limit is not None and len(queries) + skipped >= limit:
                break
            dsl, _, answers = line.partition("\t")
            parsed = parse_chain(dsl)
            if parsed is None:
                skipped += 1
                continue
            anchor, steps = parsed
            gold = sorted(set(answers.split("|"))) if answers else []
            queries.append({"dsl": dsl, "anchor": anchor, "steps": steps, "gold": gold})
    return queries, skipped


def read_kb(path: str) -> list[tuple[str, str, str]]:
    triples = set()
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3:
                raise SystemExit(f"error: {path}:{lineno}: expected 3 tab-separated fields")
            triples.add((parts[0], parts[1], parts[2]))
    return sorted(triples)


def path_key(steps: list[tuple[str, bool]]) -> tuple:
    return tuple(steps)


# --------------------------------------------------------------------------- engines


class KuzuEngine:
    name = "kuzu"

    def __init__(self, threads: int, schema: str, plan: str, query_timeout_ms: int) -> None:
        import kuzu

        self.kuzu = kuzu
        self.schema = schema
        self.plan = plan
        self.db = kuzu.Database(None, buffer_pool_size=2 << 30, max_num_threads=threads)
        self.conn = kuzu.Connection(self.db, num_threads=threads)
        self.conn.set_query_timeout(query_timeout_ms)
        self.prepared: dict[tuple, object] = {}
        self.version = kuzu.__version__

    def load(self, triples: list[tuple[str, str, str]]) -> dict:
        names = sorted({x for h, _, t in triples for x in (h, t)})
        bad = [n for n in names if any(c in n for c in '"\t\r\n')]
        if bad:
            raise SystemExit(f"kuzu loader: entity names with quote/tab/newline not handled: {bad[:3]}")
        rels = sorted({r for _, r, _ in triples})
        tmp = tempfile.mkdtemp(prefix="kgbox-peers-kuzu-")
        try:
            ent_csv = os.path.join(tmp, "entities.csv")
            with open(ent_csv, "w", encoding="utf-8") as f:
                f.writelines(n + "\n" for n in names)
            # DELIM gets a real tab character: kuzu 0.11 reads the Cypher literal
            # '\t' as the letter `t`. Names hold no `"` (checked above), so the
            # default CSV quoting never triggers.
            self.conn.execute("CREATE NODE TABLE Entity(name STRING, PRIMARY KEY(name))")
            self.conn.execute(f"COPY Entity FROM '{ent_csv}' (HEADER=false, DELIM='\t')")
            if self.schema == "per-rel":
                for rel in rels:
                    self.conn.execute(f"CREATE REL TABLE {rel}(FROM Entity TO Entity)")
                    p = os.path.join(tmp, f"{rel}.csv")
                    with open(p, "w", encoding="utf-8") as f:
                        f.writelines(f"{h}\t{t}\n" for h, r, t in triples if r == rel)
                    self.conn.execute(f"COPY {rel} FROM '{p}' (HEADER=false, DELIM='\t')")
            else:
                self.conn.execute("CREATE REL TABLE Edge(FROM Entity TO Entity, rel STRING)")
                p = os.path.join(tmp, "edges.csv")
                with open(p, "w", encoding="utf-8") as f:
                    f.writelines(f"{h}\t{t}\t{r}\n" for h, r, t in triples)
                self.conn.execute(f"COPY Edge FROM '{p}' (HEADER=false, DELIM='\t')")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        n_nodes = self.conn.execute("MATCH (e:Entity) RETURN count(*)").get_next()[0]
        n_edges = self.conn.execute("MATCH ()-[e]->() RETURN count(*)").get_next()[0]
        if n_nodes != len(names) or n_edges != len(triples):
            raise SystemExit(
                f"kuzu loader: loaded {n_nodes} nodes / {n_edges} edges, "
                f"expected {len(names)} / {len(triples)}"
            )
        return {"nodes": n_nodes, "edges": n_edges, "schema": self.schema}

    def cypher(self, steps: list[tuple[str, bool]]) -> str:
        pat = "(a:Entity {name: $n})"
        for i, (rel, fwd) in enumerate(steps, 1):
            if self.schema == "per-rel":
                edge = f"[e{i}:{rel}]"
            else:
                edge = f"[e{i}:Edge {{rel: '{rel}'}}]"
            pat += f"-{edge}->(x{i}:Entity)" if fwd else f"<-{edge}-(x{i}:Entity)"
        where = " AND ".join(f"id(x{i}) <> id(a)" for i in range(1, len(steps) + 1))
        hint = ""
        if self.plan == "hint":
            # Left-deep join order from the anchor. Without it kuzu 0.11 plans
            # multi-hop chains as full scans of the last hop's rel table and of
            # Entity, hash-joined to the anchor side (2-3x slower on 2/3-hop).
            h = "a"
            for i in range(1, len(steps) + 1):
                h = f"(({h} JOIN e{i}) JOIN x{i})"
            hint = f" HINT {h}"
        return f"MATCH {pat} WHERE {where}{hint} RETURN DISTINCT x{len(steps)}.name"

    def run(self, q: dict) -> set[str]:
        key = path_key(q["steps"])
        stmt = self.prepared.get(key)
        if stmt is None:
            stmt = self.conn.prepare(self.cypher(q["steps"]))
            if not stmt.is_success():
                raise RuntimeError(stmt.get_error_message())
            self.prepared[key] = stmt
        res = self.conn.execute(stmt, {"n": q["anchor"]})
        out = set()
        while res.has_next():
            out.add(res.get_next()[0])
        res.close()
        return out

    def example(self, steps) -> str:
        return self.cypher(steps)


class OxigraphEngine:
    name = "oxigraph"

    def __init__(self, params: str) -> None:
        import pyoxigraph

        self.ox = pyoxigraph
        self.store = pyoxigraph.Store()  # in memory
        self.params = params
        self.texts: dict[tuple, str] = {}
        self.var_a = pyoxigraph.Variable("a")
        self.version = pyoxigraph.__version__

    @staticmethod
    def e_iri(name: str) -> str:
        return ENTITY_NS + quote(name, safe="")

    def load(self, triples: list[tuple[str, str, str]]) -> dict:
        nt = "".join(
            f"<{self.e_iri(h)}> <{REL_NS}{r}> <{self.e_iri(t)}> .\n" for h, r, t in triples
        )
        self.store.bulk_load(nt.encode("utf-8"), format=self.ox.RdfFormat.N_TRIPLES)
        n = len(self.store)
        if n != len(triples):
            raise SystemExit(f"oxigraph loader: {n} triples loaded, expected {len(triples)}")
        return {"triples": n}

    def sparql(self, steps: list[tuple[str, bool]], anchor_iri: str | None = None) -> str:
        a = f"<{anchor_iri}>" if anchor_iri else "?a"
        pats, prev = [], a
        for i, (rel, fwd) in enumerate(steps, 1):
            p = f"<{REL_NS}{rel}>"
            pats.append(f"{prev} {p} ?x{i} ." if fwd else f"?x{i} {p} {prev} .")
            prev = f"?x{i}"
        filt = " && ".join(f"?x{i} != {a}" for i in range(1, len(steps) + 1))
        # SEP-0007 substitution needs the substituted variable in the projection;
        # it is constant, so DISTINCT is unaffected.
        proj = f"?x{len(steps)}" if anchor_iri else f"?a ?x{len(steps)}"
        return f"SELECT DISTINCT {proj} WHERE {{ {' '.join(pats)} FILTER({filt}) }}"

    def run(self, q: dict) -> set[str]:
        iri = self.e_iri(q["anchor"])
        if self.params == "substitutions":
            key = path_key(q["steps"])
            text = self.texts.get(key)
            if text is None:
                text = self.texts[key] = self.sparql(q["steps"])
            sols = self.store.query(text, substitutions={self.var_a: self.ox.NamedNode(iri)})
        else:
            sols = self.store.query(self.sparql(q["steps"], iri))
        cut = len(ENTITY_NS)
        col = self.ox.Variable(f"x{len(q['steps'])}")
        return {unquote(s[col].value[cut:]) for s in sols}

    def example(self, steps) -> str:
        return self.sparql(steps)


# --------------------------------------------------------------------------- worker


def pct(sorted_vals: list[float], p: float) -> float:
    """The p-th percentile (p in percent) of ascending values by kgbox's rule.

    Nearest rank, as kgbox_protocol::stats::percentile (behind `kgbox eval
    queries`, whose figures this script sets beside the peers'): the value at
    1-based rank ceil(p * n / 100), clamped to 1..n; always a measured value,
    the median of an even count the lower middle one (not statistics.median's
    mean of the two). Every percentile of this script, the p50 included,
    comes from here; NaN for no values.
    """
    if not sorted_vals:
        return float("nan")
    k = min(max(math.ceil(p * len(sorted_vals) / 100.0), 1), len(sorted_vals)) - 1
    return sorted_vals[k]


def summarize(lat_ms: list[float], exact: int, any_gold: int, n: int, errors: int) -> dict:
    s = sorted(lat_ms)
    return {
        "n": n,
        "exact_match": round(100.0 * exact / n, 2) if n else None,
        "any_gold": round(100.0 * any_gold / n, 2) if n else None,
        "errors": errors,
        "p50_ms": round(pct(s, 50), 4) if s else None,
        "p95_ms": round(pct(s, 95), 4) if s else None,
        "p99_ms": round(pct(s, 99), 4) if s else None,
        "mean_ms": round(statistics.fmean(s), 4) if s else None,
        "max_ms": round(s[-1], 4) if s else None,
    }


def worker(args) -> dict:
    deadline = time.monotonic() + args.time_limit
    if args.worker == "kuzu":
        warnings.simplefilter("ignore", DeprecationWarning)  # kuzu 0.11: prepare()
        eng = KuzuEngine(
            args.threads, args.kuzu_schema, args.kuzu_plan, int(args.query_timeout * 1000)
        )
        config = {"schema": args.kuzu_schema, "plan": args.kuzu_plan, "threads": args.threads}
    else:
        eng = OxigraphEngine(args.sparql_params)
        config = {"params": args.sparql_params}

    t0 = time.perf_counter()
    triples = read_kb(args.kb)
    stats = eng.load(triples)
    load_s = time.perf_counter() - t0
    del triples

    out = {"version": eng.version, "config": config, "load_s": round(load_s, 3), "kb": stats}
    files, all_lat, tot = {}, [], [0, 0, 0, 0]
    truncated = False
    for path in args.queries:
        queries, skipped = read_queries(path, args.limit)
        lat, exact, any_gold, errors, done = [], 0, 0, 0, 0
        mismatches = []
        example = eng.example(queries[0]["steps"]) if queries else None
        for c in range(0, len(queries), CHUNK):
            if time.monotonic() > deadline:
                truncated = True
                break
            chunk = queries[c : c + CHUNK]
            results = []
            for q in chunk:  # warm-up pass, answers checked
                try:
                    results.append(eng.run(q))
                except Exception as e:  # noqa: BLE001 - reported, not fatal
                    results.append(e)
            for q, got in zip(chunk, results):  # timed pass
                if isinstance(got, Exception):
                    errors += 1
                    if len(mismatches) < 5:
                        mismatches.append({"dsl": q["dsl"], "error": str(got)[:300]})
                    continue
                t = time.perf_counter()
                again = eng.run(q)
                lat.append((time.perf_counter() - t) * 1000.0)
                gold = set(q["gold"])
                exact += got == gold
                any_gold += bool(got & gold)
                if again != got:
                    errors += 1
                elif got != gold and len(mismatches) < 5:
                    mismatches.append(
                        {
                            "dsl": q["dsl"],
                            "missing": sorted(gold - got)[:5],
                            "extra": sorted(got - gold)[:5],
                        }
                    )
            done += len(chunk)
        r = summarize(lat, exact, any_gold, done, errors)
        r.update({"skipped_non_chain": skipped, "total": len(queries)})
        r["example_query"] = example
        r["mismatch_examples"] = mismatches
        files[os.path.basename(path)] = r
        all_lat += lat
        tot = [tot[0] + exact, tot[1] + any_gold, tot[2] + done, tot[3] + errors]
        if truncated:
            break
    out.update(summarize(all_lat, tot[0], tot[1], tot[2], tot[3]))
    out["truncated"] = truncated
    out["files"] = files
    out["wall_s"] = round(time.perf_counter() - t0, 3)
    return out


# --------------------------------------------------------------------------- driver


def run_engine(engine: str, args) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", engine, "--kb", args.kb]
    for q in args.queries:
        cmd += ["--queries", q]
    if args.limit is not None:
        cmd += ["--limit", str(args.limit)]
    cmd += [
        "--time-limit", str(args.time_limit),
        "--query-timeout", str(args.query_timeout),
        "--threads", str(args.threads),
        "--kuzu-schema", args.kuzu_schema,
        "--kuzu-plan", args.kuzu_plan,
        "--sparql-params", args.sparql_params,
    ]  # fmt: skip
    try:
        p = subprocess.run(
            cmd, capture_output=True, text=True, timeout=args.time_limit + 120, check=False
        )
    except subprocess.TimeoutExpired:
        return {"error": f"killed after {args.time_limit + 120}s"}
    if p.returncode != 0:
        return {"error": f"exit {p.returncode}: {p.stderr.strip()[-2000:]}"}
    return json.loads(p.stdout)


def fmt(v, spec=".3f") -> str:
    return "-" if v is None else format(v, spec)


def print_table(results: dict) -> None:
    hdr = (
        f"{'engine':<9} {'file':<12} {'n':>6} {'exact%':>7} {'p50_ms':>8} {'p95_ms':>8} "
        f"{'p99_ms':>8} {'mean_ms':>8} {'max_ms':>8}"
    )
    print(hdr)
    print("-" * len(hdr))
    for eng, r in results.items():
        if "error" in r:
            print(f"{eng:<9} ERROR {r['error']}")
            continue
        rows = list(r["files"].items())
        if len(rows) > 1:
            rows.append(("all", r))
        for name, f in rows:
            print(
                f"{eng:<9} {name:<12} {f['n']:>6} {fmt(f['exact_match'], '.2f'):>7} "
                f"{fmt(f['p50_ms']):>8} {fmt(f['p95_ms']):>8} {fmt(f['p99_ms']):>8} "
                f"{fmt(f['mean_ms']):>8} {fmt(f['max_ms']):>8}"
            )
    print()
    for eng, r in results.items():
        if "error" in r:
            continue
        extra = " TRUNCATED by --time-limit" if r["truncated"] else ""
        print(
            f"{eng}: version {r['version']}, {r['config']}, load {r['load_s']:.2f}s, "
            f"errors {r['errors']}, wall {r['wall_s']:.1f}s{extra}"
        )
        for name, f in r["files"].items():
            if f["skipped_non_chain"]:
                print(f"  {name}: skipped {f['skipped_non_chain']} non-chain lines")
            for m in f["mismatch_examples"][:2]:
                print(f"  {name} mismatch: {json.dumps(m, ensure_ascii=False)}")


# --------------------------------------------------------------------------- kgbox


def run_kgbox(args) -> dict:
    """Runs `kgbox eval queries --json` on each gold file (same queries, same
    machine) and returns its figures in the peers' shape."""
    files, t0 = {}, time.perf_counter()
    for path in args.queries:
        cmd = [args.kgbox, "eval", "queries", "--file", path, "--json",
               "--bundle", args.bundle, "--trust", args.trust]
        if args.limit:
            cmd += ["--limit", str(args.limit)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("KGBOX_")}
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.time_limit, env=env)
        if p.returncode != 0:
            return {"error": f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-2000:]}"}
        r = json.loads(p.stdout)
        lat = r["latency_ms"]
        files[os.path.basename(path)] = {
            "n": r["queries"], "exact_match": round(100.0 * r["exact_match"], 2),
            "errors": r["errors"], "p50_ms": lat["p50"], "p95_ms": lat["p95"],
            "p99_ms": lat["p99"], "mean_ms": lat["mean"], "max_ms": None,
            "skipped_non_chain": 0, "mismatch_examples": [],
        }
    n = sum(f["n"] for f in files.values())
    mean = sum(f["mean_ms"] * f["n"] for f in files.values()) / n if n else None
    return {"version": "this tree", "config": "symbolic executor, in process, all answers ranked",
            "load_s": 0.0, "errors": sum(f["errors"] for f in files.values()),
            "n": n, "exact_match": None, "p50_ms": None, "p95_ms": None, "p99_ms": None,
            "mean_ms": mean, "max_ms": None, "truncated": False, "files": files,
            "wall_s": round(time.perf_counter() - t0, 3)}


def ratios(results: dict) -> dict:
    """peer p50 / kgbox p50 and peer mean / kgbox mean, per file."""
    base = results.get("kgbox")
    if not base or "error" in base:
        return {}
    out = {}
    for eng, r in results.items():
        if eng == "kgbox" or "error" in r:
            continue
        for name, f in r["files"].items():
            k = base["files"].get(name)
            if k and k["p50_ms"] and f["p50_ms"]:
                out.setdefault(eng, {})[name] = {
                    "p50": round(f["p50_ms"] / k["p50_ms"], 1),
                    "mean": round(f["mean_ms"] / k["mean_ms"], 1),
                }
    return out


def print_ratios(r: dict) -> None:
    if not r:
        return
    print("\nslower than kgbox (peer / kgbox), same queries, same machine:")
    for eng, files in r.items():
        for name, x in files.items():
            print(f"  {eng:<9} {name:<12} p50 {x['p50']:>8.1f}x   mean {x['mean']:>8.1f}x")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb", required=True, help="kb.tsv")
    ap.add_argument("--queries", required=True, action="append", help="gold file (repeatable)")
    ap.add_argument("--limit", type=int, default=None, help="first N lines per file")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--engines", default=",".join(ENGINES), help="comma list (kuzu,oxigraph)")
    ap.add_argument("--time-limit", type=float, default=900, help="seconds per engine (load+queries)")
    ap.add_argument("--query-timeout", type=float, default=30, help="kuzu per-query timeout, s")
    ap.add_argument("--threads", type=int, default=1, help="kuzu threads (default 1)")
    ap.add_argument("--kuzu-schema", choices=("per-rel", "single"), default="per-rel")
    ap.add_argument("--kuzu-plan", choices=("hint", "auto"), default="hint")
    ap.add_argument("--sparql-params", choices=("substitutions", "inline"), default="substitutions")
    ap.add_argument("--kgbox", help="kgbox binary: also run `kgbox eval queries` and print ratios")
    ap.add_argument("--bundle", help="with --kgbox: the bundle packed from --kb")
    ap.add_argument("--trust", help="with --kgbox: the bundle's public key")
    ap.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        json.dump(worker(args), sys.stdout)
        return 0

    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    for e in engines:
        if e not in ENGINES:
            ap.error(f"unknown engine {e!r}")
    if args.kgbox and not (args.bundle and args.trust):
        ap.error("--kgbox needs --bundle and --trust")
    results = {}
    if args.kgbox:
        results["kgbox"] = run_kgbox(args)
    results.update({e: run_engine(e, args) for e in engines})
    if args.json:
        print(json.dumps({**results, "ratios": ratios(results)}, indent=2, ensure_ascii=False))
    else:
        print_table(results)
        print_ratios(ratios(results))
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
