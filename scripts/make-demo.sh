#!/usr/bin/env bash
# Rebuilds demo/demo.kgb, the built-in demo bundle embedded in `kgbox`, from
# demo/movies.tsv (a slice of the MetaQA movie KB). The timestamp is fixed so
# the bundle is byte-for-byte reproducible (a test checks that it is current).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet -p kgbox-pack
SOURCE_DATE_EPOCH=1767225600 ./target/debug/kgbox-pack build \
  --triples demo/movies.tsv --name demo-movies --version 1.0.0 \
  --planner-examples demo/planner-examples.tsv \
  --key demo/DEMO-ONLY.key --quiet -o demo/demo.kgb
