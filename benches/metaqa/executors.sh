#!/usr/bin/env bash
# Hits@1 of the three executors on MetaQA dev gold queries, full and half KB:
# prints a markdown table (executor x hops x KB).
#
#   benches/metaqa/executors.sh SAMPLE
#
# Needs (environment, with these defaults):
#   KGBOX=target/release/kgbox
#   BUNDLE_DIR=(kgbox-metaqa in the temp folder)   holding metaqa-kb.kgb and metaqa-kb_half.kgb, packed with
#       kgbox-pack build --triples $DATA/metaqa/kb.tsv --ultra models/ultra/onnx/ultraquery ...
#   TRUST=$BUNDLE_DIR/k.pub        the key they are signed with
#   GOLD_DIR=$BUNDLE_DIR           holding gold-{1,2,3}.tsv from benches/metaqa/gold_queries.py
#   SEPPR_K=500
# The same SAMPLE queries (spread evenly over each file) run with every executor.
set -euo pipefail
SAMPLE=${1:-500}
KGBOX=${KGBOX:-target/release/kgbox}
BUNDLE_DIR=${BUNDLE_DIR:-/tmp/kgbox-metaqa}
TRUST=${TRUST:-$BUNDLE_DIR/k.pub}
GOLD_DIR=${GOLD_DIR:-$BUNDLE_DIR}
SEPPR_K=${SEPPR_K:-500}
for f in "$KGBOX" "$BUNDLE_DIR/metaqa-kb.kgb" "$BUNDLE_DIR/metaqa-kb_half.kgb" "$TRUST" "$GOLD_DIR/gold-1.tsv"; do
  [[ -e $f ]] || { echo "executors.sh: missing $f (see the header of this script)" >&2; exit 1; }
done
echo "| KB | executor | 1-hop Hits@1 | 2-hop Hits@1 | 3-hop Hits@1 | 3-hop p50 ms |"
echo "|---|---|---|---|---|---|"
for kb in kb kb_half; do
  for ex in symbolic neural hybrid; do
    row="| $kb | $ex |"
    p50=""
    for h in 1 2 3; do
      json=$("$KGBOX" eval queries --bundle "$BUNDLE_DIR/metaqa-$kb.kgb" --trust "$TRUST" \
        --file "$GOLD_DIR/gold-$h.tsv" --sample "$SAMPLE" --executor "$ex" --seppr-k "$SEPPR_K" --json)
      hits=$(python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.1f" % (100*r["hits_at_1"]))' <<<"$json")
      row="$row $hits |"
      p50=$(python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.2f" % r["latency_ms"]["p50"])' <<<"$json")
    done
    echo "$row $p50 |"
  done
done
echo
echo "($SAMPLE dev queries per hop, spread evenly; SEPPR k=$SEPPR_K; engine tract)"
