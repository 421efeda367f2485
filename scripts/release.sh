#!/usr/bin/env bash
# The release: `kgbox` (the device runtime) and `kgbox-pack` (the packager)
# for amd64 and arm64, written to dist/:
#
#   kgbox_<version>_<arch>.deb       the runtime's Debian package (cargo-deb): the
#                                    stripped binary, kgbox.service, the conffile
#                                    /etc/kgbox/config.toml, the kgbox system
#                                    user and /var/lib/kgbox (made by postinst),
#                                    man pages and shell completions
#   kgbox-pack_<version>_<arch>.deb  the packager's
#   kgbox-<version>-<arch>.tar.gz    both binaries with the same man pages,
#                                    completions, the unit and the config, for
#                                    installing by hand (firmware-config/README.md)
#   kgbox.cdx.json kgbox-pack.cdx.json   CycloneDX 1.5 SBOMs from Cargo.lock
#                                    (cargo-cyclonedx): every crate linked into
#                                    the binary, with version, license, checksum
#   SHA256SUMS
#
# arm64 is cross-built with Debian's gcc-aarch64-linux-gnu (the Rust target
# aarch64-unknown-linux-gnu; scripts/setup.sh --dev installs both);
# scripts/package-check.sh checks what this writes.
#
#   bash scripts/release.sh                        # release profile, amd64 and arm64
#   bash scripts/release.sh --arch amd64           # one architecture
#   bash scripts/release.sh --profile dev          # the debug build (CI: the one it has
#                                                  # already, so the packages fit its time)
#   bash scripts/release.sh --fast                 # lighter compression (larger .deb files)
#   bash scripts/release.sh --sbom-only            # the SBOMs only
#   CROSS_PACKAGES=kgbox bash scripts/release.sh   # cross-build the runtime only (CI)
#   CROSS_CARGO_FLAGS="--config ..." bash scripts/release.sh  # more cargo flags there
#   DIST=out bash scripts/release.sh               # another folder
set -euo pipefail
cd "$(dirname "$0")/.."
DIST=${DIST:-dist}
PROFILE=release
ARCHS=amd64,arm64
SBOM_ONLY=0
FAST=()
CROSS_PACKAGES=${CROSS_PACKAGES:-kgbox,kgbox-pack}
while (($# > 0)); do
  case "$1" in
    --sbom-only) SBOM_ONLY=1 ;;
    --fast) FAST=(--fast) ;;
    --profile) PROFILE=${2:?"--profile needs a name"}; shift ;;
    --arch) ARCHS=${2:?"--arch needs amd64, arm64 or both, comma-separated"}; shift ;;
    *) echo "usage: scripts/release.sh [--profile P] [--arch amd64,arm64] [--fast] [--sbom-only]" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$DIST"
die() { echo "release.sh: $*" >&2; exit 1; }

command -v python3 >/dev/null 2>&1 || die "python3 not found"
cargo cyclonedx --version >/dev/null 2>&1 || die "cargo-cyclonedx not found: run scripts/setup.sh --dev"

