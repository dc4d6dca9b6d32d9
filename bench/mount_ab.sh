#!/usr/bin/env bash
# mount_ab.sh - two (or more) builds of the daemon side by side, with the
# FUSE floor (passthrough_ll) measured in the same rounds: each round runs
# `fs_bench ops` (create+write+close, read, readdir, unlink of N files) on
# every mount in turn, so that load on the shared machine falls on all of
# them alike. Printed per operation and mount: the median time per file,
# and the median over rounds of the floor's time over the mount's (the
# ratio fs_bench.sh prints) and of the first daemon's time over this one's
# (above 1: faster than the first). Paired by round, these ratios hold up
# where the absolute times move by a third between rounds.
#
# With -w K it measures writer scaling instead: each round runs `fs_bench
# writers` with one writer and then with K (N files each, each writer in
# a namespace of its own) on every mount in turn. Printed per mount: the
# median files per second with 1 and K writers, the median over rounds of
# the speedup (K over 1), of that speedup over the floor's in the same
# round (fs_bench.sh's "plain/fl": the issue's target is >= 1.0), and of
# the mount's K-writer rate over the first daemon's.
#
# With -q it measures queue pushes: each round runs `fs_bench push` (N
# creates of new names, 100 bytes each) in queue/bench of every statefs
# mount (in a directory of a floor) in turn. Printed as for the
# operations: the median time per push, the floor's over it, the first
# daemon's over it.
#
# Usage: bench/mount_ab.sh [-w K | -q] ROUNDS N NAME=STATEFS[,OPTION...] ...
#   each OPTION a daemon's -o option (plaintext, async_close, ...); e.g.
#   bench/mount_ab.sh 15 1000 old=/tmp/old/statefs,plaintext \
#        new=build/mountd/statefs,plaintext
#   A program named passthrough_ll is another floor, mounted over a
#   directory of its own, its OPTIONs passed as they are: e.g.
#   one=build/bench/passthrough_ll,-s (one thread).
# Environment: TMPDIR, where the stores and the floor's files live
#   (default /dev/shm, memory, as fs_bench.sh; a directory on disk
#   measures the disk's fsyncs too); FS_BENCH (the fs_bench program),
#   PASSTHROUGH_LL.
# Measures and prints; asserts nothing. Exit 0, 1, 77 without /dev/fuse.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
k=0 # writers, with -w
push=0 # queue pushes, with -q
if [ "${1:-}" = -q ]; then
  push=1
  shift
elif [ "${1:-}" = -w ]; then
  k=${2:-}
  shift 2 || true
  [[ $k =~ ^[1-9][0-9]*$ ]] || k=
fi
[ $# -ge 3 ] && [ -n "$k" ] || { sed -n 26,32p "$0" >&2; exit 1; }
rounds=$1 n=$2
shift 2
fsb=${FS_BENCH:-$top/build/bench/fs_bench}
ptll=${PASSTHROUGH_LL:-$top/build/bench/passthrough_ll}
export TMPDIR=${TMPDIR:-/dev/shm}
bin=$ptll # mounts.sh starts "$bin -f OPTIONS... MOUNTPOINT"
. "$top/bench/mounts.sh"

names=(floor)
declare -A dir res
mkdir -p "$work/src"
mount_one floor -o source="$work/src"
dir[floor]=$work/floor
mkdir -p "$work/floor/small"
for spec in "$@"; do
  name=${spec%%=*} rest=${spec#*=}
  IFS=, read -r -a opt <<< "$rest"
  bin=${opt[0]}
  if [ "$(basename "$bin")" = passthrough_ll ]; then # another floor
    mkdir -p "$work/src.$name"
    opts=(-o source="$work/src.$name" "${opt[@]:1}")
  else
    opts=(-o db="$work/$name.db")
    for o in "${opt[@]:1}"; do opts+=(-o "$o"); done
  fi
  mount_one "$name" "${opts[@]}"
  mkdir -p "$work/$name/bench/small"
  dir[$name]=$work/$name/bench
  names+=("$name")
done

for _ in $(seq "$rounds"); do
  for name in "${names[@]}"; do
    if [ "$k" -gt 0 ]; then # "writers K FILES/S": one writer, then K
      for w in 1 "$k"; do
        read -r _ _ fps _ < <("$fsb" writers "${dir[$name]}" "$w" "$n" 100)
        res[$name.w$w]="${res[$name.w$w]:-} $fps"
      done
      continue
    fi
    if [ "$push" = 1 ]; then # a statefs mount's queue, a floor's dir
      q=$work/$name/queue
      [ -d "$q" ] && q=$q/bench || q=${dir[$name]}/small
      read -r op t < <("$fsb" push "$q" "$n" 100 1)
      res[$name.$op]="${res[$name.$op]:-} $t"
      continue
    fi
    while read -r op t; do
      res[$name.$op]="${res[$name.$op]:-} $t"
    done < <("$fsb" ops "${dir[$name]}/small" "$n" 100 1)
  done
done

median() { # numbers...
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
    print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratios() { # base times, these times (same rounds): base/this per round
  paste -d' ' <(tr ' ' '\n' <<<"$1" | sed '/^$/d') \
              <(tr ' ' '\n' <<<"$2" | sed '/^$/d') |
    awk '{ printf "%.4f\n", $1 / $2 }'
}

first=${names[1]}
if [ "$k" -gt 0 ]; then
  echo "mount_ab: $rounds rounds of 1 and $k writers x $n files, stores in" \
       "$TMPDIR, $(nproc) CPUs"
  printf '%-10s %9s %9s %8s %8s %9s\n' mount "1 f/s" "$k f/s" speedup \
    "/floor's" "x/$first"
  for name in "${names[@]}"; do
    # speedups per round: K writers' rate over one writer's
    res[$name.s]=$(ratios "${res[$name.w$k]}" "${res[$name.w1]}" | tr '\n' ' ')
    printf '%-10s %9.0f %9.0f %8.2f %8.2f %9.2f\n' "$name" \
      "$(median ${res[$name.w1]})" "$(median ${res[$name.w$k]})" \
      "$(median ${res[$name.s]})" \
      "$(median $(ratios "${res[$name.s]}" "${res[floor.s]}"))" \
      "$(median $(ratios "${res[$name.w$k]}" "${res[$first.w$k]}"))"
  done
  exit 0
fi
echo "mount_ab: $rounds rounds of $n files, stores in $TMPDIR, $(nproc) CPUs"
printf '%-8s %-10s %10s %9s %9s\n' operation mount "us/file" "floor/x" \
  "$first/x"
ops="create read readdir unlink"
[ "$push" = 0 ] || ops=push
for op in $ops; do
  for name in "${names[@]}"; do
    printf '%-8s %-10s %10.1f %9.2f %9.2f\n' "$op" "$name" \
      "$(median ${res[$name.$op]})" \
      "$(median $(ratios "${res[floor.$op]}" "${res[$name.$op]}"))" \
      "$(median $(ratios "${res[$first.$op]}" "${res[$name.$op]}"))"
  done
done
