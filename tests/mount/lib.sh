#!/usr/bin/env bash
# lib.sh - what every mount test shares: a private store, key and
# mountpoint under one temporary directory, the daemon started in the
# foreground and reaped, and the checks.
#
# Source it from a test script (tests/mount/*.sh). Environment, set by
# tests/mount/meson.build:
#   STATEFS_BIN        the daemon
#   STATEFS_HELPER     another process on the store (helper.c)
#   STATEFS_FSOP       one syscall, its errno by name (fsop.c)
#   STATEFS_TEST_MODE  plain or encrypted (default encrypted): a SQLite
#                      store; postgres or postgres-plain: an encrypted or a
#                      plaintext store in a schema of its own on the server
#                      STATEFS_TEST_PG names (scripts/with-pg), named by a
#                      postgresql:// URI, dropped at the end (exit 77
#                      without a server)
# and by hand: STATEFS_TEST_EXTRA_OPTS, daemon options every mount of
#   the suite gets (e.g. "-o async_close": which scripts then fail, and
#   why, is in docs/filesystem.md, "-o async_close").
# Provides: $work $mnt $mode $pg (1 on PostgreSQL, else empty) $schema;
#   mount_fs [daemon options...], unmount_fs, psql_store SQL (psql in the
#   store's schema), mount_other DIR [options...] (another daemon on the
#   same store: its pid in $other_pid, unmounted and reaped on exit too),
#   signal_fs SIG, helper ARGS, fsop ARGS, expect_eq GOT WANT WHAT,
#   expect_op WANT OP ARGS, ok WHAT, fail WHAT, allow_log REGEX (daemon log
#   lines that are expected), fuse_blocked PID FLAG [MOUNT] (a reader has
#   reached the daemon of $mnt, or of MOUNT), now_ns, measured_lease MIN (a lease for this machine now),
#   small_disk (a 12 MiB tmpfs in $small, unmounted at exit; 1 if not root).
# Every exit path (a failed check, an error under set -e, meson's timeout
# or a Ctrl-C) unmounts, stops the daemon and SIGKILLs every other process
# the script started (tests/reap.sh): a failure fails at once. A test still
# running 30 s before its timeout (STATEFS_TEST_TIMEOUT) prints where its
# processes and the daemon's threads wait, then fails (watch_deadline).
# The real $HOME is never touched: HOME and the XDG directories point into
# $work, so the default store and key of a first run land there too.
# Exit: 77 when /dev/fuse is missing; 1 at the first failed check, with the
# daemon's stderr; 1 also when the daemon logged an unexpected "error" or
# "warning" or did not exit 0 after its unmount.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../reap.sh"

if [ ! -c /dev/fuse ]; then
  echo "no /dev/fuse: skipped"
  exit 77
fi
: "${STATEFS_BIN:?}" "${STATEFS_HELPER:?}" "${STATEFS_FSOP:?}"

mode=${STATEFS_TEST_MODE:-encrypted}
pg= schema=
case $mode in
postgres|postgres-plain)
  if [ -z "${STATEFS_TEST_PG:-}" ]; then
    echo "no PostgreSQL server (STATEFS_TEST_PG): skipped"
    exit 77
  fi
  pg=1 ;;
esac
work=$(mktemp -d "${TMPDIR:-/tmp}/statefs-mount.XXXXXX")
mnt=$work/mnt
mkdir -p "$mnt" "$work/store"
nap_fifo=$work/.nap
mkfifo "$nap_fifo"
export HOME=$work XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state
export STATEFS_DB=$work/store/state.db STATEFS_TEST_MODE=$mode
if [ -n "$pg" ]; then
  # The server's key=value string as a URI (no spaces: an fstab line
  # holds it), with a schema of this test's own.
  schema=m$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
  query="schema=$schema" dbname=
  for kv in $STATEFS_TEST_PG; do
    case ${kv%%=*} in
    dbname) dbname=${kv#*=} ;;
    *) query="$query&$kv" ;;
    esac
  done
  export STATEFS_DB="postgresql:///$dbname?$query"
