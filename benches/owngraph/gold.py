#!/usr/bin/env python3
"""Gold answers of the owngraph benchmark, computed by SPARQL (pyoxigraph).

For each graph (benches/owngraph/<graph>/), reads questions.tsv
(`hop<TAB>question<TAB>SPARQL`, one query per line, selecting `?answer`; lines
starting with `#` and blank lines are skipped), runs every query on graph.nt.gz
and writes gold-1hop.tsv, gold-2hop.tsv and gold-3hop.tsv as
`question<TAB>ans1|ans2|...` (the format `kgbox eval qa --format metaqa` reads).

  python3 benches/owngraph/gold.py            # all graphs, or name some: music starwars
  python3 benches/owngraph/gold.py --check    # fail if the checked-in gold files differ
  python3 benches/owngraph/gold.py --show     # also print each question's answers

Every query gets the PREFIX lines of PREFIXES below. An IRI answer is written as the
entity's display name: its value of the graph's name predicate(s) (NAMES below, in
order; English or untagged literals first), else the IRI's last path segment with
`_` as spaces and %-escapes decoded. A literal answer is its lexical form. Answers
are sorted and deduplicated.

The topic entity of a question is bound to `?topic` in its query: multi-hop queries
must bind it, and answers equal to the topic (the entity, or its display name) are
dropped. A question with no answer or more than MAX_ANSWERS answers, a repeated
question, a hop outside 1-3 or an answer containing `|` or a tab is an error.

Needs Python 3.11 and pyoxigraph (pip install pyoxigraph).
"""
import argparse
import gzip
import os
import re
import sys
import urllib.parse

import pyoxigraph as ox

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_ANSWERS = 30

PREFIXES = """\
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
PREFIX owl: <http://www.w3.org/2002/07/owl#>
PREFIX foaf: <http://xmlns.com/foaf/0.1/>
PREFIX dc: <http://purl.org/dc/elements/1.1/>
PREFIX swc: <http://data.semanticweb.org/ns/swc/ontology#>
PREFIX swrc: <http://swrc.ontoware.org/ontology#>
PREFIX voc: <https://swapi.co/vocabulary/>
PREFIX m: <http://stardog.com/tutorial/>
"""

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
# Each graph's naming predicates, most preferred first.
NAMES = {
    "music": ["http://stardog.com/tutorial/name"],
    "starwars": [RDFS_LABEL],
    "iswc": [
        "http://xmlns.com/foaf/0.1/name",
        "http://purl.org/dc/elements/1.1/title",
        RDFS_LABEL,
    ],
}
GRAPHS = list(NAMES)


def graph_file(graph):
    for name in ("graph.nt.gz", "graph.ttl.gz", "graph.nt", "graph.ttl"):
        path = os.path.join(HERE, graph, name)
        if os.path.exists(path):
            return path
    sys.exit(f"gold.py: no graph file in {os.path.join(HERE, graph)}")


def load(graph):
    path = graph_file(graph)
    fmt = ox.RdfFormat.N_TRIPLES if ".nt" in path else ox.RdfFormat.TURTLE
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    store = ox.Store()
    store.bulk_load(data, fmt)
    return store


class Namer:
    def __init__(self, store, predicates):
        self.store = store
        self.predicates = [ox.NamedNode(p) for p in predicates]
        self.cache = {}

    def name(self, term):
        if isinstance(term, ox.Literal):
            return term.value
        if term in self.cache:
            return self.cache[term]
        name = None
        for pred in self.predicates:
            values = [q.object for q in self.store.quads_for_pattern(term, pred, None)
                      if isinstance(q.object, ox.Literal)]
            preferred = [v.value for v in values if v.language in (None, "en")]
            others = [v.value for v in values]
            if preferred or others:
                name = min(preferred or others)
                break
        if name is None:
            value = term.value if isinstance(term, ox.NamedNode) else str(term)
            local = re.split(r"[/#]", value.rstrip("/#"))[-1] or value
            name = urllib.parse.unquote(local).replace("_", " ")
        self.cache[term] = name
        return name


