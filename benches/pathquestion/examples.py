#!/usr/bin/env python3
"""Split a PathQuestion file (PQ-2H.txt, PQ-3H.txt) into planner training examples and an eval file.

A PQ line is `question<TAB>answer(a1/a2/...)<TAB>subject#r1#e1#r2#e2...#answer#<end>#answer`.

    --split train   writes `question<TAB>DSL<TAB>a1|a2|...` for `kgbox-pack build --planner-examples`:
                    the DSL is the chain from the path's subject along its relations
                    (`"frederica_of_mecklenburg-strelitz" -> spouse -> nationality`), the answers
                    are the parenthesised set split on `/` (empty parts dropped).
    --split test    writes the test lines unchanged, in PQ format, for
                    `kgbox eval qa --format pathquestion`.

The split is deterministic: line i of the file (0-based, counting every line) is a test line
iff i % TEST_EVERY == 0. A train line whose question text equals a test question's is dropped
too, so an evaluation never scores a question the planner was trained on (PQ-3H repeats one
question text, on lines 4780 and 4783; at --test-every 5 both are train lines). PQ lists several paraphrases of the same path one after another, so the two
splits do share subjects and paths, only not question texts.

Malformed lines are reported to stderr with their line numbers and skipped (in both splits):
not three tab-separated fields, an answer field that is not `answer(a1/a2/...)` or has no
answers, a path that is not `subject#r1#e1#...#rk#ek#<end>#ek` (k >= 1, every part non-empty
and without whitespace), or a path whose answer ek is not in the answer set.

Usage:
    python3 benches/pathquestion/examples.py --data $DATA/pathquestion/PQ-2H.txt \
        --split train|test --out FILE [--test-every 5]

Python 3.11, stdlib only.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "metaqa"))
from gold_queries import quote_entity  # noqa: E402

END = "<end>"
ANSWER_RE = re.compile(r"^(?P<main>.*)\((?P<set>[^()]*)\)$")
SHOW_MALFORMED = 20


class Malformed(Exception):
    pass


def parse_line(line: str) -> tuple[str, list[str], str, list[str]]:
    """(question, answers, subject, relations) of a PQ line; raises Malformed."""
    fields = line.split("\t")
    if len(fields) != 3:
        raise Malformed(f"expected 3 tab-separated fields, got {len(fields)}")
    question, answer_field, path = (x.strip() for x in fields)
    if not question:
        raise Malformed("empty question")
    m = ANSWER_RE.match(answer_field)
    if not m:
        raise Malformed(f"answer field {answer_field!r} is not `answer(a1/a2/...)`")
    answers = [a for a in m.group("set").split("/") if a]
    if not answers:
        raise Malformed(f"answer field {answer_field!r} has no answers")
    parts = path.split("#")
    if len(parts) < 5 or parts[-2] != END:
        raise Malformed(f"path {path!r} does not end in `#<end>#answer`")
    body = parts[:-2]
    if len(body) % 2 != 1:
        raise Malformed(f"path {path!r}: expected subject#r1#e1#...#rk#ek, got {len(body)} parts before <end>")
    bad = [p for p in body + parts[-1:] if not p or p != p.strip() or any(c.isspace() for c in p)]
    if bad:
        raise Malformed(f"path {path!r}: empty part or part with whitespace {bad[0]!r}")
    if parts[-1] != body[-1]:
        raise Malformed(f"path {path!r}: answer after <end> ({parts[-1]!r}) differs from the path's last entity")
    if body[-1] not in answers:
        raise Malformed(f"path {path!r}: its answer {body[-1]!r} is not in the answer set {answers}")
    return question, answers, body[0], body[1::2]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="PathQuestion file, e.g. PQ-2H.txt")
    ap.add_argument("--split", required=True, choices=["train", "test"])
    ap.add_argument("--out", required=True, help="file to write")
    ap.add_argument("--test-every", type=int, default=5, help="line i goes to test iff i %% N == 0 (default 5)")
    args = ap.parse_args(argv)
    if args.test_every < 2:
        print("error: --test-every must be at least 2 (1 would leave nothing to train on)", file=sys.stderr)
        return 1

    try:
        with open(args.data, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1

    parsed: list[tuple[int, str, tuple[str, list[str], str, list[str]]]] = []
    malformed: list[str] = []
    blank = 0
    for i, line in enumerate(lines):
        if not line.strip():
            blank += 1
            continue
        try:
            parsed.append((i, line, parse_line(line)))
        except Malformed as e:
            malformed.append(f"{args.data}:{i + 1}: {e}")

    test = [(i, line, p) for i, line, p in parsed if i % args.test_every == 0]
    test_questions = {p[0] for _, _, p in test}
    out_lines: list[str] = []
    dropped_same_text = 0
    if args.split == "test":
        out_lines = [line for _, line, _ in test]
    else:
        for i, _, (question, answers, subject, relations) in parsed:
            if i % args.test_every == 0:
                continue
            if question in test_questions:
                dropped_same_text += 1
                continue
            dsl = " -> ".join([quote_entity(subject)] + relations)
            out_lines.append(f"{question}\t{dsl}\t{'|'.join(answers)}")

    parent = os.path.dirname(args.out)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in out_lines))

    note = f", {dropped_same_text} train lines dropped (same question as a test line)" if args.split == "train" else ""
    print(
        f"examples: {args.data}: {len(lines)} lines, {len(parsed)} well-formed, {len(malformed)} malformed "
        f"(skipped), {blank} blank; wrote {len(out_lines)} {args.split} lines to {args.out} "
        f"(test = line index % {args.test_every} == 0{note})",
        file=sys.stderr,
    )
    for msg in malformed[:SHOW_MALFORMED]:
        print(f"  malformed: {msg}", file=sys.stderr)
    if len(malformed) > SHOW_MALFORMED:
        print(f"  ... and {len(malformed) - SHOW_MALFORMED} more malformed lines", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
