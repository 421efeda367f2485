#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run): system setup, formatting,
# lints (warnings are errors), a build of every binary, then every test.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "setup"
bash scripts/setup.sh

step "cargo fmt --all --check"
cargo fmt --all --check

step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo build --workspace --bins"
cargo build --workspace --bins

step "cargo test --workspace"
cargo test --workspace

step "all checks passed"
