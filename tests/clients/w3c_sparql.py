#!/usr/bin/env python3
"""The W3C SPARQL 1.1 query evaluation tests, run on pyoxigraph and on kgbox.

    w3c_sparql.py [--kgbox BIN] [--kgbox-pack BIN] [--only SUBSTRING]...
                  [--markdown FILE] [--min-share 0.95] [--verbose] [--no-kgbox]

The tests are the `mf:QueryEvaluationTest`s and `mf:CSVResultFormatTest`s
listed in the `mf:entries` of every `third_party/rdf-tests/sparql11/*/manifest.ttl`
(the query test suite without update, federation, entailment, protocol and
service description; see third_party/rdf-tests/README.md). Like Oxigraph's
own test suite, every entry is run whatever its `dawgt:approval`
(Approved, Proposed or none).

Each test's dataset: `qt:data` files in the default graph, `qt:graphData`
files and the files that the query's `FROM` / `FROM NAMED` name each in a
named graph called by the file's IRI. Files and queries have their upstream
IRIs (https://w3c.github.io/rdf-tests/sparql/sparql11/DIR/FILE), so relative
IRIs resolve as upstream expects; the query is run as `BASE <its IRI>`
followed by its text. Each file's blank nodes are its own.

- pyoxigraph: a `Store` holding the dataset, `store.query(...)`.
- kgbox: the dataset as one N-Quads file, packed by `kgbox-pack build` (one
  key pair for every test), and the query run by `kgbox sparql --bundle`,
  which writes the results as /sparql would, in the syntax of the expected
  results (`--format xml` for .srx, `json` for .srj, `tsv`, `csv`, and
  Turtle for graphs). An empty dataset is a kgbox failure when the
  packer refuses it.

Comparison:
- SELECT: the same variables (as a set) and the same multiset of solutions,
  up to one renaming of blank nodes across the whole result (a bijection,
  found by backtracking); literals compared as RDF terms (lexical form,
  datatype, language), except that a number or boolean (xsd:integer and
  its derived types, decimal, float, double, boolean) is put in its
  datatype's canonical form first, on both sides: SPARQL leaves the lexical
  form of a computed value to the implementation, and Oxigraph's own test
  suite normalizes likewise. Order matters only when the query has a top-level
  `ORDER BY`: then the sequence of the ORDER BY variables' values must be
  the expected one (ties may come in any order; a key that is an
  expression, or not projected, or a blank node ends the compared key).
- CSV (`mf:CSVResultFormatTest`): CSV keeps no types, so the text form of
  each cell is compared (blank node labels renamed as above).
- ASK: the boolean. CONSTRUCT, DESCRIBE: graph isomorphism (pyoxigraph's
  canonicalization). Expected results in Turtle that use the
  `rs:ResultSet` vocabulary are solutions (ordered by `rs:index` if given).

Prints each kgbox failure among pyoxigraph's passes (with --verbose every
test, and the differences), pyoxigraph's failures, then
`pyoxigraph passes P of N; kgbox passes K of those P (X%); kgbox also passes M that pyoxigraph fails`.
Exit status: 0; 1 when kgbox's share is below --min-share; 2 on a setup problem.
Needs pyoxigraph (scripts/setup.sh --dev installs it) and the debug (or
given) builds of kgbox and kgbox-pack.
"""

from __future__ import annotations

import argparse
import csv
import decimal
import io
import math
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

try:
    import pyoxigraph as ox
except ImportError as e:  # pragma: no cover - setup problem
    print(f"w3c_sparql.py: {e}; run scripts/setup.sh --dev to install the test clients", file=sys.stderr)
    sys.exit(2)

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "third_party" / "rdf-tests" / "sparql11"
UPSTREAM = "https://w3c.github.io/rdf-tests/sparql/sparql11/"

MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
QT = "http://www.w3.org/2001/sw/DataAccess/tests/test-query#"
RS = "http://www.w3.org/2001/sw/DataAccess/tests/result-set#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
KINDS = {MF + "QueryEvaluationTest": "query", MF + "CSVResultFormatTest": "csv"}

# The packer's and the query's own time limits, and the harness's on each call.
KGBOX_TIMEOUT_S = 20


def nn(iri: str) -> ox.NamedNode:
    return ox.NamedNode(iri)


# ---------------------------------------------------------------- manifests


@dataclass
class Test:
    iri: str
    short: str  # DIR#local, e.g. bind#bind01
    name: str
    kind: str  # "query" or "csv"
    query: str  # upstream IRI
    data: list[str] = field(default_factory=list)
    graph_data: list[str] = field(default_factory=list)
    result: str | None = None
    approval: str = ""


def local_path(iri: str) -> Path:
    if not iri.startswith(UPSTREAM):
        raise ValueError(f"{iri} is not a file of the vendored suite")
    return SUITE / iri[len(UPSTREAM):]


def rdf_list(g: ox.Store, head) -> list:
    out = []
    while head is not None and head != nn(RDF + "nil"):
        out.append(one(g, head, RDF + "first"))
        head = one(g, head, RDF + "rest")
    return out


def one(g: ox.Store, s, p: str):
    for q in g.quads_for_pattern(s, nn(p), None):
        return q.object
    return None


def many(g: ox.Store, s, p: str) -> list:
    return [q.object for q in g.quads_for_pattern(s, nn(p), None)]


def load_manifests() -> list[Test]:
    tests: list[Test] = []
    for manifest in sorted(SUITE.glob("*/manifest.ttl")):
        d = manifest.parent.name
        base = f"{UPSTREAM}{d}/manifest.ttl"
        g = ox.Store()
        g.extend(ox.parse(path=manifest, format=ox.RdfFormat.TURTLE, base_iri=base))
        for m in [q.subject for q in g.quads_for_pattern(None, nn(RDF + "type"), nn(MF + "Manifest"))]:
            for t in rdf_list(g, one(g, m, MF + "entries")):
                kind = KINDS.get(getattr(one(g, t, RDF + "type"), "value", ""))
                if kind is None:
                    continue
                action = one(g, t, MF + "action")
                result = one(g, t, MF + "result")
                name = one(g, t, MF + "name")
                approval = one(g, t, "http://www.w3.org/2001/sw/DataAccess/tests/test-dawg#approval")
                tests.append(
                    Test(
                        iri=t.value,
                        short=f"{d}#{t.value.rsplit('#', 1)[-1]}",
                        name=name.value if name is not None else t.value,
                        kind=kind,
                        query=one(g, action, QT + "query").value,
                        data=[o.value for o in many(g, action, QT + "data")],
                        graph_data=[o.value for o in many(g, action, QT + "graphData")],
                        result=result.value if result is not None else None,
                        approval=approval.value.rsplit("#", 1)[-1] if approval is not None else "",
                    )
                )
    return tests


# ---------------------------------------------------------------- queries


def strip_comments(text: str) -> str:
    """The query without `#` comments (a `#` inside an IRI or a string stays)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            long = text.startswith(c * 3, i)
            end_tok = c * 3 if long else c
            j = i + len(end_tok)
            while j < n and not text.startswith(end_tok, j):
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + len(end_tok)])
            i = j + len(end_tok)
        elif c == "<" and re.match(r"<[^<>\"{}|^`\\\s]*>", text[i:]):
            m = re.match(r"<[^<>\"{}|^`\\\s]*>", text[i:])
            out.append(m.group(0))
            i += len(m.group(0))
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def dataset_clause(text: str, base: str) -> tuple[list[str], list[str]]:
    """The IRIs of the query's FROM and FROM NAMED (resolved against `base`)."""
    frm, named = [], []
    for m in re.finditer(r"\bFROM\s+(NAMED\s+)?<([^>]*)>", strip_comments(text), re.I):
        iri = urllib.parse.urljoin(base, m.group(2))
        (named if m.group(1) else frm).append(iri)
    return frm, named


