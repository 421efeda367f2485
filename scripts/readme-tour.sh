#!/usr/bin/env bash
# Runs the README's tour as written: every ```sh and ```python block between
# "## Tour" and the next "## " heading, in order, in one bash session, in a
# scratch directory holding a copy of demo/. kgbox and kgbox-pack come from
# BIN_DIR (default: target/release when both are built there, else
# target/debug), put first on PATH as the tour's first line says.
#
# Each block's curl fails on an HTTP error (curl is wrapped with
# --fail-with-body), so "every step answers" is checked, and the answers the
# tour names are checked in its output at the end. Port 8080 must be free
# (the tour serves on the default 127.0.0.1:8080).
#
#   scripts/readme-tour.sh                 # CI: scripts/test.sh runs it
#   BIN_DIR=target/debug scripts/readme-tour.sh
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
die() { echo "readme-tour.sh: $*" >&2; exit 1; }

target_dir=${CARGO_TARGET_DIR:-$REPO/target}
if [[ -z ${BIN_DIR:-} ]]; then
  BIN_DIR=$target_dir/debug
  [[ -x $target_dir/release/kgbox && -x $target_dir/release/kgbox-pack ]] && BIN_DIR=$target_dir/release
fi
BIN_DIR=$(cd "$BIN_DIR" && pwd)
for b in kgbox kgbox-pack; do
  [[ -x $BIN_DIR/$b ]] || die "$BIN_DIR/$b is not built (cargo build -p kgbox -p kgbox-pack)"
done
if (exec 3<>/dev/tcp/127.0.0.1/8080) 2>/dev/null; then
  die "127.0.0.1:8080 is taken; the tour serves there"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/kgbox-tour.XXXXXX")
cleanup() {
  # The tour's server, if a failed step left it running.
  pkill -f "^$BIN_DIR/kgbox serve" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cp -r "$REPO/demo" "$work/demo"

# The blocks, as one script: ```sh blocks as they are, ```python blocks fed
# to python3.
python3 - "$REPO/README.md" "$work/tour.sh" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
start = text.index("\n## Tour\n")
end = text.index("\n## ", start + 1)
blocks = re.findall(r"^```(\w+)\n(.*?)^```$", text[start:end], flags=re.S | re.M)
# curl fails on an HTTP error, unless the block already says how (-f).
curl_fn = r"""curl() {
  local a
  for a in "$@"; do
    if [[ $a == -* && $a != --* && $a == *f* ]]; then command curl "$@"; return; fi
  done
  command curl --fail-with-body "$@"
}"""
out = ["set -euo pipefail", curl_fn]
n = 0
for lang, body in blocks:
    if lang == "sh":
        out.append(body)
    elif lang == "python":
        out.append("python3 - <<'TOUR_PY'\n" + body + "TOUR_PY")
    else:
        continue
    n += 1
    out.append(f"echo '--- readme-tour: block {n} done'")
assert n >= 8, f"only {n} runnable blocks in the tour"
open(sys.argv[2], "w", encoding="utf-8").write("\n".join(out) + "\n")
print(f"readme-tour.sh: {n} blocks")
PY

log="$work/tour.log"
echo "readme-tour.sh: running the tour in $work with $BIN_DIR on PATH"
# A bound on the whole tour, so that a step that hangs fails instead.
if ! (cd "$work" && env -u KGBOX_CONFIG -u KGBOX_ADMIN_TOKEN PATH="$BIN_DIR:$PATH" \
  timeout "${TOUR_TIMEOUT_S:-900}" bash "$work/tour.sh") >"$log" 2>&1; then
  cat "$log" >&2
  die "a step of the tour failed (its output is above)"
fi
cat "$log"

# What the tour's own comments and questions promise.
expect() {
  grep -qF -- "$1" "$log" || die "the tour's output lacks \"$1\" ($2)"
}
expect '"name":"Ridley Scott"' "GET /v1/entities or /v1/ask"
expect 'Ridley Scott.' "the OpenAI snippet"
expect 'With the Lights Out' "kgbox ask on the own graph, 2 hops"
expect 'Kurt Cobain' "kgbox ask on the own graph, 2 hops"
expect '1991-09-24' "kgbox ask on the own graph, a date"
echo "readme-tour.sh: every step of the tour answered"