def read_questions(graph):
    path = os.path.join(HERE, graph, "questions.tsv")
    rows = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 3:
                sys.exit(f"{path}:{lineno}: expected hop<TAB>question<TAB>SPARQL, got {len(cols)} columns")
            rows.append((lineno, *cols))
    return path, rows


def answers(store, namer, query, hop, where):
    if not re.search(r"\bSELECT\s+(DISTINCT\s+)?\?answer\s+WHERE\b", query, re.I):
        raise ValueError(f"{where}: the query must be `SELECT [DISTINCT] ?answer WHERE {{...}}`")
    has_topic = "?topic" in query
    if hop > 1 and not has_topic:
        raise ValueError(f"{where}: a multi-hop query must bind the topic entity to ?topic")
    if has_topic:
        query = re.sub(r"\?answer\s+WHERE\b", "?answer ?topic WHERE", query, count=1)
    result = store.query(PREFIXES + query)
    names, topics = set(), set()
    for row in result:
        answer = row["answer"]
        if answer is None:
            continue
        topic = row["topic"] if has_topic else None
        if topic is not None:
            topics.add(namer.name(topic))
            if topic == answer:
                continue
        names.add(namer.name(answer))
    names -= topics
    names = sorted(names)
    if not names:
        raise ValueError(f"{where}: no answer")
    if len(names) > MAX_ANSWERS:
        raise ValueError(f"{where}: {len(names)} answers (at most {MAX_ANSWERS})")
    for n in names:
        if "|" in n or "\t" in n or "\n" in n or not n.strip():
            raise ValueError(f"{where}: answer {n!r} cannot be written in the metaqa format")
    return names


def build(graph, show=False):
    store = load(graph)
    namer = Namer(store, NAMES[graph])
    path, rows = read_questions(graph)
    out = {1: [], 2: [], 3: []}
    seen = set()
    errors = []
    for lineno, hop, question, query in rows:
        where = f"{path}:{lineno}"
        if hop not in ("1", "2", "3"):
            errors.append(f"{where}: hop must be 1, 2 or 3, not {hop!r}")
            continue
        question = question.strip()
        if question.lower() in seen:
            errors.append(f"{where}: repeated question {question!r}")
            continue
        seen.add(question.lower())
        try:
            names = answers(store, namer, query, int(hop), where)
        except ValueError as e:
            errors.append(str(e))
            continue
        except (SyntaxError, OSError) as e:
            errors.append(f"{where}: {str(e).splitlines()[0]}")
            continue
        if show:
            print(f"{graph}\t{hop}\t{question}\t{len(names)}\t{' | '.join(names)}")
        out[int(hop)].append(f"{question}\t{'|'.join(names)}\n")
    if errors:
        sys.exit("gold.py: " + "\ngold.py: ".join(errors))
    return {os.path.join(HERE, graph, f"gold-{h}hop.tsv"): "".join(lines) for h, lines in out.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("graphs", nargs="*", help=f"graphs (default: {' '.join(GRAPHS)})")
    ap.add_argument("--check", action="store_true", help="fail if the checked-in gold files differ")
    ap.add_argument("--show", action="store_true", help="print every question's answers")
    args = ap.parse_args()
    bad = [g for g in args.graphs if g not in NAMES]
    if bad:
        sys.exit(f"gold.py: unknown graph(s) {' '.join(bad)}; known: {' '.join(GRAPHS)}")
    stale = []
    for graph in args.graphs or GRAPHS:
        files = build(graph, show=args.show)
        counts = []
        for path, text in files.items():
            counts.append(str(text.count("\n")))
            if args.check:
                try:
                    with open(path, encoding="utf-8") as f:
                        current = f.read()
                except FileNotFoundError:
                    current = None
                if current != text:
                    stale.append(os.path.relpath(path, os.getcwd()))
            else:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
        print(f"gold.py: {graph}: {'/'.join(counts)} questions (1/2/3-hop)", file=sys.stderr)
    if stale:
        sys.exit("gold.py: out of date (run benches/owngraph/gold.py): " + " ".join(stale))


if __name__ == "__main__":
    main()
