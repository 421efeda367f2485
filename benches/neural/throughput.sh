#!/usr/bin/env bash
# Throughput of the neural executor over HTTP: queries/s and latency at
# 1, 8 and 32 concurrent clients, in three modes of `[executor]`:
#   open   parallel = 1024, batch = false: every projection runs at once
#   gate   parallel = 0 (one per core), batch = false: the others queue in turn
#   batch  parallel = 0, batch = true: queued projections run as one batch
# on one bundle and one query file.
#
# Usage: benches/neural/throughput.sh BUNDLE TRUST_PUB QUERIES
#   BUNDLE     a bundle packed with --ultra (e.g. the half KB, see bench.sh)
#   TRUST_PUB  the public key it is signed with
#   QUERIES    gold queries, `<DSL><TAB>answers` per line (benches/metaqa/gold_queries.py)
#
# Environment (defaults): KGBOX=target/release/kgbox  LOAD=target/release/kgbox-load
#   (cargo build --release -p kgbox -p kgbox-benches), EXECUTOR=neural (or hybrid),
#   CLIENTS="1 8 32", SECONDS_EACH=10, WARMUP=2, MODES="open gate batch",
#   OUT_DIR=target/neural-throughput (one JSON per run).
# Prints a Markdown table. Take figures on an otherwise idle machine.
set -euo pipefail
[ $# -eq 3 ] || { sed -n 2,16p "$0" >&2; exit 2; }
BUNDLE=$1 TRUST=$2 QUERIES=$3
KGBOX=${KGBOX:-target/release/kgbox}
LOAD=${LOAD:-target/release/kgbox-load}
EXECUTOR=${EXECUTOR:-neural}
CLIENTS=${CLIENTS:-1 8 32}
SECONDS_EACH=${SECONDS_EACH:-10}
WARMUP=${WARMUP:-2}
MODES=${MODES:-open gate batch}
OUT_DIR=${OUT_DIR:-target/neural-throughput}

die() { echo "throughput.sh: $*" >&2; exit 1; }
for f in "$KGBOX" "$LOAD" "$BUNDLE" "$TRUST" "$QUERIES"; do [ -f "$f" ] || die "not found: $f"; done
command -v jq >/dev/null || die "jq is required"
command -v curl >/dev/null || die "curl is required"
mkdir -p "$OUT_DIR"

work=$(mktemp -d)
server=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT INT TERM HUP

base=$(printf 'data_dir = "%s"\ndemo = false\n\n[trust]\nkeys = ["%s"]\n' \
    "$work/data" "$(realpath "$TRUST")")
printf '%s\n' "$base" >"$work/install.toml"
"$KGBOX" --config "$work/install.toml" install "$BUNDLE" >/dev/null

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
rows=()
for batch in $MODES; do
    case $batch in
    open) knobs='parallel = 1024\nbatch = false' ;;
    gate) knobs='parallel = 0\nbatch = false' ;;
    batch) knobs='parallel = 0\nbatch = true' ;;
    *) die "unknown mode $batch (open, gate or batch)" ;;
    esac
    cfg="$work/serve-$batch.toml"
    printf "%s\n\n[executor]\nmode = \"%s\"\n$knobs\n\n[http]\nmax_concurrency = 256\n\n[log]\nlevel = \"warn\"\n" \
        "$base" "$EXECUTOR" >"$cfg"
    "$KGBOX" --config "$cfg" serve --listen "127.0.0.1:$port" 2>"$work/serve-$batch.log" &
    server=$!
    for _ in $(seq 1 300); do
        curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break
        kill -0 "$server" 2>/dev/null || die "kgbox serve exited: $(cat "$work/serve-$batch.log")"
        sleep 0.1
    done
    for c in $CLIENTS; do
        out="$OUT_DIR/$EXECUTOR-$batch-c$c.json"
        echo "mode=$batch clients=$c" >&2
        "$LOAD" --url "http://127.0.0.1:$port" --queries "$QUERIES" --concurrency "$c" \
            --seconds "$SECONDS_EACH" --warmup "$WARMUP" --json >"$out"
        rss=$(awk '/VmHWM/{print int($2/1024)}' "/proc/$server/status")
        rows+=("$(jq -r --arg b "$batch" --arg c "$c" --arg rss "$rss" \
            '"| \($b) | \($c) | \(.throughput_rps * 10 | round / 10) | \(.latency.p50_ms * 10 | round / 10) | \(.latency.p99_ms * 10 | round / 10) | \(.errors + .non_200) | \($rss) |"' "$out")")
    done
    kill "$server"; wait "$server" 2>/dev/null || true
    server=
done

printf '\n%s executor, %s, %s s per run after %s s warm-up, %s cores\n\n' \
    "$EXECUTOR" "$(basename "$QUERIES")" "$SECONDS_EACH" "$WARMUP" "$(nproc)"
echo "| mode | clients | queries/s | p50 ms | p99 ms | errors | peak RSS MB |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
