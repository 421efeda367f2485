#!/usr/bin/env bash
# The answer reranker on MetaQA, with and without: hold out N dev questions per hop, train the
# planner on the rest, export reranker features for RERANK_N of the training questions, train the
# reranker (models/reranker/train.py), and score each hop's held-out questions with the reranker
# (`kgbox eval qa --reranker`: the files `kgbox-pack build --reranker` packs) and without.
#
#   benches/metaqa/rerank.sh KB_TSV
#
#   KB_TSV   $DATA/metaqa/kb.tsv or kb_half.tsv
#
# Environment (with these defaults):
#   KGBOX=target/release/kgbox  KGBOX_PACK=target/release/kgbox-pack
#   DATA                        {1,2,3}-hop/dev.txt and dev_qtype.txt (default: the data sets' metaqa
#                               folder, $DATA/metaqa in the READMEs)
#   N=1000                      held-out questions per hop (split.py --seed HOP, as eval.sh's figures)
#   RERANK_N=3000               training questions whose candidates train the reranker
#   ENCODER=1                   1: --embed (planner and reranker text feature); 0: words and graph only
#   EXECUTOR=symbolic           symbolic, neural or hybrid (neural and hybrid need ULTRA)
#   ULTRA=                      e.g. ULTRA=models/ultra/onnx/ultraquery EXECUTOR=hybrid
#   RERANK_PYTHON=python3       a python3 with models/reranker/requirements.txt
#   WORK=(mktemp -d)            removed on exit unless KEEP=1; a WORK you name is kept
# Stdout's last line is one JSON object: per hop, Hits@1 and F1 with and without the reranker,
# and the training script's held-out figures.
set -euo pipefail

die() { echo "rerank.sh: $*" >&2; exit 1; }
log() { echo "rerank.sh: [$(date +%H:%M:%S)] $*" >&2; }
abspath() { realpath -m -- "$1"; }

(($# == 1)) || die "usage: benches/metaqa/rerank.sh KB_TSV (see the header of this script)"
KB=$(abspath "$1")
KB_ARG=$1
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KGBOX=$(abspath "${KGBOX:-$REPO/target/release/kgbox}")
KGBOX_PACK=$(abspath "${KGBOX_PACK:-$REPO/target/release/kgbox-pack}")
DATA=$(abspath "${DATA:-$REPO/../shared/data/metaqa}")
N=${N:-1000}
ULTRA=${ULTRA:-}
[[ -n $ULTRA ]] && ULTRA=$(abspath "$ULTRA")
EXECUTOR=${EXECUTOR:-symbolic}
LIMIT=0
if [[ -n ${WORK:-} ]]; then WORK=$(abspath "$WORK"); fi
[[ -f $KB ]] || die "missing KB file $KB_ARG"
[[ -d $DATA ]] || die "missing MetaQA folder $DATA (set DATA)"
[[ $N =~ ^[1-9][0-9]*$ ]] || die "N must be a positive number"
case $EXECUTOR in
  symbolic) ;;
  neural | hybrid) [[ -n $ULTRA ]] || die "EXECUTOR=$EXECUTOR needs ULTRA" ;;
  *) die "EXECUTOR must be symbolic, neural or hybrid" ;;
esac
[[ -x $KGBOX && -x $KGBOX_PACK ]] || die "build first: cargo build --release -p kgbox -p kgbox-pack"
# shellcheck source=../qa-common.sh
source "$REPO/benches/qa-common.sh"
qa_check_tools
qa_workdir kgbox-metaqa-rerank

for hop in 1 2 3; do
  python3 "$REPO/benches/metaqa/split.py" --questions "$DATA/$hop-hop/dev.txt" --n "$N" --seed "$hop" \
    --heldout "$WORK/heldout-$hop.txt"
done
cat "$WORK"/heldout-{1,2,3}.txt >"$WORK/heldout-all.txt"
log "planner examples (dev minus the held-out questions)"
python3 "$REPO/benches/metaqa/planner_examples.py" --root "$DATA" --hops 1,2,3 \
  --exclude "$WORK/heldout-all.txt" --out "$WORK/examples.tsv"

pack() {
  local cmd=("$KGBOX_PACK" build --triples "$KB" --name metaqa-rerank --version 1.0.0 --key "$WORK/eval.key"
    -o "$WORK/kb.kgb" --quiet --planner-examples "$WORK/examples.tsv" "$@")
  if [[ $ENCODER == 1 ]]; then cmd+=(--embed --embed-model "$EMBED_MODEL"); else cmd+=(--planner-no-encoder); fi
  [[ -n $ULTRA ]] && cmd+=(--ultra "$ULTRA")
  "${cmd[@]}" >&2
}
log "pack $KB_ARG"
pack
# qa_rerank_stage trains on the examples and evaluates the first file; the other hops below.
RERANK=1
qa_rerank_stage "$WORK/examples.tsv" metaqa-rerank "$WORK/heldout-1.txt" metaqa
results=("$last")
for hop in 2 3; do
  log "eval qa, $hop-hop, with and without the reranker"
  evalcmd=("$KGBOX" eval qa --bundle "$WORK/kb.kgb" --trust "$WORK/eval.pub" --questions "$WORK/heldout-$hop.txt"
    --format metaqa --executor "$EXECUTOR" --json)
  with=$("${evalcmd[@]}" --reranker "$WORK/reranker" | tail -n 1)
  without=$("${evalcmd[@]}" --no-rerank | tail -n 1)
  results+=("$(python3 -c 'import json,sys; w=json.loads(sys.argv[1]); w["without_rerank"]=json.loads(sys.argv[2]); print(json.dumps(w))' "$with" "$without")")
done
python3 - "$KB_ARG" "$EXECUTOR" "${results[@]}" <<'PY'
import json, sys
kb, executor, *rows = sys.argv[1:]
out = {"kb": kb, "executor": executor}
for hop, line in zip((1, 2, 3), rows):
    r = json.loads(line)
    w = r["without_rerank"]
    print(f"{hop}-hop: Hits@1 {w['hits_at_1']:.4f} -> {r['hits_at_1']:.4f}, F1 {w['f1']:.4f} -> {r['f1']:.4f}, "
          f"best answer changed on {r['rerank_changed_top']}, gold among candidates {r.get('gold_in_candidates')}, "
          f"rerank p50 {r['stages']['rerank']['p50_ms']:.2f} ms", file=sys.stderr)
    out[f"{hop}hop"] = {"without": {"hits_at_1": w["hits_at_1"], "f1": w["f1"]},
                        "with": {"hits_at_1": r["hits_at_1"], "f1": r["f1"]},
                        "changed_top": r["rerank_changed_top"],
                        "gold_in_candidates": r.get("gold_in_candidates"),
                        "rerank_p50_ms": r["stages"]["rerank"]["p50_ms"],
                        "questions": r["n"]}
    if "reranker" in r:
        out["reranker"] = r["reranker"]
print(json.dumps(out))
PY
