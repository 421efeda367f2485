#!/usr/bin/env python3
"""The same SPARQL queries through kgbox's /sparql and through pyoxigraph over
the RDF file the bundle was packed from: every answer must be equal.

    sparql_graphs.py URL GRAPH QUERIES.rq [QUERIES.rq ...] [--report FILE]

URL is a running `kgbox serve`'s endpoint (http://127.0.0.1:PORT/sparql);
GRAPH the file given to `kgbox-pack build` (N-Triples, N-Quads, Turtle,
TriG, RDF/XML or JSON-LD; plain or .gz).

A query file holds queries separated by blank lines. A block made only of
PREFIX (and BASE) lines is prepended to every query after it; `#` lines
before a query name it in the report.

Equal means:
- SELECT: the same rows, each term with its kind, lexical form, datatype
  and language tag (numbers by value, see NUMERIC) (blank nodes are compared by kind only); in the same order
  when the query has a top-level ORDER BY, as multisets otherwise. A LIMIT
  without ORDER BY may pick any rows: kgbox must give as many, each one a
  row of the query without its LIMIT and OFFSET (on pyoxigraph).
- ASK: the same boolean.
- CONSTRUCT and DESCRIBE (asked as N-Triples): isomorphic graphs.

Prints one line per query kind and a total; exits 1 listing every query that
differs. Needs pyoxigraph and rdflib (scripts/setup.sh --dev installs them).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from decimal import Decimal
from pathlib import Path

try:
    import pyoxigraph as ox
    from rdflib import Graph, Literal, URIRef
    from rdflib.compare import isomorphic
except ImportError as e:  # pragma: no cover - setup problem
    sys.exit(f"sparql_graphs.py: {e}; run scripts/setup.sh --dev to install the test clients")

XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_STRING = XSD + "string"
# Oxigraph's store keeps numbers as values and writes them back in canonical
# form: "77.0"^^xsd:decimal comes back as "77", "5"^^xsd:long as
# "5"^^xsd:integer. kgbox returns every literal as the file gives it, as RDF
# 1.1 terms are. Both sides are compared by value, integers of every derived
# type as xsd:integer.
INTEGERS = {XSD + t for t in ("integer", "int", "long", "short", "byte", "nonNegativeInteger",
                              "positiveInteger", "negativeInteger", "nonPositiveInteger",
                              "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte")}
NUMERIC = INTEGERS | {XSD + "decimal", XSD + "double", XSD + "float"}
LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
FORMATS = {
    ".nt": ox.RdfFormat.N_TRIPLES,
    ".nq": ox.RdfFormat.N_QUADS,
    ".ttl": ox.RdfFormat.TURTLE,
    ".trig": ox.RdfFormat.TRIG,
    ".rdf": ox.RdfFormat.RDF_XML,
    ".owl": ox.RdfFormat.RDF_XML,
    ".jsonld": ox.RdfFormat.JSON_LD,
}
TIMEOUT_S = 120


def datatype_key(datatype: str) -> str:
    return XSD + "integer" if datatype in INTEGERS else datatype


def lexical_key(value: str, datatype: str) -> object:
    """A literal's lexical form, or its value for the datatypes of NUMERIC."""
    if datatype in NUMERIC:
        try:
            return float(value) if datatype in (XSD + "double", XSD + "float") else Decimal(value)
        except (ValueError, ArithmeticError):
            return value
    return value


def load(path: Path) -> ox.Store:
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    fmt = FORMATS.get(Path(name).suffix)
    if fmt is None:
        sys.exit(f"sparql_graphs.py: {path}: unknown RDF format (extensions: {', '.join(FORMATS)})")
    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    store = ox.Store()
    # As kgbox-pack reads a graph: statements of a triples format go to the
    # default graph, which a query's default graph is on both engines.
    store.bulk_load(data, format=fmt)
    return store


def read_queries(path: Path) -> list[tuple[str, str]]:
    """(label, full query text) for each query of the file."""
    prefixes: list[str] = []
    out = []
    for n, block in enumerate(re.split(r"\n\s*\n", path.read_text(encoding="utf-8"))):
        lines = [line for line in block.strip().splitlines()]
        comments = [line.lstrip("# ").rstrip() for line in lines if line.lstrip().startswith("#")]
        body = [line for line in lines if not line.lstrip().startswith("#")]
        if not body:
            continue
        if all(re.match(r"\s*(PREFIX|BASE)\b", line, re.I) for line in body):
            prefixes += body
            continue
        label = " ".join(comments) or f"block {n + 1}"
        out.append((f"{path.stem}: {label}", "\n".join(prefixes + body)))
    return out


# ---------------------------------------------------------------- terms


def ox_term(t) -> tuple:
    if t is None:
        return ("unbound",)
    if isinstance(t, ox.NamedNode):
        return ("uri", t.value)
    if isinstance(t, ox.BlankNode):
        return ("bnode",)
    if isinstance(t, ox.Literal):
        lang = t.language or ""
        datatype = LANG_STRING if lang else t.datatype.value
        return ("literal", lexical_key(t.value, datatype), datatype_key(datatype), lang.lower())
    return ("other", str(t))


def json_term(b: dict | None) -> tuple:
    if b is None:
        return ("unbound",)
    kind = b.get("type")
    if kind == "uri":
        return ("uri", b["value"])
    if kind == "bnode":
        return ("bnode",)
    if kind in ("literal", "typed-literal"):
        lang = b.get("xml:lang", "")
        datatype = LANG_STRING if lang else b.get("datatype", XSD_STRING)
        return ("literal", lexical_key(b["value"], datatype), datatype_key(datatype), lang.lower())
    return ("other", json.dumps(b))


# ---------------------------------------------------------------- engines


