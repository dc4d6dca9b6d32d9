#!/usr/bin/env bash
# crypt_mount.sh - small files through the mount, an encrypted store against
# a plaintext one, in the same run.
#
# Usage: crypt_mount.sh STATEFS_BIN CRYPT_BENCH [N] [SIZE] [ROUNDS]
#   STATEFS_BIN  the daemon (build/mountd/statefs)
#   CRYPT_BENCH  build/bench/crypt_bench (its "files" mode times the loops)
#   N files of SIZE bytes per round (default 500 of 200), ROUNDS rounds
#   (default 5), plaintext and encrypted interleaved; medians and bests.
# Environment: TMPDIR. HOME and the XDG directories are pointed into a
#   private directory: the first run of the daemon there creates the
#   encrypted store and its key, as on a new machine.
# Output: microseconds per file for create+write+close and open+read+close
#   on each store, the daemon's CPU time per file (both phases; from
#   /proc/PID/task/*/schedstat, steadier than wall time on a shared
#   machine), and the ratios encrypted/plaintext (the target: within 15 %,
#   ratio <= 1.15). Asserts nothing.
# Exit: 0; 77 without /dev/fuse; 1 when a mount or a round fails.
set -euo pipefail

bin=${1:?STATEFS_BIN}; bench=${2:?CRYPT_BENCH}
n=${3:-500}; size=${4:-200}; rounds=${5:-5}

. "$(dirname "$0")/mounts.sh"

mount_one plain -o plaintext,db="$work/plain.db"
mount_one enc -o db="$work/enc.db"
declare -A pid_of=([plain]=${pids[0]} [enc]=${pids[1]})

cpu_ns() { # pid: CPU time of all its threads, ns
  cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'
}

: >"$work/times"
for r in $(seq "$rounds"); do
  # Alternate which store goes first: the second runs on a warmer (or
  # busier) machine.
  order="plain enc"
  [ $((r % 2)) -eq 0 ] && order="enc plain"
  for m in $order; do
    d=$work/$m/bench/r$r
    mkdir -p "$d"
    c0=$(cpu_ns "${pid_of[$m]}")
    "$bench" files "$d" "$n" "$size" | sed "s/^/$m /" >>"$work/times"
    c1=$(cpu_ns "${pid_of[$m]}")
    echo "$m cpu $(( (c1 - c0) / n / 1000 ))" >>"$work/times"
  done
done

median() { # mode op
  awk -v m="$1" -v o="$2" '$1 == m && $2 == o { print $3 }' "$work/times" |
    sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

best() { # mode op
  awk -v m="$1" -v o="$2" '$1 == m && $2 == o { print $3 }' "$work/times" |
    sort -g | sed -n 1p
}

echo "== Small files through the mount: $n files of $size bytes, $rounds rounds =="
printf '%-24s %12s %12s %7s   %10s %10s %7s\n' operation "plain us" "enc us" ratio \
  "best plain" "best enc" ratio
for op in write read cpu; do
  p=$(median plain "$op"); e=$(median enc "$op")
  bp=$(best plain "$op"); be=$(best enc "$op")
  case $op in
    write) label="create+write+close" ;;
    read) label="open+read+close" ;;
    cpu) label="daemon CPU per file" ;;
  esac
  awk -v l="$label" -v p="$p" -v e="$e" -v bp="$bp" -v be="$be" 'BEGIN {
    printf "%-24s %12.1f %12.1f %7.2f   %10.1f %10.1f %7.2f\n", l, p, e, e / p, bp, be, be / bp }'
done
echo "medians, then the best round of each (other processes only ever slow a round down)"
echo "target: encrypted within 15 % of plaintext (ratio <= 1.15)"
