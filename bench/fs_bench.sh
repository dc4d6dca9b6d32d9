#!/usr/bin/env bash
# fs_bench.sh - the mount's benchmark. In one run:
#   1. small-file create+write+close, read, readdir and unlink through
#      statefs (plaintext and encrypted stores) and through our minimal
#      low-level passthrough over a tmpfs (passthrough_ll.c: the FUSE floor
#      on this machine), rounds alternating between the three mounts,
#      printed as ratios of rates (statefs / floor);
#   2. writer scaling: 1, 2, 4 and 8 processes at once, each creating
#      small files in a directory of its own, on the same three mounts in
#      interleaved rounds; the files per second of all writers together and
#      each mount's speedup over one writer (group commit: concurrent
#      FLUSHes share a commit); and what each file cost in CPU time while
#      they ran (the daemon's, the writers' own) with the machine's idle
#      CPUs: where the CPUs are all busy, the files per second are the
#      CPUs over the CPU time per file, whatever serialises inside; and,
#      in the same rounds, the floor served by one thread (passthrough_ll
#      -s), the thread model statefs has on a SQLite store (one reader of
#      /dev/fuse at a time: docs/performance-rounds.md, "Eight writers against a
#      floor of one thread");
#   3. the listing of one namespace as it grows to FS_BENCH_BIG keys: time
#      per listing, time per key, and the daemon's resident memory, to show
#      that time grows linearly and memory does not.
# It measures and prints; it never asserts (timings on a shared machine are
# noisy: medians of FS_BENCH_REPS rounds).
#
# Usage: bench/fs_bench.sh [STATEFS PASSTHROUGH_LL FS_BENCH]
#   (paths of the built programs; default: those in build/)
# Environment: FS_BENCH_N (files per round, 10000), FS_BENCH_REPS (3),
#   FS_BENCH_BIG (100000), FS_BENCH_SIZE (bytes per file, 100),
#   FS_BENCH_WN (files per writer in part 2, 1000).
# Needs /dev/fuse and a tmpfs at /dev/shm (the stores live there too, so
# the disk is not measured).
# Exit: 0; 77 without /dev/fuse; 1 when a mount does not come up or a
#   measurement fails (the benchsmoke suite runs it tiny to see that).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
statefs=${1:-$top/build/mountd/statefs}
ptll=${2:-$top/build/bench/passthrough_ll}
fsb=${3:-$top/build/bench/fs_bench}
n=${FS_BENCH_N:-10000}
reps=${FS_BENCH_REPS:-3}
big=${FS_BENCH_BIG:-100000}
size=${FS_BENCH_SIZE:-100}
wn=${FS_BENCH_WN:-1000}

[ -c /dev/fuse ] || { echo "fs_bench: no /dev/fuse: skipped"; exit 77; }
w=$(mktemp -d /dev/shm/fs_bench.XXXXXX)
pids=()
mounts=()
declare -A dpid # the daemon of each mount: floor, floor1, plain, encrypted
cleanup() {
  set +e
  for m in "${mounts[@]}"; do
    mountpoint -q "$m" && fusermount3 -u -z "$m"
  done
  for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  rm -rf "$w"
}
trap cleanup EXIT

wait_mount() { # mountpoint pid
  for _ in $(seq 200); do
    mountpoint -q "$1" && return 0
    kill -0 "$2" 2>/dev/null || { echo "fs_bench: $1 did not mount" >&2; exit 1; }
    sleep 0.05
  done
  echo "fs_bench: $1 did not mount" >&2
  exit 1
}

# statefs in the foreground, its store and key under $w/<mode>.
start_statefs() { # mode mountpoint
  local d=$w/$1
  mkdir -p "$d" "$2"
  local opts=()
  [ "$1" = plain ] && opts=(-o plaintext)
  HOME=$d XDG_CONFIG_HOME=$d/config XDG_STATE_HOME=$d/state \
    STATEFS_DB=$d/state.db "$statefs" -f "${opts[@]}" "$2" 2>>"$w/$1.err" &
  sfs_pid=$!
  dpid[$1]=$sfs_pid
  pids+=("$sfs_pid")
  mounts+=("$2")
  wait_mount "$2" "$sfs_pid"
}

stop() { # mountpoint
  fusermount3 -u "$1"
}