fi
unset STATEFS_KEY STATEFS_KEY_FILE
export LC_ALL=C   # ls sorts bytewise
read -r -a mode_opts <<< "${STATEFS_TEST_EXTRA_OPTS:-}"
case $mode in *plain) mode_opts+=(-o plaintext) ;; esac

psql_store() { # SQL: run in the store's schema
  PGOPTIONS="-c search_path=$schema" psql -X -q -At -v ON_ERROR_STOP=1 \
    "$STATEFS_TEST_PG" -c "$1"
}
daemon_pid=
allowed_log='^$'
: >"$work/daemon.err"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

ok() {
  echo "ok - $*"
}

allow_log() {
  allowed_log="$allowed_log|$1"
}

helper() {
  "$STATEFS_HELPER" "$@"
}

fsop() {
  "$STATEFS_FSOP" "$@"
}

expect_eq() {
  [ "$1" = "$2" ] || fail "$3: got [$1], want [$2]"
}

# expect_op WANT OP PATH [ARG]: the call fails with errno WANT (or OK).
expect_op() {
  local want=$1 got
  shift
  got=$("$STATEFS_FSOP" "$@" | tail -n 1)
  [ "$got" = "$want" ] || fail "fsop $*: got $got, want $want"
}

# Waits until process PID blocks in a request to the mount (MOUNT, else
# $mnt), after it made the file FLAG (fsop read PATH FLAG: the next
# request is then its READ), then makes one round trip through the daemon
# (STATFS, never cached): the kernel hands requests over in order, so the
# READ is the daemon's. 60 s without that is a hang, not slowness.
fuse_blocked() { # PID FLAG [MOUNT]
  local wchan
  for _ in $(seq 1200); do
    if [ -e "$2" ] && { wchan=$(< "/proc/$1/wchan"); } 2>/dev/null &&
       [[ $wchan =~ request_wait_answer|fuse ]]; then
      stat -f "${3:-$mnt}" >/dev/null
      return 0
    fi
    kill -0 "$1" 2>/dev/null || fail "process $1 ended before it blocked on the mount"
    nap 0.05
  done
  fail "process $1 did not block on the mount in 60 s"
}

# Now, in nanoseconds since the epoch (the clock leases are on).
now_ns() {
  local t=${EPOCHREALTIME/[.,]/}
  echo $((t * 1000))
}

# A lease in seconds for a test whose claims must outlive the machine's
# stalls: MIN, or more when the machine is slow right now. Times three
# rounds of what a shell worker does for one item (push, claim, stat,
# touch, ack: a dozen processes and round trips through the mount) and
# gives ten times the slowest, so that a heartbeat a third of a lease
# apart survives a stall three times as long as any round measured.
measured_lease() { # MIN (the mount is up)
  local q=$mnt/queue/.lease-probe worst=0 t0 t n s
  for _ in 1 2 3; do
    t0=$(now_ns)
    echo probe > "$q/new"
    n=$(cat "$q/.claim")
    stat -c %Y "$q/inflight/$n" >/dev/null
    touch "$q/inflight/$n"
    rm "$q/inflight/$n"
    t=$(($(now_ns) - t0))
    [ "$t" -le "$worst" ] || worst=$t
  done
  s=$(((worst * 10 + 999999999) / 1000000000))
  echo $((s > $1 ? s : $1))
}

# DIR is a mountpoint in this namespace (without asking its daemon, which
# may not answer: cleanup after a hang).
in_mountinfo() { # DIR
  [[ $(< /proc/self/mountinfo) == *" $1 "* ]]
}

# DIR is a mountpoint in this namespace and its daemon answers a stat of it
# (mountpoint -q and stat without their two processes: polls run often).
is_mounted() { # DIR
  in_mountinfo "$1" && [ -d "$1/." ]
}

# Waits until the mount answers (the daemon runs in the foreground); 60 s
# is a hang, not a slow start.
wait_mounted() {
  for _ in $(seq 1200); do
    if is_mounted "$mnt"; then
      return 0
    fi
    if [ -n "$daemon_pid" ] && ! kill -0 "$daemon_pid" 2>/dev/null; then
      cat "$work/daemon.err" >&2
      fail "the daemon exited before the mount was up"
    fi
    nap 0.05
  done
  fail "not mounted after 60 s"
}