def ask_kgbox(url: str, query: str, accept: str) -> tuple[int, bytes, str]:
    body = urllib.parse.urlencode({"query": query}).encode()
    req = urllib.request.Request(
        url,
        data=body,
        headers={"Content-Type": "application/x-www-form-urlencoded", "Accept": accept},
    )
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as r:
            return r.status, r.read(), r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers.get("Content-Type", "")


def top_level(query: str) -> str:
    """The query text after its last closing brace: the solution modifiers."""
    return query[query.rfind("}") + 1 :]


def without_slice(query: str) -> str:
    tail_at = query.rfind("}") + 1
    tail = re.sub(r"\b(LIMIT|OFFSET)\s+\d+", " ", query[tail_at:], flags=re.I)
    return query[:tail_at] + tail


def graph_of_ntriples(data: bytes) -> Graph:
    """The graph, its numeric literals in one canonical form (see NUMERIC)."""
    parsed = Graph()
    parsed.parse(data=data.decode("utf-8"), format="nt")
    g = Graph()
    for s, p, o in parsed:
        if isinstance(o, Literal) and o.datatype is not None and str(o.datatype) in NUMERIC:
            key = lexical_key(str(o), str(o.datatype))
            if isinstance(key, Decimal):
                key = format(key.normalize(), "f")
            o = Literal(str(key), datatype=URIRef(datatype_key(str(o.datatype))))
        g.add((s, p, o))
    return g


def compare(url: str, store: ox.Store, query: str) -> tuple[str, str | None]:
    """(kind, None when equal or why not)."""
    want = store.query(query)
    if isinstance(want, ox.QueryBoolean):
        status, body, _ = ask_kgbox(url, query, "application/sparql-results+json")
        if status != 200:
            return "ASK", f"HTTP {status}: {body[:300]!r}"
        got = json.loads(body).get("boolean")
        return "ASK", None if got is bool(want) else f"kgbox {got}, pyoxigraph {bool(want)}"
    if isinstance(want, ox.QueryTriples):
        kind = "DESCRIBE" if re.search(r"^\s*DESCRIBE\b", query, re.I | re.M) else "CONSTRUCT"
        expected = ox.serialize(want, format=ox.RdfFormat.N_TRIPLES) or b""
        status, body, media = ask_kgbox(url, query, "application/n-triples")
        if status != 200:
            return kind, f"HTTP {status}: {body[:300]!r}"
        if "n-triples" not in media:
            return kind, f"asked for N-Triples, got {media}"
        a, b = graph_of_ntriples(body), graph_of_ntriples(expected)
        if isomorphic(a, b):
            return kind, None
        return kind, f"graphs differ: kgbox {len(a)} triples, pyoxigraph {len(b)}; " + (
            f"kgbox only: {sorted(str(t) for t in set(a) - set(b))[:3]}; "
            f"pyoxigraph only: {sorted(str(t) for t in set(b) - set(a))[:3]}"
        )
    variables = [v.value for v in want.variables]
    expected = [tuple(ox_term(sol[v]) for v in variables) for sol in want]
    status, body, _ = ask_kgbox(url, query, "application/sparql-results+json")
    if status != 200:
        return "SELECT", f"HTTP {status}: {body[:300]!r}"
    doc = json.loads(body)
    if doc["head"].get("vars", []) != variables:
        return "SELECT", f"variables: kgbox {doc['head'].get('vars')}, pyoxigraph {variables}"
    got = [tuple(json_term(b.get(v)) for v in variables) for b in doc["results"]["bindings"]]
    tail = top_level(query)
    ordered = re.search(r"\bORDER\s+BY\b", tail, re.I) is not None
    sliced = re.search(r"\b(LIMIT|OFFSET)\b", tail, re.I) is not None
    if ordered:
        if got == expected:
            return "SELECT", None
        if Counter(got) == Counter(expected):
            return "SELECT", "the same rows in another order"
    elif sliced:
        full = Counter(tuple(ox_term(sol[v]) for v in variables) for sol in store.query(without_slice(query)))
        if len(got) == len(expected) and not Counter(got) - full:
            return "SELECT", None
        return "SELECT", f"{len(got)} rows (pyoxigraph {len(expected)}), not all rows of the query without its slice"
    elif Counter(got) == Counter(expected):
        return "SELECT", None
    only_k = list((Counter(got) - Counter(expected)).elements())[:3]
    only_p = list((Counter(expected) - Counter(got)).elements())[:3]
    return "SELECT", f"{len(got)} rows (pyoxigraph {len(expected)}); kgbox only {only_k}; pyoxigraph only {only_p}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("url")
    ap.add_argument("graph", type=Path)
    ap.add_argument("queries", type=Path, nargs="+")
    ap.add_argument("--min-queries", type=int, default=0, help="fail with fewer queries than this")
    args = ap.parse_args()
    store = load(args.graph)
    queries = [q for path in args.queries for q in read_queries(path)]
    if len(queries) < args.min_queries:
        print(f"only {len(queries)} queries (at least {args.min_queries} wanted)", file=sys.stderr)
        return 1
    kinds: Counter = Counter()
    failures = []
    for label, text in queries:
        try:
            kind, why = compare(args.url, store, text)
        except (OSError, ValueError, KeyError) as e:
            kind, why = "?", f"{type(e).__name__}: {e}"
        kinds[kind] += 1
        if why is not None:
            failures.append(f"{label}: {why}\n{text}\n")
    print(f"{args.graph.parent.name}/{args.graph.name}: " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))
    for f in failures:
        print(f"DIFFERS {f}", file=sys.stderr)
    print(f"{args.graph.parent.name}/{args.graph.name}: {len(queries) - len(failures)} of {len(queries)} queries equal to pyoxigraph's")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