def order_keys(text: str) -> list[str] | None:
    """The variables of the top-level ORDER BY, up to the first key that is
    not a plain variable (`?v`, `ASC(?v)`, `DESC(?v)`); None without one."""
    q = strip_comments(text)
    for m in re.finditer(r"\bORDER\s+BY\b", q, re.I):
        before = q[:m.start()]
        if before.count("{") != before.count("}"):
            continue  # inside a sub-query
        rest = re.split(r"\b(?:LIMIT|OFFSET|VALUES)\b|}", q[m.end():], maxsplit=1, flags=re.I)[0]
        keys = []
        for tok in re.findall(r"(?:ASC|DESC)\s*\(\s*[?$]\w+\s*\)|[?$]\w+|\S+", rest, re.I):
            v = re.search(r"[?$](\w+)", tok)
            if not v or not re.fullmatch(r"(?:(?:ASC|DESC)\s*\(\s*)?[?$]\w+\s*\)?", tok, re.I):
                break
            keys.append(v.group(1))
        return keys
    return None


# ---------------------------------------------------------------- results


@dataclass
class Solutions:
    variables: list[str]
    rows: list[dict]  # variable -> term (bound ones only); pyoxigraph terms, or str for CSV
    ordered: bool = False  # the expected order is given (rs:index)


@dataclass
class Graph:
    triples: list


XSD = "http://www.w3.org/2001/XMLSchema#"
INTEGERS = {
    XSD + t
    for t in "integer nonPositiveInteger negativeInteger long int short byte nonNegativeInteger "
    "unsignedLong unsignedInt unsignedShort unsignedByte positiveInteger".split()
}


def canonical(term):
    """`term`, with a number or boolean literal in its datatype's canonical
    form: SPARQL leaves the lexical form of a computed value to the
    implementation ("3.21E4" and "32100.0E0" are one xsd:double)."""
    if not isinstance(term, ox.Literal) or term.language:
        return term
    dt, lex = term.datatype.value, term.value.strip()
    try:
        if dt in INTEGERS:
            lex = str(int(lex))
        elif dt == XSD + "decimal":
            d = decimal.Decimal(lex)
            if not d.is_finite():
                return term
            lex = format(d.normalize(), "f") if d else "0"
        elif dt in (XSD + "double", XSD + "float"):
            if lex.lower() in ("inf", "+inf", "-inf", "nan") and lex not in ("INF", "+INF", "-INF", "NaN"):
                return term
            f = float(lex)
            if dt == XSD + "float":
                f = struct.unpack("f", struct.pack("f", f))[0]
            lex = "NaN" if f != f else "INF" if f == math.inf else "-INF" if f == -math.inf else repr(f)
        elif dt == XSD + "boolean":
            lex = {"1": "true", "0": "false", "true": "true", "false": "false"}[lex]
        else:
            return term
    except (ValueError, KeyError, decimal.InvalidOperation, OverflowError):
        return term
    return ox.Literal(lex, datatype=term.datatype)


def solutions_of(results: ox.QuerySolutions) -> Solutions:
    variables = [v.value for v in results.variables]
    rows = []
    for sol in results:
        rows.append({v: canonical(sol[v]) for v in variables if sol[v] is not None})
    return Solutions(variables, rows)


def from_query_results(results):
    if isinstance(results, ox.QueryBoolean):
        return bool(results)
    if isinstance(results, ox.QuerySolutions):
        return solutions_of(results)
    return Graph([t for t in results])


def csv_solutions(text: str) -> Solutions:
    reader = csv.reader(io.StringIO(text, newline=""))
    rows = list(reader)
    if not rows:
        return Solutions([], [])
    header = rows[0]
    return Solutions(header, [{v: c for v, c in zip(header, r)} for r in rows[1:]])