# The daemon runs as a background job, which a script starts with SIGINT
# ignored (and libfuse leaves an ignored signal alone): perl puts it back
# to what a terminal user has, so SIGINT can be tested.
mount_fs() {
  perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV or die "exec: $!"' -- \
    "$STATEFS_BIN" -f "${mode_opts[@]}" "$@" "$mnt" 2>>"$work/daemon.err" &
  daemon_pid=$!
  wait_mounted
}

# Another daemon on the same store (a second host), mounted on DIR.
other_mnts=() other_pids=()
mount_other() { # DIR [daemon options...]
  local dir=$1 i
  shift
  mkdir -p "$dir"
  # from /: a daemon started in the first mount would keep it busy
  (cd / && exec perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV or die "exec: $!"' -- \
    "$STATEFS_BIN" -f "${mode_opts[@]}" "$@" "$dir" 2>>"$work/daemon.err") &
  other_pid=$!
  other_mnts+=("$dir")
  other_pids+=("$other_pid")
  for i in $(seq 200); do
    is_mounted "$dir" && return 0
    kill -0 "$other_pid" 2>/dev/null || fail "the daemon on $dir exited"
    nap 0.05
  done
  fail "$dir not mounted after 10 s"
}

# Waits for the daemon and checks it exited 0 (WHAT stopped it).
reap_fs() { # WHAT
  local rc=0
  wait "$daemon_pid" || rc=$?
  daemon_pid=
  [ "$rc" -eq 0 ] || fail "the daemon exited $rc after $1"
}

# Unmounts the way a user does and checks the daemon exits 0.
unmount_fs() {
  fusermount3 -u "$mnt"
  reap_fs "fusermount3 -u"
}

# Stops the daemon with signal SIG and checks it exits 0.
signal_fs() { # SIG
  kill -"$1" "$daemon_pid"
  reap_fs "SIG$1"
}

cleanup() {
  local rc=$? unexpected d
  set +e
  for d in "${other_mnts[@]}"; do
    in_mountinfo "$d" &&
      { fusermount3 -u -z "$d" 2>/dev/null || umount -l "$d" 2>/dev/null; }
  done
  for d in "${other_pids[@]}"; do
    kill "$d" 2>/dev/null
    wait "$d" 2>/dev/null
  done
  if in_mountinfo "$mnt"; then
    fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
  fi
  # The daemon, and whatever else is left (readers, pools, workers, a
  # daemon that detached), all at once: SIGKILL to the daemon aborts the
  # connection, which ends every request a reader is blocked in.
  reap_all "$work/"
  daemon_pid=
  unexpected=$(grep -Ei 'error|warning' "$work/daemon.err" | grep -Ev "$allowed_log")
  if [ "$rc" -eq 0 ] && [ -n "$unexpected" ]; then
    echo "FAIL: the daemon logged:" >&2
    echo "$unexpected" >&2
    rc=1
  fi
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
    echo "--- daemon stderr (last 40 lines):" >&2
    tail -n 40 "$work/daemon.err" >&2
  fi
  if [ -n "$pg" ]; then
    psql -X -q "$STATEFS_TEST_PG" -c "SET client_min_messages = warning;
      DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
    [ -z "${drop_role_at_exit:-}" ] || psql -X -q "$STATEFS_TEST_PG" -c \
      "REVOKE ALL ON DATABASE $dbname FROM $drop_role_at_exit;
       DROP ROLE IF EXISTS $drop_role_at_exit" >/dev/null 2>&1
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
reap_traps

# A 12 MiB tmpfs on $work/small for a store to fill, unmounted (lazily:
# the daemon may still hold files there) before cleanup on every exit
# path. Fails (1) when it cannot be mounted (not root).
small_disk() {
  small=$work/small
  mkdir -p "$small"
  mount -t tmpfs -o size=12m,mode=0700 tmpfs "$small" 2>/dev/null || return 1
  trap 'rc=$?; set +e; umount -l "$small" 2>/dev/null; (exit $rc); cleanup' EXIT
}

# A test still running 30 s before its timeout reports where it waits
# (tests/reap.sh).
watch_deadline "$work/"
