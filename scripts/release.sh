#!/usr/bin/env bash
# The release build: `kgbox` (the device runtime) and `kgbox-pack` (the
# packager) in release mode, copied to dist/ with an SBOM each: CycloneDX
# 1.5 JSON from Cargo.lock (cargo-cyclonedx), every crate linked into that
# binary with its version, license and checksum.
#
#   bash scripts/release.sh              # binaries and SBOMs into dist/
#   bash scripts/release.sh --sbom-only  # the SBOMs only (CI)
#   DIST=out bash scripts/release.sh     # another folder
set -euo pipefail
cd "$(dirname "$0")/.."
DIST=${DIST:-dist}
mkdir -p "$DIST"

if ! cargo cyclonedx --version >/dev/null 2>&1; then
  echo "release.sh: cargo-cyclonedx not found: run scripts/setup.sh" >&2
  exit 1
fi

if [[ ${1:-} != --sbom-only ]]; then
  cargo build --release --locked -p kgbox -p kgbox-pack
  for b in kgbox kgbox-pack; do
    cp "target/release/$b" "$DIST/$b"
    echo "release.sh: $DIST/$b ($(stat -c %s "$DIST/$b") bytes)"
  done
fi

# cargo-cyclonedx writes `<package>.cdx.json` beside every workspace
# member's Cargo.toml; the two binaries' are kept, the rest removed.
# (The two are moved aside before the others are removed, so that a
# DIST inside the repository, however it is written, keeps them.)
KEEP=$(mktemp -d)
trap 'rm -rf "$KEEP"' EXIT
cargo cyclonedx --format json --spec-version 1.5 --target x86_64-unknown-linux-gnu -q
mv runtime/kgbox/kgbox.cdx.json packager/kgbox-pack.cdx.json "$KEEP/"
find . -name '*.cdx.json' -not -path './target/*' -not -path './fuzz/target/*' -delete
mv "$KEEP/kgbox.cdx.json" "$KEEP/kgbox-pack.cdx.json" "$DIST/"

# A check of what was written: the format, the binary described, and that
# every component names a version and a package URL.
python3 - "$DIST" <<'PY'
import json, sys, pathlib
for name in ("kgbox", "kgbox-pack"):
    path = pathlib.Path(sys.argv[1]) / f"{name}.cdx.json"
    bom = json.loads(path.read_text())
    assert bom.get("bomFormat") == "CycloneDX", f"{path}: not a CycloneDX document"
    comps = bom.get("components", [])
    assert len(comps) > 50, f"{path}: only {len(comps)} components"
    bad = [c.get("name") for c in comps if not c.get("version") or not c.get("purl")]
    assert not bad, f"{path}: components without version or purl: {bad[:5]}"
    names = {c["name"] for c in comps}
    for crate in ("tokio", "zstd", "ed25519-dalek"):
        assert crate in names, f"{path}: {crate} is missing"
    print(f"release.sh: {path}: CycloneDX {bom.get('specVersion')}, {len(comps)} components")
PY
