#!/usr/bin/env bash
# A 50-device rollout on one machine, full bundles against delta updates: a real mosquitto,
# DEVICES real `kgbox serve` processes (MQTT and bundle push on) that run MetaQA's KB, and
# `kgbox-pack rollout` with a canary of 5, then 50 %, then 100 % (docs/fleet.md), each device
# answering a golden question before it counts as updated.
#
#   1. full:  the KB with 1 % of its triples changed (benches/delta/mutate.py), as whole bundles;
#   2. delta: another 1 % change, as delta updates from the bundle the devices now run.
#
# Prints a Markdown table: rollout, devices updated, wall time (plan read to report written),
# bytes sent over MQTT (chunks, all devices), bytes per device, the bundle's size.
#
#   benches/fleet/run.sh [KB_TSV]      # default ../shared/data/metaqa/kb.tsv
#
# Environment: KGBOX, PACK (default target/release/...; cargo build --release -p kgbox
# -p kgbox-pack), DEVICES=50, WAIT=1s (each wave serves this long before its criteria),
# MOSQUITTO (default: mosquitto on the PATH or /usr/sbin).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
KB=${1:-$root/../shared/data/metaqa/kb.tsv}
KGBOX=${KGBOX:-$root/target/release/kgbox}
PACK=${PACK:-$root/target/release/kgbox-pack}
DEVICES=${DEVICES:-50}
WAIT=${WAIT:-1s}
MOSQUITTO=${MOSQUITTO:-$(command -v mosquitto || echo /usr/sbin/mosquitto)}
for b in "$KGBOX" "$PACK" "$MOSQUITTO"; do
  [[ -x $b ]] || { echo "missing $b" >&2; exit 1; }
done
[[ -f $KB ]] || { echo "no KB at $KB" >&2; exit 1; }
work=$(mktemp -d -t kgbox-fleet-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

export SOURCE_DATE_EPOCH=1767225600
"$PACK" keygen --out "$work" --name bench >/dev/null
build() { # TSV VERSION OUT
  "$PACK" build --quiet --triples "$1" --name metaqa --version "$2" --key "$work/bench.key" -o "$3" >/dev/null
}
echo "packing three versions of $KB" >&2
python3 "$root/benches/delta/mutate.py" "$KB" 1 1 "$work/kb2.tsv"
python3 "$root/benches/delta/mutate.py" "$work/kb2.tsv" 1 2 "$work/kb3.tsv"
build "$KB" 1.0.0 "$work/v1.kgb"
build "$work/kb2.tsv" 1.1.0 "$work/v2.kgb"
build "$work/kb3.tsv" 1.2.0 "$work/v3.kgb"

port=$(free_port)
printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n' "$port" >"$work/mosquitto.conf"
"$MOSQUITTO" -c "$work/mosquitto.conf" 2>"$work/mosquitto.log" &
pids+=($!)
sleep 0.5

echo "starting $DEVICES devices" >&2
for ((i = 0; i < DEVICES; i++)); do
  id=$(printf 'dev-%02d' "$i")
  d=$work/$id
  mkdir -p "$d"
  cat >"$d/kgbox.toml" <<CONF
data_dir = "$d/data"
[trust]
keys = ["$work/bench.pub"]
[mqtt]
enabled = true
broker = "mqtt://127.0.0.1:$port"
device_id = "$id"
group = "bench"
CONF
  "$KGBOX" --config "$d/kgbox.toml" install "$work/v1.kgb" >/dev/null
  "$KGBOX" --config "$d/kgbox.toml" serve --listen "127.0.0.1:$(free_port)" 2>"$d/log" &
  pids+=($!)
done

plan() { # NAME BUNDLE [DELTA_FROM]
  local delta=""
  [[ -n ${3:-} ]] && delta="delta_from = \"$3\"
key = \"$work/bench.key\""
  cat >"$work/$1.toml" <<PLAN
bundle = "$2"
$delta
[broker]
url = "mqtt://127.0.0.1:$port"
[targets]
group = "bench"
expect = $DEVICES
discover_timeout = "120s"
[waves]
canary = 5
percent = [50, 100]
wait = "$WAIT"
[[criteria.golden]]
query = '"Queens Logic" -> directed_by'
expect = ["Steve Rash"]
PLAN
}
plan full "$work/v2.kgb"
plan delta "$work/v3.kgb" "$work/v2.kgb"

echo "| rollout | devices updated | wall s | bytes sent | bytes per device | bundle bytes |"
echo "|---|---:|---:|---:|---:|---:|"
for r in full delta; do
  echo "rollout: $r" >&2
  t0=$(date +%s%N)
  "$PACK" rollout --quiet --json "$work/$r.toml" >"$work/$r.json"
  t1=$(date +%s%N)
  size=$(stat -c %s "$work/$([[ $r == full ]] && echo v2 || echo v3).kgb")
  python3 - "$work/$r.json" "$r" $(((t1 - t0) / 1000000)) "$size" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ms, size = int(sys.argv[3]), int(sys.argv[4])
n = r["outcomes"].get("updated", 0)
print(f"| {sys.argv[2]} | {n} | {ms / 1000:.1f} | {r['bytes']:,} | {r['bytes'] // max(n, 1):,} | {size:,} |")
PY
done
