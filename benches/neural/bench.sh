#!/usr/bin/env bash
# Neural executor benchmark: kgbox (native / tract / ort) vs the PyTorch CPU reference
# of the same pipeline (SEPPR -> induced subgraph -> UltraQuery entity model
# -> sigmoid), on MetaQA gold chain queries.
#
# Usage: benches/neural/bench.sh [SAMPLE]        (default SAMPLE=100)
# Run from the repository root. Every path is an env var:
#
#   KGBOX           kgbox CLI (default target/release/kgbox; `cargo build --release -p kgbox`,
#                   which has the `ort` feature by default)
#   BUNDLE_DIR      directory with metaqa-kb_half.kgb and metaqa-kb.kgb (default: bundles/ in the shared data folder beside the repo)
#   GOLD_DIR        directory with gold-1.tsv gold-2.tsv gold-3.tsv (default: gold/ in the shared data folder)
#   TRUST           public key the bundles are signed with (default $BUNDLE_DIR/k.pub)
#   KB_DIR          directory with kb.tsv and kb_half.tsv (default: $DATA/metaqa, $DATA the data-set folder)
#   CKPT            UltraQuery checkpoint (default: ultraquery.pth in the shared folder's models/ultra)
#   PY              python with torch (default python3); TORCH=0 skips the torch reference
#   ORT_DYLIB_PATH  libonnxruntime.so for --engine ort (onnxruntime 1.31.x)
#   OUT_DIR         per-run JSON results (default target/neural-bench)
#   ENGINES         default "native tract ort";  KS default "500 2000";  HOPS default "1 2 3"
#   FULL_CONFIG     "hops k engine" run once on the full KB (default "2 500 native")
#   RAYON_THREADS   threads of the native engine's pool (default: one per core);
#                   ort runs the entity model on one intra-op thread (see its README)
#   TORCH_THREADS   torch.set_num_threads for the reference (default 1)
#
# Producing the inputs (from the repository root):
#
#   # a signing key, and the bundles (the packer is built with `cargo build --release -p kgbox-pack`)
#   kgbox-pack keygen --out k                       # writes k.key / k.pub
#   for kb in kb kb_half; do
#     kgbox-pack build --triples $DATA/metaqa/$kb.tsv --name metaqa-$kb --version 1.0.0 \
#       --key k.key --ultra models/ultra/onnx/ultraquery --out $BUNDLE_DIR/metaqa-$kb.kgb
#   done
#   # gold query files (MetaQA dev questions -> DSL chains with answers)
#   for n in 1 2 3; do
#     python3 benches/metaqa/gold_queries.py --questions $DATA/metaqa/$n-hop/dev.txt \
#       --qtypes $DATA/metaqa/$n-hop/dev_qtype.txt --out $GOLD_DIR/gold-$n.tsv
#   done
#
# (run `kgbox-pack keygen --help` / `kgbox-pack build --help` for the exact flags of your build.)
#
# Figures are only meaningful on an otherwise idle machine.
set -euo pipefail

SAMPLE=${1:-100}
KGBOX=${KGBOX:-target/release/kgbox}
BUNDLE_DIR=${BUNDLE_DIR:-../shared/bundles}
GOLD_DIR=${GOLD_DIR:-../shared/gold}
TRUST=${TRUST:-$BUNDLE_DIR/k.pub}
KB_DIR=${KB_DIR:-../shared/data/metaqa}
CKPT=${CKPT:-../shared/models/ultra/ultraquery.pth}
PY=${PY:-python3}
TORCH=${TORCH:-1}
OUT_DIR=${OUT_DIR:-target/neural-bench}
ENGINES=${ENGINES:-native tract ort}
KS=${KS:-500 2000}
HOPS=${HOPS:-1 2 3}
FULL_CONFIG=${FULL_CONFIG:-2 500 native}
RAYON_THREADS=${RAYON_THREADS:-$(nproc)}
export RAYON_NUM_THREADS=$RAYON_THREADS
TORCH_THREADS=${TORCH_THREADS:-1}
HERE=$(cd "$(dirname "$0")" && pwd)

die() { echo "bench.sh: $*" >&2; exit 1; }
need_file() { [ -f "$2" ] || die "$1 not found: $2 (see the header of this script for how to produce it)"; }

need_file KGBOX "$KGBOX"
need_file TRUST "$TRUST"
need_file "half bundle" "$BUNDLE_DIR/metaqa-kb_half.kgb"
for h in $HOPS; do need_file "gold file" "$GOLD_DIR/gold-$h.tsv"; done
case " $ENGINES " in
*" ort "*) [ -n "${ORT_DYLIB_PATH:-}" ] && [ -f "$ORT_DYLIB_PATH" ] ||
    die "ORT_DYLIB_PATH must name libonnxruntime.so (onnxruntime 1.31.x) for the ort engine (or set ENGINES=tract)" ;;
esac
export ORT_DYLIB_PATH=${ORT_DYLIB_PATH:-}
if [ "$TORCH" = 1 ]; then
    "$PY" -c 'import torch' 2>/dev/null || die "PY=$PY cannot import torch (set PY, or TORCH=0 to skip the reference)"
    need_file CKPT "$CKPT"
    need_file "KB TSV" "$KB_DIR/kb_half.tsv"
