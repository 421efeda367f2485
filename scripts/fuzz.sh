#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ (cargo-fuzz, libFuzzer, nightly Rust) for
# SECONDS each (default 20), starting from the committed seeds in
# fuzz/corpus/TARGET and adding what it finds to a scratch corpus (the
# committed one is not changed). Prints one line per target: inputs run,
# corpus size, crashes. Exits non-zero when any target crashes, leaks past
# its memory limit or hangs (an input over 10 s); the input is left in
# fuzz/artifacts/TARGET/ (add it to fuzz/regressions/TARGET/ once fixed).
#
#   bash scripts/fuzz.sh             # every target, 20 s each
#   bash scripts/fuzz.sh 3600 sparql # the long run of one target
#   FUZZ_JOBS=2 bash scripts/fuzz.sh 3600   # two targets at a time
#   FUZZ_DEV=1 bash scripts/fuzz.sh 10      # CI: built unoptimized (cargo fuzz
#                                           # --dev), a shorter build, fewer inputs a second
#
# FUZZ_PRUNE=1 (CI) builds each target just before its run and removes its
# binary after it (the libraries they share stay): unoptimized, the 14
# binaries take about 4 GB together, the shared build about 3 GB.
#
# FUZZ_KEEP=DIR keeps each target's grown corpus in DIR/TARGET (created when
# missing) instead of a scratch directory, so a long run can go on from
# where an earlier one stopped. FUZZ_TIMEOUT=N (default 10) is the seconds
# one input may take; raise it when the machine is shared, since libFuzzer
# times inputs by the wall clock.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-20}
shift || true
TARGETS=("$@")
if ((${#TARGETS[@]} == 0)); then
  mapfile -t TARGETS < <(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^kgbox-fuzz$')
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: cargo-fuzz (nightly) not found: run scripts/setup.sh --dev" >&2
  exit 1
fi

# The workspace's lock file, copied afresh each time, so the targets link the
# same crate versions as the device (fuzz/Cargo.lock is not committed; an
# older copy would let cargo pick new versions for crates added since, such
# as a digest 0.11 hash beside spareval's digest 0.10).
cp Cargo.lock fuzz/Cargo.lock
# No debug info in the targets: with it each one is about 350 MB (14 of them
# fill 7 GB of disk), without it about 100 MB. A crash still prints the
# panic's file and line and a symbolized stack. FUZZ_DEBUGINFO=1 keeps
# cargo-fuzz's line tables, for reading a crash in a debugger.
if [[ "${FUZZ_DEBUGINFO:-0}" != 1 ]]; then
  export RUSTFLAGS="${RUSTFLAGS:-} -Cdebuginfo=0 -Cstrip=debuginfo"
fi
MODE=--debug-assertions
if [[ "${FUZZ_DEV:-0}" == 1 ]]; then
  MODE=--dev
fi
PRUNE=${FUZZ_PRUNE:-0}
OUT_DIR=release
[[ $MODE == --dev ]] && OUT_DIR=debug
if [[ $PRUNE == 1 ]]; then
  echo "fuzz.sh: ${#TARGETS[@]} targets (nightly, address sanitizer, $MODE), each built before its run and removed after"
else
  echo "fuzz.sh: building ${#TARGETS[@]} targets (nightly, address sanitizer, $MODE)"
  (cd fuzz && cargo +nightly fuzz build "$MODE" >/dev/null)
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
KEEP=${FUZZ_KEEP:-}
TIMEOUT=${FUZZ_TIMEOUT:-10}
JOBS=${FUZZ_JOBS:-1}
run_one() {
  local t=$1
  if [[ $PRUNE == 1 ]] && ! (cd fuzz && cargo +nightly fuzz build "$MODE" "$t") >"$WORK/$t.build" 2>&1; then
    printf '%-16s FAILED to build; the last lines:\n' "$t"
    tail -20 "$WORK/$t.build"
    return 1
  fi
  local corpus_dir="$WORK/$t"
  [[ -n "$KEEP" ]] && corpus_dir="$KEEP/$t"
  mkdir -p "$corpus_dir" "fuzz/artifacts/$t"
  local log="$WORK/$t.log"
  local rc=0
  # CPU seconds (user + system) as well as wall time: targets run side by
  # side (FUZZ_JOBS) share the cores.
  /usr/bin/time -f '%U %S' -o "$WORK/$t.cpu" \
    bash -c 'cd fuzz && exec cargo +nightly fuzz run "$5" "$1" "$2" "corpus/$1" -- \
      -max_total_time="$3" -timeout="$4" -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="artifacts/$1/"' _ "$t" "$corpus_dir" "$SECONDS_EACH" "$TIMEOUT" "$MODE" >"$log" 2>&1 || rc=$?
  if [[ $PRUNE == 1 ]]; then
    rm -f fuzz/target/*/"$OUT_DIR/$t" fuzz/target/*/"$OUT_DIR/$t.d" fuzz/target/*/"$OUT_DIR"/deps/"$t"-*
  fi
  local runs corpus cpu
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(find "$corpus_dir" -type f | wc -l)
  cpu=$(awk 'END { printf "%.0f", $1 + $2 }' "$WORK/$t.cpu" 2>/dev/null || echo '?')
  if ((rc == 0)); then
    printf '%-16s %10s inputs in %ss (%s CPU s), %6s in the corpus, 0 crashes\n' \
      "$t" "${runs:-?}" "$SECONDS_EACH" "$cpu" "$corpus"
  else
    printf '%-16s FAILED (exit %s) after %s inputs; the last lines:\n' "$t" "$rc" "${runs:-?}"
    grep -E 'ERROR|panicked|SUMMARY|Test unit written|timeout' "$log" | head -20
    return 1
  fi
}
export -f run_one
export WORK SECONDS_EACH KEEP TIMEOUT MODE PRUNE OUT_DIR
failed=0
printf '%s\n' "${TARGETS[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_one "$@"' _ {} || failed=1
if ((failed)); then
  echo "fuzz.sh: a target failed (inputs in fuzz/artifacts/)" >&2
  exit 1
fi
echo "fuzz.sh: ${#TARGETS[@]} targets, ${SECONDS_EACH}s each: no crash, no hang"
