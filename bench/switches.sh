#!/usr/bin/env bash
# switches.sh - how often the daemon's threads sleep and wake per file:
# context switches of the daemon (all its threads, from
# /proc/PID/task/*/status) while one process creates, reads, lists and
# unlinks N small files through a plaintext mount. A thread that finds its
# next request already queued does not sleep; one handed each request by
# another does (docs/performance-rounds.md, "How many threads", "One reader at a
# time"). The voluntary count hardly moves with the machine's load; the
# involuntary one (preemptions) does.
#
# Usage: bench/switches.sh [N [STATEFS [DAEMON OPTIONS...]]]
#   N files (default 1000); STATEFS the daemon (default build/mountd/statefs);
#   the options go to it (e.g. -o threads=1).
# Prints "<op us per file...>" from fs_bench, then
#   "switches per file: voluntary V, involuntary I".
# Needs /dev/fuse. Measures and prints; asserts nothing. Exit 0, 1, 77.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-1000}
statefs=${2:-$top/build/mountd/statefs}
shift $(( $# > 2 ? 2 : $# ))
fsb=${FS_BENCH:-$top/build/bench/fs_bench}
bin=$statefs
export TMPDIR=/dev/shm # the store in memory: the disk is not measured
. "$top/bench/mounts.sh"
mount_one m -o plaintext -o db="$work/state.db" "$@"
pid=${pids[-1]}

switches() { # prints "voluntary involuntary", summed over the threads
  cat /proc/"$pid"/task/*/status 2>/dev/null | awk '
    /^voluntary_ctxt_switches/ { v += $2 }
    /^nonvoluntary_ctxt_switches/ { i += $2 }
    END { print v + 0, i + 0 }'
}

mkdir -p "$work/m/bench/small"
"$fsb" ops "$work/m/bench/small" 200 100 1 >/dev/null # warm: caches, WAL
read -r v0 i0 < <(switches)
"$fsb" ops "$work/m/bench/small" "$n" 100 1 | tr '\n' ' '
echo
read -r v1 i1 < <(switches)
awk -v v=$((v1 - v0)) -v i=$((i1 - i0)) -v n="$n" 'BEGIN {
  printf "switches per file: voluntary %.2f, involuntary %.2f\n", v / n, i / n }'
