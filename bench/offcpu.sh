#!/usr/bin/env bash
# offcpu.sh - where the daemon's threads sleep while K writers create files
# through the mount: every context switch of the daemon is recorded
# (perf, sched:sched_switch, DWARF call graphs) during `fs_bench writers`,
# and the sleeps are counted per file by what the thread waited in: a
# FUSE read (no request for it), or a lock or condition variable of ours
# (named by the first function of statefs's own above the wait), and how
# many of them left a CPU idle (the next task was the idle task). It
# answers "what do the idle CPUs of the writer scaling wait for"
# (docs/performance-rounds.md, "Eight writers: where the idle CPU goes").
# Counts, not times: the same on a busy machine, within a few percent.
#
# Usage: bench/offcpu.sh [MODE [K [N [STATEFS FS_BENCH]]]]
#   MODE plain or encrypted (default plain), K writers (8), N files per
#   writer (250); programs default to those in build/.
# Needs perf (linux-perf), /dev/fuse, root (perf on another process).
# Exit: 0; 77 without perf or /dev/fuse; 1 when a step fails.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-plain}; k=${2:-8}; n=${3:-250}
statefs=${4:-$top/build/mountd/statefs}; fsb=${5:-$top/build/bench/fs_bench}
command -v perf >/dev/null || { echo "offcpu: no perf: skipped"; exit 77; }
bin=$statefs
export TMPDIR=/dev/shm # the stores in memory: the disk is not measured
. "$top/bench/mounts.sh"
opts=(); [ "$mode" = plain ] && opts=(-o plaintext)
mount_one m "${opts[@]}"
pid=${pids[-1]}
mkdir -p "$work/m/bench"
"$fsb" writers "$work/m/bench" "$k" 100 100 >/dev/null # warm
perf record -q -e sched:sched_switch --call-graph dwarf,8192 -p "$pid" \
  -o "$work/perf.data" 2>"$work/perf.err" &
rec=$!
pids+=("$rec") # mounts.sh's cleanup stops it on an early exit
sleep 1
out=$("$fsb" writers "$work/m/bench" "$k" "$n" 100 "$pid")
kill -INT "$rec"; wait "$rec" || true
echo "offcpu: $mode store, $k writers x $n files: $out"
echo "(writers K files/s daemon-us/file writer-us/file idle-CPUs)"
perf script -i "$work/perf.data" 2>/dev/null | awk -v files=$((k * n)) '
  # One event: a header line, then one frame per line, then a blank line.
  function flush() {
    if (hdr ~ /prev_state=S/ && where != "") {
      sleeps[where]++
      if (hdr ~ /next_comm=swapper/) idle[where]++
    }
    hdr = ""; where = ""; waited = ""
  }
  /sched:sched_switch/ { flush(); hdr = $0; next }
  NF == 0 { flush(); next }
  hdr != "" && where == "" {
    f = $2; sub(/\+0x.*/, "", f)
    if (f ~ /^fuse_dev_do_read$/) { where = "a FUSE read (waiting for a request)"; next }
    if (f ~ /futex/) waited = "futex"
    # the first function of our own above a futex wait
    if (waited != "" && f !~ /^(_|pthread|lll|futex|do_futex|do_syscall|entry_SYSCALL|syscall|\[unknown\]|schedule)/)
      where = "a lock or condition in " f
  }
  END {
    flush()
    printf "%8s %8s  %s\n", "sleeps", "idle", "per file: the daemon thread slept in (idle: and left its CPU idle)"
    for (w in sleeps)
      if (sleeps[w] / files >= 0.005)
        printf "%8.2f %8.2f  %s\n", sleeps[w] / files, idle[w] / files, w | "sort -rn"
  }'