def result_set_graph(triples: list) -> Solutions | bool | None:
    """Solutions (or a boolean) from the rs: vocabulary, None when the graph is not a result set."""
    g = ox.Store()
    g.extend(ox.Quad(t.subject, t.predicate, t.object) for t in triples)
    sets = [q.subject for q in g.quads_for_pattern(None, nn(RDF + "type"), nn(RS + "ResultSet"))]
    if not sets:
        return None
    rs = sets[0]
    b = one(g, rs, RS + "boolean")
    if b is not None:
        return b.value == "true"
    variables = [o.value for o in many(g, rs, RS + "resultVariable")]
    indexed = []
    for sol in many(g, rs, RS + "solution"):
        row = {}
        for binding in many(g, sol, RS + "binding"):
            row[one(g, binding, RS + "variable").value] = canonical(one(g, binding, RS + "value"))
        index = one(g, sol, RS + "index")
        indexed.append((int(index.value) if index is not None else None, row))
    ordered = bool(indexed) and all(i is not None for i, _ in indexed)
    if ordered:
        indexed.sort(key=lambda x: x[0])
    return Solutions(variables, [r for _, r in indexed], ordered)


def load_expected(test: Test):
    path = local_path(test.result)
    ext = path.suffix[1:]
    if test.kind == "csv" or ext == "csv":
        return csv_solutions(path.read_text(encoding="utf-8"))
    fmt = ox.QueryResultsFormat.from_extension(ext)
    if fmt is not None:
        return from_query_results(ox.parse_query_results(path=path, format=fmt))
    triples = [q.triple for q in ox.parse(path=path, format=ox.RdfFormat.from_extension(ext), base_iri=test.result)]
    rs = result_set_graph(triples)
    return rs if rs is not None else Graph(triples)


# ---------------------------------------------------------------- comparison


def is_bnode(term) -> bool:
    if isinstance(term, str):
        return term.startswith("_:")
    return isinstance(term, ox.BlankNode)


def show(term) -> str:
    return term if isinstance(term, str) else str(term)


def signature(row: dict) -> frozenset:
    return frozenset((v, "_:" if is_bnode(t) else t) for v, t in row.items())


def match_rows(expected: list[dict], actual: list[dict], limit: int = 200_000) -> bool | None:
    """A pairing of the rows under one blank node bijection: True, False, or None when the search gave up."""
    candidates = []
    for i, e in enumerate(expected):
        sig = signature(e)
        candidates.append([j for j, a in enumerate(actual) if signature(a) == sig])
    order = sorted(range(len(expected)), key=lambda i: len(candidates[i]))
    used = [False] * len(actual)
    fwd: dict = {}
    bwd: dict = {}
    steps = 0

    def assign(e_row: dict, a_row: dict) -> list | None:
        added = []
        for v, et in e_row.items():
            if not is_bnode(et):
                continue
            at = a_row[v]
            if et in fwd:
                if fwd[et] != at:
                    undo(added)
                    return None
            elif at in bwd:
                undo(added)
                return None
            else:
                fwd[et] = at
                bwd[at] = et
                added.append(et)
        return added

    def undo(added: list) -> None:
        for et in added:
            del bwd[fwd.pop(et)]

    def go(k: int) -> bool:
        nonlocal steps
        if k == len(order):
            return True
        i = order[k]
        for j in candidates[i]:
            if used[j]:
                continue
            steps += 1
            if steps > limit:
                raise TimeoutError
            added = assign(expected[i], actual[j])
            if added is None:
                continue
            used[j] = True
            if go(k + 1):
                return True
            used[j] = False
            undo(added)
        return False

    try:
        return go(0)
    except TimeoutError:
        return None


def row_text(row: dict) -> str:
    return "{" + ", ".join(f"?{v}={show(t)}" for v, t in sorted(row.items())) + "}"


