#!/usr/bin/env python3
"""Turn a MetaQA dev file + its qtype file into gold kgbox DSL queries.

Each output line is `<DSL><TAB>ans1|ans2|...`, where the DSL is a chain
projection from the bracketed topic entity along the qtype's relation path:

    what movies did [Temuera Morrison] act in      (qtype actor_to_movie)
    ->  "Temuera Morrison" -> starred_actors_inv<TAB>Once Were Warriors|Tracker|River Queen

A qtype is a `_to_`-separated list of segments; every consecutive pair has
`movie` on exactly one side (KB heads are always movies):

    movie_to_X  ->  REL(X)        (forward: movie --REL--> X)
    X_to_movie  ->  REL(X)_inv    (backward: X <--REL-- movie)

Unknown segments (or a pair without `movie`) make the script exit 1, naming
the qtype and its line number.

Usage:
    python3 benches/metaqa/gold_queries.py \
        --questions $DATA/metaqa/2-hop/dev.txt \
        --qtypes $DATA/metaqa/2-hop/dev_qtype.txt [--limit N] [--out FILE]

Writes to stdout unless --out FILE is given. Python 3.11, stdlib only.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

# Non-movie qtype segment -> KB relation whose head is the movie.
# Derived from `sort -u {1,2,3}-hop/dev_qtype.txt` and checked against the
# nine relations of kb.tsv (see benches/metaqa/README.md).
SEGMENT_RELATION: dict[str, str] = {
    "actor": "starred_actors",
    "director": "directed_by",
    "writer": "written_by",
    "genre": "has_genre",
    "language": "in_language",
    "year": "release_year",
    "tag": "has_tags",  # tag_to_movie
    "tags": "has_tags",  # movie_to_tags
    "imdbrating": "has_imdb_rating",
    "imdbvotes": "has_imdb_votes",
}

MOVIE = "movie"
INV_SUFFIX = "_inv"

TOPIC_RE = re.compile(r"\[([^\[\]]+)\]")


class GoldError(Exception):
    pass


def qtype_relations(qtype: str) -> list[str]:
    """Map a qtype like `director_to_movie_to_language` to
    `["directed_by_inv", "in_language"]`. Raises GoldError on anything unknown."""
    segments = qtype.split("_to_")
    if len(segments) < 2:
        raise GoldError(f"qtype {qtype!r} has no `_to_` hop")
    rels: list[str] = []
    for src, dst in zip(segments, segments[1:]):
        if src == MOVIE and dst != MOVIE:
            other, inverse = dst, False
        elif dst == MOVIE and src != MOVIE:
            other, inverse = src, True
        else:
            raise GoldError(
                f"qtype {qtype!r}: hop {src}_to_{dst} does not have `movie` on exactly one side"
            )
        rel = SEGMENT_RELATION.get(other)
        if rel is None:
            raise GoldError(f"qtype {qtype!r}: unknown segment {other!r}")
        rels.append(rel + INV_SUFFIX if inverse else rel)
    return rels


def quote_entity(name: str) -> str:
    """Quoted as the kgbox DSL reads it: escapes for backslash, quote, newline, tab."""
    table = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"}
    return '"' + "".join(table.get(c, c) for c in name) + '"'


def topic_entity(question: str) -> str:
    found = TOPIC_RE.findall(question)
    if len(found) != 1:
        raise GoldError(f"expected exactly one [bracketed] topic entity, found {len(found)}")
    return found[0]


def gold_line(question_line: str, qtype: str) -> str:
    parts = question_line.rstrip("\n").split("\t")
    if len(parts) != 2:
        raise GoldError(f"expected `question<TAB>answers`, got {len(parts)} fields")
    question, answers = parts
    rels = qtype_relations(qtype)
    dsl = " -> ".join([quote_entity(topic_entity(question))] + rels)
    return f"{dsl}\t{answers}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", required=True, help="MetaQA dev.txt")
    ap.add_argument("--qtypes", required=True, help="matching dev_qtype.txt")
    ap.add_argument("--limit", type=int, default=None, help="only the first N lines")
    ap.add_argument("--out", default=None, help="write here instead of stdout")
    args = ap.parse_args(argv)

    with open(args.questions, encoding="utf-8") as f:
        questions = f.read().splitlines()
    with open(args.qtypes, encoding="utf-8") as f:
        qtypes = f.read().splitlines()
    if len(questions) != len(qtypes):
        print(
            f"error: {args.questions} has {len(questions)} lines but "
            f"{args.qtypes} has {len(qtypes)}",
            file=sys.stderr,
        )
        return 1

    n = len(questions) if args.limit is None else min(args.limit, len(questions))
    out_lines: list[str] = []
    for i in range(n):
        try:
            out_lines.append(gold_line(questions[i], qtypes[i].strip()))
        except GoldError as e:
            print(
                f"error: {args.qtypes}:{i + 1} (qtype {qtypes[i].strip()!r}), "
                f"{args.questions}:{i + 1}: {e}",
                file=sys.stderr,
            )
            return 1

    text = "".join(line + "\n" for line in out_lines)
    if args.out:
        parent = os.path.dirname(args.out)
        if parent:
            os.makedirs(parent, exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {n} queries to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
