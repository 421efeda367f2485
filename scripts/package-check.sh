#!/usr/bin/env bash
# Checks the packages scripts/release.sh wrote to DIST (default dist/), as a
# device operator would meet them (CI runs it; it needs root, or sudo, for
# dpkg -i):
#
#   1. lintian on every .deb (errors and warnings fail; overrides, each with
#      its reason, in packaging/deb/);
#   2. dpkg -i of kgbox_<version>_amd64.deb on this machine: the kgbox user,
#      /var/lib/kgbox, the conffile, the man pages and completions are there;
#   3. systemd-analyze verify on the installed unit;
#   4. the unit's ExecStart, run by hand as its User, serves the built-in demo
#      and answers a question; then the package is removed (config and data
#      stay, as on a device) and purged;
#   5. the arm64 package's binary, under qemu-user-static, serves the demo
#      and answers the same question.
set -euo pipefail
cd "$(dirname "$0")/.."
DIST=${DIST:-dist}
die() { echo "package-check.sh: $*" >&2; exit 1; }
say() { echo "package-check.sh: $*"; }

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || die "needs root or sudo (dpkg -i)"
  sudo=(sudo)
fi
for tool in lintian dpkg-deb systemd-analyze curl python3; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found: run scripts/setup.sh --dev"
done
shopt -s nullglob
amd64=("$DIST"/kgbox_*_amd64.deb)
arm64=("$DIST"/kgbox_*_arm64.deb)
((${#amd64[@]} == 1)) || die "expected one kgbox_*_amd64.deb in $DIST (scripts/release.sh)"
((${#arm64[@]} == 1)) || die "expected one kgbox_*_arm64.deb in $DIST (scripts/release.sh)"

QUESTION='{"question": "who directed [Blade Runner]", "top_k": 3}'
# Waits for BASE/readyz while PID lives, then asks the demo question and
# checks the answer names Ridley Scott.
ask_demo() {
  local base=$1 pid=$2 log=$3 limit=$4
  local deadline=$((SECONDS + limit))
  until curl -fsS -o /dev/null "$base/readyz" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; die "the server exited before it was ready"; }
    ((SECONDS < deadline)) || { cat "$log" >&2; die "the server was not ready after ${limit}s"; }
    sleep 0.5
  done
  local answer
  answer=$(curl -fsS -H 'content-type: application/json' -d "$QUESTION" "$base/v1/ask")
  python3 - "$answer" <<'PY'
import json, sys
names = [a.get("name") for a in json.loads(sys.argv[1])["answers"]]
assert names and names[0] == "Ridley Scott", f"the demo answered {names}"
print(f"package-check.sh: answered {names[0]}")
PY
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

# 1. lintian
for deb in "$DIST"/*.deb; do
  say "lintian $deb"
  lintian --fail-on error,warning --suppress-tags-from-file packaging/deb/lintian-suppressed "$deb"
done

# 2. dpkg -i
deb=${amd64[0]}
if dpkg -s kgbox >/dev/null 2>&1; then
  say "removing the kgbox package installed before"
  "${sudo[@]}" dpkg --purge kgbox
fi
say "dpkg -i $deb"
"${sudo[@]}" dpkg -i "$deb"
getent passwd kgbox >/dev/null || die "postinst made no kgbox user"
[[ $(stat -c %U "/var/lib/kgbox") == kgbox ]] || die "/var/lib/kgbox is not owned by kgbox"
dpkg-query -W -f='${Conffiles}\n' kgbox | grep -q ' /etc/kgbox/config.toml ' || die "/etc/kgbox/config.toml is not a conffile"
for f in /usr/bin/kgbox /usr/share/man/man1/kgbox.1.gz /usr/share/man/man1/kgbox-serve.1.gz \
  /usr/share/bash-completion/completions/kgbox /usr/share/zsh/vendor-completions/_kgbox \
  /usr/share/fish/vendor_completions.d/kgbox.fish; do
  [[ -e $f ]] || die "$f is not installed"
done
file_out=$(file -b /usr/bin/kgbox)
[[ $file_out == *stripped* && $file_out != *"not stripped"* ]] || die "/usr/bin/kgbox is not stripped: $file_out"

# 3. the unit
unit=$(dpkg -L kgbox | grep -E '/systemd/system/kgbox\.service$') || die "no kgbox.service in the package"
say "systemd-analyze verify $unit"
systemd-analyze verify "$unit"

# 4. ExecStart by hand, as the unit's user, on a free port (the config's
# 127.0.0.1:8080 may be taken on a test machine).
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
user=$(sed -n 's/^User=//p' "$unit")
[[ $exec_start == "/usr/bin/kgbox serve --config /etc/kgbox/config.toml" ]] || die "unexpected ExecStart: $exec_start"
port=$(free_port)
log=$(mktemp)
say "running ExecStart as $user: $exec_start --listen 127.0.0.1:$port"
"${sudo[@]}" runuser -u "$user" -- env -u KGBOX_CONFIG $exec_start --listen "127.0.0.1:$port" >"$log" 2>&1 &
pid=$!
ask_demo "http://127.0.0.1:$port" "$pid" "$log" 30
"${sudo[@]}" pkill -TERM -u "$user" -x kgbox || true
wait "$pid" 2>/dev/null || true
say "dpkg -r kgbox (the config and the data stay)"
"${sudo[@]}" dpkg -r kgbox
[[ -f /etc/kgbox/config.toml && -d /var/lib/kgbox ]] || die "dpkg -r removed the config or the data"
"${sudo[@]}" dpkg --purge kgbox
[[ -d /var/lib/kgbox ]] || die "dpkg --purge removed /var/lib/kgbox (an operator's bundles)"

# 5. arm64 under qemu-user-static (binfmt is not needed: qemu runs it directly).
command -v qemu-aarch64-static >/dev/null 2>&1 || die "qemu-aarch64-static not found: run scripts/setup.sh --dev (qemu-user-static)"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dpkg-deb -x "${arm64[0]}" "$root"
file -b "$root/usr/bin/kgbox" | grep -q 'ARM aarch64' || die "the arm64 package's binary is not aarch64: $(file -b "$root/usr/bin/kgbox")"
port=$(free_port)
printf 'demo = true\n' >"$root/config.toml"
say "qemu-aarch64-static $root/usr/bin/kgbox serve (the demo) on 127.0.0.1:$port"
env -u KGBOX_CONFIG qemu-aarch64-static -L /usr/aarch64-linux-gnu "$root/usr/bin/kgbox" --config "$root/config.toml" \
  serve --data-dir "$root/data" --listen "127.0.0.1:$port" >"$root/serve.log" 2>&1 &
pid=$!
ask_demo "http://127.0.0.1:$port" "$pid" "$root/serve.log" 300
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
say "all checks passed"
