#!/usr/bin/env bash
# Delta update sizes on MetaQA's KB: for a 0.1 %, 1 % and 10 % change of the triples (that many
# removed, as many added, a fifth of the added ones with a new head or tail entity; see
# mutate.py), packs the changed KB, makes the delta from the original bundle with
# `kgbox-pack delta`, and applies it with `kgbox install` to a device that runs the original.
# Prints a Markdown table: change, full bundle bytes, delta bytes, ratio, the delta without the
# id-map transforms (plain zstd patches against the base's sections), apply time (the delta's
# `kgbox install`) and the full bundle's install time for comparison.
#
#   benches/delta/run.sh [KB_TSV]
#
#   KB_TSV   triples, default ../shared/data/metaqa/kb.tsv (beside the repository)
#
# Environment (with these defaults):
#   KGBOX=target/release/kgbox  PACK=target/release/kgbox-pack
#   (cargo build --release -p kgbox -p kgbox-pack)
#   LEVEL=19   zstd level of the bundles and the deltas
#   RUNS=5     installs per figure; the median is printed
# Sizes are deterministic (fixed seeds, SOURCE_DATE_EPOCH); times are not.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
KB=${1:-$root/../shared/data/metaqa/kb.tsv}
KGBOX=${KGBOX:-$root/target/release/kgbox}
PACK=${PACK:-$root/target/release/kgbox-pack}
LEVEL=${LEVEL:-19}
RUNS=${RUNS:-5}
for b in "$KGBOX" "$PACK"; do
  [[ -x $b ]] || { echo "missing $b: cargo build --release -p kgbox -p kgbox-pack" >&2; exit 1; }
done
[[ -f $KB ]] || { echo "no KB at $KB" >&2; exit 1; }
work=$(mktemp -d -t kgbox-delta-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
export SOURCE_DATE_EPOCH=1767225600
"$PACK" keygen --out "$work" --name bench >/dev/null

build() { # TSV VERSION OUT
  "$PACK" build --quiet --level "$LEVEL" --triples "$1" --name metaqa --version "$2" \
    --key "$work/bench.key" -o "$3" >/dev/null
}

# Median wall time (ms) of RUNS installs of $2 into a fresh device that runs $1:
# the nearest-rank p50 of every bench (line ceil(RUNS / 2) of the sorted times,
# the lower middle one for an even RUNS; benches/src/quantile.rs).
install_ms() { # BASE FILE
  local times=() i dir t0 t1
  for ((i = 0; i < RUNS; i++)); do
    dir=$work/device-$i
    rm -rf "$dir" && mkdir -p "$dir"
    printf 'data_dir = "%s/data"\n[trust]\nkeys = ["%s/bench.pub"]\n' "$dir" "$work" >"$dir/kgbox.toml"
    "$KGBOX" --config "$dir/kgbox.toml" install "$1" >/dev/null
    t0=$(date +%s%N)
    "$KGBOX" --config "$dir/kgbox.toml" install "$2" >/dev/null
    t1=$(date +%s%N)
    times+=($(((t1 - t0) / 1000000)))
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((RUNS + 1) / 2))p"
}

echo "packing the original bundle from $KB" >&2
build "$KB" 1.0.0 "$work/old.kgb"
echo "| change | full bundle bytes | delta bytes | ratio | plain patches (ratio) | apply ms | full install ms |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for pct in 0.1 1 10; do
  echo "change $pct %" >&2
  python3 "$here/mutate.py" "$KB" "$pct" 1 "$work/kb-$pct.tsv"
  build "$work/kb-$pct.tsv" 1.0.1 "$work/new-$pct.kgb"
  "$PACK" delta "$work/old.kgb" "$work/new-$pct.kgb" -o "$work/d-$pct.kgbd" \
    --key "$work/bench.key" --level "$LEVEL" >&2
  "$PACK" delta "$work/old.kgb" "$work/new-$pct.kgb" -o "$work/p-$pct.kgbd" \
    --key "$work/bench.key" --level "$LEVEL" --no-transforms >/dev/null
  full=$(stat -c %s "$work/new-$pct.kgb")
  delta=$(stat -c %s "$work/d-$pct.kgbd")
  plain=$(stat -c %s "$work/p-$pct.kgbd")
  apply=$(install_ms "$work/old.kgb" "$work/d-$pct.kgbd")
  whole=$(install_ms "$work/old.kgb" "$work/new-$pct.kgb")
  awk -v c="$pct" -v f="$full" -v d="$delta" -v p="$plain" -v a="$apply" -v w="$whole" \
    'BEGIN { printf "| %s %% | %d | %d | %.2f %% | %d (%.1f %%) | %d | %d |\n", c, f, d, 100*d/f, p, 100*p/f, a, w }'
done
