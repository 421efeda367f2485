#!/usr/bin/env python3
"""SPARQL clients against a running `kgbox serve` at /sparql.

    sparql_clients.py demo URL        SPARQLWrapper and rdflib's SPARQLStore on the demo bundle
    sparql_clients.py rdf URL FILE    the same queries through kgbox and through pyoxigraph
                                      over FILE (the RDF the bundle was packed from): equal rows

URL is the endpoint, e.g. http://127.0.0.1:8080/sparql. Exits non-zero with
the failing query on a mismatch. Needs SPARQLWrapper, rdflib and pyoxigraph
(scripts/setup.sh --dev installs them).
"""

from __future__ import annotations

import sys

try:
    import pyoxigraph
    from rdflib import Graph, URIRef
    from rdflib.plugins.stores.sparqlstore import SPARQLStore
    from SPARQLWrapper import JSON, XML, CSV, SPARQLWrapper
except ImportError as e:  # pragma: no cover - setup problem
    sys.exit(f"sparql_clients.py: {e}; run scripts/setup.sh --dev to install the test clients")

E = "http://kgbox.local/e/"
R = "http://kgbox.local/r/"
PREFIXES = f"PREFIX e: <{E}> PREFIX r: <{R}> "


def fail(msg: str) -> None:
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def demo(url: str) -> None:
    # SPARQLWrapper: JSON SELECT with LIMIT, ASK, VALUES; XML and CSV too.
    sw = SPARQLWrapper(url)
    sw.setReturnFormat(JSON)
    sw.setQuery(PREFIXES + "SELECT ?m WHERE { ?m r:directed_by e:Spike%20Lee } ORDER BY ?m LIMIT 1")
    rows = sw.queryAndConvert()["results"]["bindings"]
    if [r["m"]["value"] for r in rows] != [E + "Malcolm%20X"]:
        fail(f"SELECT LIMIT 1 gave {rows}")
    sw.setQuery(PREFIXES + "ASK { e:Malcolm%20X r:directed_by e:Spike%20Lee }")
    if sw.queryAndConvert().get("boolean") is not True:
        fail("ASK of a fact was not true")
    sw.setQuery(PREFIXES + "ASK { e:Malcolm%20X r:directed_by e:Ridley%20Scott }")
    if sw.queryAndConvert().get("boolean") is not False:
        fail("ASK of a non-fact was not false")
    sw.setQuery(PREFIXES + "SELECT ?m WHERE { VALUES ?d { e:Spike%20Lee } ?m r:directed_by ?d }")
    films = {r["m"]["value"] for r in sw.queryAndConvert()["results"]["bindings"]}
    if {E + "Malcolm%20X", E + "Red%20Hook%20Summer"} - films:
        fail(f"VALUES gave {films}")
    sw.setMethod("POST")
    sw.setReturnFormat(XML)
    doc = sw.queryAndConvert()
    if len(doc.getElementsByTagName("result")) != len(films):
        fail("the XML results differ from the JSON ones")
    sw.setReturnFormat(CSV)
    csv = sw.queryAndConvert().decode()
    if not csv.startswith("m\r\n") or "Malcolm%20X" not in csv:
        fail(f"CSV results: {csv!r}")
    # Beyond the translator (OPTIONAL, two columns), evaluated over the graph.
    sw.setReturnFormat(JSON)
    sw.setQuery(PREFIXES + "SELECT ?m ?w WHERE { ?m r:directed_by e:Spike%20Lee OPTIONAL { ?m r:written_by ?w } }")
    rows = sw.queryAndConvert()["results"]["bindings"]
    if {r["m"]["value"] for r in rows} != films:
        fail(f"OPTIONAL gave {rows}")
    # A syntax error: an HTTP 400 that says so.
    sw.setQuery(PREFIXES + "SELECT ?m WHERE { ?m")
    try:
        sw.queryAndConvert()
        fail("a syntax error was accepted")
    except Exception as e:  # SPARQLWrapper raises QueryBadFormed for a 400
        if "syntax" not in str(e):
            fail(f"the 400 does not say syntax: {e}")

    # rdflib's SPARQLStore (GET, XML results).
    g = Graph(SPARQLStore(query_endpoint=url))
    rows = list(g.query(PREFIXES + "SELECT ?m WHERE { ?m r:directed_by e:Spike%20Lee } LIMIT 5"))
    got = {str(r[0]) for r in rows}
    if E + "Malcolm%20X" not in got:
        fail(f"rdflib SPARQLStore SELECT gave {got}")
    ask = g.query(PREFIXES + "ASK { e:Malcolm%20X r:directed_by e:Spike%20Lee }")
    if ask.askAnswer is not True:
        fail("rdflib SPARQLStore ASK was not true")
    # The store as a read-only graph: len() and triples() ask full SPARQL.
    size = len(g)
    if size < 100:
        fail(f"rdflib len(graph) gave {size}")
    about = list(g.triples((URIRef(E + "Malcolm%20X"), None, None)))
    if (URIRef(E + "Malcolm%20X"), URIRef(R + "directed_by"), URIRef(E + "Spike%20Lee")) not in about:
        fail(f"rdflib triples() gave {about}")
    print(f"demo: SPARQLWrapper and rdflib passed ({len(films)} films by Spike Lee)")


