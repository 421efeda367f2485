#!/usr/bin/env bash
# SWUpdate shell script for a kgbox bundle (.kgb) shipped as a raw file.
#
# In sw-description:
#   files: ( {
#     filename = "movies-1.5.0.kgb";
#     path = "/var/lib/kgbox/incoming/update.kgb";
#     type = "rawfile";
#   } );
#   scripts: ( {
#     filename = "swupdate-kgbox.sh";
#     type = "shellscript";
#   } );
# SWUpdate runs it with `preinst` before and `postinst` after writing the
# files. HOOK_BUNDLE names the file (default /var/lib/kgbox/incoming/update.kgb).
# common.sh must be installed next to it (or set HOOK_COMMON).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
source "${HOOK_COMMON:-$here/common.sh}"
bundle=${HOOK_BUNDLE:-/var/lib/kgbox/incoming/update.kgb}

case "${1:-}" in
  preinst)
    mkdir -p "$(dirname "$bundle")"
    ;;
  postinst)
    rc=0
    install_bundle "$bundle" || rc=$?
    if ((rc == 3)); then
      log "the new bundle did not come up: rolling back"
      roll_back || true
    fi
    ((rc == 0)) || exit "$rc"
    rm -f "$bundle"
    ;;
  *)
    log "unhandled step ${1:-(none)}"
    ;;
esac
