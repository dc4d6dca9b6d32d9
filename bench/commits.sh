#!/usr/bin/env bash
# commits.sh - how many FLUSHes share a commit through the mount: K
# processes at once (1, 2, 4, 8), each creating N small files in a
# directory of its own (fs_bench writers), on a plaintext store; the
# store's commits are counted from SQLite's WAL index (the -shm file's
# header counter iChange, which every commit moves by one; a restart of
# the log after a checkpoint moves it once too, so the count is an upper
# bound). One reader of /dev/fuse holds the FLUSHes it serves while more
# requests are queued and commits them together (fs/loop.c, "Held FLUSH
# answers"); a lone writer commits every file.
#
# Usage: bench/commits.sh [N [STATEFS [DAEMON OPTIONS...]]]
#   N files per writer (default 1000); STATEFS the daemon (default
#   build/mountd/statefs); the options go to it (e.g. -o threads=1).
# Prints per K: "writers K: F files/s, C commits for F' files, X files per
#   commit". Needs /dev/fuse. Measures and prints; asserts nothing.
#   Exit 0, 1, 77.
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

ichange() { # the WAL index header's commit counter (little-endian u32)
  od -An -tu4 -j8 -N4 "$work/state.db-shm" | tr -d ' '
}

for k in 1 2 4 8; do
  d=$work/m/k$k # a scope; the writers' directories are namespaces
  for i in $(seq 0 $((k - 1))); do mkdir -p "$d/w$i"; done # not counted
  c0=$(ichange)
  line=$(FS_BENCH_KEEP=1 "$fsb" writers "$d" "$k" "$n" 100)
  c1=$(ichange)
  set -- $line # writers K files/s
  awk -v k="$k" -v fps="$3" -v c=$((c1 - c0)) -v f=$((k * n)) 'BEGIN {
    printf "writers %d: %.0f files/s, %d commits for %d files, %.2f files per commit\n",
           k, fps, c, f, f / (c > 0 ? c : 1) }'
done
