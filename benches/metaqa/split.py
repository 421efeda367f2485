#!/usr/bin/env python3
"""Write a deterministic random sample of N lines of a questions file (a held-out eval set).

The sample is `random.Random(SEED).sample` over the file's non-blank lines, written in the
file's own order; the same FILE, N and SEED always give the same lines. Pair it with
`planner_examples.py --exclude OUT` (eval.sh does this) so the planner is trained on the
rest of the dev set and never on a question it is scored on.

Usage:
    python3 benches/metaqa/split.py --questions $DATA/metaqa/2-hop/dev.txt \
        --n 1000 --seed 1 --heldout $SCRATCH/mq/heldout-2hop.txt

N larger than the file's line count is an error. Python 3.11, stdlib only.
"""

from __future__ import annotations

import argparse
import os
import random
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", required=True, help="questions file (any line format)")
    ap.add_argument("--n", type=int, required=True, help="lines to sample")
    ap.add_argument("--seed", type=int, required=True, help="random seed (integer)")
    ap.add_argument("--heldout", required=True, help="file to write the sample to")
    args = ap.parse_args(argv)

    try:
        with open(args.questions, encoding="utf-8") as f:
            lines = [line for line in f.read().splitlines() if line.strip()]
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.n < 1 or args.n > len(lines):
        print(
            f"error: --n {args.n} is not between 1 and the {len(lines)} non-blank lines of {args.questions}",
            file=sys.stderr,
        )
        return 1

    picked = sorted(random.Random(args.seed).sample(range(len(lines)), args.n))
    parent = os.path.dirname(args.heldout)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(args.heldout, "w", encoding="utf-8") as f:
        f.write("".join(lines[i] + "\n" for i in picked))
    print(
        f"split: wrote {args.n} of {len(lines)} lines of {args.questions} to {args.heldout} (seed {args.seed})",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
