#!/usr/bin/env bash
# RAUC install hook for a kgbox bundle carried as an image of a RAUC bundle.
#
# In the RAUC bundle's manifest.raucm:
#   [hooks]
#   filename=rauc-hook.sh
#   [image.kgbox]
#   filename=movies-1.5.0.kgb
#   hooks=install
# and in the device's /etc/rauc/system.conf a slot class for it:
#   [slot.kgbox.0]
#   device=/var/lib/kgbox
#   type=raw
# RAUC calls `rauc-hook.sh slot-install` with RAUC_IMAGE_NAME set to the
# image's path; kgbox keeps its own A/B slots in its data dir, so RAUC's
# slot is only the hook's target. Mark it good or bad the RAUC way after
# your checks (`rauc status mark-good`), and kgbox's with `kgbox mark-good`
# / `kgbox mark-bad`. common.sh must sit next to this script in the bundle
# (or set HOOK_COMMON).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
source "${HOOK_COMMON:-$here/common.sh}"

case "${1:-}" in
  slot-install)
    rc=0
    install_bundle "${RAUC_IMAGE_NAME:?RAUC_IMAGE_NAME is not set}" || rc=$?
    if ((rc == 3)); then
      log "the new bundle did not come up: rolling back"
      roll_back || true
    fi
    exit "$rc"
    ;;
  slot-post-install | install-check) ;;
  *)
    log "unhandled hook ${1:-(none)}"
    ;;
esac