ONT = "http://example.org/ontology/"
RDF_PREFIXES = (
    "PREFIX ont: <http://example.org/ontology/> PREFIX movie: <http://example.org/movie/> "
    "PREFIX person: <http://example.org/person/> PREFIX genre: <http://example.org/genre/> "
    "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> "
)
RDF_QUERIES = [
    "SELECT ?m WHERE { ?m ont:directed_by person:Ridley_Scott }",
    "SELECT DISTINCT ?p WHERE { ?m ont:starred_actors person:Harrison_Ford . ?m ont:directed_by ?p }",
    "SELECT DISTINCT ?y WHERE { person:Harrison_Ford ^ont:starred_actors/ont:release_year ?y }",
    "ASK { movie:Alien ont:has_genre genre:Horror }",
    "ASK { movie:Witness ont:has_genre genre:Horror }",
    "SELECT ?m WHERE { VALUES ?d { person:Ridley_Scott person:Peter_Weir } ?m ont:directed_by ?d } ORDER BY ?m LIMIT 3",
    "SELECT ?m ?n WHERE { ?m ont:directed_by person:Peter_Weir ; rdfs:label ?n FILTER(CONTAINS(?n, \"Truman\")) }",
    "SELECT ?m WHERE { ?m ont:has_genre genre:Science_Fiction FILTER NOT EXISTS { ?m ont:starred_actors person:Harrison_Ford } }",
    "SELECT DISTINCT ?m WHERE { { ?m ont:directed_by person:Peter_Weir } UNION { ?m ont:has_genre genre:Horror } }",
    "SELECT DISTINCT ?x WHERE { ?m ont:directed_by person:Ridley_Scott . ?m ont:directed_by ?x }",
    "SELECT ?m WHERE { ?m ont:directed_by person:Peter_Weir FILTER(?m != movie:Witness) }",
    "SELECT ?m WHERE { ?m ont:directed_by person:Nobody }",
    # Literals are not IRIs: a name given as a literal matches no IRI entity.
    "SELECT ?m WHERE { ?m ont:directed_by ?p FILTER(?p = \"Ridley Scott\") }",
    "SELECT ?m WHERE { ?m ont:release_year \"1985\" }",
    "SELECT ?m WHERE { ?m rdfs:label \"Blade Runner\"@en }",
    "ASK { ?m ont:release_year \"1985\" }",
    # Beyond the translator: evaluated over the graph (spareval).
    "SELECT ?m ?y WHERE { ?m ont:directed_by person:Ridley_Scott . ?m ont:release_year ?y }",
    "SELECT ?m ?y WHERE { ?m ont:starred_actors person:Harrison_Ford OPTIONAL { ?m ont:release_year ?y } }",
    "SELECT (COUNT(?m) AS ?n) WHERE { ?m ont:starred_actors ?a }",
    "SELECT ?d (COUNT(?m) AS ?n) WHERE { ?m ont:directed_by ?d } GROUP BY ?d",
    "SELECT ?m WHERE { ?m ont:release_year ?y FILTER(STR(?y) >= \"1982\") }",
    "SELECT ?p ?o WHERE { movie:Alien ?p ?o FILTER(?p != rdfs:label) }",
    "SELECT * WHERE { ?s ont:has_genre ?o }",
    "ASK { ?m ont:starred_actors person:Harrison_Ford . ?m ont:directed_by ?d . ?d ^ont:directed_by movie:Alien }",
]


def rows_of(result) -> object:
    """Rows as comparable values: booleans, or a list of tuples of (kind, value)."""
    if isinstance(result, pyoxigraph.QueryBoolean):
        return bool(result)
    out = []
    variables = result.variables
    for sol in result:
        row = []
        for v in variables:
            t = sol[v]
            if t is None:
                row.append(("unbound", ""))
                continue
            kind = "iri" if isinstance(t, pyoxigraph.NamedNode) else "literal"
            row.append((kind, t.value))
        out.append(tuple(row))
    return out


def rdf(url: str, path: str) -> None:
    store = pyoxigraph.Store()
    fmt = pyoxigraph.RdfFormat.TURTLE if path.endswith(".ttl") else pyoxigraph.RdfFormat.N_TRIPLES
    store.load(path=path, format=fmt)
    sw = SPARQLWrapper(url)
    sw.setReturnFormat(JSON)
    for q in RDF_QUERIES:
        text = RDF_PREFIXES + q
        want = rows_of(store.query(text))
        sw.setQuery(text)
        got_json = sw.queryAndConvert()
        if "boolean" in got_json:
            got = got_json["boolean"]
        else:
            names = got_json["head"]["vars"]
            got = [
                tuple(
                    ("iri" if b[n]["type"] == "uri" else "literal", b[n]["value"]) if n in b else ("unbound", "")
                    for n in names
                )
                for b in got_json["results"]["bindings"]
            ]
        ordered = "ORDER BY" in q
        if not ordered and isinstance(want, list):
            want, got = sorted(want), sorted(got)
        if got != want:
            fail(f"{q}\n  kgbox:     {got}\n  pyoxigraph: {want}")
    print(f"rdf: {len(RDF_QUERIES)} queries equal to pyoxigraph's over {path}")


def main() -> None:
    if len(sys.argv) < 3 or sys.argv[1] not in ("demo", "rdf"):
        sys.exit(__doc__)
    if sys.argv[1] == "demo":
        demo(sys.argv[2])
    else:
        if len(sys.argv) != 4:
            sys.exit(__doc__)
        rdf(sys.argv[2], sys.argv[3])


if __name__ == "__main__":
    main()
