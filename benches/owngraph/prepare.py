#!/usr/bin/env python3
"""Rebuild the graph files of benches/owngraph from their upstream sources.

The graph files are checked in; this records how they were made (see README.md):

  python3 benches/owngraph/prepare.py music    SRC/music/music.ttl.gz
  python3 benches/owngraph/prepare.py starwars SRC/SWAPI-WD-data.ttl
  python3 benches/owngraph/prepare.py iswc     SRC/data/iswc/iswc-2010-complete.new.ttl \
      SRC/data/iswc/iswc-2011-complete.new.ttl SRC/data/iswc/iswc-2012-complete.new.ttl

Needs pyoxigraph (0.4 or later). Writes benches/owngraph/<graph>/graph.nt.gz (sorted
N-Triples, gzip with a fixed mtime so that reruns are byte-identical).
"""
import gzip
import os
import sys

import pyoxigraph as ox

HERE = os.path.dirname(os.path.abspath(__file__))
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
FOAF_NAME = "http://xmlns.com/foaf/0.1/name"
DC_TITLE = "http://purl.org/dc/elements/1.1/title"


def read(path):
    fmt = ox.RdfFormat.N_TRIPLES if ".nt" in path else ox.RdfFormat.TURTLE
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        # lenient: SWAPI-WD-data.ttl has language tags such as @be-x-old that
        # strict BCP47 parsing rejects (they are dropped below anyway).
        return [(q.subject, q.predicate, q.object) for q in ox.parse(f, format=fmt, lenient=True)]


def music(triples):
    # Stardog's tutorial subset of DBpedia, taken whole.
    return triples


def starwars(triples):
    # Keep English and untagged literals only: the Wikidata part carries labels and
    # descriptions in ~100 languages (and tags that strict parsers reject).
    out = []
    for s, p, o in triples:
        if isinstance(o, ox.Literal) and o.language not in (None, "en") and not o.language.startswith("en-"):
            continue
        if isinstance(o, ox.Literal) and o.language and o.language.startswith("en-"):
            continue  # en-GB / en-CA duplicates of the @en label
        out.append((s, p, o))
    return out


def iswc(triples):
    # ISWC 2010-2012 metadata. Drop e-mail hashes and the rdf:Seq author lists, and
    # drop rdfs:label where the entity already has foaf:name (people, organisations)
    # or dc:title (papers): those entities are then named by foaf:name / dc:title only,
    # the rest (events, places, roles) keep rdfs:label.
    # Whitespace inside names is collapsed, and an entity keeps one foaf:name (the
    # rdfs:label value when it is among them, else the first in sorted order):
    # the source spells many people several ways ("Sören Auer", "Soeren Auer").
    def norm(o):
        return ox.Literal(" ".join(o.value.split()), language=o.language) if o.language else ox.Literal(" ".join(o.value.split()), datatype=o.datatype)
    triples = [(s, p, norm(o) if isinstance(o, ox.Literal) and p.value in (FOAF_NAME, DC_TITLE, RDFS_LABEL) else o)
               for s, p, o in triples]
    labels = {}
    for s, p, o in triples:
        if p.value == RDFS_LABEL:
            labels.setdefault(s, set()).add(o.value)
    names = {}
    for s, p, o in triples:
        if p.value == FOAF_NAME:
            names.setdefault(s, []).append(o)
    keep_name = {}
    for s, values in names.items():
        pick = sorted((v for v in values if v.value in labels.get(s, ())), key=lambda v: v.value)
        keep_name[s] = (pick or sorted(values, key=lambda v: v.value))[0]
    triples = [(s, p, o) for s, p, o in triples if p.value != FOAF_NAME or o == keep_name[s]]
    named = {s for s, p, o in triples if p.value in (FOAF_NAME, DC_TITLE)}
    drop_pred = {"http://xmlns.com/foaf/0.1/mbox_sha1sum", "http://purl.org/ontology/bibo/authorList"}
    seqs = {s for s, p, o in triples if p.value == RDF + "type" and o.value == RDF + "Seq"}
    out = set()
    for s, p, o in triples:
        if p.value in drop_pred or s in seqs or p.value.startswith(RDF + "_"):
            continue
        if p.value == RDFS_LABEL and s in named:
            continue
        out.add((s, p, o))
    return list(out)


def main():
    graph, *sources = sys.argv[1:]
    triples = []
    for src in sources:
        triples += read(src)
    triples = {"music": music, "starwars": starwars, "iswc": iswc}[graph](triples)
    lines = sorted({f"{s} {p} {o} .\n" for s, p, o in triples})
    out = os.path.join(HERE, graph, "graph.nt.gz")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as f:
        f.write("".join(lines).encode("utf-8"))
    print(f"{out}: {len(lines)} triples", file=sys.stderr)


if __name__ == "__main__":
    main()
