#!/usr/bin/env python3
"""Turn MetaQA dev questions into planner training examples for `kgbox-pack build --planner-examples`.

Each output line is `question<TAB>DSL<TAB>ans1|ans2|...`: the question as MetaQA writes it
(its [bracketed] topic mention kept), the gold chain query from that topic entity along the
qtype's relation path (the mapping of gold_queries.py), and the gold answers:

    what movies did [Temuera Morrison] act in<TAB>"Temuera Morrison" -> starred_actors_inv<TAB>Once Were Warriors|Tracker|River Queen

For every hop h of --hops it reads ROOT/{h}-hop/dev.txt and the line-aligned
ROOT/{h}-hop/dev_qtype.txt (files of different lengths: exit 1 naming both files and the
first line that has no partner).

--exclude FILE (MetaQA format, `question<TAB>answers`; may be repeated) drops every example
whose question text equals a question of FILE, so that a held-out evaluation never scores a
question the planner was trained on. Lines that cannot be converted (no or several bracketed
entities, an unknown qtype, a line without exactly two fields) are skipped; stderr gets the
counts: written, excluded, and skipped by reason with the first few file:line locations.

Usage:
    python3 benches/metaqa/planner_examples.py --root $DATA/metaqa \
        [--hops 1,2,3] [--exclude HELDOUT.txt]... --out $SCRATCH/mq/examples.tsv

Python 3.11, stdlib only.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gold_queries import GoldError, qtype_relations, quote_entity, topic_entity  # noqa: E402

SHOW_LOCATIONS = 5


def parse_hops(text: str) -> list[int]:
    hops: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise argparse.ArgumentTypeError(f"--hops wants positive integers like 1,2,3, got {text!r}")
        if int(part) not in hops:
            hops.append(int(part))
    return hops


def question_text(line: str) -> str:
    """The question field of a MetaQA `question<TAB>answers` line."""
    return line.split("\t", 1)[0].strip()


def read_lines(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def read_excluded(paths: list[str]) -> set[str]:
    excluded: set[str] = set()
    for path in paths:
        for line in read_lines(path):
            if line.strip():
                excluded.add(question_text(line))
    return excluded


def example_line(question_line: str, qtype: str) -> tuple[str, str]:
    """(question, `question<TAB>DSL<TAB>answers`); raises GoldError with a short reason."""
    parts = question_line.split("\t")
    if len(parts) != 2:
        raise GoldError(f"expected `question<TAB>answers`, got {len(parts)} fields")
    question, answers = parts[0].strip(), parts[1].strip()
    if not question:
        raise GoldError("empty question")
    if not qtype:
        raise GoldError("empty qtype")
    rels = qtype_relations(qtype)
    dsl = " -> ".join([quote_entity(topic_entity(question))] + rels)
    return question, f"{question}\t{dsl}\t{answers}"


def reason_key(err: GoldError) -> str:
    """Group skip messages by kind (drop the per-line qtype/count details)."""
    msg = str(err)
    if msg.startswith("qtype "):
        return "unconvertible qtype: " + msg
    if msg.startswith("expected exactly one [bracketed]"):
        return "not exactly one [bracketed] topic entity"
    return msg


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, help="MetaQA folder holding {1,2,3}-hop/dev.txt + dev_qtype.txt")
    ap.add_argument("--hops", type=parse_hops, default=[1, 2, 3], help="comma-separated hops (default 1,2,3)")
    ap.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="FILE",
        help="MetaQA-format questions file; examples with the same question text are dropped (repeatable)",
    )
    ap.add_argument("--out", required=True, help="examples file to write")
    args = ap.parse_args(argv)

    try:
        excluded_questions = read_excluded(args.exclude)
    except OSError as e:
        print(f"error: --exclude: {e}", file=sys.stderr)
        return 1

    out_lines: list[str] = []
    excluded = 0
    per_hop: list[str] = []
    skipped: Counter[str] = Counter()
    where: dict[str, list[str]] = defaultdict(list)
    for hop in args.hops:
        qpath = os.path.join(args.root, f"{hop}-hop", "dev.txt")
        tpath = os.path.join(args.root, f"{hop}-hop", "dev_qtype.txt")
        try:
            questions = read_lines(qpath)
            qtypes = read_lines(tpath)
        except OSError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        if len(questions) != len(qtypes):
            n = min(len(questions), len(qtypes)) + 1
            longer = qpath if len(questions) > len(qtypes) else tpath
            print(
                f"error: {qpath} has {len(questions)} lines but {tpath} has {len(qtypes)}: "
                f"{longer}:{n} has no partner line (the two files must be line-aligned)",
                file=sys.stderr,
            )
            return 1
        written_hop = excluded_hop = 0
        for i, (qline, qtype) in enumerate(zip(questions, qtypes)):
            if not qline.strip() and not qtype.strip():
                skipped["blank line"] += 1
                where["blank line"].append(f"{qpath}:{i + 1}")
                continue
            try:
                question, line = example_line(qline, qtype.strip())
            except GoldError as e:
                key = reason_key(e)
                skipped[key] += 1
                where[key].append(f"{tpath if key.startswith('unconvertible qtype') else qpath}:{i + 1}")
                continue
            if question in excluded_questions:
                excluded_hop += 1
                continue
            out_lines.append(line)
            written_hop += 1
        excluded += excluded_hop
        per_hop.append(f"{hop}-hop {written_hop} written, {excluded_hop} excluded")

    parent = os.path.dirname(args.out)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in out_lines))

    print(
        f"planner_examples: wrote {len(out_lines)} examples to {args.out} ({'; '.join(per_hop)}); "
        f"excluded {excluded} (question in --exclude: {len(excluded_questions)} distinct questions); "
        f"skipped {sum(skipped.values())}",
        file=sys.stderr,
    )
    for key, count in skipped.most_common():
        locs = where[key][:SHOW_LOCATIONS]
        more = f" and {count - len(locs)} more" if count > len(locs) else ""
        print(f"  skipped {count}: {key} (at {', '.join(locs)}{more})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