fi
command -v jq >/dev/null || die "jq is required"
mkdir -p "$OUT_DIR"

# Peak RSS in KB of a command: GNU time when present, else a /proc poller.
peak_rss() { # out_json rss_file cmd...
    local out=$1 rss=$2; shift 2
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f %M -o "$rss" "$@" >"$out"
    else
        "$@" >"$out" &
        local pid=$! max=0 v
        while kill -0 "$pid" 2>/dev/null; do
            v=$(awk '/VmHWM/{print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
            [ "${v:-0}" -gt "$max" ] && max=$v
            sleep 0.05
        done
        wait "$pid"
        echo "$max" >"$rss"
    fi
}

run_kgbox() { # kb hops k engine -> $OUT_DIR/kgbox-...json
    local kb=$1 h=$2 k=$3 e=$4
    local tag="$kb-$h-$k-$e-$SAMPLE"
    [ -s "$OUT_DIR/kgbox-$tag.json" ] && [ "${REUSE:-0}" = 1 ] && return
    echo "kgbox  $tag" >&2
    peak_rss "$OUT_DIR/kgbox-$tag.json" "$OUT_DIR/kgbox-$tag.rss" \
        env KGBOX_EXECUTOR__SEPPR_STEPS=5 \
        "$KGBOX" eval queries --bundle "$BUNDLE_DIR/metaqa-$kb.kgb" --trust "$TRUST" \
        --file "$GOLD_DIR/gold-$h.tsv" --sample "$SAMPLE" --executor neural \
        --engine "$e" --seppr-k "$k" --json
}

run_torch() { # kb hops k -> $OUT_DIR/torch-...json
    local kb=$1 h=$2 k=$3
    local tag="$kb-$h-$k-$SAMPLE-t$TORCH_THREADS"
    [ "$TORCH" = 1 ] || return 0
    [ -s "$OUT_DIR/torch-$tag.json" ] && [ "${REUSE:-0}" = 1 ] && return
    echo "torch  $tag" >&2
    "$PY" "$HERE/torch_reference.py" --kb "$KB_DIR/$kb.tsv" --gold "$GOLD_DIR/gold-$h.tsv" \
        --ckpt "$CKPT" --sample "$SAMPLE" --seppr-k "$k" --threads "$TORCH_THREADS" \
        >"$OUT_DIR/torch-$tag.json"
}

# kb hops k engine
configs=()
for h in $HOPS; do for k in $KS; do for e in $ENGINES; do configs+=("kb_half $h $k $e"); done; done; done
if [ -n "$FULL_CONFIG" ] && [ -f "$BUNDLE_DIR/metaqa-kb.kgb" ]; then
    configs+=("kb $FULL_CONFIG")
fi

for c in "${configs[@]}"; do run_kgbox $c; done
declare -A done_torch=()
for c in "${configs[@]}"; do
    set -- $c
    key="$1 $2 $3"
    [ -n "${done_torch[$key]:-}" ] && continue
    done_torch[$key]=1
    run_torch "$1" "$2" "$3"
done

printf '\nMetaQA dev gold queries, --sample %s, neural executor; native engine on %s thread(s); torch = PyTorch CPU reference, %s thread(s)\n\n' "$SAMPLE" "$RAYON_THREADS" "$TORCH_THREADS"
echo "| KB | hops | k | engine | p50 ms | p95 ms | peak RSS MB | Hits@1 | torch p50 ms | torch Hits@1 | torch/kgbox p50 |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for c in "${configs[@]}"; do
    set -- $c
    kb=$1 h=$2 k=$3 e=$4
    j="$OUT_DIR/kgbox-$kb-$h-$k-$e-$SAMPLE.json"
    p50=$(jq -r '.latency_ms.p50' "$j")
    p95=$(jq -r '.latency_ms.p95' "$j")
    h1=$(jq -r '.hits_at_1' "$j")
    rss=$(tail -n1 "$OUT_DIR/kgbox-$kb-$h-$k-$e-$SAMPLE.rss")
    t="$OUT_DIR/torch-$kb-$h-$k-$SAMPLE-t$TORCH_THREADS.json"
    if [ "$TORCH" = 1 ] && [ -s "$t" ]; then
        tp50=$(jq -r '.p50_ms' "$t")
        th1=$(jq -r '.hits_at_1' "$t")
        ratio=$(awk -v a="$tp50" -v b="$p50" 'BEGIN{printf "%.1fx", a/b}')
        tp50=$(printf '%.1f' "$tp50")
        th1=$(printf '%.2f' "$th1")
    else
        tp50=- th1=- ratio=-
    fi
    printf '| %s | %s | %s | %s | %.1f | %.1f | %d | %.2f | %s | %s | %s |\n' \
        "$kb" "$h" "$k" "$e" "$p50" "$p95" "$((rss / 1024))" "$h1" "$tp50" "$th1" "$ratio"
done
