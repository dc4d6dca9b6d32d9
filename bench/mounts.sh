# mounts.sh - sourced by the benchmarks that mount statefs (crypt_mount.sh,
# mount_ab.sh, values.sh, offcpu.sh, switches.sh, commits.sh): a private
# $work for stores, keys and mountpoints, daemons started in the
# foreground, and a cleanup on every exit that unmounts and reaps them and
# removes $work (and the directories in $also_remove).
# Needs: bin (the daemon). Provides: work, mount_one NAME [OPTIONS...]
# (mounts at $work/NAME, appends the daemon's pid to pids). Without
# /dev/fuse the sourcing script exits 77 (skipped) here.
[ -c /dev/fuse ] || { echo "$(basename "$0" .sh): no /dev/fuse: skipped"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/statefs-bench.XXXXXX")
export HOME=$work XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state
unset STATEFS_KEY STATEFS_KEY_FILE STATEFS_DB
pids=()
mounted=()
also_remove=()

cleanup() {
  local rc=$?
  set +e
  for m in "${mounted[@]}"; do
    mountpoint -q "$m" 2>/dev/null && fusermount3 -u -z "$m"
  done
  for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  rm -rf "$work" "${also_remove[@]}"
  exit "$rc"
}
trap cleanup EXIT

mount_one() { # name, daemon options...
  local m=$work/$1
  shift
  mkdir -p "$m"
  "$bin" -f "$@" "$m" 2>>"$work/daemon.err" &
  pids+=($!)
  mounted+=("$m")
  for _ in $(seq 200); do
    mountpoint -q "$m" && stat "$m" >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  cat "$work/daemon.err" >&2
  echo "$(basename "$0"): $m did not come up" >&2
  exit 1
}