def diff_rows(expected: list[dict], actual: list[dict]) -> str:
    e = Counter(row_text({v: ("_:b" if is_bnode(t) else t) for v, t in r.items()}) for r in expected)
    a = Counter(row_text({v: ("_:b" if is_bnode(t) else t) for v, t in r.items()}) for r in actual)
    lines = [f"  - {r}" for r in sorted((e - a).elements())] + [f"  + {r}" for r in sorted((a - e).elements())]
    if not lines:
        lines = ["  (same rows up to blank nodes; no consistent blank node renaming)"]
    return "\n".join(lines[:40])


def first_diff_row(expected: list[dict], actual: list[dict]) -> str:
    e = Counter(row_text(r) for r in expected if not any(is_bnode(t) for t in r.values()))
    a = Counter(row_text(r) for r in actual if not any(is_bnode(t) for t in r.values()))
    missing, extra = list((e - a).elements()), list((a - e).elements())
    if missing:
        return f"missing {missing[0]}"
    if extra:
        return f"unexpected {extra[0]}"
    return ""


def order_key_seq(rows: list[dict], keys: list[str]) -> list[tuple]:
    seq = []
    for r in rows:
        key = []
        for k in keys:
            t = r.get(k)
            if t is not None and is_bnode(t):
                break
            key.append(show(t) if t is not None else None)
        seq.append(tuple(key))
    return seq


def compare(expected, actual, keys: list[str] | None) -> tuple[bool, str, str]:
    """(equal, one-line reason, details)."""
    if isinstance(expected, bool):
        if not isinstance(actual, bool):
            return False, f"expected a boolean, got {kind_of(actual)}", ""
        if expected != actual:
            return False, f"expected {str(expected).lower()}, got {str(actual).lower()}", ""
        return True, "", ""
    if isinstance(expected, Graph):
        if not isinstance(actual, Graph):
            return False, f"expected a graph, got {kind_of(actual)}", ""
        e = ox.Dataset(ox.Quad(t.subject, t.predicate, canonical(t.object)) for t in expected.triples)
        a = ox.Dataset(ox.Quad(t.subject, t.predicate, canonical(t.object)) for t in actual.triples)
        e.canonicalize(ox.CanonicalizationAlgorithm.UNSTABLE)
        a.canonicalize(ox.CanonicalizationAlgorithm.UNSTABLE)
        if e == a:
            return True, "", ""
        es = {str(q) for q in e}
        as_ = {str(q) for q in a}
        details = "\n".join([f"  - {t}" for t in sorted(es - as_)][:20] + [f"  + {t}" for t in sorted(as_ - es)][:20])
        return False, f"graphs differ: expected {len(e)} triples, got {len(a)}", details
    if not isinstance(actual, Solutions):
        return False, f"expected solutions, got {kind_of(actual)}", ""
    if set(expected.variables) != set(actual.variables):
        return (
            False,
            f"variables differ: expected {sorted(expected.variables)}, got {sorted(actual.variables)}",
            "",
        )
    if len(expected.rows) != len(actual.rows):
        hint = first_diff_row(expected.rows, actual.rows)
        return (
            False,
            f"expected {len(expected.rows)} rows, got {len(actual.rows)}" + (f" ({hint})" if hint else ""),
            diff_rows(expected.rows, actual.rows),
        )
    if Counter(map(signature, expected.rows)) != Counter(map(signature, actual.rows)):
        hint = first_diff_row(expected.rows, actual.rows)
        return False, "different rows" + (f": {hint}" if hint else ""), diff_rows(expected.rows, actual.rows)
    matched = match_rows(expected.rows, actual.rows)
    if matched is None:
        return False, "gave up looking for a blank node renaming", ""
    if not matched:
        return False, "no blank node renaming makes the rows equal", diff_rows(expected.rows, actual.rows)
    if expected.ordered:
        keys = sorted(expected.variables)
    if keys:
        keys = keys[: next((i for i, k in enumerate(keys) if k not in expected.variables), len(keys))]
        es, as_ = order_key_seq(expected.rows, keys), order_key_seq(actual.rows, keys)
        if es != as_:
            i = next(i for i, (x, y) in enumerate(zip(es, as_)) if x != y)
            return (
                False,
                f"wrong order (ORDER BY {' '.join('?' + k for k in keys)}): row {i + 1} is {as_[i]}, expected {es[i]}",
                "",
            )
    return True, "", ""


