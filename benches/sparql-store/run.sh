#!/usr/bin/env bash
# The cross-check of the `sparql_store` executor on MetaQA: pack the full KB,
# export it with `kgbox-pack export`, load it into a local Oxigraph server,
# and run `kgbox eval sparql-store` on gold DSL queries of MetaQA's dev
# questions (N of them, a third per hop count, spread evenly over each dev
# file): every query runs with the local symbolic executor and on the store
# through the query service, and the answers (ids, names, scores, order,
# paths) and totals must be equal. Prints the per-hop and overall reports,
# the overall one with anchors kept, then the check of random AND/OR/NOT
# queries.
#
#   benches/sparql-store/run.sh [DATA]
#
#   DATA            the folder holding metaqa/ (default: ../shared/data beside the repo)
#
# Environment (with these defaults):
#   KGBOX=target/release/kgbox  PACK_BIN=target/release/kgbox-pack
#                               (cargo build --release -p kgbox -p kgbox-pack)
#   N=1000                      gold queries in all
#   STRUCTURED=400              random AND/OR/NOT queries (fixed seed), checked after them
#   TOP_K=1000                  answers compared per query (query.max_top_k)
#   PATHS=3                     provenance paths compared per answer
#   WORK=(mktemp -d)            bundle, export, store; a mktemp folder is removed on
#                               exit unless KEEP=1; a WORK you name is kept
# Needs python3 and the `oxigraph` CLI (the PyPI package oxigraph, which
# scripts/setup.sh --dev installs). The store listens on a free loopback port and
# is stopped on exit.
set -euo pipefail

die() { echo "run.sh: $*" >&2; exit 1; }
log() { echo "run.sh: [$(date +%H:%M:%S)] $*" >&2; }
abspath() { realpath -m -- "$1"; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DATA=$(abspath "${1:-$REPO/../shared/data}")
KGBOX=$(abspath "${KGBOX:-$REPO/target/release/kgbox}")
PACK_BIN=$(abspath "${PACK_BIN:-$REPO/target/release/kgbox-pack}")
N=${N:-1000}
TOP_K=${TOP_K:-1000}
PATHS=${PATHS:-3}
STRUCTURED=${STRUCTURED:-400}
KB=$DATA/metaqa/kb.tsv

[[ -f $KB ]] || die "missing $KB (give the data folder as the argument)"
[[ -x $KGBOX ]] || die "missing $KGBOX (cargo build --release -p kgbox -p kgbox-pack, or set KGBOX)"
[[ -x $PACK_BIN ]] || die "missing $PACK_BIN (cargo build --release -p kgbox -p kgbox-pack, or set PACK_BIN)"
command -v oxigraph >/dev/null || die "the oxigraph CLI is not on PATH: run scripts/setup.sh --dev"

if [[ -n ${WORK:-} ]]; then
  mkdir -p "$WORK"
  WORK=$(abspath "$WORK")
  OWN_WORK=0
else
  WORK=$(mktemp -d)
  OWN_WORK=1
fi
STORE_PID=
cleanup() {
  if [[ -n $STORE_PID ]]; then
    kill "$STORE_PID" 2>/dev/null || true
    wait "$STORE_PID" 2>/dev/null || true
  fi
  if ((OWN_WORK)) && [[ ${KEEP:-0} != 1 ]]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# Gold queries: N/3 per hop count, spread evenly over each dev file.
per_hop=$((N / 3))
for h in 1 2 3; do
  want=$per_hop
  ((h == 3)) && want=$((N - 2 * per_hop))
  python3 "$REPO/benches/metaqa/gold_queries.py" \
    --questions "$DATA/metaqa/$h-hop/dev.txt" --qtypes "$DATA/metaqa/$h-hop/dev_qtype.txt" \
    --out "$WORK/gold-$h.tsv"
  python3 - "$WORK/gold-$h.tsv" "$want" >"$WORK/queries-$h.tsv" <<'EOF'
import sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
n = min(int(sys.argv[2]), len(lines))
for i in range(n):
    print(lines[i * len(lines) // n].split("\t")[0])
EOF
done
cat "$WORK"/queries-{1,2,3}.tsv >"$WORK/queries.tsv"
log "$(wc -l <"$WORK/queries.tsv") gold queries"

# The bundle, its export and the store.
"$PACK_BIN" keygen --out "$WORK/keys" >/dev/null
"$PACK_BIN" build --quiet --triples "$KB" --name metaqa-movies --version 1.0.0 \
  --key "$WORK/keys/kgbox.key" -o "$WORK/metaqa.kgb" >&2
"$PACK_BIN" export "$WORK/metaqa.kgb" --ntriples -o "$WORK/metaqa.nt" \
  --trust "$WORK/keys/kgbox.pub"
rm -rf "$WORK/store"
t0=$(date +%s.%N)
oxigraph load --location "$WORK/store" --file "$WORK/metaqa.nt" >/dev/null 2>&1 ||
  die "oxigraph load failed"
log "loaded into oxigraph in $(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')") s"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
oxigraph serve-read-only --location "$WORK/store" --bind "127.0.0.1:$PORT" >"$WORK/oxigraph.log" 2>&1 &
STORE_PID=$!
for _ in $(seq 300); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 1)" 2>/dev/null && break
  kill -0 "$STORE_PID" 2>/dev/null || die "oxigraph serve exited: $(cat "$WORK/oxigraph.log")"
  sleep 0.1
done
ENDPOINT=http://127.0.0.1:$PORT/query
log "oxigraph serves $ENDPOINT"

cross_check() {
  "$KGBOX" eval sparql-store --bundle "$WORK/metaqa.kgb" --trust "$WORK/keys/kgbox.pub" \
    --endpoint "$ENDPOINT" --top-k "$TOP_K" --paths "$PATHS" --queries "$@"
}
for h in 1 2 3; do
  echo "## $h-hop"
  cross_check "$WORK/queries-$h.tsv"
done
echo "## all"
cross_check "$WORK/queries.tsv"
echo "## all, include_anchors (scores: anchors at half weight)"
cross_check "$WORK/queries.tsv" --include-anchors

# Structured queries (AND, OR, NOT over 1-2 hops from two random movies,
# fixed seed): the store's MINUS and UNION, and the provenance of joins.
python3 - "$KB" "$STRUCTURED" >"$WORK/structured.tsv" <<'EOF'
import random, sys
random.seed(7)
movies = sorted({l.split("\t")[0] for l in open(sys.argv[1], encoding="utf-8") if l.strip()})
rels = ["directed_by", "starred_actors", "written_by", "has_genre", "release_year",
        "in_language", "has_tags"]
def q(name):
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
for _ in range(int(sys.argv[2])):
    a, b = (q(m) for m in random.sample(movies, 2))
    r1, r2, r3 = random.sample(rels, 3)
    print(random.choice([
        f"AND({a} -> {r1} -> {r1}_inv, {b} -> {r2} -> {r2}_inv)",
        f"OR({a} -> {r1}, {b} -> {r2}) -> {r1}_inv",
        f"AND({a} -> {r1} -> {r1}_inv, NOT({b} -> {r2} -> {r2}_inv))",
        f"AND({a} -> {r1} -> {r1}_inv, {a} -> {r2} -> {r2}_inv) -> {r3}",
        f"OR({a}, {b} -> {r1} -> {r1}_inv) -> {r2}",
        f"AND(OR({a} -> {r1} -> {r1}_inv, {b} -> {r1} -> {r1}_inv), {a} -> {r2} -> {r2}_inv)",
    ]))
EOF
echo "## $STRUCTURED structured queries (AND, OR, NOT)"
cross_check "$WORK/structured.tsv"
