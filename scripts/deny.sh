#!/usr/bin/env bash
# `cargo deny check` with deny.toml: licenses, bans, sources and RustSec's
# advisories. The advisory database is fetched from GitHub when it can be
# reached; otherwise (an offline build machine) the snapshot committed in
# third_party/advisory-db is used, and its date is printed.
#
#   bash scripts/deny.sh              # check
#   bash scripts/deny.sh --refresh    # replace the snapshot with GitHub's newest (needs network)
set -euo pipefail
cd "$(dirname "$0")/.."
SNAPSHOT=third_party/advisory-db
UPSTREAM=https://github.com/rustsec/advisory-db

if ! cargo deny --version >/dev/null 2>&1; then
  echo "deny.sh: cargo-deny not found: run scripts/setup.sh --dev" >&2
  exit 1
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

if [[ ${1:-} == --refresh ]]; then
  git clone --quiet --depth 1 "$UPSTREAM" "$WORK/db"
  # Extracted beside it first: the old snapshot goes only once the new one is whole.
  mkdir -p "$WORK/new"
  (cd "$WORK/db" && git archive HEAD crates rust LICENSE.txt LICENSES support.toml) | tar -x -C "$WORK/new"
  git -C "$WORK/db" log -1 --format=%cI >"$WORK/new/SNAPSHOT-DATE"
  rm -rf "$SNAPSHOT"
  mv "$WORK/new" "$SNAPSHOT"
  echo "deny.sh: $SNAPSHOT refreshed ($(cat "$SNAPSHOT/SNAPSHOT-DATE"))"
  exit 0
fi

CONFIG=deny.toml
OFFLINE=()
if timeout 20 git ls-remote --quiet "$UPSTREAM" HEAD >/dev/null 2>&1; then
  echo "deny.sh: advisories from $UPSTREAM"
else
  # cargo-deny reads its database from a git repository under db-path, in
  # a folder named from the URL (this name is cargo-deny 0.20's for the
  # RustSec URL; scripts/setup.sh --dev pins that version). Make one of the
  # snapshot, and run with --offline (crates are fetched first).
  DB="$WORK/dbs/advisory-db-3157b0e258782691"
  mkdir -p "$WORK/dbs"
  cp -r "$SNAPSHOT" "$DB"
  git -C "$DB" init --quiet
  git -C "$DB" add -A
  git -C "$DB" -c user.name=kgbox -c user.email=kgbox@localhost \
    commit --quiet -m "snapshot $(cat "$SNAPSHOT/SNAPSHOT-DATE")" \
    --date "$(cat "$SNAPSHOT/SNAPSHOT-DATE")"
  sed "s|^yanked = .*|yanked = \"allow\"\ndb-path = \"$WORK/dbs\"\nmaximum-db-staleness = \"P3650D\"|" deny.toml >"$WORK/deny.toml"
  CONFIG="$WORK/deny.toml"
  cargo fetch --quiet
  OFFLINE=(--offline)
fi
cargo deny --log-level error ${OFFLINE[@]+"${OFFLINE[@]}"} --config "$CONFIG" check --show-stats
