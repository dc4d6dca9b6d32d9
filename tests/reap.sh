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
