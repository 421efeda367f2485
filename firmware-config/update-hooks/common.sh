# Shared by the update-framework hooks in this directory (sourced).
#
# Settings, from the environment (not KGBOX_*: kgbox reads those as config):
#   HOOK_KGBOX      the kgbox binary            (default: kgbox on PATH)
#   HOOK_RESTART    how to restart the service  (default: systemctl restart kgbox;
#                   empty: do not restart, e.g. when serve is not running)
#   HOOK_READY_S    seconds to wait for `kgbox healthcheck` after a restart (default 60)
# The config file is kgbox's own: --config, else KGBOX_CONFIG, else
# /etc/kgbox/config.toml.
set -euo pipefail

KGBOX=${HOOK_KGBOX:-kgbox}
RESTART=${HOOK_RESTART-systemctl restart kgbox}
READY_S=${HOOK_READY_S:-60}

log() { echo "kgbox-hook: $*" >&2; }

# Restarts the service (when configured) and waits until it answers ready.
restart_and_wait() {
  [[ -n "$RESTART" ]] || return 0
  log "restarting: $RESTART"
  $RESTART || {
    log "the restart failed"
    return 1
  }
  local i
  for ((i = 0; i < READY_S * 2; i++)); do
    if "$KGBOX" healthcheck --timeout-ms 1000 >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.5
  done
  log "not ready after ${READY_S}s"
  return 1
}

# Installs BUNDLE into the inactive slot and makes it active; serves it.
# Returns 2 when the install failed (nothing changed), 3 when it was
# installed but did not come up (roll back then).
install_bundle() {
  local bundle=$1
  log "installing $bundle"
  "$KGBOX" install "$bundle" || return 2
  restart_and_wait || return 3
}

# Puts the previous slot back and serves it.
roll_back() {
  log "rolling back"
  "$KGBOX" rollback
  restart_and_wait
}
