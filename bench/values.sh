#!/usr/bin/env bash
# values.sh - large values: 4 KiB appended (`>>`) to, or written in place
# inside, values of 64 KiB, 1 MiB and 16 MiB (issue 12), and the whole
# value written (`cp`) and read (`cat`), through the mount of an encrypted
# and of a plaintext store, and on a file of a tmpfs (the baseline), in
# the same run (value_bench.c does the operations). Prints microseconds
# per operation, the daemon's CPU time per operation (its threads'
# schedstat during the timed operations only), and two ratios:
# "growth", the time per operation against the same operation on the
# 64 KiB value of the same store (1.0: the cost does not grow with the
# value; for write and read, per byte: 1.0 is linear in the size), and
# "/tmpfs", against the baseline. Asserts nothing.
#
# Usage: bench/values.sh [STATEFS VALUE_BENCH]
#   (default: build/mountd/statefs, build/bench/value_bench)
# Environment: VALUES_OPS (operations per size and mode, default 40),
#   VALUES_SIZES (default "65536 1048576 16777216"), VALUES_MODES
#   (default "append inplace write read"), TMPDIR.
# Exit: 0; 77 without /dev/fuse; 1 when a mount or a run fails.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$top/build/mountd/statefs}
vb=${2:-$top/build/bench/value_bench}
ops=${VALUES_OPS:-40}
sizes=${VALUES_SIZES:-65536 1048576 16777216}
modes=${VALUES_MODES:-append inplace write read}

. "$(dirname "$0")/mounts.sh"
base=$(mktemp -d /dev/shm/statefs-values.XXXXXX)
also_remove+=("$base")

# max_value above the largest value plus what the appends add.
mount_one plain -o plaintext,db="$work/plain.db",max_value=64M
mount_one enc -o db="$work/enc.db",max_value=64M
declare -A pid_of=([plain]=${pids[0]} [enc]=${pids[1]})
mkdir -p "$work/plain/s/n" "$work/enc/s/n"
declare -A dir_of=([tmpfs]=$base [plain]=$work/plain/s/n [enc]=$work/enc/s/n)

: >"$work/times"
for mode in $modes; do
  for size in $sizes; do
    for where in tmpfs plain enc; do
      out=$("$vb" "$mode" "${dir_of[$where]}/v$size$mode" "$size" "$ops" \
            "${pid_of[$where]:-0}")
      rm -f "${dir_of[$where]}/v$size$mode"
      echo "$mode $where $out" >>"$work/times"
    done
  done
done

echo "statefs values.sh: $ops operations per line (append, inplace: 4 KiB; write, read: the whole value)"
awk '
  { m = $1; w = $2; s = $4; t[m, s, w] = $5; cpu[m, s, w] = $6
    if (!((m " " w) in first)) first[m " " w] = s
    line[NR] = m " " s " " w }
  END {
    printf "%-8s %9s %-6s %10s %10s %7s %8s\n", "mode", "size", "store",
           "us/op", "cpu us/op", "growth", "/tmpfs"
    for (i = 1; i <= NR; i++) {
      split(line[i], f, " ")
      m = f[1]; s = f[2]; w = f[3]
      cpus = (w == "tmpfs") ? "-" : sprintf("%.0f", cpu[m, s, w] / 1000)
      g = t[m, s, w] / t[m, first[m " " w], w]
      if (m == "write" || m == "read") g = g * first[m " " w] / s
      printf "%-8s %9d %-6s %10.0f %10s %7.2f %8.1f\n", m, s, w,
             t[m, s, w] / 1000, cpus, g,
             t[m, s, w] / t[m, s, "tmpfs"]
    }
  }' "$work/times"