if ((!SBOM_ONLY)); then
  cargo deb --version >/dev/null 2>&1 || die "cargo-deb not found: run scripts/setup.sh --dev"
  triple() {
    case "$1" in
      amd64) echo x86_64-unknown-linux-gnu ;;
      arm64) echo aarch64-unknown-linux-gnu ;;
      *) die "unknown architecture $1 (amd64 or arm64)" ;;
    esac
  }
  case "$PROFILE" in
    dev | test) profile_dir=debug ;;
    bench) profile_dir=release ;;
    *) profile_dir=$PROFILE ;;
  esac
  host=$(dpkg --print-architecture 2>/dev/null) || die "dpkg not found (Debian's packages are built on Debian)"
  target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
  version=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "kgbox"))')

  # The packages' changelog names the version they carry (revision 1).
  head -1 packaging/deb/changelog | grep -qF "($version-1)" ||
    die "packaging/deb/changelog's first entry is not for $version-1: add one"

  # The host's binaries come first: they write the man pages and completions.
  echo "release.sh: building kgbox and kgbox-pack ($PROFILE, $host)"
  cargo build --locked --profile "$PROFILE" -p kgbox -p kgbox-pack
  hostbin="$target_dir/$profile_dir"

  out=packaging/out
  rm -rf "$out"
  for b in kgbox kgbox-pack; do
    mkdir -p "$out/$b/completions"
    "$hostbin/$b" man --dir "$out/$b/man"
    "$hostbin/$b" completions bash >"$out/$b/completions/$b.bash"
    "$hostbin/$b" completions zsh >"$out/$b/completions/_$b"
    "$hostbin/$b" completions fish >"$out/$b/completions/$b.fish"
  done
  # The packaged unit runs the packaged binary, /usr/bin/kgbox (the unit in
  # firmware-config/ is for a binary installed by hand in /usr/local/bin).
  mkdir -p "$out/kgbox/systemd"
  sed 's#/usr/local/bin/kgbox#/usr/bin/kgbox#g' firmware-config/kgbox.service >"$out/kgbox/systemd/kgbox.service"
  grep -q '^ExecStart=/usr/bin/kgbox ' "$out/kgbox/systemd/kgbox.service" || die "the packaged unit's ExecStart is not /usr/bin/kgbox"

  IFS=, read -r -a archs <<<"$ARCHS"
  for arch in "${archs[@]}"; do
    t=$(triple "$arch")
    target_args=()
    bindir=$hostbin
    packages=(kgbox kgbox-pack)
    if [[ $arch != "$host" ]]; then
      IFS=, read -r -a packages <<<"$CROSS_PACKAGES"
      # Cross: Debian's cross gcc links, and compiles the C parts (zstd, LMDB, ring).
      cc="${t%%-unknown-*}-linux-gnu-gcc"
      command -v "$cc" >/dev/null 2>&1 || die "$cc not found: run scripts/setup.sh --dev (gcc-aarch64-linux-gnu)"
      upper=$(echo "$t" | tr 'a-z-' 'A-Z_')
      export "CARGO_TARGET_${upper}_LINKER=$cc" "CC_${t//-/_}=$cc" "AR_${t//-/_}=${cc%-gcc}-ar"
      echo "release.sh: cross-building ${packages[*]} ($PROFILE, $arch, $t)"
      read -r -a cross_flags <<<"${CROSS_CARGO_FLAGS:-}"
      cargo build --locked ${cross_flags[@]+"${cross_flags[@]}"} --profile "$PROFILE" --target "$t" "${packages[@]/#/-p}"
      target_args=(--target "$t")
      bindir="$target_dir/$t/$profile_dir"
    fi
    for b in "${packages[@]}"; do
      cargo deb --no-build --profile "$PROFILE" -p "$b" ${target_args[@]+"${target_args[@]}"} ${FAST[@]+"${FAST[@]}"} -o "$DIST/${b}_${version}_${arch}.deb"
      echo "release.sh: $DIST/${b}_${version}_${arch}.deb ($(stat -c %s "$DIST/${b}_${version}_${arch}.deb") bytes)"
    done
    # The tarball: the same files for an install by hand.
    stage=$(mktemp -d)
    name="kgbox-$version-$arch"
    mkdir -p "$stage/$name/bin" "$stage/$name/man" "$stage/$name/completions"
    for b in "${packages[@]}"; do
      cp "$bindir/$b" "$stage/$name/bin/"
      cp "$out/$b/man/"* "$stage/$name/man/"
      cp "$out/$b/completions/"* "$stage/$name/completions/"
    done
    strip_tool=strip
    [[ $arch != "$host" ]] && strip_tool="${cc%-gcc}-strip"
    "$strip_tool" "$stage/$name/bin/"*
    cp firmware-config/kgbox.service firmware-config/kgbox.toml README.md "$stage/$name/"
    tar -C "$stage" -czf "$DIST/$name.tar.gz" "$name"
    rm -rf "$stage"
    echo "release.sh: $DIST/$name.tar.gz ($(stat -c %s "$DIST/$name.tar.gz") bytes)"
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

# The checksums of everything in DIST.
(cd "$DIST" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | sort | xargs -r sha256sum >SHA256SUMS)
echo "release.sh: $DIST/SHA256SUMS"
