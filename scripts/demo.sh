#!/usr/bin/env bash
# Builds kgbox, serves the built-in demo bundle on a free local port and
# sends it three requests: GET /v1/entities/Blade%20Runner?limit=5, a DSL
# query (POST /v1/query) and a question (POST /v1/ask). Then it keeps serving
# in the foreground, with the web console's address printed, until Ctrl-C.
#
#   scripts/demo.sh          build, answer, keep serving
#   scripts/demo.sh --once   build, answer, stop (for CI)
#
# It needs Rust (cargo), a C toolchain and curl, and installs only those of
# the last two that are missing (Debian's build-essential, pkg-config, curl).
# Everything the test suite needs is scripts/setup.sh's. The server runs with
# an empty temporary data dir (so it serves the demo), removed when it stops.
# Exits non-zero if any step fails.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  "") ONCE=0 ;;
  --once) ONCE=1 ;;
  *) echo "usage: scripts/demo.sh [--once]" >&2; exit 2 ;;
esac

QUESTION='/v1/entities/Blade%20Runner?limit=5'
READY_TIMEOUT_S=30

if ! command -v cargo >/dev/null 2>&1; then
  echo "demo.sh: cargo is not on PATH: install Rust first (https://rustup.rs)" >&2
  exit 1
fi
# The build's C parts (zstd, LMDB) need a C compiler and pkg-config; the
# demo's requests need curl.
need=()
command -v cc >/dev/null 2>&1 || need+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v curl >/dev/null 2>&1 || need+=(curl)
if ((${#need[@]} > 0)); then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "demo.sh: install these first: ${need[*]}" >&2
    exit 1
  fi
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { echo "demo.sh: need root or sudo to install: ${need[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  echo "demo.sh: installing ${need[*]} (to build kgbox and to ask it)"
  ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get update -q
  ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"
fi

echo "demo.sh: building (release)"
cargo build --release -p kgbox -p kgbox-pack

target_dir=${CARGO_TARGET_DIR:-target}
kgbox="$target_dir/release/kgbox"
if [[ ! -x $kgbox ]]; then
  echo "demo.sh: $kgbox was not built" >&2
  exit 1
fi

free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
    return
  fi
  local p
  for _ in $(seq 1 100); do
    p=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return
    fi
  done
  echo "demo.sh: no free port found" >&2
  return 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/kgbox-demo.XXXXXX")
data_dir="$work/data"
config="$work/kgbox.toml"
log="$work/serve.log"
server_pid=""
cleanup() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    echo "demo.sh: stopping the server"
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# An own config file, so that /etc/kgbox/config.toml (if any) does not apply;
# nothing is installed in the empty data dir, so `serve` uses the built-in demo.
printf 'demo = true\n' >"$config"

port=$(free_port)
base="http://127.0.0.1:$port"
echo "demo.sh: starting $kgbox serve on $base (empty data dir: serves the built-in demo bundle)"
env -u KGBOX_CONFIG "$kgbox" --config "$config" serve --data-dir "$data_dir" --listen "127.0.0.1:$port" >"$log" 2>&1 &
server_pid=$!

deadline=$((SECONDS + READY_TIMEOUT_S))
until curl -fsS -o /dev/null "$base/readyz" 2>/dev/null; do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "demo.sh: the server exited before it was ready; its log:" >&2
    cat "$log" >&2
    exit 1
  fi
  if ((SECONDS >= deadline)); then
    echo "demo.sh: the server was not ready after ${READY_TIMEOUT_S}s; its log:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.2
done
echo "demo.sh: ready"

show() {
  if command -v python3 >/dev/null 2>&1 && pretty=$(printf '%s' "$1" | python3 -m json.tool 2>/dev/null); then
    printf '%s\n' "$pretty"
  else
    printf '%s\n' "$1"
  fi
}

echo
echo "GET $QUESTION"
answer=$(curl -fsS "$base$QUESTION")
show "$answer"

# A question in the query language: who directed Blade Runner? The answer
# carries the triples that support it.
QUERY='{"query": "\"Blade Runner\" -> directed_by", "top_k": 3}'
echo
echo "POST /v1/query $QUERY"
answer=$(curl -fsS -H 'content-type: application/json' -d "$QUERY" "$base/v1/query")
show "$answer"

# A question in plain language: the bundle's learned planner turns it into a
# query (trained by kgbox-pack from demo/planner-examples.tsv), the executor
# runs it and the answers come back with the query used and the time per stage.
ASK='{"question": "who directed [Blade Runner]", "top_k": 3}'
echo
echo "POST /v1/ask $ASK"
answer=$(curl -fsS -H 'content-type: application/json' -d "$ASK" "$base/v1/ask")
show "$answer"

if ((ONCE)); then
  exit 0
fi
echo
echo "demo.sh: serving the demo at $base/ (the web console; the API: $base/openapi.json); Ctrl-C stops it"
echo "  curl '$base$QUESTION'"
echo "  curl -s $base/v1/query -H 'content-type: application/json' -d '$QUERY'"
echo "  curl -s $base/v1/ask -H 'content-type: application/json' -d '$ASK'"
wait "$server_pid"
