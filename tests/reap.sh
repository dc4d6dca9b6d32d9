# reap.sh - ending every process a test script started, on every exit
# path. Sourced by tests/mount/lib.sh and tests/cli/lib.sh; not run.
#
# Why: meson reads a test's stdout and stderr until the last process holding
# them is gone. A background job, a pool's workers or a reader a failing
# test left blocked keep those pipes open, and the test then "hangs" until
# its timeout instead of failing at once.
#
# Provides:
#   reap_all [PATTERN]  SIGKILLs every process below this shell (children of
#                       children too) and every process whose command line
#                       contains PATTERN (a daemon that detached from us,
#                       found by its private mountpoint or store path), then
#                       reaps the children. Never this shell, never the
#                       pipeline asking.
#   reap_traps          makes SIGTERM, SIGINT and SIGHUP (meson's timeout,
#                       a Ctrl-C) exit through the EXIT trap, so its
#                       cleanup runs then too.
#   watch_deadline DIR  when STATEFS_TEST_TIMEOUT (the test's meson timeout,
#                       from meson.build) is set: 30 s before it, prints
#                       where the script's processes and the threads of
#                       every statefs daemon whose command line names DIR
#                       wait (hang_report), then ends the script through its
#                       traps and kills what it waits for, daemons aside
#                       (its cleanup unmounts and stops them). Meson's own
#                       timeout signals the whole group, daemons included,
#                       and the evidence goes with them. Needs nap.
#   nap SECONDS         sleeps without a process: a read with a timeout on
#                       a FIFO nobody writes ($nap_fifo, which the sourcing
#                       library makes in its temporary directory). A fork
#                       and exec of sleep cost about 10 ms of CPU on CI's
#                       loaded two-CPU virtual machine, and the suites' polls
#                       ran thousands of them.

# The pids below this shell, but not the subshell computing them.
reap_descendants() {
  ps -e -o pid=,ppid= | awk -v root=$$ -v self=$BASHPID '
    { parent[$1] = $2 }
    END {
      for (p in parent) {
        if (p == root || p == self)
          continue
        for (q = parent[p]; q in parent && q != root && q != self && q > 1; q = parent[q])
          ;
        if (q == root)
          print p
      }
    }'
}

reap_all() { # [PATTERN]
  local pids p
  pids=$(reap_descendants)
  if [ -n "${1:-}" ]; then
    pids="$pids $(pgrep -f -- "$1" | grep -vx -e $$ -e $BASHPID || true)"
  fi
  for p in $pids; do
    kill -KILL "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
}

reap_traps() {
  trap 'exit 143' TERM
  trap 'exit 130' INT
  trap 'exit 129' HUP
}

nap() { # SECONDS
  read -r -t "$1" _ <> "$nap_fifo" || :
}

# Where everything waits, for a test that passed its deadline: the
# script's processes with their wait channels, and every thread of each
# statefs daemon whose command line names DIR with its kernel stack (root
# reads them; a stack that cannot be had in 2 s is skipped).
hang_report() { # DIR
  local p t
  echo "--- no end after ${deadline}s: where this test's processes wait" >&2
  ps -o pid=,ppid=,stat=,wchan:32=,args= \
    -p "$(reap_descendants | tr '\n' ',')$$" >&2 2>/dev/null || true
  # Their signals: pending, blocked, ignored, caught (a victim that does
  # not die of the signal it was sent shows why here).
  for p in $(reap_descendants) $$; do
    t=$(grep -E '^(SigPnd|ShdPnd|SigBlk|SigIgn|SigCgt):' "/proc/$p/status" \
      2>/dev/null | tr -s '\t\n' '  ') && echo "$p $t" >&2
  done
  for p in $(pgrep -f -- "$1" || true); do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = statefs ] || continue
    echo "--- daemon $p, its threads:" >&2
    for t in /proc/"$p"/task/*; do
      echo "${t##*/} $(cat "$t/comm" 2>/dev/null) $(cat "$t/wchan" 2>/dev/null)" >&2
      timeout 2 cat "$t/stack" 2>/dev/null | sed 's/^/    /' >&2 || true
    done
  done
}

watch_deadline() { # DIR
  [ -n "${STATEFS_TEST_TIMEOUT:-}" ] || return 0
  deadline=$((STATEFS_TEST_TIMEOUT > 60 ? STATEFS_TEST_TIMEOUT - 30
                                          : STATEFS_TEST_TIMEOUT / 2))
  (
    me=$BASHPID
    nap "$deadline"
    hang_report "$1"
    kill -TERM $$ 2>/dev/null || exit 0
    for p in $(reap_descendants); do
      [ "$p" = "$me" ] || [ "$(cat "/proc/$p/comm" 2>/dev/null)" = statefs ] ||
        kill -KILL "$p" 2>/dev/null || true
    done
  ) &
}