# One round = create, read, list and unlink N files on each mount in turn;
# rounds alternate between the mounts so that load on the shared machine
# falls on all of them alike, and each figure is the median of its rounds.
declare -A all us
run_round() { # label dir
  local out op t
  out=$("$fsb" ops "$2" "$n" "$size" 1) # a failure ends the script
  while read -r op t; do
    all[$1.$op]="${all[$1.$op]:-} $t"
  done <<<"$out"
}
median() { # numbers...
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
    print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "fs_bench: $n files of $size bytes, median of $reps rounds, $(nproc) CPUs"

mkdir -p "$w/src" "$w/pt"
"$ptll" -f -o source="$w/src" "$w/pt" 2>>"$w/pt.err" &
pids+=($!)
dpid[floor]=$!
mounts+=("$w/pt")
wait_mount "$w/pt" "$!"
for mode in plain encrypted; do
  start_statefs $mode "$w/m-$mode"
  mkdir -p "$w/m-$mode/bench/small"
done
for _ in $(seq "$reps"); do
  run_round floor "$w/pt"
  run_round plain "$w/m-plain/bench/small"
  run_round encrypted "$w/m-encrypted/bench/small"
done

# Writer scaling: for each number of writers, rounds alternate between the
# mounts as above.
wdir() { # label
  case $1 in
    floor) echo "$w/pt/writers" ;;
    floor1) echo "$w/pt1/writers" ;;
    *) echo "$w/m-$1/bench" ;;
  esac
}
mkdir -p "$w/pt/writers" "$w/src1" "$w/pt1"
"$ptll" -f -s -o source="$w/src1" "$w/pt1" 2>>"$w/pt1.err" &
pids+=($!)
dpid[floor1]=$!
mounts+=("$w/pt1")
wait_mount "$w/pt1" "$!"
mkdir -p "$w/pt1/writers"
declare -A wrate wdcpu wccpu widle
for k in 1 2 4 8; do
  for _ in $(seq "$reps"); do
    for m in floor floor1 plain encrypted; do
      out=$("$fsb" writers "$(wdir $m)" "$k" "$wn" "$size" "${dpid[$m]}")
      read -r _ _ rate dcpu ccpu idle <<<"$out"
      wrate[$m.$k]="${wrate[$m.$k]:-} $rate"
      wdcpu[$m.$k]="${wdcpu[$m.$k]:-} $dcpu"
      wccpu[$m.$k]="${wccpu[$m.$k]:-} $ccpu"
      widle[$m.$k]="${widle[$m.$k]:-} $idle"
    done
  done
done

stop "$w/pt"
stop "$w/pt1"
stop "$w/m-plain"
stop "$w/m-encrypted"
for k in "${!all[@]}"; do
  # shellcheck disable=SC2086
  us[$k]=$(median ${all[$k]})
done

printf '\n%-9s %14s %14s %7s %14s %7s %11s\n' operation "floor us/file" \
  "plain us/file" ratio "encr. us/file" ratio "encr./plain"
for op in create read readdir unlink; do
  f=${us[floor.$op]} p=${us[plain.$op]} e=${us[encrypted.$op]}
  awk -v op="$op" -v f="$f" -v p="$p" -v e="$e" 'BEGIN {
    printf "%-9s %14.1f %14.1f %7.2f %14.1f %7.2f %11.2f\n", op, f, p, f / p,
      e, f / e, e / p }'
done
echo "(ratio: statefs's rate over the floor's; encr./plain: the encrypted"
echo " store's time over the plaintext one's; target: every ratio >= 0.9,"
echo " encr./plain <= 1.10)"

printf '\n%d files of %d bytes per writer, each writer in its own directory,' \
  "$wn" "$size"
printf ' median of %s rounds:\n' "$reps"
# The median files per second of K writers and of one, on FLOOR, the
# plaintext and the encrypted store: f f1 p p1 e e1.
rates() { # K FLOOR
  # shellcheck disable=SC2086
  f=$(median ${wrate[$2.$1]}) f1=$(median ${wrate[$2.1]})
  # shellcheck disable=SC2086
  p=$(median ${wrate[plain.$1]}) p1=$(median ${wrate[plain.1]})
  # shellcheck disable=SC2086
  e=$(median ${wrate[encrypted.$1]}) e1=$(median ${wrate[encrypted.1]})
}
printf '%-8s %12s %8s %12s %8s %12s %8s %8s %8s\n' writers "floor f/s" \
  speedup "plain f/s" speedup "encr. f/s" speedup "plain/fl" "encr./fl"