def kind_of(x) -> str:
    if isinstance(x, bool):
        return "a boolean"
    if isinstance(x, Graph):
        return "a graph"
    return "solutions"


# ---------------------------------------------------------------- datasets


def dataset_of(test: Test, query_text: str) -> tuple[tuple, list]:
    """(a key naming the dataset, its quads)."""
    frm, named = dataset_clause(query_text, test.query)
    graphs: list[tuple[str | None, str]] = [(None, f) for f in test.data]
    seen = set()
    for iri in [*test.graph_data, *frm, *named]:
        if iri not in seen:
            seen.add(iri)
            graphs.append((iri, iri))
    key = tuple(graphs)
    quads = []
    for graph, f in graphs:
        path = local_path(f)
        fmt = ox.RdfFormat.from_extension(path.suffix[1:])
        for q in ox.parse(path=path, format=fmt, base_iri=f, rename_blank_nodes=True):
            g = nn(graph) if graph is not None else ox.DefaultGraph()
            quads.append(ox.Quad(q.subject, q.predicate, q.object, g))
    return key, quads


# ---------------------------------------------------------------- engines


def run_pyoxigraph(test: Test, quads: list, query: str):
    store = ox.Store()
    store.extend(quads)
    results = store.query(query)
    if test.kind == "csv" or str(test.result).endswith(".csv"):
        if not isinstance(results, ox.QuerySolutions):
            return from_query_results(results)
        return csv_solutions(results.serialize(format=ox.QueryResultsFormat.CSV).decode("utf-8"))
    return from_query_results(results)