for k in 1 2 4 8; do
  rates "$k" floor
  awk -v k="$k" -v f="$f" -v f1="$f1" -v p="$p" -v p1="$p1" -v e="$e" \
      -v e1="$e1" 'BEGIN {
    printf "%-8d %12.0f %8.2f %12.0f %8.2f %12.0f %8.2f %8.2f %8.2f\n", k,
      f, f / f1, p, p / p1, e, e / e1, (p / p1) / (f / f1), (e / e1) / (f / f1) }'
done
echo "(speedup: over one writer on the same mount; plain/fl, encr./fl: statefs's"
echo " speedup over the floor's; target: >= 1.0 at every step)"

printf '\nthe same rounds against the floor served by one thread (passthrough_ll -s):\n'
printf '%-8s %12s %8s %8s %8s\n' writers "1-thr f/s" speedup "plain/1t" "encr./1t"
for k in 1 2 4 8; do
  rates "$k" floor1
  awk -v k="$k" -v f="$f" -v f1="$f1" -v p="$p" -v p1="$p1" -v e="$e" \
      -v e1="$e1" 'BEGIN {
    printf "%-8d %12.0f %8.2f %8.2f %8.2f\n", k, f, f / f1,
      (p / p1) / (f / f1), (e / e1) / (f / f1) }'
done

printf '\nCPU time per file while the writers ran (us; daemon, the writers'
printf ' themselves) and\nthe idle CPUs of the machine meanwhile, medians:\n'
printf '%-8s %21s %21s %21s %21s\n' "" "floor" "floor, one thread" \
  "plaintext" "encrypted"
printf '%-8s' writers
for _ in 1 2 3 4; do printf ' %7s %7s %5s' daemon writer idle; done
printf '\n'
for k in 1 2 4 8; do
  printf '%-8d' "$k"
  for m in floor floor1 plain encrypted; do
    # shellcheck disable=SC2086
    printf ' %7.1f %7.1f %5.2f' "$(median ${wdcpu[$m.$k]})" \
      "$(median ${wccpu[$m.$k]})" "$(median ${widle[$m.$k]})"
  done
  printf '\n'
done
echo "(idle 0: no CPU was free, for this run or anything else; files per second"
echo " are then at most $(nproc) CPUs over daemon + writer time per file. Each side's"
echo " share of the kernel's FUSE work is in its own column)"

# Namespaces of growing size, filled through the engine, listed through
# the mount (opendir + readdir, as ls -f). The daemon's memory is read
# after each listing. Every namespace is listed once first: the engine
# keeps the pages it reads in SQLite's page cache (cache_size=-65536, at
# most 64 MiB per store), and that warm-up shows how much of the daemon's
# memory is that cache; what the listings themselves hold shows after.
mode=encrypted
start_statefs $mode "$w/m-big"
env_of_store=(HOME=$w/$mode XDG_CONFIG_HOME=$w/$mode/config
              XDG_STATE_HOME=$w/$mode/state STATEFS_DB=$w/$mode/state.db)
sizes=($((big / 10)) $((big / 4)) $((big / 2)) $big)
for k in "${sizes[@]}"; do
  env "${env_of_store[@]}" "$fsb" fill "n$k" "$k"
done
rss() { awk -v f="$1" '$1 == f ":" { printf "%.1f", $2 / 1024 }' /proc/$sfs_pid/status; }
echo
echo "listing one namespace ($mode store), median of $reps listings:"
echo "  daemon RSS before any listing: $(rss VmRSS) MiB"
for k in "${sizes[@]}"; do
  "$fsb" list "$w/m-big/bench/n$k" 1 > /dev/null
done
echo "  after listing each namespace once (SQLite's page cache warm): $(rss VmRSS) MiB"
for k in "${sizes[@]}"; do
  out=$("$fsb" list "$w/m-big/bench/n$k" "$reps")
  read -r _ keys ms <<<"$out"
  awk -v k="$keys" -v ms="$ms" -v rss="$(rss VmRSS)" -v hwm="$(rss VmHWM)" 'BEGIN {
    printf "%8d keys %9.1f ms %7.2f us/key   RSS %6.1f MiB (peak %6.1f MiB)\n",
      k, ms, ms * 1000 / k, rss, hwm }'
done
stop "$w/m-big"