class Kgbox:
    def __init__(self, kgbox: Path, pack: Path, work: Path):
        self.kgbox, self.pack, self.work = kgbox, pack, work
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("KGBOX_")}
        self.config = work / "config.toml"
        self.config.write_text("")
        keys = work / "keys"
        self.call([str(pack), "keygen", "--out", str(keys), "--name", "w3c"], "keygen")
        self.secret, self.public = keys / "w3c.key", keys / "w3c.pub"
        self.bundles: dict = {}  # dataset key -> bundle path, or the packer's error

    def call(self, args: list[str], what: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        try:
            r = subprocess.run(
                args, input=stdin.encode() if stdin is not None else None, capture_output=True,
                env=self.env, cwd=self.work, timeout=KGBOX_TIMEOUT_S + 10,
            )
        except subprocess.TimeoutExpired:
            raise EngineError(f"{what} timed out after {KGBOX_TIMEOUT_S + 10} s")
        if r.returncode != 0:
            msg = r.stderr.decode("utf-8", "replace").replace(f"{self.work}/", "").strip().splitlines()
            raise EngineError(f"{what} failed: {msg[-1] if msg else f'exit {r.returncode}'}")
        return r

    def bundle(self, key: tuple, quads: list) -> Path:
        if key not in self.bundles:
            n = len(self.bundles)
            nq = self.work / f"data{n}.nq"
            nq.write_bytes(ox.serialize(quads, format=ox.RdfFormat.N_QUADS) or b"")
            out = self.work / f"data{n}.kgb"
            try:
                self.call(
                    [str(self.pack), "build", "--quiet", "--allow-empty", "--triples", str(nq), "--name", f"w3c{n}",
                     "--version", "1.0.0", "--key", str(self.secret), "--level", "1", "--out", str(out)],
                    "kgbox-pack build",
                )
                self.bundles[key] = out
            except EngineError as e:
                self.bundles[key] = e
        b = self.bundles[key]
        if isinstance(b, EngineError):
            raise b
        return b

    def run(self, test: Test, key: tuple, quads: list, query: str, expected):
        bundle = self.bundle(key, quads)
        ext = str(test.result).rsplit(".", 1)[-1]
        fmt = {"srx": "xml", "srj": "json", "tsv": "tsv", "csv": "csv"}.get(ext)
        if isinstance(expected, Graph):
            fmt = "turtle"
        args = [str(self.kgbox), "sparql", "--config", str(self.config), "--bundle", str(bundle),
                "--trust", str(self.public), "--timeout", str(KGBOX_TIMEOUT_S)]
        if fmt:
            args += ["--format", fmt]
        out = self.call(args + ["-"], "kgbox sparql", stdin=query).stdout
        return parse_kgbox(out, fmt)


class EngineError(Exception):
    pass


def parse_kgbox(out: bytes, fmt: str | None):
    try:
        if fmt == "csv":
            text = out.decode("utf-8")
            if text.startswith("{") or text.startswith("<"):
                raise EngineError("kgbox answered a CSV query with a boolean or a graph")
            return csv_solutions(text)
        if fmt == "turtle":
            return Graph([q.triple for q in ox.parse(out, format=ox.RdfFormat.TURTLE)])
        qfmt = {"xml": ox.QueryResultsFormat.XML, "tsv": ox.QueryResultsFormat.TSV}.get(fmt, ox.QueryResultsFormat.JSON)
        try:
            return from_query_results(ox.parse_query_results(out, format=qfmt))
        except SyntaxError:
            # A graph where solutions were expected: read it as Turtle.
            return Graph([q.triple for q in ox.parse(out, format=ox.RdfFormat.TURTLE)])
    except (SyntaxError, ValueError, UnicodeDecodeError) as e:
        raise EngineError(f"kgbox's output does not parse: {str(e).splitlines()[0] if str(e) else e}")


# ---------------------------------------------------------------- main


@dataclass
class Outcome:
    ok: bool
    reason: str = ""
    details: str = ""


def evaluate(engine, expected, keys: list[str] | None) -> Outcome:
    try:
        actual = engine()
    except EngineError as e:
        return Outcome(False, str(e))
    except (SyntaxError, OSError, ValueError, TypeError) as e:
        msg = str(e).strip().splitlines()
        return Outcome(False, f"{type(e).__name__}: {msg[0] if msg else ''}")
    ok, reason, details = compare(expected, actual, keys)
    return Outcome(ok, reason, details)


def md_cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kgbox", type=Path, default=ROOT / "target" / "debug" / "kgbox")
    ap.add_argument("--kgbox-pack", type=Path, default=ROOT / "target" / "debug" / "kgbox-pack")
    ap.add_argument("--no-kgbox", action="store_true", help="run pyoxigraph only")
    ap.add_argument("--only", action="append", default=[], help="run the tests whose IRI or DIR#name contains this (repeatable)")
    ap.add_argument("--markdown", type=Path, help="write kgbox's failures among pyoxigraph's passes as a markdown table")
    ap.add_argument("--min-share", type=float, help="exit 1 when kgbox passes less than this share of pyoxigraph's passes")
    ap.add_argument("--verbose", action="store_true", help="show every test and the differences")
    ap.add_argument("--keep", type=Path, help="work in this directory (N-Quads, bundles) and keep it")
    args = ap.parse_args()

    started = time.monotonic()
    tests = load_manifests()
    if args.only:
        tests = [t for t in tests if any(s in t.iri or s in t.short for s in args.only)]
    if not tests:
        print("w3c_sparql.py: no tests selected", file=sys.stderr)
        return 2
    if not args.no_kgbox:
        for b in (args.kgbox, args.kgbox_pack):
            if not b.exists():
                print(f"w3c_sparql.py: {b} is missing: cargo build --workspace --bins", file=sys.stderr)
                return 2

    tmp = None
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        work = args.keep
    else:
        tmp = tempfile.TemporaryDirectory(prefix="w3c-sparql-")
        work = Path(tmp.name)
    kg = None if args.no_kgbox else Kgbox(args.kgbox.resolve(), args.kgbox_pack.resolve(), work)

    ox_pass: set[str] = set()
    kg_pass: set[str] = set()
    kg_fail: dict[str, Outcome] = {}
    ox_fail: dict[str, Outcome] = {}
    for t in tests:
        text = local_path(t.query).read_text(encoding="utf-8")
        query = f"BASE <{t.query}>\n{text}"
        keys = order_keys(text)
        try:
            expected = load_expected(t)
            key, quads = dataset_of(t, text)
        except (SyntaxError, OSError, ValueError) as e:
            print(f"w3c_sparql.py: {t.short}: cannot read the test: {e}", file=sys.stderr)
            return 2
        o = evaluate(lambda: run_pyoxigraph(t, quads, query), expected, keys)
        (ox_pass.add(t.iri) if o.ok else ox_fail.__setitem__(t.iri, o))
        k = None
        if kg is not None:
            k = evaluate(lambda: kg.run(t, key, quads, query, expected), expected, keys)
            (kg_pass.add(t.iri) if k.ok else kg_fail.__setitem__(t.iri, k))
        if args.verbose or (k is not None and not k.ok and o.ok):
            status = f"pyoxigraph {'ok' if o.ok else 'FAIL'}" + ("" if k is None else f", kgbox {'ok' if k.ok else 'FAIL'}")
            print(f"{t.short:40} {status}")
            for who, out in (("pyoxigraph", o), ("kgbox", k)):
                if out is not None and not out.ok:
                    print(f"    {who}: {out.reason}")
                    if args.verbose and out.details:
                        print(out.details)
            if args.verbose and (not o.ok or (k is not None and not k.ok)):
                print("    query: " + " ".join(text.split())[:300])
    if tmp is not None:
        tmp.cleanup()

    n, p = len(tests), len(ox_pass)
    print()
    print("pyoxigraph fails (not counted for kgbox):")
    for t in tests:
        if t.iri in ox_fail:
            print(f"  {t.short}: {ox_fail[t.iri].reason}")
    if kg is None:
        print(f"pyoxigraph passes {p} of {n} ({time.monotonic() - started:.1f} s)")
        return 0
    k = len(ox_pass & kg_pass)
    m = len(kg_pass - ox_pass)
    share = k / p if p else 1.0
    failures = [t for t in tests if t.iri in ox_pass and t.iri in kg_fail]
    print(f"kgbox fails ({len(failures)}):")
    for t in failures:
        print(f"  {t.short}: {kg_fail[t.iri].reason}")
    if m:
        print("kgbox passes, pyoxigraph fails: " + ", ".join(t.short for t in tests if t.iri in kg_pass - ox_pass))
    print(
        f"pyoxigraph passes {p} of {n}; kgbox passes {k} of those {p} ({100 * share:.1f}%); "
        f"kgbox also passes {m} that pyoxigraph fails ({time.monotonic() - started:.1f} s)"
    )
    if args.markdown:
        lines = ["| Test | Name | Why kgbox fails |", "|---|---|---|"]
        for t in failures:
            query = "../third_party/rdf-tests/sparql11/" + t.query[len(UPSTREAM):]
            lines.append(f"| [`{t.short}`]({query}) | {md_cell(t.name)} | {md_cell(kg_fail[t.iri].reason)} |")
        if not failures:
            lines.append("| (none) | | |")
        args.markdown.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if args.min_share is not None and share < args.min_share:
        print(f"kgbox's share {share:.3f} is below --min-share {args.min_share}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
